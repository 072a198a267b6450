// Bad arguments of the communicator calls return clear errors (EP_ERRORS_RETURN) instead of
// hanging, and the communicators stay usable afterwards:
//  * null communicators: EP_Comm_split, EP_Intercomm_create, EP_Intercomm_merge,
//    EP_Comm_remote_size, EP_Barrier, EP_Bcast, EP_Allreduce -> EP_ERR_COMM;
//  * EP_Comm_remote_size and EP_Intercomm_merge on an intracommunicator -> EP_ERR_COMM;
//  * intracomm EP_Bcast with EP_ROOT / EP_PROC_NULL / out-of-range roots -> EP_ERR_ROOT;
//    EP_Allreduce with MPI_OP_NULL -> EP_ERR_OP; negative counts -> EP_ERR_COUNT;
//  * the same on an intercommunicator (invalid root on both sides, null op);
//  * EP_Intercomm_create: local_leader out of range at every endpoint (EP_ERR_RANK,
//    detected locally), remote_leader out of range at the leader (EP_ERR_RANK), null
//    peer_comm at the leader (EP_ERR_COMM) - each with all participants seeing the error;
//  * overlapping endpoint groups (the same group on both sides; two different
//    communicators over overlapping endpoints): every participant gets an error (any
//    code), nobody hangs, and the parent communicator still works.
// The overlap tests come last: if the runtime hangs there, the earlier results are in the
// log.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/comm/comm_util.h"
#include "tests/common/harness.h"

namespace {

using ep_comm_test::check_intra_p2p;
using ep_comm_test::index_in;
using ep_comm_test::Layout;
using ep_test::last_error;
using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;

int my_world_rank(EP_Comm world) {
  int r = -1;
  EP_Comm_rank(world, &r);
  return r;
}

bool mentions(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// Allreduce of world ranks on `comm` still gives the right sum: the comm is usable.
void expect_usable(EP_Comm comm, const std::vector<int>& members, int me, const std::string& what) {
  int s = me, r = -1;
  ASSERT_EQ(EP_Allreduce(&s, &r, 1, MPI_INT, MPI_SUM, comm), EP_SUCCESS) << what;
  int e = 0;
  for (int m : members) e += m;
  EXPECT_EQ(r, e) << what;
}

std::vector<int> iota_vec(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

TEST(CommErrors, NullCommunicatorIsErrComm) {
  EP_Comm nc = reinterpret_cast<EP_Comm>(0x1);
  EXPECT_EQ(EP_Comm_split(EP_COMM_NULL, 0, 0, &nc), EP_ERR_COMM);
  EXPECT_TRUE(mentions(last_error(EP_ERR_COMM), "EP_Comm_split")) << last_error(EP_ERR_COMM);
  EXPECT_EQ(EP_Intercomm_create(EP_COMM_NULL, 0, EP_COMM_NULL, 0, 1, &nc), EP_ERR_COMM);
  EXPECT_TRUE(mentions(last_error(EP_ERR_COMM), "EP_Intercomm_create")) << last_error(EP_ERR_COMM);
  EXPECT_EQ(EP_Intercomm_merge(EP_COMM_NULL, 0, &nc), EP_ERR_COMM);
  int n = -1;
  EXPECT_EQ(EP_Comm_remote_size(EP_COMM_NULL, &n), EP_ERR_COMM);
  EXPECT_EQ(EP_Comm_test_inter(EP_COMM_NULL, &n), EP_ERR_COMM);
  EXPECT_EQ(EP_Barrier(EP_COMM_NULL), EP_ERR_COMM);
  EXPECT_EQ(EP_Bcast(&n, 1, MPI_INT, 0, EP_COMM_NULL), EP_ERR_COMM);
  int r = 0;
  EXPECT_EQ(EP_Allreduce(&n, &r, 1, MPI_INT, MPI_SUM, EP_COMM_NULL), EP_ERR_COMM);
  EP_Comm freed = EP_COMM_NULL;
  EXPECT_EQ(EP_Comm_dup(EP_COMM_NULL, &freed), EP_ERR_COMM);
}

TEST(CommErrors, IntercommQueriesOnAnIntracommAreErrComm) {
  const Layout lay = ep_comm_test::uneven_layout();
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    int n = -1;
    EXPECT_EQ(EP_Comm_remote_size(world, &n), EP_ERR_COMM);
    std::string s = last_error(EP_ERR_COMM);
    EXPECT_TRUE(mentions(s, "EP_Comm_remote_size")) << s;
    EP_Comm m = EP_COMM_NULL;
    EXPECT_EQ(EP_Intercomm_merge(world, 0, &m), EP_ERR_COMM);
    EXPECT_EQ(m, EP_COMM_NULL);
    // And on a split result.
    EP_Comm sc = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, me % 2, 0, &sc), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_remote_size(sc, &n), EP_ERR_COMM);
    expect_usable(world, iota_vec(lay.total), me, "world after the errors");
    ASSERT_EQ(EP_Barrier(sc), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&sc), EP_SUCCESS);
  });
}

