// General active-target synchronization (EP_Win_post/start/complete/wait/test)
// on 1, 2 and 3 processes with uneven endpoints (3, 1, 2), on EP_Win_create (node paths
// and handler calls), EP_Win_allocate, dynamic and shared windows.  Groups are built from
// the communicator's group, so endpoints of one process sit on both sides.
//  * a ring: each endpoint exposes itself to its left neighbour and accesses its right
//    one, several epochs in a row;
//  * all to all: every endpoint posts to and starts on every endpoint, puts and
//    accumulates; the target reads everything after EP_Win_wait;
//  * EP_Win_test: the targets poll until every origin completed;
//  * errors: complete without start, wait/test without post, a second start or post,
//    an operation to a target outside the start group, a fence inside the epochs, a
//    request-based operation or flush_local in an access epoch of start,
//    EP_GROUP_NULL and a group member outside the window (EP_ERR_GROUP).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
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

class Pscw : public ::testing::TestWithParam<Flavor> {};

EP_Group group_of(EP_Comm comm, const std::vector<int>& ranks) {
  EP_Group all = EP_GROUP_NULL, g = EP_GROUP_NULL;
  EXPECT_EP_OK(EP_Comm_group(comm, &all));
  EXPECT_EP_OK(EP_Group_incl(all, static_cast<int>(ranks.size()), ranks.data(), &g));
  EXPECT_EP_OK(EP_Group_free(&all));
  return g;
}

std::vector<int> everyone(int n) {
  std::vector<int> r(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) r[i] = i;
  return r;
}

TEST_P(Pscw, Ring) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 1, 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    const int right = (c.rank + 1) % n, left = (c.rank + n - 1) % n;
    EP_Group origins = group_of(c.comm, {left}), targets = group_of(c.comm, {right});
    for (int epoch = 1; epoch <= 5; ++epoch) {
      EXPECT_EP_OK(EP_Win_post(origins, 0, w.win));
      EXPECT_EP_OK(EP_Win_start(targets, 0, w.win));
      const int64_t v = 100 * epoch + c.rank;
      EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, right, w.disp(right, 0), 1, MPI_INT64_T, w.win));
      EXPECT_EP_OK(EP_Win_complete(w.win));
      EXPECT_EP_OK(EP_Win_wait(w.win));
      EXPECT_EQ(w.mem[0], 100 * epoch + left) << c.who() << " epoch " << epoch;
    }
    EXPECT_EP_OK(EP_Group_free(&origins));
    EXPECT_EP_OK(EP_Group_free(&targets));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    free_win(&w.win);
  });
}

TEST_P(Pscw, AllToAll) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, static_cast<size_t>(n) + 1, 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Group g = group_of(c.comm, everyone(n));
    for (int epoch = 1; epoch <= 3; ++epoch) {
      EXPECT_EP_OK(EP_Win_post(g, 0, w.win));
      EXPECT_EP_OK(EP_Win_start(g, 0, w.win));
      for (int t = 0; t < n; ++t) {
        const int64_t v = 1000 * epoch + 10 * c.rank + t;
        const int64_t one = 1;
        EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, t, w.disp(t, c.rank), 1, MPI_INT64_T, w.win));
        EXPECT_EP_OK(
            EP_Accumulate(&one, 1, MPI_INT64_T, t, w.disp(t, n), 1, MPI_INT64_T, MPI_SUM, w.win));
      }
      EXPECT_EP_OK(EP_Win_complete(w.win));
      EXPECT_EP_OK(EP_Win_wait(w.win));
      for (int o = 0; o < n; ++o) EXPECT_EQ(w.mem[o], 1000 * epoch + 10 * o + c.rank);
      EXPECT_EQ(w.mem[n], static_cast<int64_t>(n) * epoch);
    }
    EXPECT_EP_OK(EP_Group_free(&g));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    free_win(&w.win);
  });
}

TEST_P(Pscw, TestPolls) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, static_cast<size_t>(n), 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    // Rank 0 is the only target; everybody (rank 0 too) accesses it.
    EP_Group all = group_of(c.comm, everyone(n)), zero = group_of(c.comm, {0});
    if (c.rank == 0) EXPECT_EP_OK(EP_Win_post(all, 0, w.win));
    EXPECT_EP_OK(EP_Win_start(zero, 0, w.win));
    const int64_t v = 7 + c.rank;
    EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, 0, w.disp(0, c.rank), 1, MPI_INT64_T, w.win));
    EXPECT_EP_OK(EP_Win_complete(w.win));
    if (c.rank == 0) {
      int flag = 0, polls = 0;
      while (flag == 0) {
        EXPECT_EP_OK(EP_Win_test(w.win, &flag));
        if (flag == 0) ep_rma_test::sleep_ms(1);
        ASSERT_LT(++polls, 100000);
      }
      for (int o = 0; o < n; ++o) EXPECT_EQ(w.mem[o], 7 + o);
      EXPECT_EQ(EP_Win_test(w.win, &flag), EP_ERR_RMA_SYNC) << "the epoch ended";
    }
    EXPECT_EP_OK(EP_Group_free(&all));
    EXPECT_EP_OK(EP_Group_free(&zero));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    free_win(&w.win);
  });
}

