// collectives.cc - the C entry points of the collectives: argument checks and dispatch.
//
// An endpoint whose arguments fail a check returns the error but still takes part in
// the collective, contributing and receiving nothing (run_or_join; collectives/engine.h,
// "Erroneous endpoints"), so the other endpoints complete the call and the communicator
// stays usable.  Arguments MPI calls significant only at the root are checked only there.
#include <algorithm>
#include <numeric>
#include <vector>

#include "api/collectives_common.h"
#include "api/collectives_inter.h"
#include "api/entry.h"
#include "collectives/coll.h"
#include "ep/ep.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers
using ep::collectives::Kind;
using ep::collectives::OpArgs;
using ep::collectives::Part;

int intra_only(Endpoint* ep, const char* call) {
  if (!ep->comm->inter) return EP_SUCCESS;
  return fail(EP_ERR_COMM, call,
              "comm is an intercommunicator (MPI defines no scan on intercommunicators)");
}

bool root_ok(Endpoint* ep, int root) { return root >= 0 && root < ep->comm->size; }

int check_root(Endpoint* ep, int root, const char* call) {
  if (root == EP_ROOT) {
    return fail(EP_ERR_ROOT, call, "root EP_ROOT is only valid on an intercommunicator");
  }
  if (!root_ok(ep, root)) {
    return fail(EP_ERR_ROOT, call, "root %d is not a rank of the communicator (size %d)", root,
                ep->comm->size);
  }
  return EP_SUCCESS;
}

// Every check below records the first failure in `err` and goes on only to learn what
// the endpoint knows of the operation: a failed endpoint still takes part (run_or_join).

int reduction(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
              EP_Comm comm, EP_Request* request, Kind kind, const char* call) {
  EP_GET_COMM(ep, comm, call);
  if (ep->comm->inter && (kind == Kind::kReduce || kind == Kind::kAllreduce)) {
    return inter_reduce(ep, sbuf, rbuf, count, type, op, root, kind == Kind::kAllreduce, request,
                        call);
  }
  int err = check_request(request, call);
  if (err == EP_SUCCESS) err = intra_only(ep, call);  // Scan, Exscan
  if (ep->comm->inter) return handle(ep, err);  // no such collective: nobody takes part
  if (err == EP_SUCCESS && kind == Kind::kReduce) err = check_root(ep, root, call);
  if (err == EP_SUCCESS) err = check_op(op, call);
  OpArgs a;
  const bool want_result = kind != Kind::kReduce || ep->rank == root;
  // recvbuf matters only where the result goes (the root of EP_Reduce).
  if (err == EP_SUCCESS) {
    err = check_triple(want_result ? rbuf : &a, count, type, &a.ti, "receive ", call);
  }
  if (err == EP_SUCCESS && sbuf == EP_IN_PLACE && !want_result) {
    err = fail(EP_ERR_BUFFER, call, "sendbuf EP_IN_PLACE is only valid at the root");
  }
  if (err == EP_SUCCESS && sbuf == nullptr && count > 0 && a.ti.size > 0 && a.ti.named) {
    err = fail(EP_ERR_BUFFER, call, "sendbuf is NULL but count is %d", count);
  }
  const Knows knows = reduction_knows(kind != Kind::kReduce || root_ok(ep, root), op, count, type);
  a.op = op;
  a.count = count;
  a.type = type;
  a.root = root;
  if (knows == Knows::kAll) ep::runtime::describe(type, &a.ti);
  Part p;
  p.sbuf = sbuf;
  p.rbuf = rbuf;
  return run_or_join(ep, kind, std::move(p), a, knows, request, err);
}

int bcast(void* buf, int count, MPI_Datatype type, int root, EP_Comm comm, EP_Request* request,
          const char* call) {
  EP_GET_COMM(ep, comm, call);
  if (ep->comm->inter) return inter_bcast(ep, buf, count, type, root, request, call);
  int err = check_request(request, call);
  if (err == EP_SUCCESS) err = check_root(ep, root, call);
  Part p;
  if (err == EP_SUCCESS) err = check_triple(buf, count, type, &p.rti, "", call);
  OpArgs a;
  a.root = root;
  p.rbuf = buf;
  p.rcount = count;
  p.rtype = type;
  return run_or_join(ep, Kind::kBcast, std::move(p), a,
                     root_ok(ep, root) ? Knows::kAll : Knows::kNothing, request, err);
}

