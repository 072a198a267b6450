// Passive-target one-sided communication, on 1, 2 and 3 processes with uneven
// endpoints per process (3, 1, 2), on EP_Win_create and EP_Win_allocate windows.
// Stress-tagged: run under TSAN by the CI.
//  * shared locks: every endpoint holds a shared lock on every target at once, and all
//    endpoints hold a shared lock on rank 0 across a barrier (a shared lock that excluded
//    would hang there);
//  * exclusive locks: EP_Get + EP_Put increments under EP_LOCK_EXCLUSIVE give an exact
//    total, at rank 0 and at the last rank; locks of two different targets held at once;
//    readers under a shared lock never see a pair half-written under an exclusive lock;
//  * EP_Win_flush / EP_Win_flush_all make puts complete: a get in the same epoch reads the
//    value back, and the target reads it in its memory after a message (the origin's epoch
//    still open);
//  * an idle target: two target endpoints sleep without any libep call while all the
//    others lock, put, get, accumulate, fetch-and-op, compare-and-swap and unlock against
//    them; every origin must finish before the targets wake up; then the values are
//    checked.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/rma/rma_util.h"

namespace {

using ep_rma_test::Ctx;
using ep_rma_test::Flavor;
using ep_rma_test::free_win;
using ep_rma_test::now_s;
using ep_rma_test::open_win;
using ep_rma_test::open_win_filled;
using ep_rma_test::run_world;
using ep_rma_test::WinOf;

[[maybe_unused]] const bool kWatchdog = ep_rma_test::install_watchdog();

// Every test runs on EP_Win_create and on EP_Win_allocate windows.
class Lock : public ::testing::TestWithParam<Flavor> {};

constexpr int64_t kSent = -7;

int64_t val(int origin, int target, int round) {
  return 1000000LL * round + 1000LL * origin + target + 1;
}

TEST_P(Lock, SharedLocksHeldBySeveralEndpointsAtOnce) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, static_cast<size_t>(n), 8, c.comm, kSent);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    int64_t* mem = w.mem;
    std::vector<int64_t> src(static_cast<size_t>(n));
    // A shared lock on every target at once (locks of different targets may be held).
    for (int t = 0; t < n; ++t) EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, t, 0, win));
    for (int t = 0; t < n; ++t) {
      src[static_cast<size_t>(t)] = val(c.rank, t, 0);
      EXPECT_EP_OK(
          EP_Put(&src[static_cast<size_t>(t)], 1, MPI_INT64_T, t, c.rank, 1, MPI_INT64_T, win));
    }
    for (int t = n - 1; t >= 0; --t) EXPECT_EP_OK(EP_Win_unlock(t, win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    for (int o = 0; o < n; ++o) {
      EXPECT_EQ(mem[static_cast<size_t>(o)], val(o, c.rank, 0)) << c.who() << " slot " << o;
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    // Everyone holds a shared lock on rank 0 (acquired: the put is flushed) across a
    // barrier: only possible if the locks really are shared.
    const int64_t v = val(c.rank, 0, 1);
    EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, 0, 0, win));
    EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, 0, c.rank, 1, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Win_flush(0, win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EP_OK(EP_Win_unlock(0, win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    if (c.rank == 0) {
      for (int o = 0; o < n; ++o) {
        EXPECT_EQ(mem[static_cast<size_t>(o)], val(o, 0, 1)) << c.who() << " slot " << o;
      }
    }
    free_win(&win);
  });
}

TEST_P(Lock, ExclusiveLockReadModifyWriteIsExact) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size, t0 = 0, t1 = n - 1;
    const int iters = ep_test::scaled(600);
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 1, 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    const int64_t& mem = w.mem[0];
    for (int i = 0; i < iters; ++i) {
      const int t = i % 2 ? t0 : t1;
      int64_t v = -1;
      EXPECT_EP_OK(EP_Win_lock(EP_LOCK_EXCLUSIVE, t, 0, win));
      EXPECT_EP_OK(EP_Get(&v, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, win));
      EXPECT_EP_OK(EP_Win_flush(t, win));
      const int64_t v1 = v + 1;
      EXPECT_EP_OK(EP_Put(&v1, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, win));
      EXPECT_EP_OK(EP_Win_unlock(t, win));
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    const int64_t at_t1 = (iters + 1) / 2, at_t0 = iters / 2;
    if (c.rank == t0) {
      EXPECT_EQ(mem, at_t0 * n) << c.who() << ": lost increments";
    }
    if (c.rank == t1) {
      EXPECT_EQ(mem, at_t1 * n) << c.who() << ": lost increments";
    }
    free_win(&win);
  });
}

