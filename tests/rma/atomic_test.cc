// Accumulate-family one-sided operations, on 1, 2 and 3 processes with uneven
// endpoints per process (3, 1, 2). Stress-tagged: run under TSAN by the CI.
// Every test runs on an EP_Win_create window (served by the target process's packet
// handler) and on an EP_Win_allocate one (reached directly by the processes of the node).
//  * 100 EP_Accumulate(MPI_SUM) per endpoint to one location, at rank 0 (process 0) and at
//    the last rank (the last process), in a lock_all and in a fence epoch: exact totals;
//  * accumulates from every endpoint for the same 0.3 s, so that origin threads of the
//    target's process and its packet handler update one location at the same time (under
//    TSAN a missing lock on either path is a reported race): exact totals;
//  * 1 MiB accumulates and 128 KiB get_accumulates (cut into chunks above the eager
//    limit): every element updated exactly once, fetched old values 0 .. n - 1 per element;
//  * EP_Fetch_and_op(MPI_SUM, +1) counters: the fetched values of all endpoints together
//    are exactly {0, ..., total - 1}; EP_Fetch_and_op(MPI_REPLACE) is a swap chain (the
//    fetched values plus the final one are the initial value plus every value swapped in);
//  * EP_Get_accumulate(MPI_SUM) returns old values (all distinct, per element), and
//    EP_Get_accumulate(MPI_NO_OP) is an atomic read that never goes backwards;
//  * EP_Compare_and_swap: result and memory for a failing and a succeeding compare, on
//    int, int64 and uint64; and a CAS spin mutex guarding a non-atomic EP_Get + EP_Put
//    increment (under lock_all with a CAS release, and under a shared lock with an
//    EP_Accumulate(MPI_REPLACE) release): exact final count;
//  * every EP_Accumulate op (SUM, PROD, MAX, MIN, LAND, LOR, LXOR, BAND, BOR, BXOR on
//    integer and floating types, MAXLOC / MINLOC on MPI_2INT, REPLACE) from every endpoint
//    to every endpoint, with expected values computed here, in fence and lock_all epochs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/harness.h"
#include "tests/rma/rma_util.h"

namespace {

using ep_rma_test::Ctx;
using ep_rma_test::Flavor;
using ep_rma_test::free_win;
using ep_rma_test::open_win;
using ep_rma_test::open_win_filled;
using ep_rma_test::run_world;
using ep_rma_test::WinOf;

[[maybe_unused]] const bool kWatchdog = ep_rma_test::install_watchdog();

// Every test runs on EP_Win_create and on EP_Win_allocate windows.
class Atomic : public ::testing::TestWithParam<Flavor> {};

// ---- Accumulate totals --------------------------------------------------------------------

TEST_P(Atomic, HundredAccumulatesPerEndpointGiveExactTotals) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size, t0 = 0, t1 = n - 1;
    constexpr int kAcc = 100;
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 4, 8, c.comm, 0);
    WinOf<double> dw = open_win_filled<double>(flavor, 1, 8, c.comm, 0.0);
    ASSERT_TRUE(w.win != EP_WIN_NULL && dw.win != EP_WIN_NULL);
    EP_Win win = w.win, dwin = dw.win;
    int64_t* mem = w.mem;
    double& dmem = dw.mem[0];
    const int64_t one = 1, mine = c.rank + 1;
    const double half = 0.5;
    int64_t sum_ranks = 0;
    for (int r = 0; r < n; ++r) sum_ranks += r + 1;

    // Passive: pipelined accumulates, completed by unlock_all.
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    for (int i = 0; i < kAcc; ++i) {
      EXPECT_EP_OK(EP_Accumulate(&one, 1, MPI_INT64_T, t0, 0, 1, MPI_INT64_T, MPI_SUM, win));
      EXPECT_EP_OK(EP_Accumulate(&one, 1, MPI_INT64_T, t1, 0, 1, MPI_INT64_T, MPI_SUM, win));
      EXPECT_EP_OK(EP_Accumulate(&mine, 1, MPI_INT64_T, t0, 1, 1, MPI_INT64_T, MPI_SUM, win));
      if (i % 10 == 9) {
        EXPECT_EP_OK(EP_Win_flush(t1, win));
      }
    }
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    if (c.rank == t0) {
      EXPECT_EQ(mem[0], int64_t{kAcc} * n) << c.who();
      EXPECT_EQ(mem[1], kAcc * sum_ranks) << c.who();
    }
    if (c.rank == t1) {
      EXPECT_EQ(mem[0], int64_t{kAcc} * n) << c.who();
    }

    // Active: the same in a fence epoch, on int64 and on double.
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOPRECEDE, win));
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOPRECEDE, dwin));
    for (int i = 0; i < kAcc; ++i) {
      EXPECT_EP_OK(EP_Accumulate(&one, 1, MPI_INT64_T, t1, 2, 1, MPI_INT64_T, MPI_SUM, win));
      EXPECT_EP_OK(EP_Accumulate(&half, 1, MPI_DOUBLE, t1, 0, 1, MPI_DOUBLE, MPI_SUM, dwin));
    }
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, win));
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, dwin));
    if (c.rank == t1) {
      EXPECT_EQ(mem[2], int64_t{kAcc} * n) << c.who();
      EXPECT_EQ(dmem, 0.5 * kAcc * n) << c.who();
    }
    free_win(&win);
    free_win(&dwin);
  });
}