// Gather(v) and Allgather(v): rcounts/displs (nullptr: uniform rcount) matter at
// the root (everywhere for allgather).
int gather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
           const int* rcounts, const int* displs, MPI_Datatype rtype, int root, EP_Comm comm,
           bool all, bool vector, EP_Request* request, const char* call) {
  EP_GET_COMM(ep, comm, call);
  if (ep->comm->inter) {
    return inter_gather(ep, sbuf, scount, stype, rbuf, rcount, rcounts, displs, rtype, root, all,
                        vector, request, call);
  }
  int err = check_request(request, call);
  if (err == EP_SUCCESS && !all) err = check_root(ep, root, call);
  const int n = ep->comm->size;
  const bool receiver = all || ep->rank == root;
  Part p;
  if (err == EP_SUCCESS && sbuf == EP_IN_PLACE && !receiver) {
    err = fail(EP_ERR_BUFFER, call, "sendbuf EP_IN_PLACE is only valid at the root");
  }
  if (err == EP_SUCCESS && sbuf != EP_IN_PLACE) {
    err = check_triple(sbuf, scount, stype, &p.sti, "send ", call);
  }
  if (err == EP_SUCCESS && receiver) {
    if (vector) {
      err = check_counts(rcounts, displs, n, "receive ", call);
      if (err == EP_SUCCESS) {
        p.rcounts.assign(rcounts, rcounts + n);
        p.rdispls.assign(displs, displs + n);
      }
    } else {
      p.rcounts = uniform(n, rcount);
      p.rdispls = strided(n, rcount);
    }
    int64_t total = 0;
    for (int c : p.rcounts) total += c;
    if (err == EP_SUCCESS) {
      err = check_triple(rbuf, vector ? (total > 0 ? 1 : 0) : rcount, rtype, &p.rti, "receive ",
                         call);
    }
  }
  p.sbuf = sbuf;
  p.scount = scount;
  p.stype = stype;
  p.rbuf = rbuf;
  p.rtype = rtype;
  OpArgs a;
  a.root = root;
  const Knows knows = all || root_ok(ep, root) ? Knows::kAll : Knows::kNothing;
  return run_or_join(ep, all ? Kind::kAllgather : Kind::kGather, std::move(p), a, knows, request,
                     err);
}

int scatter(const void* sbuf, int scount, const int* scounts, const int* displs, MPI_Datatype stype,
            void* rbuf, int rcount, MPI_Datatype rtype, int root, EP_Comm comm, bool vector,
            EP_Request* request, const char* call) {
  EP_GET_COMM(ep, comm, call);
  if (ep->comm->inter) {
    return inter_scatter(ep, sbuf, scount, scounts, displs, stype, rbuf, rcount, rtype, root,
                         vector, request, call);
  }
  int err = check_request(request, call);
  if (err == EP_SUCCESS) err = check_root(ep, root, call);
  const int n = ep->comm->size;
  Part p;
  if (err == EP_SUCCESS && ep->rank == root) {
    if (vector) {
      err = check_counts(scounts, displs, n, "send ", call);
      if (err == EP_SUCCESS) {
        p.scounts.assign(scounts, scounts + n);
        p.sdispls.assign(displs, displs + n);
      }
    } else {
      p.scounts = uniform(n, scount);
      p.sdispls = strided(n, scount);
    }
    int64_t total = 0;
    for (int c : p.scounts) total += c;
    if (err == EP_SUCCESS)
      err = check_triple(sbuf, vector ? (total > 0 ? 1 : 0) : scount, stype, &p.sti, "send ", call);
  } else if (err == EP_SUCCESS && rbuf == EP_IN_PLACE) {
    err = fail(EP_ERR_BUFFER, call, "recvbuf EP_IN_PLACE is only valid at the root");
  }
  if (err == EP_SUCCESS && rbuf != EP_IN_PLACE) {
    err = check_triple(rbuf, rcount, rtype, &p.rti, "receive ", call);
  }
  p.sbuf = sbuf;
  p.stype = stype;
  p.rbuf = rbuf;
  p.rcount = rcount;
  p.rtype = rtype;
  OpArgs a;
  a.root = root;
  return run_or_join(ep, Kind::kScatter, std::move(p), a,
                     root_ok(ep, root) ? Knows::kAll : Knows::kNothing, request, err);
}