// Writers update a pair non-atomically under an exclusive lock (put a, flush, put b);
// readers read the pair under a shared lock (get a, flush, get b): a reader must never
// see a torn pair, so an exclusive lock must exclude shared holders and vice versa.
TEST_P(Lock, ExclusiveLockExcludesSharedReaders) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size, t = n - 1;
    const int iters = ep_test::scaled(200);
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 2, 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    const bool writer = c.rank % 2 == 0;
    int torn = 0;
    for (int i = 0; i < iters; ++i) {
      if (writer) {
        const int64_t v = int64_t{c.rank} * iters + i + 1;
        EXPECT_EP_OK(EP_Win_lock(EP_LOCK_EXCLUSIVE, t, 0, win));
        EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, win));
        EXPECT_EP_OK(EP_Win_flush(t, win));
        EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, t, 1, 1, MPI_INT64_T, win));
        EXPECT_EP_OK(EP_Win_unlock(t, win));
      } else {
        int64_t a = -1, b = -1;
        EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, t, 0, win));
        EXPECT_EP_OK(EP_Get(&a, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, win));
        EXPECT_EP_OK(EP_Win_flush(t, win));
        EXPECT_EP_OK(EP_Get(&b, 1, MPI_INT64_T, t, 1, 1, MPI_INT64_T, win));
        EXPECT_EP_OK(EP_Win_unlock(t, win));
        if (a != b && ++torn <= 3) {
          ADD_FAILURE() << c.who() << " iteration " << i << ": torn pair (" << a << ", " << b
                        << ") under a shared lock";
        }
      }
    }
    EXPECT_EQ(torn, 0) << c.who();
    EXPECT_EP_OK(EP_Barrier(c.comm));
    if (c.rank == t) {
      EXPECT_EQ(w.mem[0], w.mem[1]) << c.who() << ": final pair torn";
    }
    free_win(&win);
  });
}

TEST_P(Lock, ExclusiveLocksOfTwoTargetsHeldAtOnce) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    // [0] from my left neighbour, [1] from my right one.
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 2, 8, c.comm, kSent);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    const int64_t* mem = w.mem;
    const int right = (c.rank + 1) % n, left = (c.rank + n - 1) % n;
    const int lo = std::min(left, right), hi = std::max(left, right);
    const int rounds = ep_test::scaled(100);
    for (int round = 0; round < rounds; ++round) {
      const int64_t vr = val(c.rank, right, round), vl = val(c.rank, left, round);
      // Ascending target order: no cycle of waiting lockers.
      EXPECT_EP_OK(EP_Win_lock(EP_LOCK_EXCLUSIVE, lo, 0, win));
      EXPECT_EP_OK(EP_Win_lock(EP_LOCK_EXCLUSIVE, hi, 0, win));
      EXPECT_EP_OK(EP_Put(&vr, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, win));
      EXPECT_EP_OK(EP_Put(&vl, 1, MPI_INT64_T, left, 1, 1, MPI_INT64_T, win));
      EXPECT_EP_OK(EP_Win_unlock(hi, win));
      EXPECT_EP_OK(EP_Win_unlock(lo, win));
      EXPECT_EP_OK(EP_Barrier(c.comm));
      EXPECT_EQ(mem[0], val(left, c.rank, round)) << c.who() << " round " << round;
      EXPECT_EQ(mem[1], val(right, c.rank, round)) << c.who() << " round " << round;
      EXPECT_EP_OK(EP_Barrier(c.comm));
    }
    free_win(&win);
  });
}

