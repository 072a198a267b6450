// Intercommunicators: EP_Intercomm_create, EP_Comm_test_inter,
// EP_Comm_remote_size, EP_Comm_size/rank (local group), EP_Comm_group (local group),
// point-to-point (ranks address the remote group, EP_ANY_SOURCE reports the remote-group
// rank, per-pair order), EP_Barrier (waits for the other group), EP_Bcast (EP_ROOT /
// EP_PROC_NULL / remote root rank), EP_Allreduce (the other group's reduction, also a
// non-commutative op in the other group's rank order), EP_Intercomm_merge (high order,
// equal high: agreement, permutation, contiguous groups in local order) and collectives on
// the merged communicator, dup of an intercommunicator.
//
// Every sharing case of the two groups' MPI processes is exercised by trying EVERY pair of
// leaders for several colourings of a world endpoints communicator:
//   - no process shared,
//   - a shared process holding no leader,
//   - a shared process holding one leader,
//   - a shared process holding both leaders (including everything in one process, which
//     is all there is with 1 MPI process).
// The test asserts (from the layout alone) that the cases it claims were really covered.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/comm/comm_util.h"
#include "tests/common/harness.h"

namespace {

using ep_comm_test::check_inter_collectives;
using ep_comm_test::check_inter_group;
using ep_comm_test::check_inter_p2p;
using ep_comm_test::check_inter_queries;
using ep_comm_test::check_intra_collectives;
using ep_comm_test::expected_split;
using ep_comm_test::index_in;
using ep_comm_test::Layout;
using ep_comm_test::MatOp;
using ep_comm_test::merge_and_check;
using ep_test::last_error;
using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;
using ep_test::world_size;

const char* const kNoShared = "no process shared";
const char* const kShared0 = "shared process holding no leader";
const char* const kShared1 = "shared process holding one leader";
const char* const kShared2 = "shared process holding both leaders";

struct Colouring {
  std::string name;
  std::function<int(int)> colour;  // 0: group A, 1: group B
  std::function<int(int)> key;     // order inside the group
};

std::vector<Colouring> colourings(const Layout& lay) {
  const int total = lay.total;
  return {
      {"parity (A ascending, B descending)", [](int r) { return r % 2; },
       [](int r) { return r % 2 == 0 ? r : -r; }},
      {"by process parity", [&lay](int r) { return lay.proc_of(r) % 2; }, [](int r) { return r; }},
      {"first endpoint alone (B interleaves processes)", [](int r) { return r == 0 ? 0 : 1; },
       [&lay](int r) { return lay.index_of(r) * 100 + lay.proc_of(r); }},
      {"halves (both descending)", [total](int r) { return r < total / 2 ? 0 : 1; },
       [](int r) { return -r; }},
  };
}

std::set<std::string> sharing_cases(const Layout& lay, const std::vector<int>& a,
                                    const std::vector<int>& b, int leader_a, int leader_b) {
  std::set<std::string> out;
  bool shared = false;
  for (int p = 0; p < lay.nprocs(); ++p) {
    bool in_a = false, in_b = false;
    for (int r : a) in_a |= lay.proc_of(r) == p;
    for (int r : b) in_b |= lay.proc_of(r) == p;
    if (!(in_a && in_b)) continue;
    shared = true;
    const int leaders = (lay.proc_of(leader_a) == p) + (lay.proc_of(leader_b) == p);
    out.insert(leaders == 0 ? kShared0 : leaders == 1 ? kShared1 : kShared2);
  }
  if (!shared) out.insert(kNoShared);
  return out;
}

int my_world_rank(EP_Comm world) {
  int r = -1;
  EP_Comm_rank(world, &r);
  return r;
}

struct Groups {
  std::vector<int> a, b;
};

Groups groups_of(const Layout& lay, const Colouring& c) {
  return {expected_split(lay.total, c.colour, c.key, 0), expected_split(lay.total, c.colour, c.key, 1)};
}

// For every colouring and every leader pair: create the intercommunicator and run every
// check on it, merge it (A low, B high) and check the merged communicator.  Returns the
// sharing cases covered (computed from the layout, identical in every thread).
std::set<std::string> every_leader_pair(const Layout& lay, int here, bool merge) {
  MatOp mop;
  std::set<std::string> covered;
  const std::vector<Colouring> cols = colourings(lay);
  for (const Colouring& c : cols) {
    Groups g = groups_of(lay, c);
    if (g.a.empty() || g.b.empty()) continue;
    for (int la = 0; la < static_cast<int>(g.a.size()); ++la) {
      for (int lb = 0; lb < static_cast<int>(g.b.size()); ++lb) {
        auto s = sharing_cases(lay, g.a, g.b, g.a[static_cast<size_t>(la)], g.b[static_cast<size_t>(lb)]);
        covered.insert(s.begin(), s.end());
      }
    }
  }
  run_endpoints(here, [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    int tag = 100;
    for (const Colouring& c : cols) {
      Groups g = groups_of(lay, c);
      if (g.a.empty() || g.b.empty()) continue;
      const bool in_a = c.colour(me) == 0;
      const std::vector<int>& local = in_a ? g.a : g.b;
      const std::vector<int>& remote = in_a ? g.b : g.a;
      EP_Comm lc = EP_COMM_NULL;
      ASSERT_EQ(EP_Comm_split(world, c.colour(me), c.key(me), &lc), EP_SUCCESS) << c.name;
      for (int la = 0; la < static_cast<int>(g.a.size()); ++la) {
        for (int lb = 0; lb < static_cast<int>(g.b.size()); ++lb) {
          ++tag;
          const int wa = g.a[static_cast<size_t>(la)], wb = g.b[static_cast<size_t>(lb)];
          std::string what = c.name + ", leaders A " + std::to_string(wa) + " B " +
                             std::to_string(wb) + " (world endpoints); cases:";
          for (const auto& s : sharing_cases(lay, g.a, g.b, wa, wb)) what += " [" + s + "]";
          EP_Comm ic = EP_COMM_NULL;
          int rc = in_a ? EP_Intercomm_create(lc, la, world, wb, tag, &ic)
                        : EP_Intercomm_create(lc, lb, world, wa, tag, &ic);
          ASSERT_EQ(rc, EP_SUCCESS) << what << ": " << last_error(rc);
          ASSERT_NE(ic, EP_COMM_NULL) << what;
          check_inter_queries(ic, local, remote, me, what);
          check_inter_group(ic, world, local, me, lay.total, what);
          check_inter_p2p(ic, local, remote, me, what);
          check_inter_collectives(ic, local, remote, me, in_a, mop, what);
          if (merge) {
            std::vector<int> members;
            EP_Comm m = merge_and_check(ic, local, remote, me, lay.total, in_a ? 0 : 1,
                                        in_a ? 1 : 0, &members, what + ", merged");
            if (m != EP_COMM_NULL) {
              // Local rank/size count every endpoint of the merged comm in this process
              // (both groups' endpoints when the process is shared).
              ep_comm_test::check_intra_queries(m, members, me, lay, what + ", merged");
              ep_comm_test::check_intra_group(m, world, members, me, lay.total, what + ", merged");
              int cmp = -1;
              EXPECT_EQ(EP_Comm_compare(m, world, &cmp), EP_SUCCESS);
              std::vector<int> sorted = members;
              std::sort(sorted.begin(), sorted.end());
              std::vector<int> all(static_cast<size_t>(lay.total));
              std::iota(all.begin(), all.end(), 0);
              const int want = members == all ? EP_CONGRUENT : sorted == all ? EP_SIMILAR : EP_UNEQUAL;
              EXPECT_EQ(cmp, want) << what << ", merged vs world";
              check_intra_collectives(m, members, me, mop, what + ", merged");
              ASSERT_EQ(EP_Barrier(m), EP_SUCCESS);
              EXPECT_EQ(EP_Comm_free(&m), EP_SUCCESS);
            }
          }
          ASSERT_EQ(EP_Barrier(ic), EP_SUCCESS) << what;
          EXPECT_EQ(EP_Comm_free(&ic), EP_SUCCESS) << what;
          EXPECT_EQ(ic, EP_COMM_NULL) << what;
        }
      }
      ASSERT_EQ(EP_Barrier(lc), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(&lc), EP_SUCCESS);
    }
  });
  return covered;
}

std::string describe(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += "[" + x + "] ";
  return out;
}

TEST(IntercommCreate, EveryLeaderPairUnevenEndpoints) {
  const Layout lay = ep_comm_test::uneven_layout();
  std::set<std::string> covered = every_leader_pair(lay, uneven(world_rank()), true);
  std::set<std::string> want;
  if (world_size() == 1) want = {kShared2};
  if (world_size() == 2) want = {kNoShared, kShared1, kShared2};
  if (world_size() >= 3) want = {kNoShared, kShared0, kShared1, kShared2};
  for (const auto& w : want) {
    EXPECT_EQ(covered.count(w), 1u) << "case not exercised: " << w;
  }
  if (world_rank() == 0) std::printf("covered: %s\n", describe(covered).c_str());
}

TEST(IntercommCreate, EveryLeaderPairTwoEndpointsPerProcess) {
  const Layout lay = ep_comm_test::fixed_layout(2);
  std::set<std::string> covered = every_leader_pair(lay, 2, true);
  std::set<std::string> want = {kShared2};
  if (world_size() >= 2) want = {kNoShared, kShared0, kShared1, kShared2};
  for (const auto& w : want) {
    EXPECT_EQ(covered.count(w), 1u) << "case not exercised: " << w;
  }
  if (world_rank() == 0) std::printf("covered: %s\n", describe(covered).c_str());
}

TEST(IntercommCreate, EverythingInOneProcessWhileOtherProcessesHaveNoEndpoints) {
  // Process 0 holds all 4 endpoints (one-process groups); the other processes take part
  // in creating the world endpoints communicator with 0 endpoints and nothing else.
  const Layout lay([](int p) { return p == 0 ? 4 : 0; });
  std::set<std::string> covered = every_leader_pair(lay, world_rank() == 0 ? 4 : 0, true);
  EXPECT_EQ(covered, std::set<std::string>({kShared2}));
}

TEST(IntercommCreate, PeerCommAndRemoteLeaderMatterOnlyAtTheLeaders) {
  const Layout lay = ep_comm_test::uneven_layout();
  MatOp mop;
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const int colour = me % 2;
    EP_Comm lc = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, colour, me, &lc), EP_SUCCESS);
    std::vector<int> a = expected_split(lay.total, [](int r) { return r % 2; }, [](int r) { return r; }, 0);
    std::vector<int> b = expected_split(lay.total, [](int r) { return r % 2; }, [](int r) { return r; }, 1);
    const std::vector<int>& local = colour == 0 ? a : b;
    const std::vector<int>& remote = colour == 0 ? b : a;
    // Leaders: the last rank of each group.
    const int my_leader = static_cast<int>(local.size()) - 1;
    const bool leader = index_in(local, me) == my_leader;
    EP_Comm ic = EP_COMM_NULL;
    int rc = EP_Intercomm_create(lc, my_leader, leader ? world : EP_COMM_NULL,
                                 leader ? remote.back() : -12345, 77, &ic);
    ASSERT_EQ(rc, EP_SUCCESS) << last_error(rc);
    check_inter_queries(ic, local, remote, me, "null peer at non-leaders");
    check_inter_p2p(ic, local, remote, me, "null peer at non-leaders");
    check_inter_collectives(ic, local, remote, me, colour == 1, mop, "null peer at non-leaders");
    ASSERT_EQ(EP_Barrier(ic), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&ic), EP_SUCCESS);
    ASSERT_EQ(EP_Barrier(lc), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&lc), EP_SUCCESS);
  });
}