// Every endpoint accumulates +1 to two counters (rank 0 and the last rank) for the same
// stretch of time, so that operations done by origin threads of the target's process
// overlap with those its packet handler applies for other processes: the counters must
// equal the number of accumulates issued.
TEST_P(Atomic, AccumulatesOverlappingInTimeAreExact) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size, t0 = 0, t1 = n - 1;
    // [0] the sum; [1] overwritten with MPI_REPLACE (whose copies, unlike MPI_SUM's
    // MPI_Reduce_local inside MPICH, ThreadSanitizer can see).
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 2, 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    const int64_t one = 1, mine = c.rank + 1;
    const double duration = ep_rma_test::sanitized() ? 0.6 : 0.3;
    int64_t count = 0;
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    const double end = ep_rma_test::now_s() + duration;
    while (ep_rma_test::now_s() < end) {
      for (int k = 0; k < 32; ++k) {
        EXPECT_EP_OK(EP_Accumulate(&one, 1, MPI_INT64_T, t0, 0, 1, MPI_INT64_T, MPI_SUM, win));
        EXPECT_EP_OK(EP_Accumulate(&one, 1, MPI_INT64_T, t1, 0, 1, MPI_INT64_T, MPI_SUM, win));
        EXPECT_EP_OK(EP_Accumulate(&mine, 1, MPI_INT64_T, t0, 1, 1, MPI_INT64_T, MPI_REPLACE, win));
      }
      count += 32;
      EXPECT_EP_OK(EP_Win_flush_all(win));
      if (testing::Test::HasFailure()) break;
    }
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    int64_t total = 0;
    EXPECT_EP_OK(EP_Allreduce(&count, &total, 1, MPI_INT64_T, MPI_SUM, c.comm));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    if (c.rank == t0 || c.rank == t1) {
      EXPECT_EQ(w.mem[0], total) << c.who() << ": " << total - w.mem[0] << " lost updates";
    }
    if (c.rank == t0) {
      EXPECT_TRUE(w.mem[1] >= 1 && w.mem[1] <= n)
          << c.who() << ": MPI_REPLACE left " << w.mem[1] << ", which nobody wrote";
    }
    free_win(&win);
  });
}

// ---- Fetch-and-op -------------------------------------------------------------------------

std::vector<int64_t> allgather(const Ctx& c, const std::vector<int64_t>& mine) {
  std::vector<int64_t> all(mine.size() * static_cast<size_t>(c.size), -1);
  EXPECT_EP_OK(EP_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_INT64_T, all.data(),
                            static_cast<int>(mine.size()), MPI_INT64_T, c.comm));
  return all;
}

// Checks that v (sorted here) is exactly {0, step, 2 step, ..., (v.size() - 1) step}.
void expect_distinct_sequence(std::vector<int64_t> v, int64_t step, const std::string& what) {
  std::sort(v.begin(), v.end());
  int bad = 0;
  for (size_t i = 0; i < v.size() && bad < 5; ++i) {
    if (v[i] != static_cast<int64_t>(i) * step) {
      ADD_FAILURE() << what << ": sorted fetched value #" << i << " is " << v[i] << ", expected "
                    << static_cast<int64_t>(i) * step << " (a duplicate or a lost update)";
      ++bad;
    }
  }
}

