// node_test.cc - EP_Win_create windows between processes of one node.
//
// Create: the origin thread reaches the target's user memory by cross-memory attach
// (rma/segment.h) where it can.  Handler: with ep_shared_memory=false the target's
// progress engine serves each operation, also a transfer larger than one packet.  Both:
// put / get / accumulate / fetch-and-op / compare-and-swap values, a flushed put visible
// at the target, and fetch-and-ops from every endpoint of every process on one counter
// that sums exactly (MPI 3.1 section 11.7.1: accumulates are atomic per element among
// themselves).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <set>
#include <vector>

#include "runtime/runtime.h"
#include "tests/common/harness.h"
#include "tests/rma/rma_util.h"

namespace {

using ep_rma_test::Ctx;
using ep_rma_test::Flavor;
using ep_rma_test::free_win;
using ep_rma_test::open_win_filled;
using ep_rma_test::run_world;
using ep_rma_test::WinOf;

[[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(120, 500);

bool node_way() { return ep::runtime::runtime()->node.on(); }

// The first rank of another process than c's (every process's first endpoint targets
// the next process's first endpoint), or -1 in a one-process world.
int peer_of(const Ctx& c) {
  if (c.wd->nprocs() < 2) return -1;
  return c.wd->base[static_cast<size_t>((c.proc + 1) % c.wd->nprocs())];
}

// Slots of each endpoint's window (int64): [0] put, [1] accumulate, [2] fetch-and-op,
// [3] compare-and-swap, [4] the shared counter (at rank 0).
constexpr size_t kSlots = 5;

// Every kind of operation from the first endpoint of each process to the first of the
// next, in one lock epoch, with the values checked at the origin (results) and at the
// target (after the origin's flush and a barrier).
void every_operation(const Ctx& c, EP_Win win, const int64_t* mem) {
  const int t = peer_of(c);
  const bool origin = c.idx == 0;
  if (origin) {
    const int64_t v = 1000 + c.proc, two = 2, seven = 7;
    int64_t got = -1, old = -1, swapped = -1;
    EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, t, 0, win));
    EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Win_flush(t, win));
    EXPECT_EP_OK(EP_Get(&got, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Accumulate(&two, 1, MPI_INT64_T, t, 1, 1, MPI_INT64_T, MPI_SUM, win));
    EXPECT_EP_OK(EP_Fetch_and_op(&seven, &old, MPI_INT64_T, t, 2, MPI_SUM, win));
    const int64_t expect = 10, desired = 99;
    EXPECT_EP_OK(EP_Compare_and_swap(&desired, &expect, &swapped, MPI_INT64_T, t, 3, win));
    EXPECT_EP_OK(EP_Win_flush(t, win));
    EXPECT_EQ(got, v) << c.who() << ": a flushed put is read back";
    EXPECT_EQ(old, 10) << c.who() << ": fetch-and-op returns the old value";
    EXPECT_EQ(swapped, 10) << c.who() << ": compare-and-swap returns the old value";
    EXPECT_EP_OK(EP_Win_unlock(t, win));
  }
  EXPECT_EP_OK(EP_Barrier(c.comm));
  if (c.idx == 0) {
    const int from = (c.proc + c.wd->nprocs() - 1) % c.wd->nprocs();
    EXPECT_EQ(mem[0], 1000 + from) << c.who();
    EXPECT_EQ(mem[1], 12) << c.who();
    EXPECT_EQ(mem[2], 17) << c.who();
    EXPECT_EQ(mem[3], 99) << c.who();
  }
}

// Fetch-and-op on rank 0's counter from every endpoint: the sum is exact and the
// fetched values are distinct (each increment saw its own predecessor).
void shared_counter(const Ctx& c, EP_Win win, const int64_t* mem) {
  const int iters = ep_test::scaled(300);
  const int64_t one = 1;
  std::vector<int64_t> seen(static_cast<size_t>(iters));
  EXPECT_EP_OK(EP_Win_lock_all(0, win));
  for (int i = 0; i < iters; ++i) {
    EXPECT_EP_OK(
        EP_Fetch_and_op(&one, &seen[static_cast<size_t>(i)], MPI_INT64_T, 0, 4, MPI_SUM, win));
    EXPECT_EP_OK(EP_Win_flush(0, win));
  }
  EXPECT_EP_OK(EP_Win_unlock_all(win));
  std::vector<int64_t> all(static_cast<size_t>(iters * c.size));
  EXPECT_EP_OK(
      EP_Allgather(seen.data(), iters, MPI_INT64_T, all.data(), iters, MPI_INT64_T, c.comm));
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(all[i], static_cast<int64_t>(i)) << c.who() << ": fetched values 0..n-1 once each";
  }
  if (c.rank == 0) {
    EXPECT_EQ(mem[4], static_cast<int64_t>(iters) * c.size) << c.who() << ": lost increments";
  }
}