int alltoall(const void* sbuf, const int* scounts, const int* sdispls, MPI_Datatype stype,
             void* rbuf, const int* rcounts, const int* rdispls, MPI_Datatype rtype, EP_Comm comm,
             int scount, int rcount, bool vector, EP_Request* request, const char* call) {
  EP_GET_COMM(ep, comm, call);
  if (ep->comm->inter) {
    return inter_alltoall(ep, sbuf, scount, scounts, sdispls, stype, rbuf, rcount, rcounts, rdispls,
                          rtype, vector, request, call);
  }
  int err = check_request(request, call);
  const int n = ep->comm->size;
  Part p;
  if (err == EP_SUCCESS && vector) {
    err = check_counts(rcounts, rdispls, n, "receive ", call);
    if (err == EP_SUCCESS) {
      p.rcounts.assign(rcounts, rcounts + n);
      p.rdispls.assign(rdispls, rdispls + n);
    }
    if (err == EP_SUCCESS && sbuf != EP_IN_PLACE) {
      err = check_counts(scounts, sdispls, n, "send ", call);
      if (err == EP_SUCCESS) {
        p.scounts.assign(scounts, scounts + n);
        p.sdispls.assign(sdispls, sdispls + n);
      }
    }
  } else if (err == EP_SUCCESS) {
    p.rcounts = uniform(n, rcount);
    p.rdispls = strided(n, rcount);
    p.scounts = uniform(n, scount);
    p.sdispls = strided(n, scount);
  }
  if (err == EP_SUCCESS) {
    int64_t rtotal = std::accumulate(p.rcounts.begin(), p.rcounts.end(), int64_t{0});
    int64_t stotal = std::accumulate(p.scounts.begin(), p.scounts.end(), int64_t{0});
    err = check_triple(rbuf, vector ? (rtotal > 0 ? 1 : 0) : rcount, rtype, &p.rti, "receive ",
                       call);
    if (err == EP_SUCCESS && sbuf != EP_IN_PLACE) {
      err = check_triple(sbuf, vector ? (stotal > 0 ? 1 : 0) : scount, stype, &p.sti, "send ",
                         call);
    }
  }
  p.sbuf = sbuf;
  p.stype = stype;
  p.rbuf = rbuf;
  p.rtype = rtype;
  return run_or_join(ep, Kind::kAlltoall, std::move(p), OpArgs(), Knows::kAll, request, err);
}

// The per-peer datatypes of Alltoallw, described into *tis.
int check_types(const MPI_Datatype* types, int n, std::vector<TypeInfo>* tis, const char* what,
                const char* call) {
  if (types == nullptr) return fail(EP_ERR_ARG, call, "%stypes are NULL", what);
  tis->resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (!ep::runtime::describe(types[i], &(*tis)[static_cast<size_t>(i)])) {
      return fail(EP_ERR_TYPE, call, "%stype for rank %d is not a valid committed datatype", what,
                  i);
    }
  }
  return EP_SUCCESS;
}

// An Alltoallw buffer: NULL is an error where some block of a predefined type has data
// (a derived type may address absolute memory); EP_IN_PLACE only where the caller
// allows it.
int check_wbuf(const void* buf, const Part& p, bool send, const char* call) {
  const char* what = send ? "send" : "receive";
  if (buf == EP_IN_PLACE) {
    return fail(EP_ERR_BUFFER, call, "%sbuffer is EP_IN_PLACE, which MPI does not allow here",
                what);
  }
  if (buf != nullptr) return EP_SUCCESS;
  const std::vector<int>& counts = send ? p.scounts : p.rcounts;
  const std::vector<TypeInfo>& tis = send ? p.stis : p.rtis;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0 && tis[i].size > 0 && tis[i].named) {
      return fail(EP_ERR_BUFFER, call, "%sbuffer is NULL but its count for rank %zu is %d", what,
                  i, counts[i]);
    }
  }
  return EP_SUCCESS;
}

