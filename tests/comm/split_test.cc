// Intracommunicators made by EP_Comm_split and EP_Comm_dup:
//  * split with full MPI semantics: one process's endpoints pick different colours (the
//    process belongs to several new communicators), EP_UNDEFINED gives EP_COMM_NULL, key
//    orders ranks across the whole new communicator with ties broken by old rank, also
//    when that interleaves processes or reverses them; split of a split; one colour per
//    endpoint (size-1 communicators);
//  * on every communicator made: rank/size/local rank/local size, point-to-point with
//    EP_ANY_SOURCE (status = rank in the new communicator, per-pair order), EP_Barrier,
//    EP_Bcast from every root, EP_Allreduce (MPI_SUM int/double, MPI_MAX, a
//    non-commutative user op whose result is computed here in rank order), groups
//    (size, rank, translation to/from the world group, free);
//  * EP_Comm_compare: IDENT (two handles of one communicator), CONGRUENT (dup; split that
//    keeps the order), SIMILAR (same members, other order), UNEQUAL.
// All expectations are derived from world-endpoint ranks (tests/comm/comm_util.h).
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "tests/comm/comm_util.h"
#include "tests/common/harness.h"

namespace {

using ep_comm_test::check_intra_collectives;
using ep_comm_test::check_intra_group;
using ep_comm_test::check_intra_p2p;
using ep_comm_test::check_intra_queries;
using ep_comm_test::expected_split;
using ep_comm_test::index_in;
using ep_comm_test::Layout;
using ep_comm_test::MatOp;
using ep_test::last_error;
using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;

int my_world_rank(EP_Comm world) {
  int r = -1;
  EP_Comm_rank(world, &r);
  return r;
}

std::vector<int> iota_vec(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

// Splits `world` with colour(me)/key(me) and runs every check on the result.  Returns the
// new communicator (caller frees) and its members through `members_out`.
EP_Comm split_and_check(EP_Comm world, const Layout& lay, const std::function<int(int)>& colour,
                        const std::function<int(int)>& key, const MatOp& mop,
                        const std::string& what, std::vector<int>* members_out = nullptr) {
  const int me = my_world_rank(world);
  EP_Comm nc = reinterpret_cast<EP_Comm>(0x1);
  int rc = EP_Comm_split(world, colour(me), key(me), &nc);
  EXPECT_EQ(rc, EP_SUCCESS) << what << ": " << last_error(rc);
  if (rc != EP_SUCCESS) return EP_COMM_NULL;
  if (colour(me) == EP_UNDEFINED) {
    EXPECT_EQ(nc, EP_COMM_NULL) << what << ": EP_UNDEFINED must give EP_COMM_NULL";
    return EP_COMM_NULL;
  }
  EXPECT_NE(nc, EP_COMM_NULL) << what;
  if (nc == EP_COMM_NULL) return nc;
  std::vector<int> members = expected_split(lay.total, colour, key, colour(me));
  check_intra_queries(nc, members, me, lay, what);
  check_intra_group(nc, world, members, me, lay.total, what);
  check_intra_p2p(nc, members, me, what);
  check_intra_collectives(nc, members, me, mop, what);
  if (members_out) *members_out = members;
  return nc;
}

void free_checked(EP_Comm* c, const std::string& what) {
  ASSERT_EQ(EP_Barrier(*c), EP_SUCCESS) << what;  // nobody frees while a peer still sends
  EXPECT_EQ(EP_Comm_free(c), EP_SUCCESS) << what;
  EXPECT_EQ(*c, EP_COMM_NULL) << what;
}

TEST(IntraCollectives, OnTheWorldEndpointsCommunicator) {
  const Layout lay = ep_comm_test::uneven_layout();
  MatOp mop;
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const std::vector<int> members = iota_vec(lay.total);
    check_intra_queries(world, members, me, lay, "world");
    check_intra_collectives(world, members, me, mop, "world");
    // The same calls again with a different payload size: nothing left over from before.
    check_intra_collectives(world, members, me, mop, "world, second round");
    ASSERT_EQ(EP_Barrier(world), EP_SUCCESS);
  });
}

