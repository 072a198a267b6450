// Shared windows (EP_Win_allocate_shared, EP_Win_shared_query) on 1, 2 and 3
// processes with uneven endpoints (3, 1, 2), on the endpoints of one node: the world
// endpoints communicator split by EP_COMM_TYPE_SHARED (the whole job on one machine; one
// host's endpoints when tools/multihost_test.sh spreads the processes over several).
//  * every endpoint stores directly into every other endpoint's segment (pointers from
//    EP_Win_shared_query) and loads what the others stored, within a process and across;
//  * segments are contiguous in rank order (uneven sizes, one of them empty), and
//    EP_PROC_NULL answers the first non-empty segment;
//  * direct atomic increments (one shared counter, from every endpoint) mixed with
//    EP_Accumulate and EP_Fetch_and_op on the same window: accumulate operations stay
//    exact totals;
//  * a window over the world endpoints communicator: created when the job is on one node,
//    EP_ERR_COMM on every endpoint (and no window) when it spans several;
//  * errors: a rank out of range (EP_ERR_RANK), NULL outputs (EP_ERR_ARG), another flavor
//    (EP_ERR_WIN), a negative size on one endpoint (EP_ERR_ARG on every endpoint).
// A creation that fails ends the test on that endpoint (it fails on all of them alike):
// no base pointer is used unless its creation succeeded.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/rma/rma_util.h"

namespace {

using ep_rma_test::Ctx;
using ep_rma_test::run_world;

[[maybe_unused]] const bool kWatchdog = ep_rma_test::install_watchdog();

// This endpoint in the communicator of its node's endpoints.
struct NodeCtx {
  EP_Comm comm = EP_COMM_NULL;  // the world communicator split by EP_COMM_TYPE_SHARED
  int rank = -1;
  int size = 0;
  int world_rank = -1;
  std::string who() const {
    return "node rank " + std::to_string(rank) + " (world rank " + std::to_string(world_rank) + ")";
  }
};

// run_world(), with fn(node) on each endpoint; the node communicator is freed after a
// barrier over it.
void run_node(const std::function<void(const NodeCtx&)>& fn) {
  run_world([&](const Ctx& c) {
    NodeCtx n;
    n.world_rank = c.rank;
    ASSERT_EP_OK(EP_Comm_split_type(c.comm, EP_COMM_TYPE_SHARED, c.rank, MPI_INFO_NULL, &n.comm))
        << c.who();
    ASSERT_EP_OK(EP_Comm_set_errhandler(n.comm, EP_ERRORS_RETURN));
    ASSERT_EP_OK(EP_Comm_rank(n.comm, &n.rank));
    ASSERT_EP_OK(EP_Comm_size(n.comm, &n.size));
    fn(n);
    EXPECT_EP_OK(EP_Barrier(n.comm));
    EXPECT_EP_OK(EP_Comm_free(&n.comm));
  });
}

// True in every process when all processes of the job share one node.
bool job_on_one_node() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int n = 0;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n == ep_test::world_size();
}

