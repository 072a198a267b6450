// rma_more.cc - the C entry points of issue 33's one-sided calls: dynamic and shared
// windows, request-based operations, local flushes, sync, and general active-target
// synchronization.  The window itself is rma/window.h; the shared checks api/rma_entry.h.
#include <atomic>
#include <vector>

#include "api/rma_entry.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers

// The ranks (in the window's communicator) of a post/start group; EP_ERR_GROUP for a
// null group or a member that is no endpoint of the window.
int group_ranks(Win* w, EP_Group group, std::vector<int>* ranks, const char* call) {
  ep_group_s* g = as_group(group);
  if (g == nullptr) {
    return fail(EP_ERR_GROUP, call, "group is %s",
                group == EP_GROUP_NULL ? "EP_GROUP_NULL" : "not a valid group handle");
  }
  const auto& ids = w->ep->comm->ids;
  std::vector<uint8_t> seen(ids.size(), 0);
  for (size_t i = 0; i < g->g.members.size(); ++i) {
    int rank = -1;
    for (size_t r = 0; r < ids.size(); ++r) {
      if (ids[r] == g->g.members[i]) rank = static_cast<int>(r);
    }
    if (rank < 0) {
      return fail(EP_ERR_GROUP, call, "group member %zu is not an endpoint of the window", i);
    }
    if (!seen[rank]) ranks->push_back(rank);
    seen[rank] = 1;
  }
  return EP_SUCCESS;
}

constexpr int kPscwModes = MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT;

}  // namespace

extern "C" {

int EP_Win_create_dynamic(MPI_Info info, EP_Comm comm, EP_Win* win) {
  EP_GET_COMM(ep, comm, "EP_Win_create_dynamic");
  int err = check_create(0, 1, false, nullptr, win, ep, "EP_Win_create_dynamic");
  if (err != EP_SUCCESS && ep->comm->inter) return handle(ep, err);  // every endpoint fails
  Win* w = nullptr;
  err = ep::rma::win_create(ep, nullptr, 0, 1, ep::rma::Flavor::kDynamic, node_paths(info), err, &w,
                            "EP_Win_create_dynamic");
  if (err != EP_SUCCESS) return handle(ep, err);
  *win = reinterpret_cast<EP_Win>(w);
  return EP_SUCCESS;
}

int EP_Win_attach(EP_Win win, void* base, MPI_Aint size) {
  EP_GET_WIN(w, win, "EP_Win_attach");
  return handle_win(w, ep::rma::win_attach(w, base, size, "EP_Win_attach"));
}

int EP_Win_detach(EP_Win win, const void* base) {
  EP_GET_WIN(w, win, "EP_Win_detach");
  return handle_win(w, ep::rma::win_detach(w, base, "EP_Win_detach"));
}

int EP_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, EP_Comm comm, void* baseptr,
                           EP_Win* win) {
  (void)info;  // alloc_shared_noncontig permits gaps; the segments are contiguous anyway
  EP_GET_COMM(ep, comm, "EP_Win_allocate_shared");
  int err = check_create(size, disp_unit, false, nullptr, win, ep, "EP_Win_allocate_shared");
  if (err == EP_SUCCESS && baseptr == nullptr) {
    err = fail(EP_ERR_ARG, "EP_Win_allocate_shared", "baseptr is NULL");
  }
  if (err != EP_SUCCESS && ep->comm->inter) return handle(ep, err);  // every endpoint fails
  Win* w = nullptr;
  err = ep::rma::win_create_shared(ep, size, disp_unit, err, &w, "EP_Win_allocate_shared");
  if (err != EP_SUCCESS) return handle(ep, err);
  *static_cast<void**>(baseptr) = w->base;
  *win = reinterpret_cast<EP_Win>(w);
  return EP_SUCCESS;
}

int EP_Win_shared_query(EP_Win win, int rank, MPI_Aint* size, int* disp_unit, void* baseptr) {
  EP_GET_WIN(w, win, "EP_Win_shared_query");
  if (size == nullptr || disp_unit == nullptr || baseptr == nullptr) {
    return handle_win(w, fail(EP_ERR_ARG, "EP_Win_shared_query", "%s is NULL",
                              size == nullptr        ? "size"
                              : disp_unit == nullptr ? "disp_unit"
                                                     : "baseptr"));
  }
  return handle_win(
      w, ep::rma::win_shared_query(w, rank, size, disp_unit, static_cast<void**>(baseptr),
                                   "EP_Win_shared_query"));
}