double now_s() {
  // steady_clock is CLOCK_MONOTONIC: one clock for every process of this machine.
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One endpoint (a different one each round) enters late; nobody may leave the barrier
// before the late one entered.
void check_barrier_waits(EP_Comm comm, const std::vector<int>& members, int me,
                         const std::string& what) {
  const int size = static_cast<int>(members.size());
  const int my_rank = index_in(members, me);
  for (int late : {size - 1, 0}) {
    if (my_rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const double entered = now_s();
    ASSERT_EQ(EP_Barrier(comm), EP_SUCCESS) << what;
    const double left = now_s();
    double last_entry = 0;
    ASSERT_EQ(EP_Allreduce(&entered, &last_entry, 1, MPI_DOUBLE, MPI_MAX, comm), EP_SUCCESS);
    EXPECT_GE(left, last_entry) << what << ": rank " << my_rank
                                << " left the barrier before rank " << late << " entered";
  }
}

TEST(IntraCollectives, BarrierWaitsForTheLastEndpoint) {
  const Layout lay = ep_comm_test::uneven_layout();
  auto key = [&lay](int r) { return lay.index_of(r) * 100 + lay.proc_of(r); };
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    check_barrier_waits(world, iota_vec(lay.total), me, "world");
    EP_Comm nc = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, 0, key(me), &nc), EP_SUCCESS);
    check_barrier_waits(nc, expected_split(lay.total, [](int) { return 0; }, key, 0), me,
                        "interleaved split");
    free_checked(&nc, "interleaved split");
  });
}

// Messages above the eager limit (EP_EAGER_LIMIT defaults to at most 64 KiB) and
// EP_IN_PLACE, on a split whose ranks interleave processes in reverse.
TEST(IntraCollectives, LargeBuffersAndInPlaceOnAnInterleavedSplit) {
  const Layout lay = ep_comm_test::uneven_layout();
  auto key = [&lay](int r) { return -(lay.index_of(r) * 100 + lay.proc_of(r)); };
  auto colour = [](int) { return 0; };
  const int kCount = 100000;  // 400 KB
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const std::vector<int> members = expected_split(lay.total, colour, key, 0);
    EP_Comm nc = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, 0, key(me), &nc), EP_SUCCESS);
    const int my_rank = index_in(members, me);
    const int size = static_cast<int>(members.size());
    for (int root : {size - 1, 0}) {
      std::vector<int> buf(kCount, -1);
      if (my_rank == root) {
        for (int i = 0; i < kCount; ++i) buf[static_cast<size_t>(i)] = i * 3 + root;
      }
      ASSERT_EQ(EP_Bcast(buf.data(), kCount, MPI_INT, root, nc), EP_SUCCESS);
      int bad = 0;
      for (int i = 0; i < kCount; ++i) bad += buf[static_cast<size_t>(i)] != i * 3 + root;
      EXPECT_EQ(bad, 0) << "root " << root;
    }
    std::vector<int> s(kCount), r(kCount, -1);
    for (int i = 0; i < kCount; ++i) s[static_cast<size_t>(i)] = (i % 1000) + me;
    ASSERT_EQ(EP_Allreduce(s.data(), r.data(), kCount, MPI_INT, MPI_SUM, nc), EP_SUCCESS);
    int msum = 0;
    for (int m : members) msum += m;
    int bad = 0;
    for (int i = 0; i < kCount; ++i) bad += r[static_cast<size_t>(i)] != (i % 1000) * size + msum;
    EXPECT_EQ(bad, 0);
    // In place.
    ASSERT_EQ(EP_Allreduce(EP_IN_PLACE, s.data(), kCount, MPI_INT, MPI_SUM, nc), EP_SUCCESS);
    bad = 0;
    for (int i = 0; i < kCount; ++i) bad += s[static_cast<size_t>(i)] != (i % 1000) * size + msum;
    EXPECT_EQ(bad, 0) << "EP_IN_PLACE";
    ep_comm_test::Mat m = ep_comm_test::mat_of(me, 0);
    MatOp mop;
    ASSERT_EQ(EP_Allreduce(EP_IN_PLACE, &m, 1, mop.type, mop.op, nc), EP_SUCCESS);
    EXPECT_EQ(m, ep_comm_test::mat_product(members, 0)) << "EP_IN_PLACE, non-commutative";
    free_checked(&nc, "large");
  });
}

TEST(CommSplit, ParityWithReversedKeysPutsOneProcessInTwoCommunicators) {
  const Layout lay = ep_comm_test::uneven_layout();
  MatOp mop;
  auto colour = [](int r) { return r % 2; };
  auto key = [](int r) { return -r; };
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    EP_Comm nc = split_and_check(world, lay, colour, key, mop, "parity/reversed");
    if (nc != EP_COMM_NULL) free_checked(&nc, "parity/reversed");
  });
}

