// wait.h - the one way a libep thread blocks.
//
// Every blocking call waits here: point-to-point and probes, collectives and the waits
// inside them, window synchronization, helper teams, generalized requests, buffered-send
// space, communicator creation, EP_Finalize.  A wait polls its condition in three
// phases timed by the EP_PROGRESS_POLICY back-off (progress/backoff.h):
//   spin   polls; a wait whose operation needs MPI traffic (`drive`) runs engine passes
//          itself meanwhile, as a helper (the progress thread stands aside) - the baton
//          is held for one pass at a time, and a pass delivers whatever arrived, for any
//          endpoint;
//   yield  the same with sched_yield between polls (adaptive policy, until 200 us);
//   sleep  the waiter stops driving (the progress thread takes over at once, see
//          Engine::helper_leave), arms its word and sleeps on the futex until the thread
//          that makes the condition true changes the word and wakes it.
// Under `spin` a wait never sleeps; under `yield` it sleeps a little (20 us) after each
// 200 us of yielding and polls again.  A sleeping waiter costs no processor time:
// nothing polls on its behalf but the progress thread, whose own passes back off to
// one per millisecond when they find nothing.
//
// Who wakes whom.  A wait sleeps on one word:
//   a Request's `state` (request.h)  the completer's RMW sees kPendingWaited and wakes;
//                                    a request waited by EP_Waitany/Waitsome also names
//                                    the waiting thread's Event (Request::any_event);
//   a Flag                           a one-shot condition (a probe's or cancel's answer
//                                    from the matcher): set() wakes a sleeper;
//   an Event                         any other condition: whoever makes it true calls
//                                    notify() afterwards (windows' grants and acks, a
//                                    collective fragment's generation, a team's jobs and
//                                    epochs, buffered-send space, arrivals a blocking
//                                    probe waits for, a creation round).
// A sleep has a long safety timeout (kSafetyNs); a timed-out sleep that finds its
// condition true is a lost wake-up, counted (lost_wakeups(); the stress tests expect 0).
//
// Threading: a wait belongs to the calling thread.  notify()/set() are thread-safe and
// never block.
//
// Memory ordering: Event::notify increments seq_ (seq_cst) and then reads sleepers_
// (seq_cst); a waiter increments sleepers_ (seq_cst), reads seq_ (seq_cst) and re-checks
// its condition before futex_wait(seq_, seen): either the waiter's re-check sees the
// condition or notify sees the sleeper and wakes it (and the kernel re-checks seq_).
// The condition itself is published by the notifier before notify() - a release store or
// a lock - and read by the waiter with acquire.  Flag::set is an acq_rel exchange that
// pairs with the waiter's acquire loads and its CAS to kWaiting.
#ifndef EP_RUNTIME_WAIT_H_
#define EP_RUNTIME_WAIT_H_

#include <mpi.h>
#include <sched.h>

#include <atomic>
#include <cstdint>

#include "progress/backoff.h"

namespace ep::runtime {

// A `pause` for spin loops (a lock's, say) outside the wait loop.
inline void cpu_relax() { progress::cpu_relax(); }

// Sleeps longer than this only through a wake-up; see "Who wakes whom".
constexpr int64_t kSafetyNs = 200'000'000;

// The policy every wait follows (EP_PROGRESS_POLICY; adaptive before EP_Init).
progress::Policy wait_policy();
// Lost wake-ups seen by this process (see above).
uint64_t lost_wakeups();
void count_lost_wakeup();

// An event count: a condition that is not one request.
class Event {
 public:
  // After making the condition true.  Never blocks; one RMW and one load when nobody sleeps.
  void notify() {
    seq_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) != 0) progress::futex_wake_all(seq_);
  }
  // The sleep phase of a wait: arm, re-check with `ready`, sleep.  Returns true if it
  // slept to its timeout.
  template <class Ready>
  bool sleep(Ready&& ready, int64_t timeout_ns) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = seq_.load(std::memory_order_seq_cst);
    bool timed_out = false;
    if (!ready()) timed_out = progress::futex_wait(seq_, seen, timeout_ns);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: spares a wake only
    return timed_out;
  }

 private:
  std::atomic<uint32_t> seq_{0};
  std::atomic<uint32_t> sleepers_{0};
};

// A one-shot condition with at most one waiter.
class Flag {
 public:
  bool is_set() const {
    return state_.load(std::memory_order_acquire) == kSet;  // pairs: set()'s exchange
  }
  void set() {
    // acq_rel: publishes what the setter wrote; sees a sleeper's CAS.
    if (state_.exchange(kSet, std::memory_order_acq_rel) == kWaiting) {
      progress::futex_wake_all(state_);
    }
  }
  bool sleep(int64_t timeout_ns) {
    uint32_t expected = kClear;
    // relaxed on failure: the caller re-checks is_set() (acquire).
    if (!state_.compare_exchange_strong(expected, kWaiting, std::memory_order_acq_rel,
                                        std::memory_order_relaxed) &&
        expected != kWaiting) {
      return false;
    }
    return progress::futex_wait(state_, kWaiting, timeout_ns);
  }

 private:
  static constexpr uint32_t kClear = 0, kWaiting = 1, kSet = 2;
  std::atomic<uint32_t> state_{kClear};
};