TEST_P(Lock, FlushMakesPutsVisibleWithinTheEpoch) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, static_cast<size_t>(n), 8, c.comm, kSent);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    const int64_t* mem = w.mem;
    const int rounds = ep_test::scaled(50);
    std::vector<int64_t> src(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    for (int round = 0; round < rounds; ++round) {
      // flush(target) after each put, then read it back.
      for (int t = 0; t < n; ++t) {
        const int64_t v = val(c.rank, t, 2 * round);
        int64_t g = -1;
        EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, t, c.rank, 1, MPI_INT64_T, win));
        EXPECT_EP_OK(EP_Win_flush(t, win));
        EXPECT_EP_OK(EP_Get(&g, 1, MPI_INT64_T, t, c.rank, 1, MPI_INT64_T, win));
        EXPECT_EP_OK(EP_Win_flush(t, win));
        EXPECT_EQ(g, v) << c.who() << " round " << round << ": flush(" << t << ")";
      }
      // flush_all after puts to every target, then read them all back.
      for (int t = 0; t < n; ++t) {
        src[static_cast<size_t>(t)] = val(c.rank, t, 2 * round + 1);
        EXPECT_EP_OK(
            EP_Put(&src[static_cast<size_t>(t)], 1, MPI_INT64_T, t, c.rank, 1, MPI_INT64_T, win));
      }
      EXPECT_EP_OK(EP_Win_flush_all(win));
      std::fill(got.begin(), got.end(), -1);
      for (int t = 0; t < n; ++t) {
        EXPECT_EP_OK(
            EP_Get(&got[static_cast<size_t>(t)], 1, MPI_INT64_T, t, c.rank, 1, MPI_INT64_T, win));
      }
      EXPECT_EP_OK(EP_Win_flush_all(win));
      for (int t = 0; t < n; ++t) {
        EXPECT_EQ(got[static_cast<size_t>(t)], val(c.rank, t, 2 * round + 1))
            << c.who() << " round " << round << ": flush_all, target " << t;
      }
    }
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    for (int o = 0; o < n; ++o) {
      EXPECT_EQ(mem[static_cast<size_t>(o)], val(o, c.rank, 2 * rounds - 1))
          << c.who() << " slot " << o;
    }
    free_win(&win);
  });
}

TEST_P(Lock, FlushedPutIsInTargetMemoryBeforeTheEpochEnds) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    const int right = (c.rank + 1) % n, left = (c.rank + n - 1) % n;
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 1, 8, c.comm, kSent);  // from my left
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    const int64_t& mem = w.mem[0];
    const int rounds = ep_test::scaled(100);
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    for (int round = 0; round < rounds; ++round) {
      const int64_t v = val(c.rank, right, round);
      int token = round, in = -1, ack = -1;
      EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, win));
      EXPECT_EP_OK(EP_Win_flush(right, win));
      EP_Request sreq = EP_REQUEST_NULL, areq = EP_REQUEST_NULL;
      EXPECT_EP_OK(EP_Isend(&token, 1, MPI_INT, right, 1, c.comm, &sreq));
      EXPECT_EP_OK(EP_Recv(&in, 1, MPI_INT, left, 1, c.comm, EP_STATUS_IGNORE));
      EXPECT_EQ(in, round);
      // My left neighbour flushed its put before sending: it is in my memory now.
      EXPECT_EQ(mem, val(left, c.rank, round)) << c.who() << " round " << round;
      EXPECT_EP_OK(EP_Isend(&token, 1, MPI_INT, left, 2, c.comm, &areq));
      EXPECT_EP_OK(EP_Recv(&ack, 1, MPI_INT, right, 2, c.comm, EP_STATUS_IGNORE));
      EXPECT_EP_OK(EP_Wait(&sreq, EP_STATUS_IGNORE));
      EXPECT_EP_OK(EP_Wait(&areq, EP_STATUS_IGNORE));
    }
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    free_win(&win);
  });
}

// ---- Idle target --------------------------------------------------------------------------

