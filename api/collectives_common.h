// collectives_common.h - what the collective entry points of collectives.cc (every
// communicator) and collectives_inter.cc (the intercommunicator paths) share: starting
// an operation, and the argument checks whose meaning does not depend on the kind of
// communicator.
//
// Threading: the caller's thread, holding ep.  Memory ordering: none of its own (the
// engine's: collectives/engine.h).
#ifndef EP_API_COLLECTIVES_COMMON_H_
#define EP_API_COLLECTIVES_COMMON_H_

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "api/entry.h"
#include "collectives/coll.h"

namespace ep::api {

// Starts the collective; a blocking call (request == nullptr) takes the blocking fast
// path where it applies (collectives/fast.h), else waits for the operation.  Returns the
// code before the error handler (the caller applies handle()).
int run_collective(Endpoint* ep, collectives::Kind kind, collectives::Part part,
                   const collectives::OpArgs& a, EP_Request* request);

using collectives::Knows;

// Ends a collective entry point.  With err == EP_SUCCESS it starts the collective
// (run_collective).  Otherwise the endpoint still takes part, as a hole
// (collectives/engine.h, "Erroneous endpoints") that knows `knows` of `a`, so that the
// other endpoints complete (API.md): a blocking call waits for the operation, a
// nonblocking one lets it finish on its own and returns no request.  Returns the code
// after ep's error handler.
int run_or_join(Endpoint* ep, collectives::Kind kind, collectives::Part part,
                const collectives::OpArgs& a, Knows knows, EP_Request* request, int err);
// A nonblocking entry point whose caller passed a NULL request pointer passes this on
// instead, so that the call still takes part (as a hole) before it fails.
EP_Request* missing_request();
// EP_ERR_ARG naming `call` if `request` is missing_request(), else EP_SUCCESS.
int check_request(EP_Request* request, const char* call);
// What an endpoint knows of a reduction's shared arguments (op, count, datatype, and the
// root when `rooted`), whatever its own buffers.
Knows reduction_knows(bool root_ok, MPI_Op op, int count, MPI_Datatype type);

// MPI_OP_NULL is EP_ERR_OP.
int check_op(MPI_Op op, const char* call);
// A (buffer, count, datatype) triple named `what` ("send ", "receive ", or ""): a negative
// count is EP_ERR_COUNT, EP_IN_PLACE EP_ERR_BUFFER (callers let it through only where
// MPI allows it), an invalid or uncommitted datatype EP_ERR_TYPE, a NULL buffer with data
// EP_ERR_BUFFER.  Fills *ti.
int check_triple(const void* buf, int count, MPI_Datatype type, TypeInfo* ti, const char* what,
                 const char* call);
// Per-peer counts and displacements: NULL arrays are EP_ERR_ARG, a negative count
// EP_ERR_COUNT naming the peer.
int check_counts(const int* counts, const int* displs, int n, const char* what, const char* call);
// n counts of `count`; their displacements packed one after another: rank * count
// elements, 64-bit (the product need not fit in an int, and it is computed before the
// count is checked).
std::vector<int> uniform(int n, int count);
std::vector<int64_t> strided(int n, int count);

}  // namespace ep::api

#endif  // EP_API_COLLECTIVES_COMMON_H_