double now_s() {
  // steady_clock is CLOCK_MONOTONIC: one clock for every process of this machine.
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TEST(IntercommBarrier, NoEndpointLeavesBeforeTheOtherGroupEntered) {
  const Layout lay = ep_comm_test::uneven_layout();
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const int colour = me < lay.total / 2 ? 0 : 1;  // A: first half, B: second half
    EP_Comm lc = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, colour, me, &lc), EP_SUCCESS);
    std::vector<int> a, b;
    for (int r = 0; r < lay.total; ++r) (r < lay.total / 2 ? a : b).push_back(r);
    const std::vector<int>& remote = colour == 0 ? b : a;
    EP_Comm ic = EP_COMM_NULL;
    ASSERT_EQ(EP_Intercomm_create(lc, 0, world, remote[0], 78, &ic), EP_SUCCESS);
    for (int round = 0; round < 2; ++round) {
      // Round 0: the last endpoint of B is late; round 1: the first endpoint of A is.
      const bool late = round == 0 ? me == b.back() : me == a.front();
      if (late) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const double entered = now_s();
      ASSERT_EQ(EP_Barrier(ic), EP_SUCCESS);
      const double left = now_s();
      double other_entered = 0;
      ASSERT_EQ(EP_Allreduce(&entered, &other_entered, 1, MPI_DOUBLE, MPI_MAX, ic), EP_SUCCESS);
      EXPECT_GE(left, other_entered)
          << "round " << round << ": world endpoint " << me
          << " left the intercomm barrier before the other group's last endpoint entered";
    }
    ASSERT_EQ(EP_Barrier(ic), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&ic), EP_SUCCESS);
    ASSERT_EQ(EP_Barrier(lc), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&lc), EP_SUCCESS);
  });
}