// Alltoallw: counts, byte displacements and datatypes by peer rank.  Under EP_IN_PLACE
// (sbuf) the send arguments are ignored, as MPI says.
int alltoallw(const void* sbuf, const int* scounts, const int* sdispls, const MPI_Datatype* stypes,
              void* rbuf, const int* rcounts, const int* rdispls, const MPI_Datatype* rtypes,
              EP_Comm comm, EP_Request* request, const char* call) {
  EP_GET_COMM(ep, comm, call);
  if (ep->comm->inter) {
    return inter_alltoallw(ep, sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes,
                           request, call);
  }
  const int n = ep->comm->size;
  Part p;
  int err = check_request(request, call);
  if (err == EP_SUCCESS) err = check_counts(rcounts, rdispls, n, "receive ", call);
  if (err == EP_SUCCESS) err = check_types(rtypes, n, &p.rtis, "receive ", call);
  if (err == EP_SUCCESS) {
    p.rcounts.assign(rcounts, rcounts + n);
    p.rdispls.assign(rdispls, rdispls + n);
    p.rtypes.assign(rtypes, rtypes + n);
  }
  if (err == EP_SUCCESS && sbuf != EP_IN_PLACE) {
    err = check_counts(scounts, sdispls, n, "send ", call);
    if (err == EP_SUCCESS) err = check_types(stypes, n, &p.stis, "send ", call);
    if (err == EP_SUCCESS) {
      p.scounts.assign(scounts, scounts + n);
      p.sdispls.assign(sdispls, sdispls + n);
      p.stypes.assign(stypes, stypes + n);
    }
  }
  if (err == EP_SUCCESS) err = check_wbuf(rbuf, p, /*send=*/false, call);
  if (err == EP_SUCCESS && sbuf != EP_IN_PLACE) err = check_wbuf(sbuf, p, /*send=*/true, call);
  p.sbuf = sbuf;
  p.rbuf = rbuf;
  return run_or_join(ep, Kind::kAlltoallw, std::move(p), OpArgs(), Knows::kAll, request, err);
}

int reduce_scatter(const void* sbuf, void* rbuf, const int* rcounts, int rcount, MPI_Datatype type,
                   MPI_Op op, EP_Comm comm, bool block, EP_Request* request, const char* call) {
  EP_GET_COMM(ep, comm, call);
  if (ep->comm->inter) {
    return inter_reduce_scatter(ep, sbuf, rbuf, rcounts, rcount, type, op, block, request,
                                call);
  }
  int err = check_request(request, call);
  if (err == EP_SUCCESS) err = check_op(op, call);
  const int n = ep->comm->size;
  Part p;
  if (block) {
    if (err == EP_SUCCESS && rcount < 0) {
      err = fail(EP_ERR_COUNT, call, "recvcount %d is negative", rcount);
    }
    p.rcounts = uniform(n, rcount);
  } else if (rcounts == nullptr) {
    if (err == EP_SUCCESS) err = fail(EP_ERR_ARG, call, "recvcounts is NULL");
  } else {
    for (int i = 0; i < n && err == EP_SUCCESS; ++i) {
      if (rcounts[i] < 0) {
        err = fail(EP_ERR_COUNT, call, "recvcounts[%d] = %d is negative", i, rcounts[i]);
      }
    }
    p.rcounts.assign(rcounts, rcounts + n);
  }
  int64_t total = std::accumulate(p.rcounts.begin(), p.rcounts.end(), int64_t{0});
  if (err == EP_SUCCESS && total > INT32_MAX) {
    err = fail(EP_ERR_COUNT, call, "the counts add up to more than INT_MAX");
  }
  OpArgs a;
  if (err == EP_SUCCESS) {
    err = check_triple(rbuf, p.rcounts[ep->rank], type, &a.ti, "receive ", call);
  }
  if (err == EP_SUCCESS && sbuf == nullptr && total > 0 && a.ti.size > 0 && a.ti.named) {
    err = fail(EP_ERR_BUFFER, call, "sendbuf is NULL but the counts add up to %lld",
               static_cast<long long>(total));
  }
  // The vector's length is the one shared argument besides op and datatype.
  const bool counts_ok = !p.rcounts.empty() && total <= INT32_MAX &&
                         std::all_of(p.rcounts.begin(), p.rcounts.end(), [](int c) { return c >= 0; });
  const Knows knows =
      reduction_knows(true, op, counts_ok ? static_cast<int>(total) : -1, type);
  if (knows == Knows::kAll) ep::runtime::describe(type, &a.ti);
  a.op = op;
  a.count = static_cast<int>(total);
  a.type = type;
  p.sbuf = sbuf;
  p.rbuf = rbuf;
  if (sbuf == EP_IN_PLACE) {
    // MPI: the input is the whole vector in recvbuf, the result its first block.
    p.sbuf = rbuf;
  }
  return run_or_join(ep, Kind::kReduceScatter, std::move(p), a, knows, request, err);
}

