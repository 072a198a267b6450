// pscw.cc - general active-target synchronization (EP_Win_post/start/complete/wait/test)
// on the window's private communicator.  Runs on the endpoint's thread.
//
// Notices are zero-byte messages on w->ep (never used for user traffic), one tag each:
//   post      target -> every origin of its post group ("you may access me");
//   complete  origin -> every target of its start group, sent once the origin's
//             operations to that target completed there (flush: every reply seen).
// EP_Win_start waits for the post notice of each target of its group (MPI allows start
// to block); EP_Win_post posts the receives of the complete notices, which wait and test
// complete.  Non-overtaking keeps successive epochs' notices in order.
#include <utility>
#include <vector>

#include "rma/window.h"
#include "runtime/error.h"
#include "runtime/p2p.h"
#include "runtime/wait.h"

namespace ep::rma {

using runtime::fail;

namespace {

constexpr int kPostTag = 1, kCompleteTag = 2;

const runtime::TypeInfo& byte_info() {
  static const runtime::TypeInfo ti = [] {
    runtime::TypeInfo t;
    runtime::describe(MPI_BYTE, &t);
    return t;
  }();
  return ti;
}

void notify(Win* w, int rank, int tag, const char* call) {
  runtime::send(nullptr, 0, MPI_BYTE, byte_info(), rank, tag, w->ep, runtime::SendMode::kStandard,
                nullptr, call);
}

runtime::Request* expect(Win* w, int rank, int tag) {
  return runtime::post_recv(nullptr, 0, MPI_BYTE, byte_info(), rank, tag, w->ep);
}

void finish(runtime::Request* r) {
  runtime::request_wait(r);
  runtime::request_unref(r);
}

// Completes the operations to target t at the target (their replies are counted).
void wait_target(Win* w, int t) {
  // acquire: pairs with the release increment in the reply handler (rma/serve.cc).
  runtime::wait_until(
      w->event, [w, t] { return w->acked[t].load(std::memory_order_acquire) == w->issued[t]; },
      runtime::Drive::kYes);
}

}  // namespace

int win_post(Win* w, std::vector<int> ranks, int /*assert_flags*/, const char* call) {
  if (w->posted) return fail(EP_ERR_RMA_SYNC, call, "an EP_Win_post epoch is already open");
  for (int r : ranks) w->post_waits.push_back(expect(w, r, kCompleteTag));
  for (int r : ranks) notify(w, r, kPostTag, call);
  w->posted = true;
  return EP_SUCCESS;
}

int win_start(Win* w, std::vector<int> ranks, int /*assert_flags*/, const char* call) {
  if (w->started) return fail(EP_ERR_RMA_SYNC, call, "an EP_Win_start epoch is already open");
  if (w->lock_all || w->nlocked > 0) {
    return fail(EP_ERR_RMA_SYNC, call, "EP_Win_start inside a passive-target epoch");
  }
  w->fence_open = false;  // a fence epoch without operations may be followed by start
  for (int r : ranks) finish(expect(w, r, kPostTag));
  for (int r : ranks) w->in_start[r] = 1;
  w->start_group = std::move(ranks);
  w->started = true;
  return EP_SUCCESS;
}

int win_complete(Win* w, const char* call) {
  if (!w->started) return fail(EP_ERR_RMA_SYNC, call, "no EP_Win_start epoch is open");
  int err = EP_SUCCESS;
  for (int r : w->start_group) {
    wait_target(w, r);
    const int e = w->remote_error[r].exchange(0, std::memory_order_relaxed);
    if (e != EP_SUCCESS && err == EP_SUCCESS) {
      err =
          fail(e, call, "an operation to target %d accessed memory that is not attached there", r);
    }
    notify(w, r, kCompleteTag, call);
    w->in_start[r] = 0;
  }
  w->start_group.clear();
  w->started = false;
  return err;
}

int win_wait(Win* w, const char* call) {
  if (!w->posted) return fail(EP_ERR_RMA_SYNC, call, "no EP_Win_post epoch is open");
  for (runtime::Request* r : w->post_waits) finish(r);
  w->post_waits.clear();
  w->posted = false;
  return EP_SUCCESS;
}

int win_test(Win* w, bool* flag, const char* call) {
  if (!w->posted) return fail(EP_ERR_RMA_SYNC, call, "no EP_Win_post epoch is open");
  *flag = false;
  for (runtime::Request* r : w->post_waits) {
    if (!runtime::request_test(r)) return EP_SUCCESS;
  }
  for (runtime::Request* r : w->post_waits) runtime::request_unref(r);
  w->post_waits.clear();
  w->posted = false;
  *flag = true;
  return EP_SUCCESS;
}

}  // namespace ep::rma
