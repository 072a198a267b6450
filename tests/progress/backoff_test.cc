// Tests of progress::Backoff's phases under each policy: what pause() returns and
// when.  The checks are lower bounds on time (a sleep is never offered before its
// phase starts) plus generous upper bounds (it is offered within a second); no test
// compares timings.
#include "progress/backoff.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using ep::progress::Backoff;
using ep::progress::now_ns;
using ep::progress::Policy;

constexpr int64_t kSecondNs = 1'000'000'000;

struct FirstSleep {
  int64_t ns = 0;          // what pause() returned (0: no sleep offered in time)
  int64_t elapsed_ns = 0;  // from the first pause() call to that one
};

// Calls b.pause() until it offers a sleep or `limit_ns` passes.
FirstSleep pause_until_sleep(Backoff& b, int64_t limit_ns) {
  FirstSleep r;
  const int64_t start = now_ns();
  for (;;) {
    int64_t ns = b.pause();
    int64_t now = now_ns();
    if (ns > 0) {
      r.ns = ns;
      r.elapsed_ns = now - start;
      return r;
    }
    if (now - start >= limit_ns) return r;
  }
}

TEST(Backoff, SpinNeverOffersASleep) {
  Backoff b(Policy::kSpin);
  FirstSleep r = pause_until_sleep(b, 5 * Backoff::kYieldNs);
  EXPECT_EQ(r.ns, 0);
}

TEST(Backoff, AdaptiveSpinsAndYieldsBeforeItOffersASleep) {
  Backoff b(Policy::kAdaptive);
  EXPECT_TRUE(b.spinning());
  // pause_until_sleep reads its clock before the first pause(), which starts the
  // episode, so its elapsed time bounds the episode's from above.
  FirstSleep r = pause_until_sleep(b, kSecondNs);
  ASSERT_GT(r.ns, 0) << "no sleep offered within a second";
  EXPECT_GE(r.elapsed_ns, Backoff::kYieldNs);
  EXPECT_GE(r.ns, Backoff::kMinSleepNs);
  EXPECT_LE(r.ns, Backoff::kMaxSleepNs);
  EXPECT_FALSE(b.spinning());
}

TEST(Backoff, AdaptiveSleepGrowsWithTheWaitUpToItsBound) {
  Backoff b(Policy::kAdaptive);
  const int64_t start = now_ns();
  int64_t last = 0;
  while (now_ns() - start < 10 * Backoff::kMaxSleepNs) {
    int64_t ns = b.pause();
    if (ns == 0) continue;
    EXPECT_GE(ns, last) << "a later sleep is shorter";
    EXPECT_LE(ns, Backoff::kMaxSleepNs);
    last = ns;
  }
  EXPECT_EQ(last, Backoff::kMaxSleepNs) << "after 8x kMaxSleepNs the sleep is at its bound";
}

TEST(Backoff, YieldSleepsBrieflyAfterEachRunOfYields) {
  Backoff b(Policy::kYield);
  // A run starts inside the pause() that starts the episode or offers the previous
  // sleep, so the clock read before that call bounds it from below.
  int64_t run_start_bound = now_ns();
  for (int run = 0; run < 3; ++run) {
    int64_t ns = 0;
    int64_t before = 0;
    while (ns == 0 && now_ns() - run_start_bound < kSecondNs) {
      before = now_ns();
      ns = b.pause();
    }
    ASSERT_EQ(ns, Backoff::kMinSleepNs) << "run " << run << ": no sleep offered within a second";
    EXPECT_GE(now_ns() - run_start_bound, Backoff::kYieldRunNs) << "run " << run;
    run_start_bound = before;
  }
}

TEST(Backoff, ResetStartsANewEpisode) {
  Backoff b(Policy::kYield);
  FirstSleep first = pause_until_sleep(b, kSecondNs);
  ASSERT_GT(first.ns, 0);
  b.reset();
  const int64_t start = now_ns();
  FirstSleep r = pause_until_sleep(b, kSecondNs);
  ASSERT_GT(r.ns, 0);
  EXPECT_GE(now_ns() - start, Backoff::kYieldRunNs);

  Backoff a(Policy::kAdaptive);
  ASSERT_GT(pause_until_sleep(a, kSecondNs).ns, 0);
  a.reset();
  EXPECT_TRUE(a.spinning());
  EXPECT_EQ(a.pause(), 0) << "a reset episode starts in its spin phase again";
}

}  // namespace