TEST_P(Atomic, FetchAndOpValuesAreAllDistinct) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size, t0 = 0, t1 = n - 1;
    const int iters = ep_test::scaled(2000);
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 2, 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    int64_t* mem = w.mem;
    const int64_t one = 1;
    std::vector<int64_t> got0(static_cast<size_t>(iters), -1), got1(static_cast<size_t>(iters), -1);
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    for (int i = 0; i < iters; ++i) {
      // To the last rank: pipelined, completed every 16 operations.
      EXPECT_EP_OK(
          EP_Fetch_and_op(&one, &got1[static_cast<size_t>(i)], MPI_INT64_T, t1, 1, MPI_SUM, win));
      if (i % 16 == 15) {
        EXPECT_EP_OK(EP_Win_flush(t1, win));
      }
      // To rank 0: one at a time.
      EXPECT_EP_OK(
          EP_Fetch_and_op(&one, &got0[static_cast<size_t>(i)], MPI_INT64_T, t0, 0, MPI_SUM, win));
      EXPECT_EP_OK(EP_Win_flush(t0, win));
      EXPECT_GE(got0[static_cast<size_t>(i)], 0);
      if (i > 0) {
        // Accumulate ordering: my own increments are seen in order.
        EXPECT_GT(got0[static_cast<size_t>(i)], got0[static_cast<size_t>(i) - 1]) << c.who();
      }
    }
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    expect_distinct_sequence(allgather(c, got0), 1, c.who() + ": counter at rank 0");
    expect_distinct_sequence(allgather(c, got1), 1,
                             c.who() + ": counter at rank " + std::to_string(t1));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    if (c.rank == t0) {
      EXPECT_EQ(mem[0], int64_t{iters} * n);
    }
    if (c.rank == t1) {
      EXPECT_EQ(mem[1], int64_t{iters} * n);
    }
    free_win(&win);
  });
}

TEST_P(Atomic, FetchAndOpReplaceIsASwapChain) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size, t = n - 1;
    const int iters = ep_test::scaled(1000);
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 1, 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    int64_t& mem = w.mem[0];
    std::vector<int64_t> mine(static_cast<size_t>(iters)), got(static_cast<size_t>(iters), -1);
    for (int i = 0; i < iters; ++i) mine[static_cast<size_t>(i)] = int64_t{c.rank} * iters + i + 1;
    EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, t, 0, win));
    for (int i = 0; i < iters; ++i) {
      EXPECT_EP_OK(EP_Fetch_and_op(&mine[static_cast<size_t>(i)], &got[static_cast<size_t>(i)],
                                   MPI_INT64_T, t, 0, MPI_REPLACE, win));
      if (i % 8 == 7) {
        EXPECT_EP_OK(EP_Win_flush(t, win));
      }
    }
    EXPECT_EP_OK(EP_Win_unlock(t, win));
    std::vector<int64_t> all = allgather(c, got);
    EXPECT_EP_OK(EP_Barrier(c.comm));
    if (c.rank == t) {
      all.push_back(mem);  // the value left in memory
      // Every value 0 (initial), 1 .. n * iters (swapped in) appears exactly once.
      expect_distinct_sequence(all, 1, c.who() + ": swap chain");
    }
    free_win(&win);
  });
}

// ---- Get_accumulate -----------------------------------------------------------------------

TEST_P(Atomic, GetAccumulateReturnsOldValuesAndNoOpReads) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size, t = n - 1;
    const int iters = ep_test::scaled(500);
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 2, 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    int64_t* mem = w.mem;
    const int64_t add[2] = {1, 2};
    std::vector<int64_t> old0(static_cast<size_t>(iters)), old1(static_cast<size_t>(iters));
    int64_t last_read = -1;
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    for (int i = 0; i < iters; ++i) {
      int64_t old[2] = {-1, -1}, now[2] = {-1, -1};
      EXPECT_EP_OK(EP_Get_accumulate(add, 2, MPI_INT64_T, old, 2, MPI_INT64_T, t, 0, 2, MPI_INT64_T,
                                     MPI_SUM, win));
      EXPECT_EP_OK(EP_Win_flush(t, win));
      EXPECT_EP_OK(EP_Get_accumulate(add, 2, MPI_INT64_T, now, 2, MPI_INT64_T, t, 0, 2, MPI_INT64_T,
                                     MPI_NO_OP, win));
      EXPECT_EP_OK(EP_Win_flush(t, win));
      old0[static_cast<size_t>(i)] = old[0];
      old1[static_cast<size_t>(i)] = old[1];
      EXPECT_GE(now[0], old[0] + 1) << c.who() << ": NO_OP read older than my own update";
      EXPECT_GE(now[1], old[1] + 2) << c.who() << ": NO_OP read older than my own update";
      EXPECT_GE(now[0], last_read) << c.who() << ": NO_OP reads went backwards";
      last_read = now[0];
    }
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    expect_distinct_sequence(allgather(c, old0), 1, c.who() + ": element 0 (+1)");
    expect_distinct_sequence(allgather(c, old1), 2, c.who() + ": element 1 (+2)");
    EXPECT_EP_OK(EP_Barrier(c.comm));
    if (c.rank == t) {
      EXPECT_EQ(mem[0], int64_t{iters} * n);
      EXPECT_EQ(mem[1], 2 * int64_t{iters} * n);
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    // MPI_NO_OP ignores its origin arguments: a NULL origin buffer with count 0 is fine.
    int64_t r[2] = {-1, -1};
    EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, t, 0, win));
    EXPECT_EP_OK(EP_Get_accumulate(nullptr, 0, MPI_INT64_T, r, 2, MPI_INT64_T, t, 0, 2, MPI_INT64_T,
                                   MPI_NO_OP, win));
    EXPECT_EP_OK(EP_Win_unlock(t, win));
    EXPECT_EQ(r[0], int64_t{iters} * n) << c.who();
    EXPECT_EQ(r[1], 2 * int64_t{iters} * n) << c.who();
    free_win(&win);
  });
}