TEST_P(Pscw, Errors) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 1, 8, c.comm, 0);
    ASSERT_NE(w.win, EP_WIN_NULL);
    int flag = 0;
    EXPECT_EQ(EP_Win_complete(w.win), EP_ERR_RMA_SYNC);
    EXPECT_EQ(EP_Win_wait(w.win), EP_ERR_RMA_SYNC);
    EXPECT_EQ(EP_Win_test(w.win, &flag), EP_ERR_RMA_SYNC);
    EXPECT_EQ(EP_Win_post(EP_GROUP_NULL, 0, w.win), EP_ERR_GROUP);
    EXPECT_EQ(EP_Win_start(EP_GROUP_NULL, 0, w.win), EP_ERR_GROUP);
    EP_Group self = group_of(c.comm, {c.rank});
    EXPECT_EQ(EP_Win_start(self, 0x7fff0000, w.win), EP_ERR_ARG);
    EXPECT_EP_OK(EP_Win_post(self, 0, w.win));
    EXPECT_EQ(EP_Win_post(self, 0, w.win), EP_ERR_RMA_SYNC) << "post inside post";
    EXPECT_EP_OK(EP_Win_start(self, 0, w.win));
    EXPECT_EQ(EP_Win_start(self, 0, w.win), EP_ERR_RMA_SYNC) << "start inside start";
    EXPECT_EQ(EP_Win_fence(0, w.win), EP_ERR_RMA_SYNC);
    const int64_t v = 1;
    if (n > 1) {
      const int other = (c.rank + 1) % n;
      EXPECT_EQ(EP_Put(&v, 1, MPI_INT64_T, other, w.disp(other, 0), 1, MPI_INT64_T, w.win),
                EP_ERR_RMA_SYNC)
          << "target outside the start group";
    }
    EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, c.rank, w.disp(c.rank, 0), 1, MPI_INT64_T, w.win));
    EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, EP_PROC_NULL, 0, 1, MPI_INT64_T, w.win));
    EP_Request r = EP_REQUEST_NULL;
    EXPECT_EQ(EP_Rput(&v, 1, MPI_INT64_T, c.rank, w.disp(c.rank, 0), 1, MPI_INT64_T, w.win, &r),
              EP_ERR_RMA_SYNC)
        << "request-based operations need a passive-target epoch";
    EXPECT_EQ(r, EP_REQUEST_NULL);
    EXPECT_EQ(EP_Win_flush_local(c.rank, w.win), EP_ERR_RMA_SYNC);
    EP_Win copy = w.win;
    EXPECT_EQ(EP_Win_free(&copy), EP_ERR_RMA_SYNC) << "free inside an epoch";
    EXPECT_EP_OK(EP_Win_complete(w.win));
    EXPECT_EP_OK(EP_Win_wait(w.win));
    EXPECT_EQ(w.mem[0], 1);
    EXPECT_EP_OK(EP_Group_free(&self));
    // A member outside the window: a window on half of the endpoints.
    EP_Comm half = EP_COMM_NULL;
    EXPECT_EP_OK(EP_Comm_split(c.comm, c.rank % 2, c.rank, &half));
    if (n > 1) {
      EP_Win hw = ep_rma_test::make_win(nullptr, 0, 1, half);
      EP_Group world = group_of(c.comm, everyone(n));
      EXPECT_EQ(EP_Win_post(world, 0, hw), EP_ERR_GROUP);
      EXPECT_EQ(EP_Win_start(world, 0, hw), EP_ERR_GROUP);
      EXPECT_EP_OK(EP_Group_free(&world));
      free_win(&hw);
    }
    EXPECT_EP_OK(EP_Comm_free(&half));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    free_win(&w.win);
  });
}

INSTANTIATE_TEST_SUITE_P(Flavors, Pscw,
                         ::testing::Values(Flavor::kCreate, Flavor::kAllocate, Flavor::kHandler,
                                           Flavor::kDynamic, Flavor::kShared,
                                           Flavor::kDynamicHandler),
                         ep_rma_test::flavor_name);

}  // namespace
