#include "collectives/coll.h"

#include <memory>
#include <string>
#include <vector>

#include "ep/ep.h"
#include "runtime/exchange.h"

namespace ep::collectives {
namespace {

std::string pack_all(const void* buf, int count, MPI_Datatype type, const TypeInfo& ti) {
  std::string out(static_cast<size_t>(ti.size * count), '\0');
  if (!out.empty()) runtime::pack(buf, count, type, ti, out.data());
  return out;
}

void unpack_all(const std::string& data, void* buf, int count, MPI_Datatype type,
                const TypeInfo& ti) {
  if (!data.empty()) {
    runtime::unpack(data.data(), static_cast<int64_t>(data.size()), buf, count, type, ti);
  }
}

// A scratch buffer that holds `count` elements of `type` laid out as in memory.
class TypedBuffer {
 public:
  TypedBuffer(int count, MPI_Datatype type) {
    MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
    MPI_Type_get_extent(type, &lb, &extent);
    MPI_Type_get_true_extent(type, &tlb, &textent);
    size_t span = count > 0 ? static_cast<size_t>(textent + (count - 1) * extent) : 0;
    mem_.resize(span + 1);
    base_ = mem_.data() - tlb;
  }
  void* get() { return base_; }

 private:
  std::vector<char> mem_;
  char* base_;
};

// The reduction of the packed contributions by rank, in rank order, packed.
std::string reduce_in_rank_order(const std::vector<std::string>& by_rank, int count,
                                 MPI_Datatype type, const TypeInfo& ti, MPI_Op op) {
  const int n = static_cast<int>(by_rank.size());
  if (n == 0 || count == 0) return std::string();
  TypedBuffer acc(count, type), tmp(count, type);
  unpack_all(by_rank[n - 1], acc.get(), count, type, ti);
  for (int r = n - 2; r >= 0; --r) {  // acc = x_r op acc
    unpack_all(by_rank[r], tmp.get(), count, type, ti);
    MPI_Reduce_local(tmp.get(), acc.get(), count, type, op);
  }
  return pack_all(acc.get(), count, type, ti);
}

// Intracommunicator allreduce; returns the packed result.
std::string allreduce_packed(Endpoint* ep, std::string mine, int count, MPI_Datatype type,
                             const TypeInfo& ti, MPI_Op op) {
  auto res = runtime::allgather(
      ep, std::move(mine), [count, type, ti, op](std::vector<std::string>& by_rank) {
        return std::static_pointer_cast<void>(
            std::make_shared<std::string>(reduce_in_rank_order(by_rank, count, type, ti, op)));
      });
  return *std::static_pointer_cast<std::string>(res);
}

Endpoint* local_side(Endpoint* ep) { return ep->comm->local_comm->local[ep->local_index].get(); }

}  // namespace

int barrier(Endpoint* ep) {
  if (!ep->comm->inter) {
    runtime::barrier(ep);
    return EP_SUCCESS;
  }
  // Everyone of my group arrived; the rank-0 endpoints swap that news; then release.
  const int tag = runtime::hidden_tag(ep);
  Endpoint* lep = local_side(ep);
  runtime::barrier(lep);
  if (ep->rank == 0) runtime::sendrecv_hidden(ep, 0, tag, std::string(), 0, tag);
  runtime::bcast(lep, 0, std::string());
  return EP_SUCCESS;
}

int bcast(Endpoint* ep, void* buf, int count, MPI_Datatype type, const TypeInfo& ti, int root) {
  if (!ep->comm->inter) {
    std::string data;
    if (ep->rank == root) data = pack_all(buf, count, type, ti);
    data = runtime::bcast(ep, root, std::move(data));
    if (ep->rank != root) unpack_all(data, buf, count, type, ti);
    return EP_SUCCESS;
  }
  const int tag = runtime::hidden_tag(ep);
  if (root == EP_ROOT) {  // the root sends to rank 0 of the other group
    runtime::send_hidden(ep, 0, tag, pack_all(buf, count, type, ti));
    return EP_SUCCESS;
  }
  if (root == EP_PROC_NULL) return EP_SUCCESS;  // the rest of the root's group
  std::string data;
  if (ep->rank == 0) data = runtime::recv_hidden(ep, root, tag);
  data = runtime::bcast(local_side(ep), 0, std::move(data));
  unpack_all(data, buf, count, type, ti);
  return EP_SUCCESS;
}

int allreduce(Endpoint* ep, const void* sbuf, void* rbuf, int count, MPI_Datatype type,
              const TypeInfo& ti, MPI_Op op) {
  const void* in = sbuf == EP_IN_PLACE ? rbuf : sbuf;
  std::string mine = pack_all(in, count, type, ti);
  if (!ep->comm->inter) {
    unpack_all(allreduce_packed(ep, std::move(mine), count, type, ti, op), rbuf, count, type, ti);
    return EP_SUCCESS;
  }
  // Each group reduces its own data; the rank-0 endpoints swap the results; each
  // group receives the other group's reduction.
  const int tag = runtime::hidden_tag(ep);
  Endpoint* lep = local_side(ep);
  std::string own = allreduce_packed(lep, std::move(mine), count, type, ti, op);
  std::string other;
  if (ep->rank == 0) other = runtime::sendrecv_hidden(ep, 0, tag, own, 0, tag);
  unpack_all(runtime::bcast(lep, 0, std::move(other)), rbuf, count, type, ti);
  return EP_SUCCESS;
}

}  // namespace ep::collectives
