// rma_sync.cc - the C entry points of one-sided synchronization beyond fence and locks
// (those are api/rma.cc): local flushes, EP_Win_sync, and general active-target
// synchronization (EP_Win_post, EP_Win_start, EP_Win_complete, EP_Win_wait, EP_Win_test).
// The window itself is rma/window.h; the shared checks api/rma_entry.h.
#include <atomic>
#include <utility>
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
