// inter.cc - the intercommunicator collectives (blocking): Barrier, Bcast, Allreduce.
// Each group first meets on its local_comm (runtime/exchange.h's barrier and bcast, or
// an allreduce through the engine); the groups' rank-0 endpoints swap the results over
// hidden messages on the intercommunicator.
#include <string>

#include "base/types.h"
#include "collectives/coll.h"
#include "collectives/reduce_util.h"
#include "runtime/exchange.h"
#include "runtime/request.h"

namespace ep::collectives {
namespace {

// This endpoint in its group's local_comm.
Endpoint* local_side(Endpoint* ep) { return ep->comm->local_comm->local[ep->local_index].get(); }

}  // namespace

int inter_barrier(Endpoint* ep) {
  // Everyone of my group arrived; the rank-0 endpoints swap that news; then release.
  const int tag = runtime::hidden_tag(ep);
  Endpoint* lep = local_side(ep);
  runtime::barrier(lep);
  if (ep->rank == 0) runtime::sendrecv_hidden(ep, 0, tag, std::string(), 0, tag);
  runtime::bcast(lep, 0, std::string());
  return EP_SUCCESS;
}

int inter_bcast(Endpoint* ep, void* buf, int count, MPI_Datatype type, const TypeInfo& ti,
                int root) {
  const int tag = runtime::hidden_tag(ep);
  if (root == kRoot) {  // the root sends to rank 0 of the other group
    runtime::send_hidden(ep, 0, tag, pack_n(buf, count, type, ti));
    return EP_SUCCESS;
  }
  if (root == kProcNull) return EP_SUCCESS;  // the rest of the root's group
  std::string data;
  if (ep->rank == 0) data = runtime::recv_hidden(ep, root, tag);
  data = runtime::bcast(local_side(ep), 0, std::move(data));
  unpack_n(data, buf, count, type, ti);
  return EP_SUCCESS;
}

int inter_allreduce(Endpoint* ep, const void* sbuf, void* rbuf, int count, MPI_Datatype type,
                    const TypeInfo& ti, MPI_Op op) {
  // Each group reduces its own data (an allreduce on its local_comm); the rank-0
  // endpoints swap the results; each group receives the other group's reduction.
  const int tag = runtime::hidden_tag(ep);
  Endpoint* lep = local_side(ep);
  OpArgs a;
  a.op = op;
  a.count = count;
  a.type = type;
  a.ti = ti;
  TypedBuffer own(count, type);
  Part part;
  part.sbuf = sbuf;
  part.rbuf = own.get();
  Request* r = start(lep, Kind::kAllreduce, part, a);
  runtime::request_wait(r);
  runtime::request_unref(r);
  std::string other;
  if (ep->rank == 0)
    other = runtime::sendrecv_hidden(ep, 0, tag, pack_n(own.get(), count, type, ti), 0, tag);
  unpack_n(runtime::bcast(lep, 0, std::move(other)), rbuf, count, type, ti);
  return EP_SUCCESS;
}

}  // namespace ep::collectives