TEST(IntercommMerge, HighDecidesTheOrderAndEqualHighIsConsistent) {
  const Layout lay = ep_comm_test::uneven_layout();
  MatOp mop;
  auto colour = [](int r) { return r % 2; };
  auto key = [](int r) { return r % 2 == 0 ? -r : r; };  // A descending, B ascending
  const std::vector<int> a = expected_split(lay.total, colour, key, 0);
  const std::vector<int> b = expected_split(lay.total, colour, key, 1);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const bool in_a = colour(me) == 0;
    const std::vector<int>& local = in_a ? a : b;
    const std::vector<int>& remote = in_a ? b : a;
    EP_Comm lc = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, colour(me), key(me), &lc), EP_SUCCESS);
    EP_Comm ic = EP_COMM_NULL;
    // Leaders: rank 1 of A (if any) and rank 0 of B.
    const int la = a.size() > 1 ? 1 : 0;
    int rc = in_a ? EP_Intercomm_create(lc, la, world, b[0], 79, &ic)
                  : EP_Intercomm_create(lc, 0, world, a[static_cast<size_t>(la)], 79, &ic);
    ASSERT_EQ(rc, EP_SUCCESS) << last_error(rc);
    struct Case {
      int high_a, high_b, a_first;  // a_first: 1 yes, 0 no, -1 either
    };
    const Case cases[] = {{0, 1, 1}, {1, 0, 0}, {0, 0, -1}, {1, 1, -1}, {5, 0, 0}};
    std::vector<std::vector<int>> equal_high_orders;
    for (const Case& k : cases) {
      const std::string what = "merge high A=" + std::to_string(k.high_a) +
                               " B=" + std::to_string(k.high_b);
      const int high = in_a ? k.high_a : k.high_b;
      const int expect_local_first = k.a_first < 0 ? -1 : (in_a ? k.a_first : 1 - k.a_first);
      std::vector<int> members;
      EP_Comm m = merge_and_check(ic, local, remote, me, lay.total, high, expect_local_first,
                                  &members, what);
      ASSERT_NE(m, EP_COMM_NULL) << what;
      if (k.a_first < 0) equal_high_orders.push_back(members);
      check_intra_collectives(m, members, me, mop, what);
      ASSERT_EQ(EP_Barrier(m), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(&m), EP_SUCCESS);
    }
    // With equal high values the order depends only on the groups (their rank-0
    // endpoints' creation identities), not on the value of high.
    ASSERT_EQ(equal_high_orders.size(), 2u);
    EXPECT_EQ(equal_high_orders[0], equal_high_orders[1])
        << "merging with high 0/0 and 1/1 gave different orders";
    ASSERT_EQ(EP_Barrier(ic), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&ic), EP_SUCCESS);
    ASSERT_EQ(EP_Barrier(lc), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&lc), EP_SUCCESS);
  });
}