// Accumulate-family operations larger than the eager limit are cut into chunks; each
// element must still be updated atomically and exactly once.
TEST_P(Atomic, LargeAccumulateAndGetAccumulateAreElementwiseExact) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size, t = n - 1;
    constexpr int kN = 1 << 17;  // 1 MiB of int64 for the accumulate
    constexpr int kG = 1 << 14;  // 128 KiB for the get_accumulate
    // [0, kN): accumulate target; [kN, kN + kG): get_accumulate target.
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, kN + kG, 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    const int64_t* mem = w.mem;
    std::vector<int64_t> add(kN), one(kG, 1), old(kG, -1);
    for (int i = 0; i < kN; ++i) add[static_cast<size_t>(i)] = int64_t{c.rank + 1} * (i % 5 + 1);
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    EXPECT_EP_OK(EP_Accumulate(add.data(), kN, MPI_INT64_T, t, 0, kN, MPI_INT64_T, MPI_SUM, win));
    EXPECT_EP_OK(EP_Get_accumulate(one.data(), kG, MPI_INT64_T, old.data(), kG, MPI_INT64_T, t, kN,
                                   kG, MPI_INT64_T, MPI_SUM, win));
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    const std::vector<int64_t> all = allgather(c, old);
    EXPECT_EP_OK(EP_Barrier(c.comm));
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += r + 1;
    int bad = 0;
    if (c.rank == t) {
      for (int i = 0; i < kN && bad < 5; ++i) {
        if (mem[i] != sum * (i % 5 + 1)) {
          ADD_FAILURE() << c.who() << ": element " << i << " is " << mem[i] << ", expected "
                        << sum * (i % 5 + 1);
          ++bad;
        }
      }
      for (int i = 0; i < kG && bad < 10; ++i) {
        if (mem[kN + i] != n) {
          ADD_FAILURE() << c.who() << ": get_accumulate element " << i << " is " << mem[kN + i];
          ++bad;
        }
      }
    }
    // Per element, the old values the endpoints fetched are 0, 1, ..., n - 1.
    for (int i = 0; i < kG && bad < 15; ++i) {
      std::vector<int64_t> olds;
      for (int r = 0; r < n; ++r) olds.push_back(all[static_cast<size_t>(r) * kG + i]);
      std::sort(olds.begin(), olds.end());
      for (int r = 0; r < n; ++r) {
        if (olds[static_cast<size_t>(r)] != r) {
          ADD_FAILURE() << c.who() << ": element " << i << ": fetched old values are not 0.."
                        << n - 1;
          ++bad;
          break;
        }
      }
    }
    free_win(&win);
  });
}

// ---- Compare-and-swap -----------------------------------------------------------------------

struct CasSlot {
  int32_t i32;
  int32_t pad;
  int64_t i64;
  uint64_t u64;
};