TEST(CommErrors, NegativeColourFailsEverywhereWithoutHanging) {
  // MPI: colour must be non-negative or EP_UNDEFINED.  First every endpoint passes a bad
  // colour, then only the last world endpoint does; in both rounds nobody may hang and
  // nobody may get a communicator.  (libep: the exchange still runs and every endpoint
  // returns EP_ERR_ARG.)
  const Layout lay = ep_comm_test::uneven_layout();
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    for (int round = 0; round < 2; ++round) {
      const bool bad = round == 0 || me == lay.total - 1;
      EP_Comm nc = EP_COMM_NULL;
      int rc = EP_Comm_split(world, bad ? -5 : 1, 0, &nc);
      EXPECT_EQ(rc, EP_ERR_ARG) << "round " << round << ", world endpoint " << me;
      if (rc == EP_SUCCESS && nc != EP_COMM_NULL) EP_Comm_free(&nc);
    }
    expect_usable(world, iota_vec(lay.total), me, "world after bad colours");
  });
}

TEST(CollectiveErrors, IntracommBadRootOpCountAreReportedEverywhere) {
  const Layout lay = ep_comm_test::uneven_layout();
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    int buf[2] = {me, me};
    int out[2] = {-1, -1};
    // Every endpoint passes the same bad argument, so every endpoint must report it.
    EXPECT_EQ(EP_Bcast(buf, 2, MPI_INT, EP_ROOT, world), EP_ERR_ROOT);
    std::string s = last_error(EP_ERR_ROOT);
    EXPECT_TRUE(mentions(s, "EP_Bcast")) << s;
    EXPECT_EQ(EP_Bcast(buf, 2, MPI_INT, EP_PROC_NULL, world), EP_ERR_ROOT);
    EXPECT_EQ(EP_Bcast(buf, 2, MPI_INT, lay.total, world), EP_ERR_ROOT);
    EXPECT_EQ(EP_Bcast(buf, 2, MPI_INT, -5, world), EP_ERR_ROOT);
    EXPECT_EQ(EP_Bcast(buf, -1, MPI_INT, 0, world), EP_ERR_COUNT);
    EXPECT_EQ(EP_Allreduce(buf, out, 2, MPI_INT, MPI_OP_NULL, world), EP_ERR_OP);
    s = last_error(EP_ERR_OP);
    EXPECT_TRUE(mentions(s, "EP_Allreduce")) << s;
    EXPECT_EQ(EP_Allreduce(buf, out, -3, MPI_INT, MPI_SUM, world), EP_ERR_COUNT);
    EXPECT_EQ(buf[0], me) << "a failed collective wrote the buffer";
    EXPECT_EQ(out[0], -1) << "a failed collective wrote the buffer";
    // Still usable afterwards.
    expect_usable(world, iota_vec(lay.total), me, "world after collective errors");
    int b = me == 0 ? 42 : -1;
    ASSERT_EQ(EP_Bcast(&b, 1, MPI_INT, 0, world), EP_SUCCESS);
    EXPECT_EQ(b, 42);
  });
}

// Splits world into A (even) and B (odd); each group's leader is its rank 0.
struct TwoGroups {
  std::vector<int> a, b;
  explicit TwoGroups(int total) {
    for (int r = 0; r < total; ++r) (r % 2 == 0 ? a : b).push_back(r);
  }
};