TEST(IntercommCreate, FromSplitsOfAMergedCommunicatorWithItAsPeer) {
  // world -> split by parity -> intercomm -> merge (B first) -> split the merged comm
  // into thirds of its rank order -> intercomm between thirds 0 and 2 with the merged
  // comm as peer; third 1 opts out.  Ranks are checked through world endpoints.
  const Layout lay = ep_comm_test::uneven_layout();
  MatOp mop;
  auto colour = [](int r) { return r % 2; };
  auto key = [](int r) { return r; };
  const std::vector<int> a = expected_split(lay.total, colour, key, 0);
  const std::vector<int> b = expected_split(lay.total, colour, key, 1);
  std::vector<int> merged(b);
  merged.insert(merged.end(), a.begin(), a.end());  // B passes high 0: B first
  const int n = lay.total;
  auto third = [n](int mrank) { return mrank * 3 / n; };
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const bool in_a = colour(me) == 0;
    EP_Comm lc = EP_COMM_NULL, ic = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, colour(me), key(me), &lc), EP_SUCCESS);
    ASSERT_EQ(EP_Intercomm_create(lc, 0, world, in_a ? b[0] : a[0], 90, &ic), EP_SUCCESS);
    std::vector<int> members;
    EP_Comm m = merge_and_check(ic, in_a ? a : b, in_a ? b : a, me, lay.total, in_a ? 1 : 0,
                                in_a ? 0 : 1, &members, "merged");
    ASSERT_NE(m, EP_COMM_NULL);
    ASSERT_EQ(members, merged);
    const int mrank = index_in(merged, me);
    const int t = third(mrank);
    EP_Comm lc2 = EP_COMM_NULL;
    // Key: reverse order inside each third.
    ASSERT_EQ(EP_Comm_split(m, t == 1 ? EP_UNDEFINED : t, -mrank, &lc2), EP_SUCCESS);
    if (t != 1) {
      std::vector<int> g0, g2;  // world endpoints, in local rank order
      for (int r = n - 1; r >= 0; --r) {
        if (third(r) == 0) g0.push_back(merged[static_cast<size_t>(r)]);
        if (third(r) == 2) g2.push_back(merged[static_cast<size_t>(r)]);
      }
      const std::vector<int>& local = t == 0 ? g0 : g2;
      const std::vector<int>& remote = t == 0 ? g2 : g0;
      // Leaders: the last local rank; remote leader given as its rank in the merged comm.
      const int remote_leader_mrank = index_in(merged, remote.back());
      EP_Comm ic2 = EP_COMM_NULL;
      int rc = EP_Intercomm_create(lc2, static_cast<int>(local.size()) - 1, m, remote_leader_mrank,
                                   91, &ic2);
      ASSERT_EQ(rc, EP_SUCCESS) << last_error(rc);
      check_inter_queries(ic2, local, remote, me, "second-generation intercomm");
      check_inter_group(ic2, world, local, me, lay.total, "second-generation intercomm");
      check_inter_p2p(ic2, local, remote, me, "second-generation intercomm");
      check_inter_collectives(ic2, local, remote, me, t == 0, mop, "second-generation intercomm");
      ASSERT_EQ(EP_Barrier(ic2), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(&ic2), EP_SUCCESS);
      ASSERT_EQ(EP_Barrier(lc2), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(&lc2), EP_SUCCESS);
    } else {
      EXPECT_EQ(lc2, EP_COMM_NULL);
    }
    for (EP_Comm* c : {&m, &ic, &lc}) {
      ASSERT_EQ(EP_Barrier(*c), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(c), EP_SUCCESS);
    }
  });
}