TEST(NodeWindows, CreateWindowOperationsBetweenProcessesOfTheNode) {
  if (ep_test::world_size() < 2 || !node_way()) GTEST_SKIP() << "needs the node transport";
  run_world([&](const Ctx& c) {
    WinOf<int64_t> w = open_win_filled<int64_t>(Flavor::kCreate, kSlots, 8, c.comm, 10);
    ASSERT_NE(w.win, EP_WIN_NULL);
    w.mem[4] = 0;
    EXPECT_EP_OK(EP_Barrier(c.comm));
    if (c.idx == 0) {
      const int t = peer_of(c);
      const int64_t v = 5, one = 1;
      int64_t got = -1, old = -1;
      EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, t, 0, w.win));
      EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, w.win));
      EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, w.win));
      EXPECT_EP_OK(EP_Win_flush(t, w.win));
      EXPECT_EP_OK(EP_Get(&got, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, w.win));
      EXPECT_EP_OK(EP_Fetch_and_op(&one, &old, MPI_INT64_T, t, 1, MPI_SUM, w.win));
      EXPECT_EP_OK(EP_Win_flush(t, w.win));
      EXPECT_EQ(got, 5) << c.who();
      EXPECT_EQ(old, 10) << c.who();
      EXPECT_EP_OK(EP_Win_unlock(t, w.win));
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    if (c.idx == 0) {
      EXPECT_EQ(w.mem[0], 5) << c.who();
      EXPECT_EQ(w.mem[1], 11) << c.who();
      w.mem[1] = 10;  // every_operation's starting value (read after the barrier)
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    every_operation(c, w.win, w.mem);
    shared_counter(c, w.win, w.mem);
    free_win(&w.win);
  });
}

TEST(NodeWindows, HandlerCallsAreServedByTheTargetsEngine) {
  if (ep_test::world_size() < 2 || !node_way()) GTEST_SKIP() << "needs the node transport";
  run_world([&](const Ctx& c) {
    WinOf<int64_t> w = open_win_filled<int64_t>(Flavor::kHandler, kSlots, 8, c.comm, 10);
    ASSERT_NE(w.win, EP_WIN_NULL);
    w.mem[4] = 0;
    EXPECT_EP_OK(EP_Barrier(c.comm));
    every_operation(c, w.win, w.mem);
    shared_counter(c, w.win, w.mem);
    // A transfer larger than one packet: cut into chunks.
    const size_t big = 64 * 1024;
    std::vector<int64_t> out(big), back(big, -1);
    for (size_t i = 0; i < big; ++i) out[i] = static_cast<int64_t>(i * 3 + c.rank);
    void* mem = nullptr;
    EP_Win bw = EP_WIN_NULL;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "ep_shared_memory", "false");
    std::vector<int64_t> own(big, 0);
    mem = own.data();
    ASSERT_EP_OK(EP_Win_create(mem, static_cast<MPI_Aint>(big * 8), 8, info, c.comm, &bw));
    MPI_Info_free(&info);
    if (c.idx == 0) {
      const int t = peer_of(c);
      EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, t, 0, bw));
      EXPECT_EP_OK(EP_Put(out.data(), static_cast<int>(big), MPI_INT64_T, t, 0,
                          static_cast<int>(big), MPI_INT64_T, bw));
      EXPECT_EP_OK(EP_Win_flush(t, bw));
      EXPECT_EP_OK(EP_Get(back.data(), static_cast<int>(big), MPI_INT64_T, t, 0,
                          static_cast<int>(big), MPI_INT64_T, bw));
      EXPECT_EP_OK(EP_Win_unlock(t, bw));
      EXPECT_TRUE(back == out) << c.who() << ": a large put read back";
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EP_OK(EP_Win_free(&bw));
    free_win(&w.win);
  });
}

}  // namespace