int ibarrier(EP_Comm comm, EP_Request* request, const char* call) {
  EP_GET_COMM(ep, comm, call);
  if (ep->comm->inter) return inter_barrier(ep, request, call);
  return run_or_join(ep, Kind::kBarrier, Part(), OpArgs(), Knows::kAll, request,
                     check_request(request, call));
}

}  // namespace

int EP_Barrier(EP_Comm comm) { return ibarrier(comm, nullptr, "EP_Barrier"); }

int EP_Ibarrier(EP_Comm comm, EP_Request* request) {
  EP_CHECK_INIT("EP_Ibarrier");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return ibarrier(comm, request, "EP_Ibarrier");
}

int EP_Bcast(void* buf, int count, MPI_Datatype datatype, int root, EP_Comm comm) {
  return bcast(buf, count, datatype, root, comm, nullptr, "EP_Bcast");
}

int EP_Ibcast(void* buf, int count, MPI_Datatype datatype, int root, EP_Comm comm,
              EP_Request* request) {
  EP_CHECK_INIT("EP_Ibcast");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return bcast(buf, count, datatype, root, comm, request, "EP_Ibcast");
}

int EP_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                 EP_Comm comm) {
  return reduction(sendbuf, recvbuf, count, datatype, op, 0, comm, nullptr, Kind::kAllreduce,
                   "EP_Allreduce");
}

int EP_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  EP_Comm comm, EP_Request* request) {
  EP_CHECK_INIT("EP_Iallreduce");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return reduction(sendbuf, recvbuf, count, datatype, op, 0, comm, request, Kind::kAllreduce,
                   "EP_Iallreduce");
}

int EP_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              int root, EP_Comm comm) {
  return reduction(sendbuf, recvbuf, count, datatype, op, root, comm, nullptr, Kind::kReduce,
                   "EP_Reduce");
}

int EP_Ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, EP_Comm comm, EP_Request* request) {
  EP_CHECK_INIT("EP_Ireduce");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return reduction(sendbuf, recvbuf, count, datatype, op, root, comm, request, Kind::kReduce,
                   "EP_Ireduce");
}

int EP_Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
            EP_Comm comm) {
  return reduction(sendbuf, recvbuf, count, datatype, op, 0, comm, nullptr, Kind::kScan, "EP_Scan");
}

int EP_Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              EP_Comm comm) {
  return reduction(sendbuf, recvbuf, count, datatype, op, 0, comm, nullptr, Kind::kExscan,
                   "EP_Exscan");
}

int EP_Iscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             EP_Comm comm, EP_Request* request) {
  EP_CHECK_INIT("EP_Iscan");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return reduction(sendbuf, recvbuf, count, datatype, op, 0, comm, request, Kind::kScan,
                   "EP_Iscan");
}

int EP_Iexscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               EP_Comm comm, EP_Request* request) {
  EP_CHECK_INIT("EP_Iexscan");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return reduction(sendbuf, recvbuf, count, datatype, op, 0, comm, request, Kind::kExscan,
                   "EP_Iexscan");
}

int EP_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                      MPI_Datatype datatype, MPI_Op op, EP_Comm comm) {
  return reduce_scatter(sendbuf, recvbuf, recvcounts, 0, datatype, op, comm, false, nullptr,
                        "EP_Reduce_scatter");
}

int EP_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, EP_Comm comm, EP_Request* request) {
  EP_CHECK_INIT("EP_Ireduce_scatter");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return reduce_scatter(sendbuf, recvbuf, recvcounts, 0, datatype, op, comm, false, request,
                        "EP_Ireduce_scatter");
}

int EP_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                            MPI_Datatype datatype, MPI_Op op, EP_Comm comm) {
  return reduce_scatter(sendbuf, recvbuf, nullptr, recvcount, datatype, op, comm, true, nullptr,
                        "EP_Reduce_scatter_block");
}