TEST(CommSplit, KeyInterleavesProcesses) {
  // One colour; key = (index in process, process): rank order goes round the processes.
  const Layout lay = ep_comm_test::uneven_layout();
  MatOp mop;
  auto colour = [](int) { return 3; };
  auto key = [&lay](int r) { return lay.index_of(r) * 100 + lay.proc_of(r); };
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    std::vector<int> members;
    EP_Comm nc = split_and_check(world, lay, colour, key, mop, "interleaved", &members);
    if (nc == EP_COMM_NULL) return;
    int result = -1;
    EXPECT_EQ(EP_Comm_compare(world, nc, &result), EP_SUCCESS);
    EXPECT_EQ(result, members == iota_vec(lay.total) ? EP_CONGRUENT : EP_SIMILAR);
    free_checked(&nc, "interleaved");
  });
}

TEST(CommSplit, UndefinedGivesNullAndTiesBreakByOldRank) {
  // Endpoints with r % 3 == 1 opt out; the others share one colour and key 0 (odd r) or 1
  // (even r): odd ranks first, each half in old-rank order.
  const Layout lay = ep_comm_test::uneven_layout();
  MatOp mop;
  auto colour = [](int r) { return r % 3 == 1 ? EP_UNDEFINED : 7; };
  auto key = [](int r) { return r % 2 == 0 ? 1 : 0; };
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    EP_Comm nc = split_and_check(world, lay, colour, key, mop, "undefined/ties");
    if (colour(me) == EP_UNDEFINED) {
      EP_Comm null_comm = EP_COMM_NULL;
      EXPECT_EQ(EP_Comm_free(&null_comm), EP_ERR_COMM);
      // The opted-out endpoints can still use the parent meanwhile.
      return;
    }
    if (nc != EP_COMM_NULL) free_checked(&nc, "undefined/ties");
  });
}

TEST(CommSplit, NegativeAndEqualKeysEverywhere) {
  // All endpoints pass the same key: the new order is the old order (CONGRUENT groups
  // per colour); colour by process halves so some colours span processes.
  const Layout lay = ep_comm_test::uneven_layout();
  MatOp mop;
  auto colour = [&lay](int r) { return r < lay.total / 2 ? 100 : 200; };
  auto key = [](int) { return -5; };
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    EP_Comm nc = split_and_check(world, lay, colour, key, mop, "equal keys");
    if (nc != EP_COMM_NULL) free_checked(&nc, "equal keys");
  });
}

TEST(CommSplit, ProcessesWithoutEndpointsInTheParent) {
  // Endpoints per process {2, 0, 1}: process 1 takes part in nothing after creation.
  static const int pattern[] = {2, 0, 1};
  const Layout lay([](int p) { return pattern[p % 3]; });
  MatOp mop;
  auto colour = [](int r) { return r % 2; };
  auto key = [](int r) { return -r; };
  run_endpoints(pattern[world_rank() % 3], [&](EP_Comm world, int) {
    EP_Comm nc = split_and_check(world, lay, colour, key, mop, "with an empty process");
    if (nc != EP_COMM_NULL) free_checked(&nc, "with an empty process");
  });
}

TEST(CommSplit, ExtremeKeysAndColours) {
  // Keys INT_MIN / INT_MAX / 0 (an implementation comparing keys by subtraction
  // overflows) and colours 0 and INT_MAX.
  const Layout lay = ep_comm_test::uneven_layout();
  MatOp mop;
  auto colour = [](int r) { return r % 4 == 3 ? std::numeric_limits<int>::max() : 0; };
  auto key = [](int r) {
    switch (r % 3) {
      case 0: return std::numeric_limits<int>::max();
      case 1: return std::numeric_limits<int>::min();
      default: return 0;
    }
  };
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    EP_Comm nc = split_and_check(world, lay, colour, key, mop, "extreme keys");
    if (nc != EP_COMM_NULL) free_checked(&nc, "extreme keys");
  });
}

TEST(CommSplit, OneColourPerEndpointGivesSizeOneCommunicators) {
  const Layout lay = ep_comm_test::uneven_layout();
  MatOp mop;
  auto colour = [](int r) { return r; };
  auto key = [](int) { return 0; };
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    EP_Comm nc = split_and_check(world, lay, colour, key, mop, "singletons");
    if (nc != EP_COMM_NULL) free_checked(&nc, "singletons");
  });
}