TEST_P(Atomic, CompareAndSwapSwapsOnlyOnEqual) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    // Slot o of my window belongs to origin o.
    auto init = [](int o) {
      return CasSlot{10 + o, 0, (int64_t{1} << 40) + o, (uint64_t{1} << 63) + 7u + o};
    };
    WinOf<CasSlot> w =
        open_win<CasSlot>(flavor, static_cast<size_t>(n), 1, c.comm, [&](CasSlot* m) {
          for (int o = 0; o < n; ++o) m[o] = init(o);
        });
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    CasSlot* mem = w.mem;
    for (int t : {(c.rank + 1) % n, c.rank}) {
      const MPI_Aint off = static_cast<MPI_Aint>(c.rank * sizeof(CasSlot));
      const CasSlot in = init(c.rank);
      const int32_t a_new = -3, a_wrong = in.i32 + 1;
      const int64_t b_new = -(int64_t{1} << 50), b_wrong = in.i64 - 1;
      const uint64_t c_new = 12345, c_wrong = 0;
      int32_t ra1 = 0, ra2 = 0;
      int64_t rb1 = 0, rb2 = 0;
      uint64_t rc1 = 0, rc2 = 0;
      EXPECT_EP_OK(EP_Win_lock(EP_LOCK_EXCLUSIVE, t, 0, win));
      // Wrong compare first (no swap), then the right one (swap); same origin and
      // location, so they are applied in this order.
      EXPECT_EP_OK(EP_Compare_and_swap(&a_new, &a_wrong, &ra1, MPI_INT, t, off, win));
      EXPECT_EP_OK(EP_Compare_and_swap(&a_new, &in.i32, &ra2, MPI_INT, t, off, win));
      EXPECT_EP_OK(EP_Compare_and_swap(&b_new, &b_wrong, &rb1, MPI_INT64_T, t, off + 8, win));
      EXPECT_EP_OK(EP_Compare_and_swap(&b_new, &in.i64, &rb2, MPI_INT64_T, t, off + 8, win));
      EXPECT_EP_OK(EP_Compare_and_swap(&c_new, &c_wrong, &rc1, MPI_UINT64_T, t, off + 16, win));
      EXPECT_EP_OK(EP_Compare_and_swap(&c_new, &in.u64, &rc2, MPI_UINT64_T, t, off + 16, win));
      EXPECT_EP_OK(EP_Win_flush(t, win));
      CasSlot back{};
      EXPECT_EP_OK(EP_Get(&back, static_cast<int>(sizeof back), MPI_BYTE, t, off,
                          static_cast<int>(sizeof back), MPI_BYTE, win));
      EXPECT_EP_OK(EP_Win_unlock(t, win));
      const std::string w = c.who() + " target " + std::to_string(t);
      EXPECT_EQ(ra1, in.i32) << w;
      EXPECT_EQ(ra2, in.i32) << w;
      EXPECT_EQ(rb1, in.i64) << w;
      EXPECT_EQ(rb2, in.i64) << w;
      EXPECT_EQ(rc1, in.u64) << w;
      EXPECT_EQ(rc2, in.u64) << w;
      EXPECT_EQ(back.i32, a_new) << w;
      EXPECT_EQ(back.i64, b_new) << w;
      EXPECT_EQ(back.u64, c_new) << w;
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    // Slot o of my window was swapped by origin o if o is me or my left neighbour.
    for (int o = 0; o < n; ++o) {
      const bool touched = o == c.rank || (o + 1) % n == c.rank;
      const CasSlot& s = mem[static_cast<size_t>(o)];
      if (touched) {
        EXPECT_EQ(s.i32, -3) << c.who() << " slot " << o;
        EXPECT_EQ(s.i64, -(int64_t{1} << 50)) << c.who() << " slot " << o;
        EXPECT_EQ(s.u64, 12345u) << c.who() << " slot " << o;
      } else {
        EXPECT_EQ(s.i32, init(o).i32) << c.who() << " slot " << o << " was not to be touched";
      }
    }
    free_win(&win);
  });
}

// A spin mutex made of EP_Compare_and_swap, guarding a non-atomic read-modify-write of a
// counter next to it (both at the last rank): the final count is exact only if the mutex
// excludes and the counter's Get/Put are complete (flushed) before the release.
void cas_mutex(Flavor flavor, bool use_lock_all) {
  run_world([flavor, use_lock_all](const Ctx& c) {
    const int n = c.size, t = n - 1;
    const int iters = ep_test::scaled(400);
    // [0] the mutex (0 free, else the holder's rank + 1), [1] the counter.
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 2, 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    int64_t* mem = w.mem;
    const int64_t me = c.rank + 1, zero = 0;
    if (use_lock_all) {
      EXPECT_EP_OK(EP_Win_lock_all(0, win));
    } else {
      EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, t, 0, win));
    }
    int64_t spins = 0;
    for (int i = 0; i < iters; ++i) {
      int64_t old = -1;
      for (;;) {
        int rc = EP_Compare_and_swap(&me, &zero, &old, MPI_INT64_T, t, 0, win);
        if (rc == EP_SUCCESS) rc = EP_Win_flush(t, win);
        ASSERT_EQ(rc, EP_SUCCESS) << c.who() << ": " << ep_rma_test::describe(rc);
        if (old == 0) break;
        ASSERT_TRUE(old >= 1 && old <= n) << c.who() << ": mutex holds " << old;
        ASSERT_NE(old, me) << c.who() << ": I already hold the mutex";
        ++spins;
        std::this_thread::yield();
      }
      int64_t v = -1;
      EXPECT_EP_OK(EP_Get(&v, 1, MPI_INT64_T, t, 1, 1, MPI_INT64_T, win));
      EXPECT_EP_OK(EP_Win_flush(t, win));
      EXPECT_GE(v, 0);
      const int64_t v1 = v + 1;
      EXPECT_EP_OK(EP_Put(&v1, 1, MPI_INT64_T, t, 1, 1, MPI_INT64_T, win));
      EXPECT_EP_OK(EP_Win_flush(t, win));
      if (use_lock_all) {
        int64_t was = -1;
        EXPECT_EP_OK(EP_Compare_and_swap(&zero, &me, &was, MPI_INT64_T, t, 0, win));
        EXPECT_EP_OK(EP_Win_flush(t, win));
        EXPECT_EQ(was, me) << c.who() << ": someone else changed the mutex I held";
      } else {
        EXPECT_EP_OK(EP_Accumulate(&zero, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, MPI_REPLACE, win));
        EXPECT_EP_OK(EP_Win_flush(t, win));
      }
    }
    if (use_lock_all) {
      EXPECT_EP_OK(EP_Win_unlock_all(win));
    } else {
      EXPECT_EP_OK(EP_Win_unlock(t, win));
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    if (c.rank == t) {
      EXPECT_EQ(mem[1], int64_t{iters} * n) << c.who() << ": lost increments";
      EXPECT_EQ(mem[0], 0) << c.who() << ": mutex left held";
    }
    (void)spins;
    free_win(&win);
  });
}