int EP_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, EP_Comm comm,
                             EP_Request* request) {
  EP_CHECK_INIT("EP_Ireduce_scatter_block");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return reduce_scatter(sendbuf, recvbuf, nullptr, recvcount, datatype, op, comm, true, request,
                        "EP_Ireduce_scatter_block");
}

int EP_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, int root, EP_Comm comm) {
  return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr, recvtype, root,
                comm, false, false, nullptr, "EP_Gather");
}

int EP_Igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, EP_Comm comm,
               EP_Request* request) {
  EP_CHECK_INIT("EP_Igather");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr, recvtype, root,
                comm, false, false, request, "EP_Igather");
}

int EP_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
               EP_Comm comm) {
  return gather(sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs, recvtype, root, comm,
                false, true, nullptr, "EP_Gatherv");
}

int EP_Igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                EP_Comm comm, EP_Request* request) {
  EP_CHECK_INIT("EP_Igatherv");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return gather(sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs, recvtype, root, comm,
                false, true, request, "EP_Igatherv");
}

int EP_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, EP_Comm comm) {
  return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr, recvtype, 0,
                comm, true, false, nullptr, "EP_Allgather");
}

int EP_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, EP_Comm comm, EP_Request* request) {
  EP_CHECK_INIT("EP_Iallgather");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr, recvtype, 0,
                comm, true, false, request, "EP_Iallgather");
}

int EP_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  const int recvcounts[], const int displs[], MPI_Datatype recvtype, EP_Comm comm) {
  return gather(sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs, recvtype, 0, comm,
                true, true, nullptr, "EP_Allgatherv");
}

int EP_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype, EP_Comm comm,
                   EP_Request* request) {
  EP_CHECK_INIT("EP_Iallgatherv");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return gather(sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs, recvtype, 0, comm,
                true, true, request, "EP_Iallgatherv");
}

int EP_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, EP_Comm comm) {
  return scatter(sendbuf, sendcount, nullptr, nullptr, sendtype, recvbuf, recvcount, recvtype, root,
                 comm, false, nullptr, "EP_Scatter");
}

int EP_Iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, EP_Comm comm,
                EP_Request* request) {
  EP_CHECK_INIT("EP_Iscatter");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return scatter(sendbuf, sendcount, nullptr, nullptr, sendtype, recvbuf, recvcount, recvtype, root,
                 comm, false, request, "EP_Iscatter");
}

int EP_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                int root, EP_Comm comm) {
  return scatter(sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm,
                 true, nullptr, "EP_Scatterv");
}

int EP_Iscatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, EP_Comm comm, EP_Request* request) {
  EP_CHECK_INIT("EP_Iscatterv");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return scatter(sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm,
                 true, request, "EP_Iscatterv");
}

int EP_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, EP_Comm comm) {
  return alltoall(sendbuf, nullptr, nullptr, sendtype, recvbuf, nullptr, nullptr, recvtype, comm,
                  sendcount, recvcount, false, nullptr, "EP_Alltoall");
}

int EP_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, EP_Comm comm, EP_Request* request) {
  EP_CHECK_INIT("EP_Ialltoall");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return alltoall(sendbuf, nullptr, nullptr, sendtype, recvbuf, nullptr, nullptr, recvtype, comm,
                  sendcount, recvcount, false, request, "EP_Ialltoall");
}

int EP_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                 MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                 MPI_Datatype recvtype, EP_Comm comm) {
  return alltoall(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                  comm, 0, 0, true, nullptr, "EP_Alltoallv");
}

int EP_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                  const int rdispls[], MPI_Datatype recvtype, EP_Comm comm,
                  EP_Request* request) {
  EP_CHECK_INIT("EP_Ialltoallv");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return alltoall(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                  comm, 0, 0, true, request, "EP_Ialltoallv");
}

int EP_Alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                 const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                 const int rdispls[], const MPI_Datatype recvtypes[], EP_Comm comm) {
  return alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                   recvtypes, comm, nullptr, "EP_Alltoallw");
}

int EP_Ialltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                  const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                  const int rdispls[], const MPI_Datatype recvtypes[], EP_Comm comm,
                  EP_Request* request) {
  EP_CHECK_INIT("EP_Ialltoallw");
  if (request == nullptr) request = missing_request();  // fails after taking part
  return alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                   recvtypes, comm, request, "EP_Ialltoallw");
}
