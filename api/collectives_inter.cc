// collectives_inter.cc - the collectives' intercommunicator path: argument checks and
// dispatch (contract: collectives_inter.h).
#include "api/collectives_inter.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "api/collectives_common.h"
#include "api/entry.h"
#include "collectives/coll.h"

namespace ep::api {
namespace {

using ep::collectives::Kind;
using ep::collectives::OpArgs;
using ep::collectives::Part;

bool root_ok(Endpoint* ep, int root) {
  return root == EP_ROOT || root == EP_PROC_NULL || (root >= 0 && root < ep->comm->remote_size);
}

Knows root_knows(Endpoint* ep, int root) { return root_ok(ep, root) ? Knows::kAll : Knows::kNothing; }

// A root argument: EP_ROOT, EP_PROC_NULL or a rank of the remote group.
int check_root(Endpoint* ep, int root, const char* call) {
  if (root_ok(ep, root)) return EP_SUCCESS;
  return fail(EP_ERR_ROOT, call,
              "root %d is not EP_ROOT, EP_PROC_NULL or a rank of the remote group (size %d)", root,
              ep->comm->remote_size);
}

int check_count(int count, const char* what, const char* call) {
  return count < 0 ? fail(EP_ERR_COUNT, call, "%scount %d is negative", what, count) : EP_SUCCESS;
}

int no_in_place(const void* sbuf, const void* rbuf, const char* call) {
  if (sbuf == EP_IN_PLACE || rbuf == EP_IN_PLACE) {
    return fail(EP_ERR_BUFFER, call, "%s is EP_IN_PLACE, which an intercommunicator does not allow",
                sbuf == EP_IN_PLACE ? "sendbuf" : "recvbuf");
  }
  return EP_SUCCESS;
}

// Per-remote-rank counts and displacements (`vector`), or `count` each, strided.
int fill_counts(const int* counts, const int* displs, int count, int n, bool vector,
                std::vector<int>* cv, std::vector<int64_t>* dv, const char* what, const char* call) {
  if (!vector) {
    *cv = uniform(n, count);
    *dv = strided(n, count);
    return EP_SUCCESS;
  }
  const int err = check_counts(counts, displs, n, what, call);
  if (err != EP_SUCCESS) return err;
  cv->assign(counts, counts + n);
  dv->assign(displs, displs + n);
  return EP_SUCCESS;
}

// The buffer check of a v-form: a buffer is needed when any count is positive.
int vector_triple(const void* buf, const std::vector<int>& counts, MPI_Datatype type, TypeInfo* ti,
                  const char* what, const char* call) {
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  return check_triple(buf, total > 0 ? 1 : 0, type, ti, what, call);
}

}  // namespace

// As in collectives.cc, each check records the first failure and a failed endpoint
// still takes part (run_or_join).

int inter_barrier(Endpoint* ep, EP_Request* request, const char* call) {
  return run_or_join(ep, Kind::kBarrier, Part(), OpArgs(), Knows::kAll, request,
                     check_request(request, call));
}

int inter_bcast(Endpoint* ep, void* buf, int count, MPI_Datatype type, int root,
                EP_Request* request, const char* call) {
  int err = check_request(request, call);
  if (err == EP_SUCCESS) err = check_root(ep, root, call);
  if (err == EP_SUCCESS) err = no_in_place(nullptr, buf, call);
  Part p;
  if (err == EP_SUCCESS) err = check_count(count, "", call);
  // At EP_PROC_NULL (the rest of the root's group) nothing else is significant.
  if (err == EP_SUCCESS && root != EP_PROC_NULL)
    err = check_triple(buf, count, type, &p.rti, "", call);
  p.rbuf = buf;
  p.rcount = count;
  p.rtype = type;
  OpArgs a;
  a.root = root;
  return run_or_join(ep, Kind::kBcast, std::move(p), a, root_knows(ep, root), request, err);
}

int inter_gather(Endpoint* ep, const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                 int rcount, const int* rcounts, const int* displs, MPI_Datatype rtype, int root,
                 bool all, bool vector, EP_Request* request, const char* call) {
  int err = check_request(request, call);
  if (err == EP_SUCCESS && !all) err = check_root(ep, root, call);
  if (err == EP_SUCCESS) err = no_in_place(sbuf, rbuf, call);
  if (err == EP_SUCCESS) err = check_count(scount, "send", call);
  if (err == EP_SUCCESS && !vector) err = check_count(rcount, "receive", call);
  const bool sender = all || (root != EP_ROOT && root != EP_PROC_NULL);
  const bool receiver = all || root == EP_ROOT;
  Part p;
  if (err == EP_SUCCESS && sender) err = check_triple(sbuf, scount, stype, &p.sti, "send ", call);
  if (err == EP_SUCCESS && receiver) {
    err = fill_counts(rcounts, displs, rcount, ep->comm->remote_size, vector, &p.rcounts,
                      &p.rdispls, "receive ", call);
    if (err == EP_SUCCESS) err = vector_triple(rbuf, p.rcounts, rtype, &p.rti, "receive ", call);
  }
  p.sbuf = sbuf;
  p.scount = scount;
  p.stype = stype;
  p.rbuf = rbuf;
  p.rtype = rtype;
  OpArgs a;
  a.root = all ? 0 : root;
  return run_or_join(ep, all ? Kind::kAllgather : Kind::kGather, std::move(p), a,
                     all ? Knows::kAll : root_knows(ep, root), request, err);
}

int inter_scatter(Endpoint* ep, const void* sbuf, int scount, const int* scounts, const int* displs,
                  MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype, int root,
                  bool vector, EP_Request* request, const char* call) {
  int err = check_request(request, call);
  if (err == EP_SUCCESS) err = check_root(ep, root, call);
  if (err == EP_SUCCESS) err = no_in_place(sbuf, rbuf, call);
  if (err == EP_SUCCESS && !vector) err = check_count(scount, "send", call);
  if (err == EP_SUCCESS) err = check_count(rcount, "receive", call);
  Part p;
  if (err == EP_SUCCESS && root == EP_ROOT) {
    err = fill_counts(scounts, displs, scount, ep->comm->remote_size, vector, &p.scounts,
                      &p.sdispls, "send ", call);
    if (err == EP_SUCCESS) err = vector_triple(sbuf, p.scounts, stype, &p.sti, "send ", call);
  }
  if (err == EP_SUCCESS && root != EP_ROOT && root != EP_PROC_NULL)
    err = check_triple(rbuf, rcount, rtype, &p.rti, "receive ", call);
  p.sbuf = sbuf;
  p.stype = stype;
  p.rbuf = rbuf;
  p.rcount = rcount;
  p.rtype = rtype;
  OpArgs a;
  a.root = root;
  return run_or_join(ep, Kind::kScatter, std::move(p), a, root_knows(ep, root), request, err);
}

int inter_alltoall(Endpoint* ep, const void* sbuf, int scount, const int* scounts,
                   const int* sdispls, MPI_Datatype stype, void* rbuf, int rcount,
                   const int* rcounts, const int* rdispls, MPI_Datatype rtype, bool vector,
                   EP_Request* request, const char* call) {
  const int n = ep->comm->remote_size;
  int err = check_request(request, call);
  if (err == EP_SUCCESS) err = no_in_place(sbuf, rbuf, call);
  if (err == EP_SUCCESS && !vector) err = check_count(scount, "send", call);
  if (err == EP_SUCCESS && !vector) err = check_count(rcount, "receive", call);
  Part p;
  if (err == EP_SUCCESS)
    err = fill_counts(scounts, sdispls, scount, n, vector, &p.scounts, &p.sdispls, "send ", call);
  if (err == EP_SUCCESS) {
    err =
        fill_counts(rcounts, rdispls, rcount, n, vector, &p.rcounts, &p.rdispls, "receive ", call);
  }
  if (err == EP_SUCCESS) err = vector_triple(sbuf, p.scounts, stype, &p.sti, "send ", call);
  if (err == EP_SUCCESS) err = vector_triple(rbuf, p.rcounts, rtype, &p.rti, "receive ", call);
  p.sbuf = sbuf;
  p.stype = stype;
  p.rbuf = rbuf;
  p.rtype = rtype;
  return run_or_join(ep, Kind::kAlltoall, std::move(p), OpArgs(), Knows::kAll, request, err);
}

namespace {

// One side of Alltoallw: per-remote-rank datatypes, described; a buffer is needed when
// some block has data.
int alltoallw_side(const void* buf, const std::vector<int>& counts, const MPI_Datatype* types,
                   std::vector<MPI_Datatype>* tv, std::vector<TypeInfo>* tis, const char* what,
                   const char* call) {
  if (types == nullptr) return fail(EP_ERR_ARG, call, "%stypes is NULL", what);
  const size_t n = counts.size();
  tv->assign(types, types + n);
  tis->resize(n);
  bool data = false;
  for (size_t i = 0; i < n; ++i) {
    if (!ep::runtime::describe(types[i], &(*tis)[i])) {
      return fail(EP_ERR_TYPE, call, "%stypes[%zu] is not a valid committed datatype", what, i);
    }
    data |= counts[i] > 0 && (*tis)[i].size > 0;
  }
  if (buf == nullptr && data) {
    return fail(EP_ERR_BUFFER, call, "%sbuffer is NULL but a block has data", what);
  }
  return EP_SUCCESS;
}

}  // namespace

int inter_alltoallw(Endpoint* ep, const void* sbuf, const int* scounts, const int* sdispls,
                    const MPI_Datatype* stypes, void* rbuf, const int* rcounts, const int* rdispls,
                    const MPI_Datatype* rtypes, EP_Request* request, const char* call) {
  const int n = ep->comm->remote_size;
  int err = check_request(request, call);
  if (err == EP_SUCCESS) err = no_in_place(sbuf, rbuf, call);
  Part p;
  if (err == EP_SUCCESS)
    err = fill_counts(scounts, sdispls, 0, n, true, &p.scounts, &p.sdispls, "send", call);
  if (err == EP_SUCCESS)
    err = fill_counts(rcounts, rdispls, 0, n, true, &p.rcounts, &p.rdispls, "receive", call);
  if (err == EP_SUCCESS)
    err = alltoallw_side(sbuf, p.scounts, stypes, &p.stypes, &p.stis, "send", call);
  if (err == EP_SUCCESS)
    err = alltoallw_side(rbuf, p.rcounts, rtypes, &p.rtypes, &p.rtis, "receive", call);
  p.sbuf = sbuf;
  p.rbuf = rbuf;
  return run_or_join(ep, Kind::kAlltoallw, std::move(p), OpArgs(), Knows::kAll, request, err);
}

int inter_reduce(Endpoint* ep, const void* sbuf, void* rbuf, int count, MPI_Datatype type,
                 MPI_Op op, int root, bool all, EP_Request* request, const char* call) {
  int err = check_request(request, call);
  if (err == EP_SUCCESS && !all) err = check_root(ep, root, call);
  if (err == EP_SUCCESS) err = no_in_place(sbuf, rbuf, call);
  if (err == EP_SUCCESS) err = check_op(op, call);
  if (err == EP_SUCCESS) err = check_count(count, "", call);
  const bool sender = all || (root != EP_ROOT && root != EP_PROC_NULL);
  const bool receiver = all || root == EP_ROOT;
  OpArgs a;
  if (err == EP_SUCCESS && !ep::runtime::describe(type, &a.ti))
    err = fail(EP_ERR_TYPE, call, "datatype is not a valid committed datatype");
  if (err == EP_SUCCESS && sender) err = check_triple(sbuf, count, type, &a.ti, "send ", call);
  if (err == EP_SUCCESS && receiver) err = check_triple(rbuf, count, type, &a.ti, "receive ", call);
  const Knows knows = reduction_knows(all || root_ok(ep, root), op, count, type);
  if (knows == Knows::kAll) ep::runtime::describe(type, &a.ti);
  a.op = op;
  a.count = count;
  a.type = type;
  a.root = all ? 0 : root;
  Part p;
  p.sbuf = sbuf;
  p.rbuf = rbuf;
  return run_or_join(ep, all ? Kind::kAllreduce : Kind::kReduce, std::move(p), a, knows, request,
                     err);
}

int inter_reduce_scatter(Endpoint* ep, const void* sbuf, void* rbuf, const int* rcounts, int rcount,
                         MPI_Datatype type, MPI_Op op, bool block, EP_Request* request,
                         const char* call) {
  const int n = ep->comm->size;  // the results scatter over the local group
  int err = check_request(request, call);
  if (err == EP_SUCCESS) err = no_in_place(sbuf, rbuf, call);
  if (err == EP_SUCCESS) err = check_op(op, call);
  Part p;
  if (block) {
    if (err == EP_SUCCESS) err = check_count(rcount, "receive", call);
    p.rcounts.assign(static_cast<size_t>(n), rcount);
  } else if (rcounts == nullptr) {
    if (err == EP_SUCCESS) err = fail(EP_ERR_ARG, call, "recvcounts is NULL");
  } else {
    for (int i = 0; i < n && err == EP_SUCCESS; ++i) {
      if (rcounts[i] < 0)
        err = fail(EP_ERR_COUNT, call, "recvcounts[%d] = %d is negative", i, rcounts[i]);
    }
    p.rcounts.assign(rcounts, rcounts + n);
  }
  const int64_t total = std::accumulate(p.rcounts.begin(), p.rcounts.end(), int64_t{0});
  if (err == EP_SUCCESS && total > INT32_MAX)
    err = fail(EP_ERR_COUNT, call, "the counts add up to more than INT_MAX");
  OpArgs a;
  if (err == EP_SUCCESS)
    err =
        check_triple(rbuf, p.rcounts[static_cast<size_t>(ep->rank)], type, &a.ti, "receive ", call);
  if (err == EP_SUCCESS)
    err = check_triple(sbuf, static_cast<int>(total), type, &a.ti, "send ", call);
  const bool counts_ok = !p.rcounts.empty() && total <= INT32_MAX &&
                         std::all_of(p.rcounts.begin(), p.rcounts.end(), [](int c) { return c >= 0; });
  const Knows knows = reduction_knows(true, op, counts_ok ? static_cast<int>(total) : -1, type);
  if (knows == Knows::kAll) ep::runtime::describe(type, &a.ti);
  a.op = op;
  a.count = static_cast<int>(total);
  a.type = type;
  p.sbuf = sbuf;
  p.rbuf = rbuf;
  return run_or_join(ep, Kind::kReduceScatter, std::move(p), a, knows, request, err);
}

}  // namespace ep::api
