#include "progress/backoff.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace ep::progress {

void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, int64_t timeout_ns) {
  struct timespec ts;
  struct timespec* tsp = nullptr;
  if (timeout_ns > 0) {
    ts.tv_sec = timeout_ns / 1'000'000'000;
    ts.tv_nsec = timeout_ns % 1'000'000'000;
    tsp = &ts;
  }
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, tsp,
          nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

bool Backoff::sleeping_phase() const {
  return policy_ == Policy::kAdaptive && rounds_ >= kYieldRounds;
}

int64_t Backoff::pause() {
  uint32_t r = rounds_ < UINT32_MAX ? rounds_++ : rounds_;
  switch (policy_) {
    case Policy::kSpin:
      for (int i = 0; i < 16; ++i) cpu_relax();
      return 0;
    case Policy::kYield:
      sched_yield();
      return 0;
    case Policy::kAdaptive:
      break;
  }
  if (r < kSpinRounds) {
    for (int i = 0; i < 32; ++i) cpu_relax();
    return 0;
  }
  if (r < kYieldRounds) {
    sched_yield();
    return 0;
  }
  int64_t ns = kMinSleepNs << ((r - kYieldRounds) < 6 ? (r - kYieldRounds) : 6);
  return ns < kMaxSleepNs ? ns : kMaxSleepNs;
}

}  // namespace ep::progress
