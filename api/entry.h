// entry.h - what every C entry point of libep shares: init and handle checks,
// argument checks, error handlers, the concurrent-entry guard.
//
// Internal to api/ (the files of //api include it); not part of the public header.
#ifndef EP_API_ENTRY_H_
#define EP_API_ENTRY_H_

#include <cstdio>

#include "ep/ep.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/p2p.h"
#include "runtime/request.h"
#include "runtime/runtime.h"

// EP_Group is a pointer to this.
struct ep_group_s {
  ep::runtime::Group g;
};

namespace ep::api {

using ep::runtime::Endpoint;
using ep::runtime::fail;
using ep::runtime::Request;
using ep::runtime::runtime;
using ep::runtime::SendMode;
using ep::runtime::TypeInfo;

// Applies the communicator's error handler to a failure code.
inline int handle(EP_Errhandler eh, int code) {
  if (code != EP_SUCCESS && eh == EP_ERRORS_ARE_FATAL) {
    std::fprintf(stderr, "libep: fatal error: %s\n", ep::runtime::error_string(code).c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  return code;
}
inline int handle(Endpoint* ep, int code) { return handle(ep->errhandler, code); }

#define EP_CHECK_INIT(call)                                                              \
  do {                                                                                   \
    if (runtime() == nullptr) {                                                          \
      return fail(EP_ERR_NOT_INITIALIZED, call, "libep is not initialized (call EP_Init)"); \
    }                                                                                    \
  } while (0)

inline Endpoint* as_endpoint(EP_Comm c) {
  auto* ep = reinterpret_cast<Endpoint*>(c);
  return (ep != nullptr && ep->magic == Endpoint::kMagic) ? ep : nullptr;
}

// Holds an endpoint for the duration of one call; detects concurrent entry.
class Entry {
 public:
  explicit Entry(Endpoint* ep) : ep_(ep) {
    // acquire: pairs with the release in ~Entry() of the previous user of the handle.
    ok_ = ep_->busy.exchange(1, std::memory_order_acquire) == 0;
  }
  ~Entry() {
    if (ok_) ep_->busy.store(0, std::memory_order_release);  // pairs: the exchange above
  }
  bool ok() const { return ok_; }

 private:
  Endpoint* ep_;
  bool ok_;
};

#define EP_GET_COMM(ep, comm, call)                                                 \
  EP_CHECK_INIT(call);                                                              \
  Endpoint* ep = as_endpoint(comm);                                                 \
  if (ep == nullptr) {                                                              \
    return fail(EP_ERR_COMM, call, "communicator is %s",                            \
                (comm) == EP_COMM_NULL ? "EP_COMM_NULL" : "not a valid endpoint handle"); \
  }                                                                                 \
  Entry entry_guard(ep);                                                            \
  if (!entry_guard.ok()) {                                                          \
    return handle(ep, fail(EP_ERR_CONCURRENT, call,                                 \
                           "another thread is inside a call on endpoint %d of this " \
                           "communicator",                                          \
                           ep->rank));                                              \
  }

inline int check_type(MPI_Datatype type, TypeInfo* ti, const char* call, const char* arg) {
  if (!ep::runtime::describe(type, ti)) {
    return fail(EP_ERR_TYPE, call, "%s is not a valid committed datatype", arg);
  }
  return EP_SUCCESS;
}

inline bool is_builtin(MPI_Datatype type) {
  int ni = 0, na = 0, nd = 0, combiner = 0;
  MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
  return combiner == MPI_COMBINER_NAMED;
}

inline int check_buffer(const void* buf, int count, MPI_Datatype type, TypeInfo* ti, const char* call) {
  if (count < 0) return fail(EP_ERR_COUNT, call, "count %d is negative", count);
  int err = check_type(type, ti, call, "datatype");
  if (err != EP_SUCCESS) return err;
  if (buf == nullptr && count > 0 && ti->size > 0 && is_builtin(type)) {
    return fail(EP_ERR_BUFFER, call, "buffer is NULL but count is %d", count);
  }
  return EP_SUCCESS;
}

inline ep::progress::Policy policy() { return runtime()->config.progress_policy; }

}  // namespace ep::api

#endif  // EP_API_ENTRY_H_
