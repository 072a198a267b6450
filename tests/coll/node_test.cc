// Collectives whose endpoints live in several processes of one node (runtime/node_coll.h):
// barrier, allreduce, bcast and reduce meet in the node segment's cells - values of every
// size (one slot and many), in place, several ops, derived types, every root, reversed
// rank order, uneven endpoints per process - without any MPI call or engine packet; a waiter that sleeps is woken by the
// last arrival; communicators made and freed in a loop reuse their cells safely.  The
// same program runs with the node transport off (BUILD.bazel), where the results are
// the same and only the no-MPI assertions are left out.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "base/mpi_calls.h"
#include "progress/mpi_count.h"
#include "runtime/runtime.h"
#include "runtime/wait.h"
#include "tests/common/harness.h"

namespace {

using ep_test::run_endpoints;
using ep_test::scaled;
using ep_test::uneven;
using ep_test::world_rank;
using ep_test::world_size;

[[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(120, 500);

// The node way applies: every process of the job is on this node (one machine) with the
// node transport on, and there are several processes.
bool node_way() { return world_size() > 1 && ep::runtime::runtime()->node.on(); }

// MPI calls made by this thread: libep's own (base/mpi_calls.h) and the engine's.
uint64_t own_calls() {
  const std::atomic<uint64_t>* c = ep::mpi_calls_internal::t_counter;
  return (c != nullptr ? c->load() : 0) + ep::progress::engine_mpi_calls_here();
}

int total_endpoints() {
  int n = 0;
  for (int p = 0; p < world_size(); ++p) n += uneven(p);
  return n;
}

// Checks the allreduce results of `count` elements on `comm` for SUM, MAX and PROD-like
// ops, out of place and in place; element i of rank r contributes r + i.
void check_allreduces(EP_Comm comm, int count) {
  int rank = 0, size = 0;
  EP_Comm_rank(comm, &rank);
  EP_Comm_size(comm, &size);
  std::vector<int64_t> in(static_cast<size_t>(count)), out(static_cast<size_t>(count), -1);
  for (int i = 0; i < count; ++i) in[i] = rank + i;
  ASSERT_EQ(EP_Allreduce(in.data(), out.data(), count, MPI_INT64_T, MPI_SUM, comm), EP_SUCCESS);
  const int64_t ranks = int64_t{size} * (size - 1) / 2;
  for (int i = 0; i < count; ++i) ASSERT_EQ(out[i], ranks + int64_t{size} * i) << "SUM at " << i;
  ASSERT_EQ(EP_Allreduce(in.data(), out.data(), count, MPI_INT64_T, MPI_MAX, comm), EP_SUCCESS);
  for (int i = 0; i < count; ++i) ASSERT_EQ(out[i], size - 1 + i) << "MAX at " << i;
  std::vector<double> d(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) d[i] = (rank % 2 == 0 ? 1.0 : 0.5) * (i % 3 + 1);
  ASSERT_EQ(EP_Allreduce(EP_IN_PLACE, d.data(), count, MPI_DOUBLE, MPI_MIN, comm), EP_SUCCESS);
  const double low = size > 1 ? 0.5 : 1.0;
  for (int i = 0; i < count; ++i) ASSERT_EQ(d[i], low * (i % 3 + 1)) << "MIN in place at " << i;
}

// Bcasts of `count` int64s from every root (one slot, several; the receivers take them
// as count / 2 elements of `pair`, a derived type of two int64s) and reductions to every
// root (by value: up to 256 bytes).
void check_rooted(EP_Comm comm, int count, MPI_Datatype pair) {
  int rank = 0, size = 0;
  EP_Comm_rank(comm, &rank);
  EP_Comm_size(comm, &size);
  for (int root = 0; root < size; ++root) {
    std::vector<int64_t> v(static_cast<size_t>(count), -1);
    if (rank == root) {
      for (int i = 0; i < count; ++i) v[i] = root * 7 + i;
    }
    if (rank != root && count % 2 == 0 && count > 0) {
      ASSERT_EQ(EP_Bcast(v.data(), count / 2, pair, root, comm), EP_SUCCESS);
    } else {
      ASSERT_EQ(EP_Bcast(v.data(), count, MPI_INT64_T, root, comm), EP_SUCCESS);
    }
    for (int i = 0; i < count; ++i) ASSERT_EQ(v[i], root * 7 + i) << "bcast from " << root;
    if (count > 32) continue;
    std::vector<int64_t> in(static_cast<size_t>(count)), out(static_cast<size_t>(count), -1);
    for (int i = 0; i < count; ++i) in[i] = rank * 3 + i;
    ASSERT_EQ(EP_Reduce(in.data(), out.data(), count, MPI_INT64_T, MPI_SUM, root, comm),
              EP_SUCCESS);
    if (rank == root) {
      for (int i = 0; i < count; ++i) {
        ASSERT_EQ(out[i], int64_t{3} * size * (size - 1) / 2 + int64_t{size} * i) << "reduce";
      }
    }
  }
}

// Barriers, allreduces of one slot and of many (32 KiB slots hold 4096 int64s), bcasts
// and reductions by value, on the endpoints communicator and on a split with the ranks
// reversed: right results, and once the first collectives made the communicators' node
// groups, no MPI call on any endpoint's thread and no engine packet.
TEST(NodeColl, CollectivesMakeNoMpiCall) {
  const auto& s = ep::runtime::engine_stats();
  std::atomic<uint64_t> calls{0};
  std::atomic<int> counted{0};
  uint64_t packets = 0;
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(world, &rank);
    EP_Comm_size(world, &size);
    EP_Comm reversed;
    ASSERT_EQ(EP_Comm_split(world, 0, size - rank, &reversed), EP_SUCCESS);
    // First collectives: the node groups are made (a hidden exchange), and MPI_INT64_T
    // and MPI_DOUBLE meet libep's type table.
    check_allreduces(world, 1);
    check_allreduces(reversed, 1);
    MPI_Datatype pair;  // libep describes it at its first use, before the count
    MPI_Type_contiguous(2, MPI_INT64_T, &pair);
    MPI_Type_commit(&pair);
    check_rooted(world, 2, pair);
    check_rooted(reversed, 2, pair);
    if (rank == 0) packets = s.packets_sent.load();
    ASSERT_EQ(EP_Barrier(world), EP_SUCCESS);
    const uint64_t before = own_calls();
    for (int k = 0; k < scaled(40); ++k) ASSERT_EQ(EP_Barrier(world), EP_SUCCESS);
    for (int count : {1, 3, 4096, 4097, 20000}) {
      check_allreduces(world, count);
      check_allreduces(reversed, count);
      ASSERT_EQ(EP_Barrier(reversed), EP_SUCCESS);
    }
    for (int count : {0, 1, 32, 700, 4095, 9000}) {
      check_rooted(world, count, pair);
      check_rooted(reversed, count, pair);
    }
    calls += own_calls() - before;
    MPI_Type_free(&pair);
    ++counted;
    ASSERT_EQ(EP_Comm_free(&reversed), EP_SUCCESS);
  });
  EXPECT_EQ(counted.load(), uneven(world_rank()));
  if (node_way()) {
    EXPECT_EQ(calls.load(), 0u) << "MPI calls by the endpoints' threads";
    EXPECT_EQ(s.packets_sent.load(), packets) << "engine packets";
  }
}

// One process arrives late (it sleeps 30 ms first): the others' waiting threads go to
// sleep and the last arrival wakes them; nobody counts a lost wake-up.
TEST(NodeColl, LateArrivalWakesSleepingWaiters) {
  const uint64_t lost = ep::runtime::lost_wakeups();
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    for (int round = 0; round < 3; ++round) {
      const int late = round % size;
      if (rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      int64_t v = rank, sum = -1;
      ASSERT_EQ(EP_Allreduce(&v, &sum, 1, MPI_INT64_T, MPI_SUM, comm), EP_SUCCESS);
      ASSERT_EQ(sum, int64_t{size} * (size - 1) / 2);
      if (rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      ASSERT_EQ(EP_Barrier(comm), EP_SUCCESS);
    }
  });
  EXPECT_EQ(ep::runtime::lost_wakeups(), lost);
}

// Communicators made, used once or twice and freed in a loop: each new one's group
// starts where its cell's last owner stopped, a fragment retires only after the others
// read its slots, and recycled context ids find the newest communicator's cells.
TEST(NodeColl, DupUseFreeLoopReusesCells) {
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    int size = 0;
    EP_Comm_size(world, &size);
    for (int i = 0; i < scaled(300); ++i) {
      EP_Comm dup;
      ASSERT_EQ(EP_Comm_dup(world, &dup), EP_SUCCESS);
      int rank = 0;
      EP_Comm_rank(dup, &rank);
      int64_t v = rank + i, sum = -1;
      ASSERT_EQ(EP_Allreduce(&v, &sum, 1, MPI_INT64_T, MPI_SUM, dup), EP_SUCCESS);
      ASSERT_EQ(sum, int64_t{size} * (size - 1) / 2 + int64_t{size} * i) << "iteration " << i;
      if (i % 3 == 0) ASSERT_EQ(EP_Barrier(dup), EP_SUCCESS);
      ASSERT_EQ(EP_Comm_free(&dup), EP_SUCCESS);
    }
  });
  EXPECT_GT(total_endpoints(), 0);
}

}  // namespace