TEST(Shared, LoadsAndStoresEverySegment) {
  run_node([](const NodeCtx& c) {
    const int n = c.size;
    void* base = nullptr;
    EP_Win win = EP_WIN_NULL;
    ASSERT_EP_OK(
        EP_Win_allocate_shared(static_cast<MPI_Aint>(n * 8), 8, MPI_INFO_NULL, c.comm, &base, &win))
        << c.who();
    ASSERT_EP_OK(EP_Win_set_errhandler(win, EP_ERRORS_RETURN));
    ASSERT_NE(base, nullptr);
    EXPECT_EP_OK(EP_Win_lock_all(EP_MODE_NOCHECK, win));
    for (int t = 0; t < n; ++t) {
      MPI_Aint size = 0;
      int du = 0;
      int64_t* seg = nullptr;
      ASSERT_EP_OK(EP_Win_shared_query(win, t, &size, &du, &seg));
      EXPECT_EQ(size, n * 8);
      EXPECT_EQ(du, 8);
      ASSERT_NE(seg, nullptr);
      if (t == c.rank) {
        EXPECT_EQ(static_cast<void*>(seg), base);
      }
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
    ASSERT_EP_OK(EP_Win_shared_query(win, t, &size, &du, &next));
    ASSERT_NE(next, nullptr);
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
  run_node([](const NodeCtx& c) {
    const int n = c.size;
    // Rank 0's segment is empty; rank r has 8r bytes.
    void* base = nullptr;
    EP_Win win = EP_WIN_NULL;
    ASSERT_EP_OK(EP_Win_allocate_shared(static_cast<MPI_Aint>(8 * c.rank), 4, MPI_INFO_NULL, c.comm,
                                        &base, &win))
        << c.who();
    ASSERT_EP_OK(EP_Win_set_errhandler(win, EP_ERRORS_RETURN));
    char* prev_end = nullptr;
    for (int t = 0; t < n; ++t) {
      MPI_Aint size = -1;
      int du = 0;
      char* seg = nullptr;
      ASSERT_EP_OK(EP_Win_shared_query(win, t, &size, &du, &seg));
      EXPECT_EQ(size, 8 * t);
      EXPECT_EQ(du, 4);
      if (prev_end != nullptr) {
        EXPECT_EQ(seg, prev_end) << "segment " << t << " is contiguous";
      }
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
  run_node([](const NodeCtx& c) {
    const int n = c.size;
    void* base = nullptr;
    EP_Win win = EP_WIN_NULL;
    ASSERT_EP_OK(
        EP_Win_allocate_shared(c.rank == 0 ? 16 : 0, 8, MPI_INFO_NULL, c.comm, &base, &win))
        << c.who();
    ASSERT_EP_OK(EP_Win_set_errhandler(win, EP_ERRORS_RETURN));
    if (c.rank == 0) {
      ASSERT_NE(base, nullptr);
      static_cast<int64_t*>(base)[0] = 0;
      static_cast<int64_t*>(base)[1] = 0;
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    int64_t* seg = nullptr;
    MPI_Aint size = 0;
    int du = 0;
    ASSERT_EP_OK(EP_Win_shared_query(win, 0, &size, &du, &seg));
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

// The world endpoints communicator: one node's endpoints when the job is on one node, a
// window over several nodes' otherwise - refused on every endpoint alike, with no window
// and no base pointer.
TEST(Shared, WindowOverSeveralNodesFailsWithErrComm) {
  const bool one_node = job_on_one_node();
  run_world([&](const Ctx& c) {
    int64_t untouched = 0;
    void* base = &untouched;
    EP_Win win = EP_WIN_NULL;
    const int rc = EP_Win_allocate_shared(8, 8, MPI_INFO_NULL, c.comm, &base, &win);
    if (one_node) {
      ASSERT_EP_OK(rc) << c.who();
      EXPECT_NE(win, EP_WIN_NULL);
      EXPECT_NE(base, static_cast<void*>(&untouched));
      EXPECT_EP_OK(EP_Win_free(&win));
      return;
    }
    ASSERT_EQ(rc, EP_ERR_COMM) << c.who() << ": " << ep_rma_test::describe(rc);
    const std::string why = ep_test::last_error(EP_ERR_COMM);
    EXPECT_NE(why.find("EP_Win_allocate_shared"), std::string::npos) << why;
    EXPECT_NE(why.find("on another node"), std::string::npos) << why;
    EXPECT_EQ(win, EP_WIN_NULL) << c.who();
    EXPECT_EQ(base, static_cast<void*>(&untouched)) << c.who();
  });
}

TEST(Shared, Errors) {
  run_node([](const NodeCtx& c) {
    void* base = nullptr;
    EP_Win win = EP_WIN_NULL;
    ASSERT_EP_OK(EP_Win_allocate_shared(8, 8, MPI_INFO_NULL, c.comm, &base, &win)) << c.who();
    ASSERT_EP_OK(EP_Win_set_errhandler(win, EP_ERRORS_RETURN));
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
    EXPECT_EQ(bad, EP_WIN_NULL);
  });
}

}  // namespace