TEST(IntercommCreate, AMergedCommunicatorAsOneGroup) {
  // 3 endpoints per process, G_c = {r : r % 3 == c}.  G0 and G1 make an intercomm and
  // merge it (G0 low): every process holds endpoints of both halves of that merged comm.
  // The merged comm is then the local group of an intercomm with G2, which is merged too.
  const Layout lay = ep_comm_test::fixed_layout(3);
  MatOp mop;
  std::vector<int> g[3];
  for (int r = 0; r < lay.total; ++r) g[r % 3].push_back(r);
  std::vector<int> m01(g[0]);
  m01.insert(m01.end(), g[1].begin(), g[1].end());
  run_endpoints(3, [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const int c = me % 3;
    EP_Comm lc = EP_COMM_NULL, ic01 = EP_COMM_NULL, m = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, c, me, &lc), EP_SUCCESS);
    EP_Comm local_comm = lc;
    if (c < 2) {
      ASSERT_EQ(EP_Intercomm_create(lc, 0, world, g[1 - c][0], 95, &ic01), EP_SUCCESS);
      std::vector<int> members;
      m = merge_and_check(ic01, g[c], g[1 - c], me, lay.total, c, c == 0 ? 1 : 0, &members,
                          "G0+G1");
      ASSERT_NE(m, EP_COMM_NULL);
      ASSERT_EQ(members, m01);
      ep_comm_test::check_intra_queries(m, m01, me, lay, "G0+G1");
      local_comm = m;
    }
    const std::vector<int>& local = c < 2 ? m01 : g[2];
    const std::vector<int>& remote = c < 2 ? g[2] : m01;
    // Leaders: the last rank of each side.
    EP_Comm ic = EP_COMM_NULL;
    int rc = EP_Intercomm_create(local_comm, static_cast<int>(local.size()) - 1, world,
                                 remote.back(), 96, &ic);
    ASSERT_EQ(rc, EP_SUCCESS) << last_error(rc);
    const std::string what = "(G0+G1) vs G2";
    check_inter_queries(ic, local, remote, me, what);
    check_inter_group(ic, world, local, me, lay.total, what);
    check_inter_p2p(ic, local, remote, me, what);
    check_inter_collectives(ic, local, remote, me, c < 2, mop, what);
    std::vector<int> all;
    EP_Comm mm = merge_and_check(ic, local, remote, me, lay.total, c < 2 ? 1 : 0, c < 2 ? 0 : 1,
                                 &all, what + ", merged");
    ASSERT_NE(mm, EP_COMM_NULL);
    ep_comm_test::check_intra_queries(mm, all, me, lay, what + ", merged");
    check_intra_collectives(mm, all, me, mop, what + ", merged");
    ep_comm_test::check_intra_p2p(mm, all, me, what + ", merged");
    for (EP_Comm* x : {&mm, &ic, &m, &ic01, &lc}) {
      if (*x == EP_COMM_NULL) continue;
      ASSERT_EQ(EP_Barrier(*x), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(x), EP_SUCCESS);
    }
  });
}