TEST_P(Atomic, CasMutexUnderLockAllGuardsReadModifyWrite) { cas_mutex(GetParam(), true); }
TEST_P(Atomic, CasMutexUnderSharedLockReleasedByReplace) { cas_mutex(GetParam(), false); }

// ---- Every accumulate op ------------------------------------------------------------------

struct Pair {
  int v;
  int i;
  bool operator==(const Pair& o) const { return v == o.v && i == o.i; }
};
std::ostream& operator<<(std::ostream& os, const Pair& p) {
  return os << "(" << p.v << ", " << p.i << ")";
}

constexpr int kElems = 3;       // elements per op case, accumulated with one call
constexpr int kCaseBytes = 32;  // room per case in the window

class OpCase {
 public:
  virtual ~OpCase() = default;
  virtual const char* name() const = 0;
  virtual MPI_Op op() const = 0;
  virtual MPI_Datatype type() const = 0;
  virtual void store_init(void* at) const = 0;            // kElems initial values
  virtual void fill_src(void* at, int origin) const = 0;  // kElems contributions
  virtual void check(const void* at, int n, const std::string& who) const = 0;
};

template <class T, class Init, class Contrib, class Fold>
class TypedCase : public OpCase {
 public:
  TypedCase(const char* name, MPI_Op op, MPI_Datatype type, Init init, Contrib contrib, Fold fold)
      : name_(name), op_(op), type_(type), init_(init), contrib_(contrib), fold_(fold) {}
  const char* name() const override { return name_; }
  MPI_Op op() const override { return op_; }
  MPI_Datatype type() const override { return type_; }
  void store_init(void* at) const override {
    for (int k = 0; k < kElems; ++k) {
      const T v = init_(k);
      std::memcpy(static_cast<char*>(at) + k * sizeof(T), &v, sizeof(T));
    }
  }
  void fill_src(void* at, int origin) const override {
    for (int k = 0; k < kElems; ++k) {
      const T v = contrib_(origin, k);
      std::memcpy(static_cast<char*>(at) + k * sizeof(T), &v, sizeof(T));
    }
  }
  void check(const void* at, int n, const std::string& who) const override {
    for (int k = 0; k < kElems; ++k) {
      T e = init_(k);
      for (int o = 0; o < n; ++o) e = fold_(e, contrib_(o, k));
      T got;
      std::memcpy(&got, static_cast<const char*>(at) + k * sizeof(T), sizeof(T));
      EXPECT_EQ(got, e) << who << ": MPI_" << name_ << " element " << k;
    }
  }

 private:
  const char* name_;
  MPI_Op op_;
  MPI_Datatype type_;
  Init init_;
  Contrib contrib_;
  Fold fold_;
};

template <class T, class Init, class Contrib, class Fold>
std::unique_ptr<OpCase> make_case(const char* name, MPI_Op op, MPI_Datatype type, Init init,
                                  Contrib contrib, Fold fold) {
  static_assert(sizeof(T) * kElems <= kCaseBytes, "case does not fit");
  return std::make_unique<TypedCase<T, Init, Contrib, Fold>>(name, op, type, init, contrib, fold);
}

