// Request-based one-sided operations, local flushes, EP_Win_sync and the window
// attributes, on 1, 2 and 3 processes with uneven endpoints (3, 1, 2), on
// every window flavor: EP_Win_create (node paths and handler calls only),
// EP_Win_allocate, EP_Win_create_dynamic and EP_Win_allocate_shared.
//  * EP_Rput then EP_Rget of every slot at every target inside lock_all: each request
//    completes, the gets read back what the puts wrote (after a flush), the targets
//    see the values in their memory;
//  * EP_Raccumulate totals and EP_Rget_accumulate fetch-and-add: every fetched value is
//    distinct, the final counter is exact;
//  * EP_Win_flush_local: an EP_Rget's data is there after it; a put's origin buffer may be
//    overwritten after it without changing what the target receives;
//  * errors: a request-based operation outside a passive epoch (none, or a fence epoch) is
//    EP_ERR_RMA_SYNC and leaves *request alone; NULL request is EP_ERR_ARG;
//  * EP_WIN_CREATE_FLAVOR and EP_WIN_MODEL, EP_Win_sync.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "tests/common/harness.h"
#include "tests/rma/rma_util.h"

namespace {

using ep_rma_test::Ctx;
using ep_rma_test::Flavor;
using ep_rma_test::free_win;
using ep_rma_test::open_win_filled;
using ep_rma_test::run_world;
using ep_rma_test::WinOf;

[[maybe_unused]] const bool kWatchdog = ep_rma_test::install_watchdog();

class Req : public ::testing::TestWithParam<Flavor> {};

int64_t val(int origin, int target) { return 1000LL * origin + target + 1; }

TEST_P(Req, RputRgetEverySlot) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, static_cast<size_t>(n), 8, c.comm, -1);
    ASSERT_NE(w.win, EP_WIN_NULL);
    std::vector<int64_t> src(static_cast<size_t>(n)), got(static_cast<size_t>(n), 0);
    std::vector<EP_Request> reqs(static_cast<size_t>(n), EP_REQUEST_NULL);
    ASSERT_EP_OK(EP_Win_lock_all(0, w.win));
    for (int t = 0; t < n; ++t) {
      src[t] = val(c.rank, t);
      EXPECT_EP_OK(
          EP_Rput(&src[t], 1, MPI_INT64_T, t, w.disp(t, c.rank), 1, MPI_INT64_T, w.win, &reqs[t]));
    }
    EXPECT_EP_OK(EP_Waitall(n, reqs.data(), EP_STATUSES_IGNORE));
    EXPECT_EP_OK(EP_Win_flush_all(w.win));
    for (int t = 0; t < n; ++t) {
      EXPECT_EP_OK(
          EP_Rget(&got[t], 1, MPI_INT64_T, t, w.disp(t, c.rank), 1, MPI_INT64_T, w.win, &reqs[t]));
    }
    EXPECT_EP_OK(EP_Waitall(n, reqs.data(), EP_STATUSES_IGNORE));
    for (int t = 0; t < n; ++t) EXPECT_EQ(got[t], val(c.rank, t)) << c.who() << " target " << t;
    EXPECT_EP_OK(EP_Win_unlock_all(w.win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    for (int o = 0; o < n; ++o) EXPECT_EQ(w.mem[o], val(o, c.rank)) << c.who() << " slot " << o;
    EXPECT_EP_OK(EP_Barrier(c.comm));
    free_win(&w.win);
  });
}

