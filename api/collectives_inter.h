// collectives_inter.h - the collective entry points' intercommunicator path: argument
// checks and dispatch (collectives_inter.cc), called by the entry points of
// collectives.cc when the communicator is an intercommunicator.
//
// What it is: one function per family.  Each is called with `ep` held (the caller did
// EP_GET_COMM), checks the arguments MPI 3.1 section 5.2.2 calls significant on an
// intercommunicator, starts the collective (collectives/coll.h) and waits for it when
// `request` is nullptr, else stores its request there; it returns the code after ep's
// error handler (handle()).  Semantics (coll.h): `root` is EP_ROOT at the root,
// EP_PROC_NULL at the rest of its group, the root's rank in the remote group at the
// other group's endpoints; per-rank count and displacement arrays have one entry per
// remote rank (Reduce_scatter's recvcounts: one per local rank); EP_IN_PLACE is refused
// (EP_ERR_BUFFER).  A root out of range, a negative scalar count and EP_IN_PLACE are
// refused wherever they are passed, significant there or not; an endpoint that fails a
// check still takes part (run_or_join, collectives_common.h).
//
// Threading: the caller's thread, holding ep; collective over both groups.
//
// Memory ordering: none of its own (the engine's: collectives/engine.h).
#ifndef EP_API_COLLECTIVES_INTER_H_
#define EP_API_COLLECTIVES_INTER_H_

#include "ep/ep.h"
#include "runtime/comm.h"

namespace ep::api {

int inter_barrier(runtime::Endpoint* ep, EP_Request* request, const char* call);
int inter_bcast(runtime::Endpoint* ep, void* buf, int count, MPI_Datatype type, int root,
                EP_Request* request, const char* call);
// Gather(v) (all = false) and Allgather(v) (root ignored); the arrays are used only
// when `vector`, else rcount each.
int inter_gather(runtime::Endpoint* ep, const void* sbuf, int scount, MPI_Datatype stype,
                 void* rbuf, int rcount, const int* rcounts, const int* displs, MPI_Datatype rtype,
                 int root, bool all, bool vector, EP_Request* request, const char* call);
// Scatter(v); the arrays are used only when `vector`, else scount each.
int inter_scatter(runtime::Endpoint* ep, const void* sbuf, int scount, const int* scounts,
                  const int* displs, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype,
                  int root, bool vector, EP_Request* request, const char* call);
// Alltoall(v); the arrays are used only when `vector`.
int inter_alltoall(runtime::Endpoint* ep, const void* sbuf, int scount, const int* scounts,
                   const int* sdispls, MPI_Datatype stype, void* rbuf, int rcount,
                   const int* rcounts, const int* rdispls, MPI_Datatype rtype, bool vector,
                   EP_Request* request, const char* call);


int inter_alltoallw(runtime::Endpoint* ep, const void* sbuf, const int* scounts, const int* sdispls,
                    const MPI_Datatype* stypes, void* rbuf, const int* rcounts, const int* rdispls,
                    const MPI_Datatype* rtypes, EP_Request* request, const char* call);
// Reduce (all = false) and Allreduce (all = true, root ignored).
int inter_reduce(runtime::Endpoint* ep, const void* sbuf, void* rbuf, int count, MPI_Datatype type,
                 MPI_Op op, int root, bool all, EP_Request* request, const char* call);
// Reduce_scatter (rcounts: one per local rank) and Reduce_scatter_block (block: rcount
// each; the vector is rcount times the local group's size).
int inter_reduce_scatter(runtime::Endpoint* ep, const void* sbuf, void* rbuf, const int* rcounts,
                         int rcount, MPI_Datatype type, MPI_Op op, bool block, EP_Request* request,
                         const char* call);

}  // namespace ep::api

#endif  // EP_API_COLLECTIVES_INTER_H_