// Members of the root group other than the root pass EP_PROC_NULL and a NULL buffer
// (not significant for them).
TEST(IntercommCollectives, ProcNullMembersMayPassNullBuffers) {
  const Layout lay = ep_comm_test::uneven_layout();
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const int colour = me % 2;
    std::vector<int> a, b;
    for (int r = 0; r < lay.total; ++r) (r % 2 == 0 ? a : b).push_back(r);
    const std::vector<int>& local = colour == 0 ? a : b;
    const std::vector<int>& remote = colour == 0 ? b : a;
    EP_Comm lc = EP_COMM_NULL, ic = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, colour, me, &lc), EP_SUCCESS);
    ASSERT_EQ(EP_Intercomm_create(lc, 0, world, remote[0], 97, &ic), EP_SUCCESS);
    const int my_rank = index_in(local, me);
    for (int k = 0; k < static_cast<int>(a.size()); ++k) {
      int v[4] = {-1, -1, -1, -1};
      int rc;
      if (colour == 0) {
        if (my_rank == k) {
          v[0] = 40 + k;
          v[3] = me;
          rc = EP_Bcast(v, 4, MPI_INT, EP_ROOT, ic);
        } else {
          rc = EP_Bcast(nullptr, 4, MPI_INT, EP_PROC_NULL, ic);
        }
      } else {
        rc = EP_Bcast(v, 4, MPI_INT, k, ic);
        EXPECT_EQ(v[0], 40 + k);
        EXPECT_EQ(v[3], a[static_cast<size_t>(k)]);
      }
      EXPECT_EQ(rc, EP_SUCCESS) << "root " << k;
    }
    for (EP_Comm* c : {&ic, &lc}) {
      ASSERT_EQ(EP_Barrier(*c), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(c), EP_SUCCESS);
    }
  });
}