TEST_P(Req, RaccumulateAndFetchAdd) {
  const Flavor flavor = GetParam();
  constexpr int kRounds = 20;
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 2, 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    const int last = n - 1;
    const int64_t one = 1;
    ASSERT_EP_OK(EP_Win_lock_all(0, w.win));
    std::vector<int64_t> fetched(kRounds, -1);
    for (int i = 0; i < kRounds; ++i) {
      EP_Request r1 = EP_REQUEST_NULL, r2 = EP_REQUEST_NULL;
      EXPECT_EP_OK(EP_Raccumulate(&one, 1, MPI_INT64_T, last, w.disp(last, 0), 1, MPI_INT64_T,
                                  MPI_SUM, w.win, &r1));
      EXPECT_EP_OK(EP_Rget_accumulate(&one, 1, MPI_INT64_T, &fetched[i], 1, MPI_INT64_T, 0,
                                      w.disp(0, 1), 1, MPI_INT64_T, MPI_SUM, w.win, &r2));
      EXPECT_EP_OK(EP_Wait(&r1, EP_STATUS_IGNORE));
      EXPECT_EP_OK(EP_Wait(&r2, EP_STATUS_IGNORE));
      EXPECT_EQ(r2, EP_REQUEST_NULL);
      if (i > 0) EXPECT_GT(fetched[i], fetched[i - 1]) << c.who() << " round " << i;
    }
    EXPECT_EP_OK(EP_Win_unlock_all(w.win));
    // Every fetched value is distinct across all endpoints.
    std::vector<int64_t> all(static_cast<size_t>(n) * kRounds);
    EXPECT_EP_OK(EP_Allgather(fetched.data(), kRounds, MPI_INT64_T, all.data(), kRounds,
                              MPI_INT64_T, c.comm));
    std::set<int64_t> distinct(all.begin(), all.end());
    EXPECT_EQ(distinct.size(), all.size());
    EXPECT_EQ(*distinct.begin(), 0);
    EXPECT_EQ(*distinct.rbegin(), static_cast<int64_t>(n) * kRounds - 1);
    EXPECT_EP_OK(EP_Barrier(c.comm));
    if (c.rank == last) {
      EXPECT_EQ(w.mem[0], static_cast<int64_t>(n) * kRounds);
    }
    if (c.rank == 0) {
      EXPECT_EQ(w.mem[1], static_cast<int64_t>(n) * kRounds);
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    free_win(&w.win);
  });
}

TEST_P(Req, FlushLocal) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, static_cast<size_t>(n), 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    const int t = (c.rank + 1) % n;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) w.mem[i] = 0;
    EXPECT_EP_OK(EP_Barrier(c.comm));
    ASSERT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, t, 0, w.win));
    int64_t v = val(c.rank, t);
    EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, t, w.disp(t, c.rank), 1, MPI_INT64_T, w.win));
    EXPECT_EP_OK(EP_Win_flush_local(t, w.win));
    v = -5;  // the origin buffer may be reused: the target must still get val()
    EXPECT_EP_OK(EP_Win_flush(t, w.win));
    int64_t got = 0;
    EP_Request r = EP_REQUEST_NULL;
    EXPECT_EP_OK(EP_Rget(&got, 1, MPI_INT64_T, t, w.disp(t, c.rank), 1, MPI_INT64_T, w.win, &r));
    EXPECT_EP_OK(EP_Win_flush_local(t, w.win));
    EXPECT_EQ(got, val(c.rank, t)) << c.who();
    int flag = 0;
    EXPECT_EP_OK(EP_Test(&r, &flag, EP_STATUS_IGNORE));
    EXPECT_EQ(flag, 1) << "flush_local completes the request's operation";
    got = 0;
    EXPECT_EP_OK(EP_Get(&got, 1, MPI_INT64_T, t, w.disp(t, c.rank), 1, MPI_INT64_T, w.win));
    EXPECT_EP_OK(EP_Win_flush_local_all(w.win));
    EXPECT_EQ(got, val(c.rank, t));
    EXPECT_EP_OK(EP_Win_sync(w.win));
    EXPECT_EP_OK(EP_Win_unlock(t, w.win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    const int from = (c.rank + n - 1) % n;
    EXPECT_EP_OK(EP_Win_sync(w.win));
    EXPECT_EQ(w.mem[from], val(from, c.rank)) << c.who();
    EXPECT_EP_OK(EP_Barrier(c.comm));
    free_win(&w.win);
  });
}