TEST(IntercommErrors, LocalLeaderOutOfRangeAtEveryEndpointIsErrRank) {
  const Layout lay = ep_comm_test::uneven_layout();
  const TwoGroups g(lay.total);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const bool in_a = me % 2 == 0;
    const std::vector<int>& local = in_a ? g.a : g.b;
    const std::vector<int>& remote = in_a ? g.b : g.a;
    EP_Comm lc = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, me % 2, me, &lc), EP_SUCCESS);
    const int lsize = static_cast<int>(local.size());
    // Only one group calls at a time: the error must be found without any peer.
    for (int turn = 0; turn < 2; ++turn) {
      if (in_a != (turn == 0)) continue;
      for (int bad : {lsize, lsize + 7, -1, -100}) {
        EP_Comm ic = EP_COMM_NULL;
        EXPECT_EQ(EP_Intercomm_create(lc, bad, world, remote[0], 200, &ic), EP_ERR_RANK)
            << "local_leader " << bad;
        std::string s = last_error(EP_ERR_RANK);
        EXPECT_TRUE(mentions(s, "EP_Intercomm_create")) << s;
        EXPECT_TRUE(mentions(s, "local_leader")) << s;
        EXPECT_EQ(ic, EP_COMM_NULL);
      }
    }
    // The same groups then make a working intercommunicator.
    EP_Comm ic = EP_COMM_NULL;
    ASSERT_EQ(EP_Intercomm_create(lc, 0, world, remote[0], 201, &ic), EP_SUCCESS);
    ep_comm_test::check_inter_queries(ic, local, remote, me, "after local_leader errors");
    ep_comm_test::check_inter_p2p(ic, local, remote, me, "after local_leader errors");
    ASSERT_EQ(EP_Barrier(ic), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&ic), EP_SUCCESS);
    ASSERT_EQ(EP_Barrier(lc), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&lc), EP_SUCCESS);
  });
}

// Two one-endpoint groups: world endpoint 0 and the last world endpoint (every other
// endpoint passes EP_UNDEFINED and does not take part), so the leader is the whole group
// and an error at the leader is seen by every participant.
TEST(IntercommErrors, RemoteLeaderOutOfRangeOrNullPeerAtTheLeader) {
  const Layout lay = ep_comm_test::uneven_layout();
  const int last = lay.total - 1;
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const int colour = me == 0 ? 0 : me == last ? 1 : EP_UNDEFINED;
    EP_Comm lc = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, colour, 0, &lc), EP_SUCCESS);
    if (colour != EP_UNDEFINED) {
      const int other = me == 0 ? last : 0;
      for (int bad : {lay.total, lay.total + 3, -7}) {
        EP_Comm ic = EP_COMM_NULL;
        EXPECT_EQ(EP_Intercomm_create(lc, 0, world, bad, 300, &ic), EP_ERR_RANK)
            << "remote_leader " << bad;
        std::string s = last_error(EP_ERR_RANK);
        EXPECT_TRUE(mentions(s, "EP_Intercomm_create")) << s;
        EXPECT_TRUE(mentions(s, "remote_leader")) << s;
      }
      EP_Comm ic = EP_COMM_NULL;
      EXPECT_EQ(EP_Intercomm_create(lc, 0, EP_COMM_NULL, other, 301, &ic), EP_ERR_COMM);
      std::string s = last_error(EP_ERR_COMM);
      EXPECT_TRUE(mentions(s, "EP_Intercomm_create")) << s;
      EXPECT_TRUE(mentions(s, "peer_comm")) << s;
      // Then a correct call works between the two one-endpoint groups.
      ASSERT_EQ(EP_Intercomm_create(lc, 0, world, other, 302, &ic), EP_SUCCESS);
      ep_comm_test::check_inter_queries(ic, {me}, {other}, me, "singletons");
      ep_comm_test::check_inter_p2p(ic, {me}, {other}, me, "singletons");
      ASSERT_EQ(EP_Barrier(ic), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(&ic), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(&lc), EP_SUCCESS);
    } else {
      EXPECT_EQ(lc, EP_COMM_NULL);
    }
    expect_usable(world, iota_vec(lay.total), me, "world afterwards");
  });
}

TEST(IntercommErrors, CollectiveErrorsOnAnIntercomm) {
  const Layout lay = ep_comm_test::uneven_layout();
  const TwoGroups g(lay.total);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    const bool in_a = me % 2 == 0;
    const std::vector<int>& local = in_a ? g.a : g.b;
    const std::vector<int>& remote = in_a ? g.b : g.a;
    EP_Comm lc = EP_COMM_NULL, ic = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, me % 2, me, &lc), EP_SUCCESS);
    ASSERT_EQ(EP_Intercomm_create(lc, 0, world, remote[0], 400, &ic), EP_SUCCESS);
    int buf = me, out = -1;
    // A would be the root group but passes an invalid root everywhere; B passes a root
    // outside the remote group.  Everyone sees EP_ERR_ROOT.
    const int root = in_a ? -7 : static_cast<int>(remote.size());
    EXPECT_EQ(EP_Bcast(&buf, 1, MPI_INT, root, ic), EP_ERR_ROOT);
    EXPECT_EQ(EP_Allreduce(&buf, &out, 1, MPI_INT, MPI_OP_NULL, ic), EP_ERR_OP);
    EXPECT_EQ(EP_Allreduce(&buf, &out, -1, MPI_INT, MPI_SUM, ic), EP_ERR_COUNT);
    EXPECT_EQ(out, -1);
    // Still usable: the other group's sum.
    expect_usable(ic, remote, me, "intercomm after errors");
    (void)local;
    ASSERT_EQ(EP_Barrier(ic), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&ic), EP_SUCCESS);
    ASSERT_EQ(EP_Barrier(lc), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&lc), EP_SUCCESS);
  });
}