TEST(IntercommCreate, ConcurrentCreatesOnDisjointGroupPairsWithTheSameTag) {
  // 4 endpoints per process, groups by r % 4; pairs (0, 1) and (2, 3) build their
  // intercommunicators at the same time over the same peer with the same tag.
  const Layout lay = ep_comm_test::fixed_layout(4);
  MatOp mop;
  run_endpoints(4, [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const int c = me % 4, partner = c ^ 1;
    std::vector<int> local, remote;
    for (int r = 0; r < lay.total; ++r) {
      if (r % 4 == c) local.push_back(r);
      if (r % 4 == partner) remote.push_back(r);
    }
    EP_Comm lc = EP_COMM_NULL, ic = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, c, me, &lc), EP_SUCCESS);
    int rc = EP_Intercomm_create(lc, 0, world, remote[0], 92, &ic);
    ASSERT_EQ(rc, EP_SUCCESS) << last_error(rc);
    const std::string what = "pair " + std::to_string(c & ~1);
    check_inter_queries(ic, local, remote, me, what);
    check_inter_p2p(ic, local, remote, me, what);
    check_inter_collectives(ic, local, remote, me, (c & 1) == 0, mop, what);
    ASSERT_EQ(EP_Barrier(ic), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&ic), EP_SUCCESS);
    ASSERT_EQ(EP_Barrier(lc), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&lc), EP_SUCCESS);
  });
}

TEST(IntercommCollectives, LargeBuffersAboveTheEagerLimit) {
  const Layout lay = ep_comm_test::uneven_layout();
  const int kCount = 100000;  // 400 KB
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const int colour = me % 2;
    std::vector<int> a, b;
    for (int r = 0; r < lay.total; ++r) (r % 2 == 0 ? a : b).push_back(r);
    const std::vector<int>& local = colour == 0 ? a : b;
    const std::vector<int>& remote = colour == 0 ? b : a;
    EP_Comm lc = EP_COMM_NULL, ic = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, colour, me, &lc), EP_SUCCESS);
    ASSERT_EQ(EP_Intercomm_create(lc, static_cast<int>(local.size()) - 1, world, remote.back(), 93, &ic),
              EP_SUCCESS);
    const int my_rank = index_in(local, me);
    // Root: the last rank of A.
    std::vector<int> buf(kCount, -1);
    int root;
    if (colour == 0) {
      root = my_rank == static_cast<int>(a.size()) - 1 ? EP_ROOT : EP_PROC_NULL;
      if (root == EP_ROOT) {
        for (int i = 0; i < kCount; ++i) buf[static_cast<size_t>(i)] = i ^ 0x5a5a;
      }
    } else {
      root = static_cast<int>(a.size()) - 1;
    }
    ASSERT_EQ(EP_Bcast(buf.data(), kCount, MPI_INT, root, ic), EP_SUCCESS);
    if (colour == 1) {
      int bad = 0;
      for (int i = 0; i < kCount; ++i) bad += buf[static_cast<size_t>(i)] != (i ^ 0x5a5a);
      EXPECT_EQ(bad, 0);
    }
    std::vector<int> s(kCount), r(kCount, -1);
    for (int i = 0; i < kCount; ++i) s[static_cast<size_t>(i)] = (i % 777) * (me + 1);
    ASSERT_EQ(EP_Allreduce(s.data(), r.data(), kCount, MPI_INT, MPI_SUM, ic), EP_SUCCESS);
    int rsum = 0;
    for (int x : remote) rsum += x + 1;
    int bad = 0;
    for (int i = 0; i < kCount; ++i) bad += r[static_cast<size_t>(i)] != (i % 777) * rsum;
    EXPECT_EQ(bad, 0) << "the other group's sum, elementwise";
    for (EP_Comm* c : {&ic, &lc}) {
      ASSERT_EQ(EP_Barrier(*c), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(c), EP_SUCCESS);
    }
  });
}

