// matcher_util.h - what the Matcher-alone stress tests share (no MPI, no Runtime).
#ifndef EP_TESTS_RUNTIME_MATCHER_UTIL_H_
#define EP_TESTS_RUNTIME_MATCHER_UTIL_H_

#include <chrono>
#include <cstdlib>
#include <new>
#include <thread>

#include "runtime/matching.h"

namespace ep_test {

// The Matcher's MaterializeFn in these tests: a stack envelope (owned == false)
// becomes a heap copy when it has to wait; its payload, if any, is the test's own and
// outlives the run.
inline ep::runtime::Envelope* materialize_fn(ep::runtime::Envelope* e) {
  if (e->owned) return e;
  void* mem = std::malloc(sizeof(ep::runtime::Envelope));
  auto* h = new (mem) ep::runtime::Envelope(*e);
  h->owned = true;
  h->block = mem;
  return h;
}

// Waiting that stays cheap on an oversubscribed machine: a few yields, then short
// sleeps (pure yield loops starve the threads that make progress under load).
class Pause {
 public:
  void operator()() {
    if (++n_ < 32) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(n_ < 256 ? 20 : 200));
    }
  }

 private:
  int n_ = 0;
};

}  // namespace ep_test

#endif  // EP_TESTS_RUNTIME_MATCHER_UTIL_H_
