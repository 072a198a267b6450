#include "progress/backoff.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <climits>

namespace ep::progress {

namespace {
bool wait_op(std::atomic<uint32_t>& word, uint32_t expected, int64_t timeout_ns, int op) {
  struct timespec ts;
  struct timespec* tsp = nullptr;
  if (timeout_ns > 0) {
    ts.tv_sec = timeout_ns / 1'000'000'000;
    ts.tv_nsec = timeout_ns % 1'000'000'000;
    tsp = &ts;
  }
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), op, expected, tsp, nullptr, 0) !=
             0 &&
         errno == ETIMEDOUT;
}
}  // namespace

bool futex_wait(std::atomic<uint32_t>& word, uint32_t expected, int64_t timeout_ns) {
  return wait_op(word, expected, timeout_ns, FUTEX_WAIT_PRIVATE);
}

bool futex_wait_shared(std::atomic<uint32_t>& word, uint32_t expected, int64_t timeout_ns) {
  return wait_op(word, expected, timeout_ns, FUTEX_WAIT);
}

void futex_wake_shared(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

bool futex_wait_any(std::atomic<uint32_t>* const* words, const uint32_t* expected, int n,
                    int64_t timeout_ns) {
  struct futex_waitv w[kMaxWaitWords];
  n = n < kMaxWaitWords ? n : kMaxWaitWords;
  for (int i = 0; i < n; ++i) {
    w[i].val = expected[i];
    w[i].uaddr = reinterpret_cast<uintptr_t>(words[i]);
    w[i].flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
    w[i].__reserved = 0;
  }
  const int64_t deadline = now_ns() + timeout_ns;
  struct timespec ts = {static_cast<time_t>(deadline / 1'000'000'000),
                        static_cast<long>(deadline % 1'000'000'000)};
  if (syscall(SYS_futex_waitv, w, n, 0, &ts, CLOCK_MONOTONIC) >= 0) return false;
  if (errno == ENOSYS) {
    const int64_t ns = timeout_ns < 1'000'000 ? timeout_ns : 1'000'000;
    struct timespec rel = {0, static_cast<long>(ns)};
    nanosleep(&rel, nullptr);
    return false;
  }
  return errno == ETIMEDOUT;
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

int64_t now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t Backoff::pause(bool relax) {
  switch (policy_) {
    case Policy::kSpin:
      for (int i = 0; i < 8; ++i) cpu_relax();
      return 0;
    case Policy::kYield: {
      // Yield, but sleep kMinSleepNs once per kYieldRunNs of yielding: under EEVDF
      // (Linux 6.6+) a thread in a sched_yield loop can keep its core for seconds
      // while the thread it waits for stays queued (see kYieldRunNs).
      int64_t now = now_ns();
      if (last_yield_ns_ == 0) last_yield_ns_ = now;
      if (now - last_yield_ns_ >= kYieldRunNs) {
        last_yield_ns_ = now;
        return kMinSleepNs;
      }
      sched_yield();
      return 0;
    }
    case Policy::kAdaptive:
      break;
  }
  // Spin phase: one `pause` per round (it costs up to 140 cycles, and the awaited
  // condition is usually a cache line away); the clock is read every 16th round only.
  if (start_ns_ != 0 && (++rounds_ & 15) != 0 && !past_spin_) {
    if (relax) cpu_relax();
    return 0;
  }
  int64_t now = now_ns();
  if (start_ns_ == 0) start_ns_ = last_yield_ns_ = now;
  int64_t waited = now - start_ns_;
  if (waited < kSpinNs) {
    if (now - last_yield_ns_ >= kSliceNs) {
      sched_yield();
      last_yield_ns_ = now_ns();
      return 0;
    }
    if (relax) cpu_relax();
    return 0;
  }
  past_spin_ = true;
  if (waited < kYieldNs) {
    sched_yield();
    return 0;
  }
  int64_t ns = waited / 8;
  return ns < kMinSleepNs ? kMinSleepNs : (ns > kMaxSleepNs ? kMaxSleepNs : ns);
}

}  // namespace ep::progress
