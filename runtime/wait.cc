#include "runtime/wait.h"

#include "base/mpi_calls.h"
#include "runtime/runtime.h"

namespace ep::runtime {
namespace {
std::atomic<uint64_t> g_lost_wakeups{0};
}  // namespace

progress::Policy wait_policy() {
  Runtime* rt = runtime();
  return rt != nullptr ? rt->config.progress_policy : progress::Policy::kAdaptive;
}

uint64_t lost_wakeups() { return g_lost_wakeups.load(std::memory_order_relaxed); }
void count_lost_wakeup() { g_lost_wakeups.fetch_add(1, std::memory_order_relaxed); }

void drive_begin() { engine().helper_enter(); }
bool drive_pass(const std::atomic<uint32_t>* watch, uint32_t mask) {
  return engine().try_progress(watch, mask);
}
void drive_end(bool wake) { engine().helper_leave(wake); }
bool baton_busy() { return engine().baton_held(); }

namespace {
struct FlagWait : PlainWait<FlagWait> {
  explicit FlagWait(Flag& f) : flag(f) {}
  Flag& flag;
  bool ready() { return flag.is_set(); }
  bool sleep(int64_t ns) { return flag.sleep(ns); }
};
}  // namespace

void wait_flag(Flag& flag, Drive drive) {
  FlagWait w(flag);
  wait_loop(w, drive);
}

namespace {
// Requests handed to the engine by wait_mpi: it tests them in its passes; the last
// completion sets the flag.  The watch lives on the waiter's stack: a Flag's set()
// touches the object only before the waiter can see it set (its futex wake passes the
// address to the kernel, which reads nothing there).
struct MpiWatch final : progress::Completion {
  int left = 0;             // the engine's only (the baton holder)
  int error = MPI_SUCCESS;  // published by the flag
  Flag done;
  void on_complete(const MPI_Status&, int mpi_error, progress::MpiCall) override {
    if (mpi_error != MPI_SUCCESS) error = mpi_error;
    if (--left == 0) done.set();
  }
};
}  // namespace

int wait_mpi(MPI_Request* reqs, int n) {
  progress::Backoff b(wait_policy());
  for (;;) {
    int flag = 0;
    const int err = EP_MPI(MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE));
    if (flag != 0 || err != MPI_SUCCESS) return err;
    if (b.pause() > 0) break;  // past the spin and yield phases: sleep
  }
  // Hand the requests to the engine and sleep until it has seen them complete.  The
  // watch lives on this stack: the engine's last access is the notify, and we return
  // only after `left` reached 0 - published before it.
  MpiWatch w;
  for (int i = 0; i < n; ++i) w.left += reqs[i] != MPI_REQUEST_NULL;  // published by submit()
  if (w.left == 0) return MPI_SUCCESS;
  for (int i = 0; i < n; ++i) {
    if (reqs[i] == MPI_REQUEST_NULL) continue;
    progress::Command c;
    c.kind = progress::Command::kTrack;
    c.req = reqs[i];
    c.done = &w;
    reqs[i] = MPI_REQUEST_NULL;
    engine().submit(c);
  }
  wait_flag(w.done);
  return w.error;
}

}  // namespace ep::runtime