// Whether a wait drives the engine while it spins: its operation needs MPI traffic.
enum class Drive { kNo, kYes };
// Whether the waiter is one of a crowd: several threads of this process wait at once for
// one of them (or another thread) to finish the operation - a collective's endpoints, a
// creation round.  With more threads than cores, a crowd's waiters yield at every poll
// of their spin phase, so that the thread doing the work gets a core.
enum class Crowd { kNo, kYes };

// The engine, for a driving wait (wait.cc): become a helper (the progress thread stands
// aside), one pass if the baton is free (true if it made progress), stop helping
// (`wake`: the progress thread takes over at once).
void drive_begin();
bool drive_pass(const std::atomic<uint32_t>* watch, uint32_t mask);
void drive_end(bool wake);
// True while another thread runs a pass (it may need this core to finish ours).
bool baton_busy();

// The loop every wait runs.  `w` provides:
//   bool ready()                the condition (acquire);
//   bool sleep(int64_t ns)      arm, re-check, sleep (true: it timed out);
//   bool before_sleep()         the last step before sleeping (false: poll again first);
//   const std::atomic<uint32_t>* watch(), uint32_t mask()
//                               a word whose bits end a driving pass early (or nullptr);
//   bool spin_lightly()         a few cheap polls between two back-off steps (true: one
//                               saw the condition change);
//   bool poll()                 one poll of the wait's own sources, every round before
//                               anything else (the node transport's ring of a request
//                               that needs node traffic, runtime/node.h): true if
//                               something arrived (the condition is looked at again).
template <class W>
void wait_loop(W& w, Drive drive, Crowd crowd = Crowd::kNo) {
  if (w.ready()) return;
  const progress::Policy policy = wait_policy();
  progress::Backoff b(policy);
  bool driving = false;
  for (;;) {
    if (w.ready()) break;
    if (w.poll()) {  // (the back-off keeps its clock)
      b.begin();
      continue;
    }
    if (drive == Drive::kYes) {
      if (!driving) {
        drive_begin();
        driving = true;
      }
      if (drive_pass(w.watch(), w.mask())) {  // (the back-off keeps its clock)
        b.begin();
        continue;
      }
    } else if (drive == Drive::kNo && crowd == Crowd::kNo &&
               policy != progress::Policy::kYield && b.spinning() && w.spin_lightly()) {
      continue;
    }
    // A driving wait's failed pass ran an MPI probe, a longer pause than `pause` itself.
    const int64_t ns = b.pause(/*relax=*/!driving);
    if (ns == 0) {
      // Past the spin phase, or while another thread holds the baton (it completes our
      // operation and may need this core): let the others run.
      if ((driving && baton_busy()) ||
          (crowd == Crowd::kYes && policy != progress::Policy::kSpin)) {
        sched_yield();
      }
      continue;
    }
    if (!w.before_sleep()) continue;
    if (driving) {  // the progress thread takes over before we sleep
      drive_end(/*wake=*/true);
      driving = false;
    }
    const int64_t timeout = policy == progress::Policy::kAdaptive ? kSafetyNs : ns;
    if (w.sleep(timeout) && timeout == kSafetyNs && w.ready()) count_lost_wakeup();
  }
  if (driving) drive_end(/*wake=*/false);
}

// What most waits give wait_loop alike (derive from it, CRTP; the derived wait gives
// ready() and sleep()): no sources of their own to poll, no watched word, sleep as soon as
// the back-off says so, 16 light polls of ready().
template <class Derived>
struct PlainWait {
  bool before_sleep() { return true; }
  bool poll() { return false; }
  const std::atomic<uint32_t>* watch() const { return nullptr; }
  uint32_t mask() const { return 0; }
  bool spin_lightly() {
    for (int k = 0; k < 16; ++k) {
      progress::cpu_relax();
      if (static_cast<Derived*>(this)->ready()) return true;
    }
    return false;
  }
};

namespace wait_internal {
template <class Ready>
struct EventWait : PlainWait<EventWait<Ready>> {
  EventWait(Event& e, Ready& r) : event(e), ready_fn(r) {}
  Event& event;
  Ready& ready_fn;
  bool ready() { return ready_fn(); }
  bool sleep(int64_t ns) { return event.sleep(ready_fn, ns); }
};
}  // namespace wait_internal

// Waits until `ready()` (acquire), sleeping on `event`.
template <class Ready>
void wait_until(Event& event, Ready&& ready, Drive drive = Drive::kNo, Crowd crowd = Crowd::kNo) {
  wait_internal::EventWait<Ready> w(event, ready);
  wait_loop(w, drive, crowd);
}
// Waits until `flag` is set.
void wait_flag(Flag& flag, Drive drive = Drive::kNo);

// Waits for n MPI requests that the caller started on a communicator outside the
// engine (the collectives' process-level exchange - the one exception progress/engine.h
// names - and the nonblocking MPI collectives of creation and EP_Finalize).  It tests them itself while it spins and yields,
// then hands them to the engine, which tests them in its passes and wakes it when they
// completed.  Never blocks inside MPI.  Returns the first MPI error, or MPI_SUCCESS.
int wait_mpi(MPI_Request* reqs, int n);

}  // namespace ep::runtime

#endif  // EP_RUNTIME_WAIT_H_
