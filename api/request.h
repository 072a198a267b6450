// request.h - what request.cc, the Wait/Test family, offers the other entry points:
// completing one request under the caller's name (EP_Mrecv and EP_Sendrecv wait so).
//
// Internal to api/.  Called by the request's user, like EP_Wait (runtime/request.h,
// "Completed by its waiter").
#ifndef EP_API_REQUEST_H_
#define EP_API_REQUEST_H_

#include "ep/ep.h"

namespace ep::api {

// EP_Wait, with failures reported as `call`: waits for *request, writes its status
// (EP_ERROR left alone), frees it and sets *request to EP_REQUEST_NULL; an
// EP_REQUEST_NULL request gives the empty status.  The request's error handler applies.
int wait_request(EP_Request* request, EP_Status* status, const char* call);

}  // namespace ep::api

#endif  // EP_API_REQUEST_H_
