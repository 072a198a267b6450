// Shared windows (EP_Win_allocate_shared, EP_Win_shared_query) on 1, 2 and 3
// processes with uneven endpoints (3, 1, 2), all on this node.
//  * every endpoint stores directly into every other endpoint's segment (pointers from
//    EP_Win_shared_query) and loads what the others stored, within a process and across;
//  * segments are contiguous in rank order (uneven sizes, one of them empty), and
//    EP_PROC_NULL answers the first non-empty segment;
//  * direct atomic increments (one shared counter, from every endpoint) mixed with
//    EP_Accumulate and EP_Fetch_and_op on the same window: accumulate operations stay
//    exact totals;
//  * errors: a rank out of range (EP_ERR_RANK), NULL outputs (EP_ERR_ARG), another flavor
//    (EP_ERR_WIN), an intercommunicator (EP_ERR_COMM), a negative size (EP_ERR_ARG on
//    every endpoint).  Endpoints on several nodes (EP_ERR_COMM) cannot be tested on one
//    machine.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "tests/common/harness.h"
#include "tests/rma/rma_util.h"

namespace {

using ep_rma_test::Ctx;
using ep_rma_test::run_world;

[[maybe_unused]] const bool kWatchdog = ep_rma_test::install_watchdog();

EP_Win alloc_shared(MPI_Aint size, int du, EP_Comm comm, void** base) {
  EP_Win w = EP_WIN_NULL;
  EXPECT_EP_OK(EP_Win_allocate_shared(size, du, MPI_INFO_NULL, comm, base, &w));
  EXPECT_EP_OK(EP_Win_set_errhandler(w, EP_ERRORS_RETURN));
  return w;
}

TEST(Shared, LoadsAndStoresEverySegment) {
  run_world([](const Ctx& c) {
    const int n = c.size;
    void* base = nullptr;
    EP_Win win = alloc_shared(static_cast<MPI_Aint>(n * 8), 8, c.comm, &base);
    ASSERT_NE(base, nullptr);
    EXPECT_EP_OK(EP_Win_lock_all(EP_MODE_NOCHECK, win));
    for (int t = 0; t < n; ++t) {
      MPI_Aint size = 0;
      int du = 0;
      int64_t* seg = nullptr;
      EXPECT_EP_OK(EP_Win_shared_query(win, t, &size, &du, &seg));
      EXPECT_EQ(size, n * 8);
      EXPECT_EQ(du, 8);
      ASSERT_NE(seg, nullptr);
      if (t == c.rank) EXPECT_EQ(static_cast<void*>(seg), base);
      seg[c.rank] = 1000 * c.rank + t;
    }
    EXPECT_EP_OK(EP_Win_sync(win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EP_OK(EP_Win_sync(win));
    const auto* mine = static_cast<const int64_t*>(base);
    for (int o = 0; o < n; ++o) EXPECT_EQ(mine[o], 1000 * o + c.rank) << c.who();
    // Loads of another's segment see what its owner stored.
    int64_t* next = nullptr;
    MPI_Aint size = 0;
    int du = 0;
    const int t = (c.rank + 1) % n;
    EXPECT_EP_OK(EP_Win_shared_query(win, t, &size, &du, &next));
    for (int o = 0; o < n; ++o) EXPECT_EQ(next[o], 1000 * o + t);
    // Ordinary RMA calls on the same memory.
    int64_t got = 0;
    EXPECT_EP_OK(EP_Get(&got, 1, MPI_INT64_T, t, c.rank, 1, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Win_flush(t, win));
    EXPECT_EQ(got, 1000 * c.rank + t);
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EP_OK(EP_Win_free(&win));
  });
}

TEST(Shared, ContiguousAndProcNull) {
  run_world([](const Ctx& c) {
    const int n = c.size;
    // Rank 0's segment is empty; rank r has 8r bytes.
    void* base = nullptr;
    EP_Win win = alloc_shared(static_cast<MPI_Aint>(8 * c.rank), 4, c.comm, &base);
    char* prev_end = nullptr;
    for (int t = 0; t < n; ++t) {
      MPI_Aint size = -1;
      int du = 0;
      char* seg = nullptr;
      EXPECT_EP_OK(EP_Win_shared_query(win, t, &size, &du, &seg));
      EXPECT_EQ(size, 8 * t);
      EXPECT_EQ(du, 4);
      if (prev_end != nullptr) EXPECT_EQ(seg, prev_end) << "segment " << t << " is contiguous";
      prev_end = seg + size;
    }
    MPI_Aint size = -1;
    int du = 0;
    char* first = nullptr;
    EXPECT_EP_OK(EP_Win_shared_query(win, EP_PROC_NULL, &size, &du, &first));
    if (n > 1) {
      char* seg1 = nullptr;
      MPI_Aint s1 = 0;
      EXPECT_EP_OK(EP_Win_shared_query(win, 1, &s1, &du, &seg1));
      EXPECT_EQ(first, seg1) << "EP_PROC_NULL: the first non-empty segment (rank 1)";
      EXPECT_EQ(size, 8);
    } else {
      EXPECT_EQ(size, 0);
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EP_OK(EP_Win_free(&win));
  });
}

TEST(Shared, DirectAtomicsAndAccumulates) {
  constexpr int kRounds = 200;
  run_world([](const Ctx& c) {
    const int n = c.size;
    void* base = nullptr;
    EP_Win win = alloc_shared(c.rank == 0 ? 16 : 0, 8, c.comm, &base);
    if (c.rank == 0) {
      static_cast<int64_t*>(base)[0] = 0;
      static_cast<int64_t*>(base)[1] = 0;
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    int64_t* seg = nullptr;
    MPI_Aint size = 0;
    int du = 0;
    EXPECT_EP_OK(EP_Win_shared_query(win, 0, &size, &du, &seg));
    ASSERT_NE(seg, nullptr);
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    const int64_t one = 1;
    int64_t old = 0;
    for (int i = 0; i < kRounds; ++i) {
      __atomic_fetch_add(&seg[0], 1, __ATOMIC_SEQ_CST);  // a plain atomic on shared memory
      EXPECT_EP_OK(EP_Accumulate(&one, 1, MPI_INT64_T, 0, 1, 1, MPI_INT64_T, MPI_SUM, win));
      EXPECT_EP_OK(EP_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 1, MPI_SUM, win));
    }
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EQ(__atomic_load_n(&seg[0], __ATOMIC_SEQ_CST), static_cast<int64_t>(n) * kRounds);
    EXPECT_EQ(seg[1], 2LL * n * kRounds);
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EP_OK(EP_Win_free(&win));
  });
}

TEST(Shared, Errors) {
  run_world([](const Ctx& c) {
    void* base = nullptr;
    EP_Win win = alloc_shared(8, 8, c.comm, &base);
    MPI_Aint size = 0;
    int du = 0;
    void* seg = nullptr;
    EXPECT_EQ(EP_Win_shared_query(win, c.size, &size, &du, &seg), EP_ERR_RANK);
    EXPECT_EQ(EP_Win_shared_query(win, -5, &size, &du, &seg), EP_ERR_RANK);
    EXPECT_EQ(EP_Win_shared_query(win, 0, nullptr, &du, &seg), EP_ERR_ARG);
    EXPECT_EQ(EP_Win_shared_query(win, 0, &size, nullptr, &seg), EP_ERR_ARG);
    EXPECT_EQ(EP_Win_shared_query(win, 0, &size, &du, nullptr), EP_ERR_ARG);
    EXPECT_EQ(EP_Win_shared_query(EP_WIN_NULL, 0, &size, &du, &seg), EP_ERR_WIN);
    EXPECT_EP_OK(EP_Win_free(&win));
    std::vector<char> m(8);
    EP_Win other = ep_rma_test::make_win(m.data(), 8, 1, c.comm);
    EXPECT_EQ(EP_Win_shared_query(other, 0, &size, &du, &seg), EP_ERR_WIN);
    ep_rma_test::free_win(&other);
    // One endpoint's bad size fails the creation everywhere.
    EP_Win bad = EP_WIN_NULL;
    const int rc =
        EP_Win_allocate_shared(c.rank == 0 ? -1 : 8, 8, MPI_INFO_NULL, c.comm, &base, &bad);
    EXPECT_EQ(rc, EP_ERR_ARG) << c.who();
    EXPECT_EQ(bad, EP_WIN_NULL);
    EXPECT_EQ(EP_Win_allocate_shared(8, 8, MPI_INFO_NULL, c.comm, nullptr, &bad), EP_ERR_ARG);
    EXPECT_EP_OK(EP_Barrier(c.comm));
  });
}

}  // namespace