TEST(CommSplit, SplitOfASplitAndDupOfASplit) {
  const Layout lay = ep_comm_test::uneven_layout();
  MatOp mop;
  auto colour1 = [](int r) { return r % 2; };
  auto key1 = [](int r) { return -r; };
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    std::vector<int> m1;
    EP_Comm c1 = split_and_check(world, lay, colour1, key1, mop, "first split", &m1);
    if (c1 == EP_COMM_NULL) return;
    // Second split on c1: colour by rank in c1 (first half / second half), key reversing
    // odd and even ranks of c1.  Expected members computed on c1's ranks, then mapped to
    // world ranks.
    const int s1 = static_cast<int>(m1.size());
    auto colour2 = [s1](int r1) { return r1 < (s1 + 1) / 2 ? 0 : 1; };
    auto key2 = [](int r1) { return (r1 % 2) * -10 - r1; };
    const int r1 = index_in(m1, me);
    EP_Comm c2 = EP_COMM_NULL;
    int rc = EP_Comm_split(c1, colour2(r1), key2(r1), &c2);
    ASSERT_EQ(rc, EP_SUCCESS) << last_error(rc);
    std::vector<int> in_c1 = expected_split(s1, colour2, key2, colour2(r1));
    std::vector<int> m2;
    for (int x : in_c1) m2.push_back(m1[static_cast<size_t>(x)]);
    check_intra_queries(c2, m2, me, lay, "split of split");
    check_intra_group(c2, world, m2, me, lay.total, "split of split");
    check_intra_p2p(c2, m2, me, "split of split");
    check_intra_collectives(c2, m2, me, mop, "split of split");

    // Dup of the split: same members and order, its own context.
    EP_Comm d2 = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(c2, &d2), EP_SUCCESS);
    check_intra_queries(d2, m2, me, lay, "dup of split");
    check_intra_group(d2, world, m2, me, lay.total, "dup of split");
    int result = -1;
    EXPECT_EQ(EP_Comm_compare(c2, d2, &result), EP_SUCCESS);
    EXPECT_EQ(result, EP_CONGRUENT);
    EXPECT_EQ(EP_Comm_compare(d2, d2, &result), EP_SUCCESS);
    EXPECT_EQ(result, EP_IDENT);
    // Same tag on the dup and on the split, received in the opposite order.
    const int n2 = static_cast<int>(m2.size());
    const int my2 = index_in(m2, me);
    const int right = (my2 + 1) % n2, left = (my2 + n2 - 1) % n2;
    int on_dup = 1000 + me, on_split = 2000 + me, got = -1;
    EP_Request s[2];
    ASSERT_EQ(EP_Isend(&on_dup, 1, MPI_INT, right, 5, d2, &s[0]), EP_SUCCESS);
    ASSERT_EQ(EP_Isend(&on_split, 1, MPI_INT, right, 5, c2, &s[1]), EP_SUCCESS);
    ASSERT_EQ(EP_Recv(&got, 1, MPI_INT, EP_ANY_SOURCE, 5, c2, EP_STATUS_IGNORE), EP_SUCCESS);
    EXPECT_EQ(got, 2000 + m2[static_cast<size_t>(left)]);
    ASSERT_EQ(EP_Recv(&got, 1, MPI_INT, EP_ANY_SOURCE, 5, d2, EP_STATUS_IGNORE), EP_SUCCESS);
    EXPECT_EQ(got, 1000 + m2[static_cast<size_t>(left)]);
    ASSERT_EQ(EP_Waitall(2, s, EP_STATUSES_IGNORE), EP_SUCCESS);
    check_intra_collectives(d2, m2, me, mop, "dup of split");
    // Free the parents first: the children stay usable.
    free_checked(&c1, "first split");
    free_checked(&c2, "split of split");
    check_intra_p2p(d2, m2, me, "dup after its parents were freed");
    free_checked(&d2, "dup of split");
  });
}

