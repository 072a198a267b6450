// EP_Comm_idup under stress (tag "stress": CI runs it under TSAN too), on 1-3
// processes with uneven endpoints.  Seeded (the seed is printed; LIBEP_STRESS_SEED=<n>
// replays a run).  Each round, every endpoint:
//  * starts 1-3 idups of world or of a split of it (a random key order: grouped,
//    reversed or interleaved layouts), with blocking dups, collectives and
//    point-to-point on the parents while they are outstanding;
//  * completes them in its own random order (EP_Wait, EP_Test loops, or one EP_Waitall
//    with a point-to-point receive mixed in);
//  * checks every new communicator exactly: its rank, an allreduce of world ranks, a
//    ring; then frees it (some before, some after their parent).
// The collective sequence is drawn from the shared seed (every endpoint makes the same
// calls in the same order); the completion order from a per-endpoint stream.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/comm/comm_util.h"
#include "tests/common/harness.h"

namespace {

using ep_comm_test::expected_split;
using ep_comm_test::index_in;
using ep_comm_test::Layout;
using ep_test::last_error;
using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;

[[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(240, 900);

using ep_comm_test::rank_of;

// Exact checks on a communicator whose rank r is world endpoint members[r].
void check_comm(EP_Comm c, const std::vector<int>& members, int me, const std::string& what) {
  const int n = static_cast<int>(members.size());
  const int r = rank_of(c);
  ASSERT_EQ(r, index_in(members, me)) << what;
  int sum = -1, expect = 0;
  for (int m : members) expect += m;
  ASSERT_EQ(EP_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c), EP_SUCCESS) << what;
  EXPECT_EQ(sum, expect) << what;
  int in = -1;
  ASSERT_EQ(EP_Sendrecv(&me, 1, MPI_INT, (r + 1) % n, 8, &in, 1, MPI_INT, (r + n - 1) % n, 8, c,
                        EP_STATUS_IGNORE),
            EP_SUCCESS)
      << what;
  EXPECT_EQ(in, members[static_cast<size_t>((r + n - 1) % n)]) << what;
}

struct Pending {
  EP_Comm made = EP_COMM_NULL;
  EP_Request req = EP_REQUEST_NULL;
};

// Completes the idups of `p` and the receive *rr in this endpoint's own random order:
// EP_Wait in reverse, EP_Test then EP_Wait, or one EP_Waitall with the receive anywhere.
void complete_all(std::vector<Pending>& p, EP_Request* rr, std::mt19937_64& own,
                  const std::string& what) {
  const int k = static_cast<int>(p.size());
  switch (own() % 3) {
    case 0:
      for (int i = k - 1; i >= 0; --i) ASSERT_EQ(EP_Wait(&p[i].req, EP_STATUS_IGNORE), EP_SUCCESS);
      ASSERT_EQ(EP_Wait(rr, EP_STATUS_IGNORE), EP_SUCCESS);
      break;
    case 1:
      for (int i = 0; i < k; ++i) {
        int flag = 0;
        ASSERT_EQ(EP_Test(&p[i].req, &flag, EP_STATUS_IGNORE), EP_SUCCESS);
        if (flag == 0) ASSERT_EQ(EP_Wait(&p[i].req, EP_STATUS_IGNORE), EP_SUCCESS);
        EXPECT_EQ(p[i].req, EP_REQUEST_NULL);
      }
      ASSERT_EQ(EP_Wait(rr, EP_STATUS_IGNORE), EP_SUCCESS);
      break;
    default: {
      std::vector<EP_Request> reqs;
      for (int i = 0; i < k; ++i) reqs.push_back(p[i].req);
      reqs.insert(reqs.begin() + static_cast<long>(own() % (k + 1)), *rr);
      ASSERT_EQ(EP_Waitall(static_cast<int>(reqs.size()), reqs.data(), EP_STATUSES_IGNORE),
                EP_SUCCESS)
          << what;
      for (int i = 0; i < k; ++i) p[i].req = EP_REQUEST_NULL;
      *rr = EP_REQUEST_NULL;
      break;
    }
  }
}

void stress_endpoint(EP_Comm world, uint64_t seed, int rounds, const Layout& lay) {
  const int me = rank_of(world);
  const int n = lay.total;
  std::mt19937_64 shared(seed);               // same on every endpoint
  std::mt19937_64 own(seed * 7919 + me + 1);  // this endpoint's
  std::vector<int> all(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) all[static_cast<size_t>(r)] = r;
  for (int round = 0; round < rounds; ++round) {
    const std::string what = "round " + std::to_string(round) + " seed " + std::to_string(seed);
    // A parent: world, or a split with a random key order.
    const int layout = static_cast<int>(shared() % 4);
    auto key = [&](int r) {
      return layout == 1 ? n - r : layout == 2 ? (r % 2) * n + r : layout == 3 ? (r * 5) % n : r;
    };
    EP_Comm parent = world;
    std::vector<int> members = all;
    if (layout != 0) {
      ASSERT_EQ(EP_Comm_split(world, 0, key(me), &parent), EP_SUCCESS) << what;
      members = expected_split(
          n, [](int) { return 0; }, key, 0);
    }
    const int k = 1 + static_cast<int>(shared() % 3);
    std::vector<Pending> p(static_cast<size_t>(k));
    for (int i = 0; i < k; ++i) {
      ASSERT_EQ(EP_Comm_idup(parent, &p[i].made, &p[i].req), EP_SUCCESS) << what;
      // Other work on the parent and on world while the idups are outstanding.
      switch (shared() % 3) {
        case 0: {
          EP_Comm d = EP_COMM_NULL;
          ASSERT_EQ(EP_Comm_dup(parent, &d), EP_SUCCESS) << what;
          check_comm(d, members, me, what + " blocking dup");
          ASSERT_EQ(EP_Comm_free(&d), EP_SUCCESS);
          break;
        }
        case 1:
          check_comm(parent, members, me, what + " parent");
          break;
        default:
          ASSERT_EQ(EP_Barrier(world), EP_SUCCESS) << what;
          break;
      }
    }
    // A message from the left neighbour on world, received with the completions.
    int in = -1;
    EP_Request sr = EP_REQUEST_NULL, rr = EP_REQUEST_NULL;
    ASSERT_EQ(EP_Isend(&me, 1, MPI_INT, (me + 1) % n, 1000 + round % 1000, world, &sr), EP_SUCCESS);
    ASSERT_EQ(EP_Irecv(&in, 1, MPI_INT, (me + n - 1) % n, 1000 + round % 1000, world, &rr),
              EP_SUCCESS);
    complete_all(p, &rr, own, what);
    ASSERT_EQ(EP_Wait(&sr, EP_STATUS_IGNORE), EP_SUCCESS);
    EXPECT_EQ(in, (me + n - 1) % n) << what;
    for (int i = 0; i < k; ++i) {
      ASSERT_NE(p[i].made, EP_COMM_NULL) << what;
      check_comm(p[i].made, members, me, what + " idup " + std::to_string(i));
    }
    for (int i = 0; i < k; ++i) {
      for (int j = 0; j < i; ++j) EXPECT_NE(p[i].made, p[j].made) << what;
    }
    ASSERT_EQ(EP_Barrier(world), EP_SUCCESS);
    const bool parent_first = shared() % 2 == 0;
    if (parent_first && parent != world) ASSERT_EQ(EP_Comm_free(&parent), EP_SUCCESS);
    for (int i = 0; i < k; ++i) ASSERT_EQ(EP_Comm_free(&p[i].made), EP_SUCCESS);
    if (!parent_first && parent != world) ASSERT_EQ(EP_Comm_free(&parent), EP_SUCCESS);
  }
}

TEST(IdupStress, ManyOutstandingIdupsWithTrafficAndRandomCompletionOrder) {
  uint64_t seed = ep_test::stress_seed("idup_stress_test");
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  const int rounds = ep_test::scaled(120);
  const Layout lay = ep_comm_test::uneven_layout();
  run_endpoints(uneven(world_rank()),
                [&](EP_Comm world, int) { stress_endpoint(world, seed, rounds, lay); });
}

}  // namespace