int EP_Rput(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
            EP_Win win, EP_Request* request) {
  if (request == nullptr) return fail(EP_ERR_ARG, "EP_Rput", "request is NULL");
  return run_op(win,
                op_args(OpKind::kPut, origin_addr, origin_count, origin_datatype, nullptr, 0,
                        MPI_DATATYPE_NULL, target_rank, target_disp, target_count, target_datatype,
                        MPI_REPLACE),
                "EP_Rput", request);
}

int EP_Rget(void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, EP_Win win,
            EP_Request* request) {
  if (request == nullptr) return fail(EP_ERR_ARG, "EP_Rget", "request is NULL");
  return run_op(win,
                op_args(OpKind::kGet, nullptr, 0, MPI_DATATYPE_NULL, origin_addr, origin_count,
                        origin_datatype, target_rank, target_disp, target_count, target_datatype,
                        MPI_REPLACE),
                "EP_Rget", request);
}

int EP_Raccumulate(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype,
                   int target_rank, MPI_Aint target_disp, int target_count,
                   MPI_Datatype target_datatype, MPI_Op op, EP_Win win, EP_Request* request) {
  if (request == nullptr) return fail(EP_ERR_ARG, "EP_Raccumulate", "request is NULL");
  return run_op(
      win,
      op_args(OpKind::kAcc, origin_addr, origin_count, origin_datatype, nullptr, 0,
              MPI_DATATYPE_NULL, target_rank, target_disp, target_count, target_datatype, op),
      "EP_Raccumulate", request);
}

int EP_Rget_accumulate(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype,
                       void* result_addr, int result_count, MPI_Datatype result_datatype,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Op op, EP_Win win, EP_Request* request) {
  if (request == nullptr) return fail(EP_ERR_ARG, "EP_Rget_accumulate", "request is NULL");
  return run_op(win,
                op_args(OpKind::kGetAcc, origin_addr, origin_count, origin_datatype, result_addr,
                        result_count, result_datatype, target_rank, target_disp, target_count,
                        target_datatype, op),
                "EP_Rget_accumulate", request);
}

int EP_Win_flush_local(int rank, EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_flush_local");
  return handle_win(w, ep::rma::win_flush_local(w, rank, "EP_Win_flush_local"));
}

int EP_Win_flush_local_all(EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_flush_local_all");
  return handle_win(w, ep::rma::win_flush_local_all(w, "EP_Win_flush_local_all"));
}

int EP_Win_sync(EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_sync");
  // The unified model keeps one copy: sync only orders this thread's loads and stores of
  // window memory with those of other threads and processes (seq_cst fence).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return EP_SUCCESS;
}

int EP_Win_post(EP_Group group, int assert_flags, EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_post");
  if ((assert_flags & ~kPscwModes) != 0) {
    return handle_win(
        w, fail(EP_ERR_ARG, "EP_Win_post",
                "assert %#x: only EP_MODE_NOCHECK, NOSTORE and NOPUT apply", assert_flags));
  }
  std::vector<int> ranks;
  int err = group_ranks(w, group, &ranks, "EP_Win_post");
  if (err == EP_SUCCESS) err = ep::rma::win_post(w, std::move(ranks), assert_flags, "EP_Win_post");
  return handle_win(w, err);
}

int EP_Win_start(EP_Group group, int assert_flags, EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_start");
  if ((assert_flags & ~MPI_MODE_NOCHECK) != 0) {
    return handle_win(w, fail(EP_ERR_ARG, "EP_Win_start",
                              "assert %#x: only EP_MODE_NOCHECK applies", assert_flags));
  }
  std::vector<int> ranks;
  int err = group_ranks(w, group, &ranks, "EP_Win_start");
  if (err == EP_SUCCESS) {
    err = ep::rma::win_start(w, std::move(ranks), assert_flags, "EP_Win_start");
  }
  return handle_win(w, err);
}

int EP_Win_complete(EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_complete");
  return handle_win(w, ep::rma::win_complete(w, "EP_Win_complete"));
}

int EP_Win_wait(EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_wait");
  return handle_win(w, ep::rma::win_wait(w, "EP_Win_wait"));
}

int EP_Win_test(EP_Win win, int* flag) {
  EP_GET_WIN(w, win, "EP_Win_test");
  if (flag == nullptr) return handle_win(w, fail(EP_ERR_ARG, "EP_Win_test", "flag is NULL"));
  bool done = false;
  int err = ep::rma::win_test(w, &done, "EP_Win_test");
  if (err == EP_SUCCESS) *flag = done ? 1 : 0;
  return handle_win(w, err);
}

}  // extern "C"
