// backoff.h - how libep threads wait: adaptive spin -> yield -> futex sleep.
//
// What it is: `Backoff` is a small per-wait state machine used by every waiting
// loop in libep (the progress thread when idle, endpoint threads in EP_Wait).  With
// 2 cores, a thread that spins forever starves the others, so a wait first spins a
// little (latency), then calls sched_yield (gives the core away but stays
// runnable), then sleeps on a futex with a growing timeout (costs no CPU).
//
// `Futex` wraps the Linux futex syscall on a 32-bit atomic word.  A waiter sleeps
// only while the word still holds the value it saw; a waker wakes after changing it.
//
// Threading: a Backoff object belongs to one thread.  Futex calls are thread-safe.
//
// Memory ordering: Futex::wait/wake imply no ordering of their own; callers publish
// with a release store (or RMW) to the word before wake(), and read it with acquire
// after wait() returns.
#ifndef EP_PROGRESS_BACKOFF_H_
#define EP_PROGRESS_BACKOFF_H_

#include <atomic>
#include <cstdint>

namespace ep::progress {

enum class Policy { kSpin, kAdaptive, kYield };

// Sleeps while `word` == `expected`, at most `timeout_ns` (0: no timeout).  True if the
// timeout ended the sleep.
bool futex_wait(std::atomic<uint32_t>& word, uint32_t expected, int64_t timeout_ns);
// Sleeps while every words[i] == expected[i], at most `timeout_ns` (futex_waitv; n at
// most kMaxWaitWords).  True if the timeout ended the sleep.  Where the kernel has no
// futex_waitv, it sleeps min(timeout_ns, 1 ms) and the caller polls again.
constexpr int kMaxWaitWords = 128;
bool futex_wait_any(std::atomic<uint32_t>* const* words, const uint32_t* expected, int n,
                    int64_t timeout_ns);
// Wakes every thread sleeping on `word`.
void futex_wake_all(std::atomic<uint32_t>& word);
// The same for a word in memory shared between processes (a MAP_SHARED mapping): the
// kernel then keys the sleep by the memory, not by this process's address space, so a
// thread of another process that maps the word wakes it.  Both sides must use these.
bool futex_wait_shared(std::atomic<uint32_t>& word, uint32_t expected, int64_t timeout_ns);
void futex_wake_shared(std::atomic<uint32_t>& word);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// One waiting episode.  Call pause() each time the awaited condition was false.
// The phases are measured in time, not rounds (a `pause` instruction costs from 10
// to 140 cycles depending on the CPU).
int64_t now_ns();

class Backoff {
 public:
  explicit Backoff(Policy policy) : policy_(policy) {}

  // Returns the nanoseconds the caller may sleep now (0: do not sleep, it already
  // spun or yielded).  Callers that can sleep on a futex pass that as the timeout.
  // `relax` false: in the spin phase, return without a `pause` instruction (the caller
  // has just spent longer than one in a probe of its own, such as an MPI call).
  int64_t pause(bool relax = true);
  void reset() {
    start_ns_ = 0;
    rounds_ = 0;
    past_spin_ = false;
    last_yield_ns_ = 0;
  }
  // Starts the episode's clock if pause() has not (a wait that made progress without
  // pausing still leaves its spin phase on time).
  void begin() {
    if (start_ns_ == 0) start_ns_ = last_yield_ns_ = now_ns();
  }
  // True before the episode started or while it is in its spin phase.
  bool spinning() const { return start_ns_ == 0 || now_ns() - start_ns_ < kSpinNs; }

  // Tunables, chosen for a 2-core machine (measurements: docs/perf/progress.md): spin
  // for kSpinNs (yielding every kSliceNs: a waiter that spins holds its core from a
  // thread that may be the one it waits for), then yield until kYieldNs, then sleep for
  // an eighth of the time waited so far, between kMinSleepNs and kMaxSleepNs.
  static constexpr int64_t kSpinNs = 20'000;
  static constexpr int64_t kSliceNs = 5'000;
  static constexpr int64_t kYieldNs = 200'000;
  static constexpr int64_t kMinSleepNs = 20'000;
  static constexpr int64_t kMaxSleepNs = 1'000'000;
  // Policy kYield: after each kYieldRunNs of yielding, pause() returns kMinSleepNs
  // once, so the caller sleeps (a thread in a sched_yield loop can keep its core for
  // seconds under EEVDF while the thread it waits for stays queued).
  static constexpr int64_t kYieldRunNs = 200'000;

 private:
  Policy policy_;
  int64_t start_ns_ = 0;       // 0: the episode has not started
  int64_t last_yield_ns_ = 0;  // kAdaptive: the spin phase's last sched_yield (see
                               // kSliceNs); kYield: the current run's start
  uint32_t rounds_ = 0;        // pause() calls in the spin phase (clock read every 16th)
  bool past_spin_ = false;
};

int64_t now_ns();

}  // namespace ep::progress

#endif  // EP_PROGRESS_BACKOFF_H_