std::vector<std::unique_ptr<OpCase>> all_cases(int n) {
  std::vector<std::unique_ptr<OpCase>> v;
  auto lg = [](auto x) { return x != 0; };
  v.push_back(make_case<int64_t>(
      "SUM", MPI_SUM, MPI_INT64_T, [](int k) { return int64_t{1000} + k; },
      [](int o, int k) { return int64_t{o} * 3 + k + 1; },
      [](int64_t a, int64_t b) { return a + b; }));
  v.push_back(make_case<int32_t>(
      "SUM", MPI_SUM, MPI_INT, [](int k) { return 7 - k; }, [](int o, int k) { return o - 2 * k; },
      [](int32_t a, int32_t b) { return a + b; }));
  v.push_back(make_case<int64_t>(
      "PROD", MPI_PROD, MPI_INT64_T, [](int k) { return int64_t{k} + 1; },
      [](int o, int k) { return int64_t{(o + k) % 3 + 1}; },
      [](int64_t a, int64_t b) { return a * b; }));
  v.push_back(make_case<int32_t>(
      "MAX", MPI_MAX, MPI_INT, [](int k) { return 3 + k; },
      [](int o, int k) { return (o * 7 + k * 5) % 11 - 2; },
      [](int32_t a, int32_t b) { return std::max(a, b); }));
  v.push_back(make_case<int32_t>(
      "MIN", MPI_MIN, MPI_INT, [](int k) { return 5 - 4 * k; },
      [](int o, int k) { return (o * 7 + k * 5) % 11 - 2; },
      [](int32_t a, int32_t b) { return std::min(a, b); }));
  v.push_back(make_case<int32_t>(
      "LAND", MPI_LAND, MPI_INT, [](int) { return 1; },
      [n](int o, int k) { return k == 0   ? 1
                                 : k == 1 ? (o == n - 1 ? 0 : 1)
                                          : 2 + o; },
      [lg](int32_t a, int32_t b) { return static_cast<int32_t>(lg(a) && lg(b)); }));
  v.push_back(make_case<int32_t>(
      "LOR", MPI_LOR, MPI_INT, [](int) { return 0; },
      [n](int o, int k) { return k == 0   ? 0
                                 : k == 1 ? (o == n - 1 ? 5 : 0)
                                          : o % 2; },
      [lg](int32_t a, int32_t b) { return static_cast<int32_t>(lg(a) || lg(b)); }));
  v.push_back(make_case<int32_t>(
      "LXOR", MPI_LXOR, MPI_INT, [](int k) { return k == 1 ? 1 : 0; },
      [](int o, int k) { return k == 0   ? 1
                                : k == 1 ? o % 2
                                         : (o % 3 == 0 ? 7 : 0); },
      [lg](int32_t a, int32_t b) { return static_cast<int32_t>(lg(a) != lg(b)); }));
  v.push_back(make_case<uint64_t>(
      "BAND", MPI_BAND, MPI_UINT64_T, [](int k) { return ~uint64_t{0} << k; },
      [](int o, int k) { return ~(uint64_t{1} << (o * 3 + k)); },
      [](uint64_t a, uint64_t b) { return a & b; }));
  v.push_back(make_case<int64_t>(
      "BOR", MPI_BOR, MPI_INT64_T, [](int k) { return int64_t{1} << (40 + k); },
      [](int o, int k) { return int64_t{1} << (o * 2 + k); },
      [](int64_t a, int64_t b) { return a | b; }));
  v.push_back(make_case<int64_t>(
      "BXOR", MPI_BXOR, MPI_INT64_T, [](int k) { return int64_t{0x5555} + k; },
      [](int o, int k) { return int64_t{o} * 0x1111 + k + (int64_t{1} << (33 + o)); },
      [](int64_t a, int64_t b) { return a ^ b; }));
  v.push_back(make_case<uint8_t>(
      "BOR", MPI_BOR, MPI_UNSIGNED_CHAR, [](int k) { return static_cast<uint8_t>(k); },
      [](int o, int k) { return static_cast<uint8_t>(1u << ((o + k) % 8)); },
      [](uint8_t a, uint8_t b) { return static_cast<uint8_t>(a | b); }));
  v.push_back(make_case<double>(
      "SUM", MPI_SUM, MPI_DOUBLE, [](int k) { return 0.25 + k; },
      [](int o, int k) { return o * 0.5 - k; }, [](double a, double b) { return a + b; }));
  v.push_back(make_case<double>(
      "MAX", MPI_MAX, MPI_DOUBLE, [](int k) { return -1.5 + k; },
      [](int o, int k) { return ((o * 5 + k) % 7) * 0.75 - 2.0; },
      [](double a, double b) { return std::max(a, b); }));
  v.push_back(make_case<float>(
      "MIN", MPI_MIN, MPI_FLOAT, [](int k) { return 2.5f - k; },
      [](int o, int k) { return ((o * 5 + k) % 7) * 0.5f - 1.0f; },
      [](float a, float b) { return std::min(a, b); }));
  auto maxloc = [](Pair a, Pair b) {
    if (a.v != b.v) return a.v > b.v ? a : b;
    return Pair{a.v, std::min(a.i, b.i)};
  };
  auto minloc = [](Pair a, Pair b) {
    if (a.v != b.v) return a.v < b.v ? a : b;
    return Pair{a.v, std::min(a.i, b.i)};
  };
  v.push_back(make_case<Pair>(
      "MAXLOC", MPI_MAXLOC, MPI_2INT,
      [](int k) {
        return Pair{2 + k, 100};
      },
      [](int o, int k) {
        return Pair{(o * 7 + k) % 5, o};
      },
      maxloc));
  v.push_back(make_case<Pair>(
      "MINLOC", MPI_MINLOC, MPI_2INT,
      [](int k) {
        return Pair{1 + k, 100};
      },
      [](int o, int k) {
        return Pair{(o * 3 + k) % 4 + 1, o};
      },
      minloc));
  return v;
}