TEST(CommCompare, IdentCongruentSimilarUnequalOnSplitResults) {
  const int n = uneven(world_rank());
  std::vector<EP_Comm> world(static_cast<size_t>(n)), same(world.size()), rev(world.size()),
      par(world.size()), pardup(world.size());
  ASSERT_EQ(EP_Comm_create_endpoints(MPI_COMM_WORLD, n, MPI_INFO_NULL, world.data()), EP_SUCCESS);
  std::vector<int> me(world.size(), -1);
  ep_comm_test::on_threads(n, [&](int i) {
    const size_t k = static_cast<size_t>(i);
    EP_Comm_set_errhandler(world[k], EP_ERRORS_RETURN);
    EP_Comm_rank(world[k], &me[k]);
    ASSERT_EQ(EP_Comm_split(world[k], 0, 0, &same[k]), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_split(world[k], 0, -me[k], &rev[k]), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_split(world[k], me[k] % 2, me[k], &par[k]), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_dup(par[k], &pardup[k]), EP_SUCCESS);
  });
  ASSERT_FALSE(HasFatalFailure());
  auto cmp = [](EP_Comm a, EP_Comm b) {
    int r = -100;
    EXPECT_EQ(EP_Comm_compare(a, b, &r), EP_SUCCESS);
    return r;
  };
  // total >= 3, so each parity class is a proper subset of world.
  for (int i = 0; i < n; ++i) {
    const size_t a = static_cast<size_t>(i);
    EXPECT_EQ(cmp(same[a], world[a]), EP_CONGRUENT) << "split keeping the order";
    EXPECT_EQ(cmp(rev[a], world[a]), EP_SIMILAR) << "split reversing the order";
    EXPECT_EQ(cmp(rev[a], same[a]), EP_SIMILAR);
    EXPECT_EQ(cmp(par[a], world[a]), EP_UNEQUAL) << "a proper subset";
    EXPECT_EQ(cmp(pardup[a], par[a]), EP_CONGRUENT);
    EXPECT_EQ(cmp(par[a], par[a]), EP_IDENT);
    for (int j = 0; j < n; ++j) {
      const size_t b = static_cast<size_t>(j);
      // Handles of one communicator held by different endpoints are IDENT.
      EXPECT_EQ(cmp(same[a], same[b]), EP_IDENT) << i << " vs " << j;
      EXPECT_EQ(cmp(rev[a], rev[b]), EP_IDENT) << i << " vs " << j;
      EXPECT_EQ(cmp(par[a], par[b]), me[a] % 2 == me[b] % 2 ? EP_IDENT : EP_UNEQUAL)
          << i << " vs " << j;
    }
  }
  // Free everything once every process is done comparing (no message is in flight).
  MPI_Barrier(MPI_COMM_WORLD);
  for (auto* v : {&pardup, &par, &rev, &same, &world}) {
    for (EP_Comm& c : *v) {
      EXPECT_EQ(EP_Comm_free(&c), EP_SUCCESS);
      EXPECT_EQ(c, EP_COMM_NULL);
    }
  }
}

TEST(CommSplit, ConcurrentCollectivesOnSiblingCommunicators) {
  // Colours by r % 2 on a world with 2 endpoints per process: every process has one
  // endpoint in each new communicator, and both communicators run collectives at once.
  const Layout lay = ep_comm_test::fixed_layout(2);
  MatOp mop;
  auto colour = [](int r) { return r % 2; };
  auto key = [](int r) { return r % 4 == 0 ? r : -r; };
  run_endpoints(2, [&](EP_Comm world, int) {
    std::vector<int> members;
    EP_Comm nc = split_and_check(world, lay, colour, key, mop, "siblings", &members);
    if (nc == EP_COMM_NULL) return;
    const int me = my_world_rank(world);
    for (int round = 0; round < 20; ++round) {
      int s = me + round, r = -1;
      ASSERT_EQ(EP_Allreduce(&s, &r, 1, MPI_INT, MPI_SUM, nc), EP_SUCCESS);
      int e = 0;
      for (int m : members) e += m + round;
      EXPECT_EQ(r, e) << "round " << round;
      int b = (round % static_cast<int>(members.size()) == index_in(members, me)) ? round * 3 : -1;
      ASSERT_EQ(EP_Bcast(&b, 1, MPI_INT, round % static_cast<int>(members.size()), nc), EP_SUCCESS);
      EXPECT_EQ(b, round * 3);
      // Both sibling communicators create children at the same time, too.
      EP_Comm d = EP_COMM_NULL, h = EP_COMM_NULL;
      ASSERT_EQ(EP_Comm_dup(nc, &d), EP_SUCCESS) << "round " << round;
      const int my = index_in(members, me);
      ASSERT_EQ(EP_Comm_split(d, my % 2, -my, &h), EP_SUCCESS) << "round " << round;
      const std::vector<int> hm = expected_split(
          static_cast<int>(members.size()), [](int x) { return x % 2; }, [](int x) { return -x; },
          my % 2);
      int hr = -1, hs = -1;
      EXPECT_EQ(EP_Comm_rank(h, &hr), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_size(h, &hs), EP_SUCCESS);
      EXPECT_EQ(hr, index_in(hm, my)) << "round " << round;
      EXPECT_EQ(hs, static_cast<int>(hm.size())) << "round " << round;
      int hsum = -1, want = 0;
      for (int x : hm) want += members[static_cast<size_t>(x)];
      ASSERT_EQ(EP_Allreduce(&me, &hsum, 1, MPI_INT, MPI_SUM, h), EP_SUCCESS);
      EXPECT_EQ(hsum, want) << "round " << round;
      EXPECT_EQ(EP_Comm_free(&h), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(&d), EP_SUCCESS);
    }
    free_checked(&nc, "siblings");
  });
}

}  // namespace