TEST_P(Lock, IdleTargetServesPassiveOperations) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    const int targets[2] = {0, n - 1};  // process 0 and the last process
    const bool idle = c.rank == targets[0] || c.rank == targets[1];
    const int idle_ms = ep_rma_test::sanitized() ? 3000 : 1000;
    // Target memory: [0, n) a slot per origin, [n] accumulate sum, [n+1] fetch-and-op
    // counter, [n+2] compare-and-swap word, [n+3] a value the target stored itself.
    const int kAcc = n, kFop = n + 1, kCas = n + 2, kOwn = n + 3;
    WinOf<int64_t> w =
        open_win<int64_t>(flavor, static_cast<size_t>(n) + 4, 8, c.comm, [&](int64_t* m) {
          for (int i = 0; i < n; ++i) m[i] = kSent;
          m[kAcc] = m[kFop] = m[kCas] = 0;
          m[kOwn] = 4242 + c.rank;
        });
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    const int64_t* mem = w.mem;
    std::vector<int64_t> fetched(2, -1), cas_old(2, -1), own(2, -1), back(2, -1);
    double stamp = 0;
    if (idle) {
      // No libep call while the others work on my window.
      ep_rma_test::sleep_ms(idle_ms);
      stamp = now_s();  // woke up
    } else {
      const int64_t mine = c.rank + 1, one = 1, zero = 0;
      for (int k = 0; k < 2; ++k) {
        const int t = targets[k];
        const int64_t v = val(c.rank, t, 0);
        EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, t, 0, win));
        EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, t, c.rank, 1, MPI_INT64_T, win));
        EXPECT_EP_OK(
            EP_Get(&own[static_cast<size_t>(k)], 1, MPI_INT64_T, t, kOwn, 1, MPI_INT64_T, win));
        EXPECT_EP_OK(EP_Accumulate(&mine, 1, MPI_INT64_T, t, kAcc, 1, MPI_INT64_T, MPI_SUM, win));
        EXPECT_EP_OK(EP_Fetch_and_op(&one, &fetched[static_cast<size_t>(k)], MPI_INT64_T, t, kFop,
                                     MPI_SUM, win));
        EXPECT_EP_OK(EP_Compare_and_swap(&mine, &zero, &cas_old[static_cast<size_t>(k)],
                                         MPI_INT64_T, t, kCas, win));
        EXPECT_EP_OK(EP_Win_unlock(t, win));
        EXPECT_EP_OK(EP_Win_lock(EP_LOCK_EXCLUSIVE, t, 0, win));
        EXPECT_EP_OK(
            EP_Get(&back[static_cast<size_t>(k)], 1, MPI_INT64_T, t, c.rank, 1, MPI_INT64_T, win));
        EXPECT_EP_OK(EP_Win_unlock(t, win));
        EXPECT_EQ(own[static_cast<size_t>(k)], 4242 + t) << c.who() << ": target " << t;
        EXPECT_EQ(back[static_cast<size_t>(k)], v) << c.who() << ": target " << t;
        EXPECT_TRUE(fetched[static_cast<size_t>(k)] >= 0 && fetched[static_cast<size_t>(k)] < n - 2)
            << c.who() << ": fetched " << fetched[static_cast<size_t>(k)];
      }
      stamp = now_s();  // done
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    std::vector<double> stamps(static_cast<size_t>(n));
    EXPECT_EP_OK(EP_Allgather(&stamp, 1, MPI_DOUBLE, stamps.data(), 1, MPI_DOUBLE, c.comm));
    std::vector<int64_t> olds(2 * static_cast<size_t>(n));
    EXPECT_EP_OK(EP_Allgather(cas_old.data(), 2, MPI_INT64_T, olds.data(), 2, MPI_INT64_T, c.comm));
    const double woke =
        std::min(stamps[static_cast<size_t>(targets[0])], stamps[static_cast<size_t>(targets[1])]);
    if (!idle) {
      EXPECT_LT(stamp, woke) << c.who() << ": finished " << (stamp - woke) * 1e3
                             << " ms after the idle targets woke up: passive target "
                                "operations waited for the target endpoint";
    }
    if (idle) {
      const int t = c.rank, k = t == targets[0] ? 0 : 1;
      int64_t sum = 0;
      int winners = 0;
      int64_t winner = -1;
      for (int o = 0; o < n; ++o) {
        if (o == targets[0] || o == targets[1]) {
          EXPECT_EQ(mem[static_cast<size_t>(o)], kSent) << c.who() << " slot " << o;
          continue;
        }
        EXPECT_EQ(mem[static_cast<size_t>(o)], val(o, t, 0)) << c.who() << " slot " << o;
        sum += o + 1;
        if (olds[2 * static_cast<size_t>(o) + k] == 0) {
          ++winners;
          winner = o + 1;
        }
      }
      EXPECT_EQ(mem[static_cast<size_t>(kAcc)], sum) << c.who() << ": accumulate";
      EXPECT_EQ(mem[static_cast<size_t>(kFop)], n - 2) << c.who() << ": fetch-and-op";
      EXPECT_EQ(winners, 1) << c.who() << ": compare-and-swap winners";
      EXPECT_EQ(mem[static_cast<size_t>(kCas)], winner) << c.who() << ": compare-and-swap";
    }
    free_win(&win);
  });
}

INSTANTIATE_TEST_SUITE_P(Flavors, Lock, ::testing::Values(Flavor::kCreate, Flavor::kAllocate, Flavor::kHandler),
                         ep_rma_test::flavor_name);

}  // namespace