TEST_P(Req, ErrorsAndAttributes) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 2, 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    int64_t v = 3;
    EP_Request sentinel = reinterpret_cast<EP_Request>(0x10);
    EP_Request r = sentinel;
    EXPECT_EQ(EP_Rput(&v, 1, MPI_INT64_T, 0, w.disp(0, 0), 1, MPI_INT64_T, w.win, &r),
              EP_ERR_RMA_SYNC);
    EXPECT_EQ(r, sentinel) << "no request is created";
    EXPECT_EQ(EP_Rget(&v, 1, MPI_INT64_T, EP_PROC_NULL, 0, 1, MPI_INT64_T, w.win, &r),
              EP_ERR_RMA_SYNC);
    EXPECT_EQ(EP_Win_flush_local(0, w.win), EP_ERR_RMA_SYNC);
    EXPECT_EQ(EP_Win_flush_local_all(w.win), EP_ERR_RMA_SYNC);
    EXPECT_EP_OK(EP_Win_fence(0, w.win));
    EXPECT_EQ(
        EP_Raccumulate(&v, 1, MPI_INT64_T, 0, w.disp(0, 0), 1, MPI_INT64_T, MPI_SUM, w.win, &r),
        EP_ERR_RMA_SYNC)
        << "a fence epoch is no passive-target epoch";
    EXPECT_EQ(r, sentinel);
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, w.win));
    EXPECT_EP_OK(EP_Win_lock_all(0, w.win));
    EXPECT_EQ(EP_Rput(&v, 1, MPI_INT64_T, 0, w.disp(0, 0), 1, MPI_INT64_T, w.win, nullptr),
              EP_ERR_ARG);
    EXPECT_EQ(EP_Rget_accumulate(&v, 1, MPI_INT64_T, &v, 1, MPI_INT64_T, c.size, 0, 1, MPI_INT64_T,
                                 MPI_SUM, w.win, &r),
              EP_ERR_RANK);
    EXPECT_EP_OK(EP_Rget(&v, 1, MPI_INT64_T, EP_PROC_NULL, 0, 1, MPI_INT64_T, w.win, &r));
    EXPECT_EP_OK(EP_Wait(&r, EP_STATUS_IGNORE));
    EXPECT_EP_OK(EP_Win_flush_local(EP_PROC_NULL, w.win));
    EXPECT_EQ(EP_Win_flush_local(c.size, w.win), EP_ERR_RANK);
    EXPECT_EP_OK(EP_Win_unlock_all(w.win));
    int* flav = nullptr;
    int* model = nullptr;
    int flag = 0;
    EXPECT_EP_OK(EP_Win_get_attr(w.win, EP_WIN_CREATE_FLAVOR, &flav, &flag));
    ASSERT_EQ(flag, 1);
    ASSERT_NE(flav, nullptr);
    const bool dynamic = flavor == Flavor::kDynamic || flavor == Flavor::kDynamicHandler;
    const int want = flavor == Flavor::kAllocate ? EP_WIN_FLAVOR_ALLOCATE
                     : dynamic                   ? EP_WIN_FLAVOR_DYNAMIC
                     : flavor == Flavor::kShared ? EP_WIN_FLAVOR_SHARED
                                                 : EP_WIN_FLAVOR_CREATE;
    EXPECT_EQ(*flav, want);
    EXPECT_EP_OK(EP_Win_get_attr(w.win, EP_WIN_MODEL, &model, &flag));
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(*model, EP_WIN_UNIFIED);
    EXPECT_EQ(EP_Win_sync(EP_WIN_NULL), EP_ERR_WIN);
    EXPECT_EP_OK(EP_Barrier(c.comm));
    free_win(&w.win);
  });
}

INSTANTIATE_TEST_SUITE_P(Flavors, Req,
                         ::testing::Values(Flavor::kCreate, Flavor::kAllocate, Flavor::kHandler,
                                           Flavor::kDynamic, Flavor::kShared,
                                           Flavor::kDynamicHandler),
                         ep_rma_test::flavor_name);

}  // namespace