TEST(IntercommP2p, TwoIntercommsOnTheSameGroupsKeepTheirMessagesApart) {
  const Layout lay = ep_comm_test::uneven_layout();
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const int colour = me % 2;
    std::vector<int> a, b;
    for (int r = 0; r < lay.total; ++r) (r % 2 == 0 ? a : b).push_back(r);
    const std::vector<int>& local = colour == 0 ? a : b;
    const std::vector<int>& remote = colour == 0 ? b : a;
    EP_Comm lc = EP_COMM_NULL, ic1 = EP_COMM_NULL, ic2 = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, colour, me, &lc), EP_SUCCESS);
    ASSERT_EQ(EP_Intercomm_create(lc, 0, world, remote[0], 80, &ic1), EP_SUCCESS);
    ASSERT_EQ(EP_Intercomm_create(lc, 0, world, remote[0], 81, &ic2), EP_SUCCESS);
    int result = -1;
    EXPECT_EQ(EP_Comm_compare(ic1, ic1, &result), EP_SUCCESS);
    EXPECT_EQ(result, EP_IDENT);
    EXPECT_EQ(EP_Comm_compare(ic1, ic2, &result), EP_SUCCESS);
    EXPECT_EQ(result, EP_CONGRUENT);
    EXPECT_EQ(EP_Comm_compare(ic1, lc, &result), EP_SUCCESS);
    EXPECT_EQ(result, EP_UNEQUAL) << "an intercommunicator vs an intracommunicator";
    // Every endpoint sends the same tag to remote rank (my rank mod remote size) on ic1,
    // then on ic2; receivers take ic2's first.
    const int my_rank = index_in(local, me);
    const int rsize = static_cast<int>(remote.size());
    const int dest = my_rank % rsize;
    int v1 = 1000 + me, v2 = 2000 + me;
    EP_Request s[2];
    ASSERT_EQ(EP_Isend(&v1, 1, MPI_INT, dest, 9, ic1, &s[0]), EP_SUCCESS);
    ASSERT_EQ(EP_Isend(&v2, 1, MPI_INT, dest, 9, ic2, &s[1]), EP_SUCCESS);
    // Senders to me: remote ranks q with q mod |local| == my_rank.
    for (int q = 0; q < rsize; ++q) {
      if (q % static_cast<int>(local.size()) != my_rank) continue;
      int got = -1;
      EP_Status st;
      ASSERT_EQ(EP_Recv(&got, 1, MPI_INT, q, 9, ic2, &st), EP_SUCCESS);
      EXPECT_EQ(got, 2000 + remote[static_cast<size_t>(q)]);
      EXPECT_EQ(st.EP_SOURCE, q);
      ASSERT_EQ(EP_Recv(&got, 1, MPI_INT, q, 9, ic1, &st), EP_SUCCESS);
      EXPECT_EQ(got, 1000 + remote[static_cast<size_t>(q)]);
      EXPECT_EQ(st.EP_SOURCE, q);
    }
    ASSERT_EQ(EP_Waitall(2, s, EP_STATUSES_IGNORE), EP_SUCCESS);
    for (EP_Comm* c : {&ic1, &ic2, &lc}) {
      ASSERT_EQ(EP_Barrier(*c), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(c), EP_SUCCESS);
    }
  });
}

TEST(IntercommDup, DupOfAnIntercommIsACongruentIntercomm) {
  const Layout lay = ep_comm_test::uneven_layout();
  MatOp mop;
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const int colour = me % 2;
    std::vector<int> a, b;
    for (int r = 0; r < lay.total; ++r) (r % 2 == 0 ? a : b).push_back(r);
    const std::vector<int>& local = colour == 0 ? a : b;
    const std::vector<int>& remote = colour == 0 ? b : a;
    EP_Comm lc = EP_COMM_NULL, ic = EP_COMM_NULL, dup = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, colour, me, &lc), EP_SUCCESS);
    ASSERT_EQ(EP_Intercomm_create(lc, 0, world, remote[0], 82, &ic), EP_SUCCESS);
    int rc = EP_Comm_dup(ic, &dup);
    ASSERT_EQ(rc, EP_SUCCESS) << last_error(rc);
    int result = -1;
    EXPECT_EQ(EP_Comm_compare(ic, dup, &result), EP_SUCCESS);
    EXPECT_EQ(result, EP_CONGRUENT);
    check_inter_queries(dup, local, remote, me, "dup of intercomm");
    check_inter_p2p(dup, local, remote, me, "dup of intercomm");
    check_inter_collectives(dup, local, remote, me, colour == 0, mop, "dup of intercomm");
    for (EP_Comm* c : {&dup, &ic, &lc}) {
      ASSERT_EQ(EP_Barrier(*c), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(c), EP_SUCCESS);
    }
  });
}

}  // namespace