// ---- Overlapping groups (last: a runtime hang here leaves the results above) ----------

TEST(IntercommErrorsOverlap, TheSameGroupOnBothSidesFailsEverywhere) {
  // Every endpoint of world calls with local_comm = world, leader 0, remote leader = world
  // rank 0 itself: the remote group is the local group.
  const Layout lay = ep_comm_test::uneven_layout();
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    EP_Comm ic = EP_COMM_NULL;
    int rc = EP_Intercomm_create(world, 0, world, 0, 500, &ic);
    EXPECT_NE(rc, EP_SUCCESS) << "overlapping groups accepted at world endpoint " << me;
    if (me == 0) std::printf("same group on both sides: %s\n", last_error(rc).c_str());
    if (rc == EP_SUCCESS) {
      EP_Comm_free(&ic);
    } else {
      EXPECT_EQ(ic, EP_COMM_NULL);
    }
    expect_usable(world, iota_vec(lay.total), me, "world after the overlap error");
    check_intra_p2p(world, iota_vec(lay.total), me, "world after the overlap error", 600);
  });
}

TEST(IntercommErrorsOverlap, TwoOverlappingGroupsFailEverywhere) {
  // 2 endpoints per process.  Group A: the even world endpoints (a split of world); group
  // D: ALL world endpoints (a dup of world, used on a second thread per endpoint).  A's
  // leader is world endpoint 0, D's leader is world endpoint 1 (rank 1 in D); they meet on
  // world.  A and D overlap in every even endpoint: both groups must get an error.
  const Layout lay = ep_comm_test::fixed_layout(2);
  run_endpoints(2, [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    EP_Comm a = EP_COMM_NULL, d = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, me % 2 == 0 ? 0 : EP_UNDEFINED, me, &a), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_dup(world, &d), EP_SUCCESS);
    int rc_a = EP_SUCCESS, rc_d = EP_SUCCESS;
    EP_Comm ic_a = EP_COMM_NULL, ic_d = EP_COMM_NULL;
    std::thread ta;
    if (a != EP_COMM_NULL) {
      // world is used by this thread only at endpoint 0 (A's leader); endpoint 0's D call
      // below gets EP_COMM_NULL as peer_comm (not significant at non-leaders).
      ta = std::thread([&] { rc_a = EP_Intercomm_create(a, 0, me == 0 ? world : EP_COMM_NULL, 1, 700, &ic_a); });
    }
    rc_d = EP_Intercomm_create(d, 1, me == 1 ? world : EP_COMM_NULL, 0, 700, &ic_d);
    if (ta.joinable()) ta.join();
    if (me == 0) std::printf("overlap, A side: %s\n", last_error(rc_a).c_str());
    if (me == 1) std::printf("overlap, D side: %s\n", last_error(rc_d).c_str());
    EXPECT_NE(rc_d, EP_SUCCESS) << "overlapping groups accepted (D side) at world endpoint " << me;
    if (a != EP_COMM_NULL) {
      EXPECT_NE(rc_a, EP_SUCCESS) << "overlapping groups accepted (A side) at world endpoint " << me;
    }
    if (rc_a == EP_SUCCESS && ic_a != EP_COMM_NULL) EP_Comm_free(&ic_a);
    if (rc_d == EP_SUCCESS && ic_d != EP_COMM_NULL) EP_Comm_free(&ic_d);
    // Everything still works.
    expect_usable(d, ep_comm_test::expected_split(lay.total, [](int) { return 0; },
                                                  [](int r) { return r; }, 0),
                  me, "dup after the overlap error");
    check_intra_p2p(world, iota_vec(lay.total), me, "world after the overlap error", 610);
    ASSERT_EQ(EP_Barrier(d), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&d), EP_SUCCESS);
    if (a != EP_COMM_NULL) {
      ASSERT_EQ(EP_Barrier(a), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(&a), EP_SUCCESS);
    }
  });
}

}  // namespace