int64_t replace_val(int o, int t) { return 7000000 + 1000LL * o + t; }

TEST_P(Atomic, EveryAccumulateOpGivesTheExpectedValue) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    const auto cases = all_cases(n);
    const size_t nc = cases.size();
    // Layout: nc case blocks, then n REPLACE slots (one per origin), then one contended
    // REPLACE slot.
    const size_t rep_off = nc * kCaseBytes, cont_off = rep_off + 8 * static_cast<size_t>(n);
    char* mem = nullptr;
    auto init = [&] {
      for (size_t i = 0; i < nc; ++i) cases[i]->store_init(mem + i * kCaseBytes);
      for (int o = 0; o < n; ++o) {
        const int64_t s = -1;
        std::memcpy(mem + rep_off + 8 * o, &s, 8);
      }
      const int64_t s = -2;
      std::memcpy(mem + cont_off, &s, 8);
    };
    auto check = [&](const std::string& phase) {
      const std::string w = c.who() + " " + phase;
      for (size_t i = 0; i < nc; ++i) cases[i]->check(mem + i * kCaseBytes, n, w);
      for (int o = 0; o < n; ++o) {
        int64_t got;
        std::memcpy(&got, mem + rep_off + 8 * o, 8);
        EXPECT_EQ(got, replace_val(o, c.rank)) << w << ": MPI_REPLACE slot of origin " << o;
      }
      int64_t got;
      std::memcpy(&got, mem + cont_off, 8);
      bool known = false;
      for (int o = 0; o < n; ++o) known = known || got == replace_val(o, c.rank) + 1;
      EXPECT_TRUE(known) << w << ": contended MPI_REPLACE left " << got
                         << ", which no origin wrote";
    };
    WinOf<char> w = open_win<char>(flavor, cont_off + 8, 1, c.comm, [&](char* m) {
      mem = m;
      init();
    });
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    // Origin buffers: per target, per case; alive until the epoch ends.
    std::vector<std::vector<char>> src(static_cast<size_t>(n),
                                       std::vector<char>(nc * kCaseBytes + 16));
    auto issue = [&] {
      for (int t = 0; t < n; ++t) {
        char* s = src[static_cast<size_t>(t)].data();
        for (size_t i = 0; i < nc; ++i) {
          cases[i]->fill_src(s + i * kCaseBytes, c.rank);
          EXPECT_EP_OK(EP_Accumulate(s + i * kCaseBytes, kElems, cases[i]->type(), t,
                                     static_cast<MPI_Aint>(i * kCaseBytes), kElems,
                                     cases[i]->type(), cases[i]->op(), win))
              << " MPI_" << cases[i]->name() << " to " << t;
        }
        const int64_t r1 = replace_val(c.rank, t), r2 = r1 + 1;
        std::memcpy(s + nc * kCaseBytes, &r1, 8);
        std::memcpy(s + nc * kCaseBytes + 8, &r2, 8);
        EXPECT_EP_OK(EP_Accumulate(s + nc * kCaseBytes, 1, MPI_INT64_T, t,
                                   static_cast<MPI_Aint>(rep_off + 8 * c.rank), 1, MPI_INT64_T,
                                   MPI_REPLACE, win));
        EXPECT_EP_OK(EP_Accumulate(s + nc * kCaseBytes + 8, 1, MPI_INT64_T, t,
                                   static_cast<MPI_Aint>(cont_off), 1, MPI_INT64_T, MPI_REPLACE,
                                   win));
      }
    };
    // Fence epoch.
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOPRECEDE, win));
    issue();
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, win));
    check("fence epoch");
    // lock_all epoch, on freshly initialized memory.
    init();
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    issue();
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    check("lock_all epoch");
    free_win(&win);
  });
}

INSTANTIATE_TEST_SUITE_P(Flavors, Atomic, ::testing::Values(Flavor::kCreate, Flavor::kAllocate, Flavor::kHandler),
                         ep_rma_test::flavor_name);

}  // namespace
