// EP_Comm_idup, on 1-3 processes with uneven endpoints (3, 1, 2):
//  * on grouped, reversed and interleaved layouts (EP_Comm_split with keys): the new
//    communicator is congruent to its parent, and point-to-point and collectives on it
//    give exact results;
//  * several idups outstanding at once, waited in reverse order or mixed with
//    point-to-point requests in one EP_Waitall; traffic on each new communicator stays
//    on it;
//  * progress without the caller: rank 0 starts its idup, then does not wait on it until
//    every other endpoint has completed its own idup and said so (by a message on the
//    parent, which is in use meanwhile);
//  * intercommunicators (even / odd world ranks, the groups sharing processes): the
//    idup is an intercommunicator with the same groups; point-to-point across it;
//  * the new handle inherits the parent's error handler; NULL arguments fail at every
//    endpoint without hanging anyone.
// Every expectation is computed from world ranks (tests/comm/comm_util.h).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/comm/comm_util.h"
#include "tests/common/harness.h"

namespace {

using ep_comm_test::check_intra_collectives;
using ep_comm_test::check_intra_p2p;
using ep_comm_test::check_intra_queries;
using ep_comm_test::expected_split;
using ep_comm_test::Layout;
using ep_comm_test::MatOp;
using ep_test::last_error;
using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;

[[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(150, 600);

using ep_comm_test::rank_of;

// The layouts: key(world rank) for a split with one colour.
struct Keyed {
  const char* name;
  std::function<int(int)> key;
};
std::vector<Keyed> layouts(int total) {
  return {
      {"grouped", [](int r) { return r; }},
      {"reversed", [total](int r) { return total - r; }},
      // Even world ranks first, then odd: the processes interleave.
      {"interleaved", [total](int r) { return (r % 2) * total + r; }},
  };
}

// A ring on `c` (rank r sends r's world rank + salt to r+1): exact values.
void expect_ring(EP_Comm c, const std::vector<int>& members, int salt, const std::string& what) {
  const int n = static_cast<int>(members.size());
  const int r = rank_of(c);
  int out = members[static_cast<size_t>(r)] * 100 + salt, in = -1;
  ASSERT_EQ(EP_Sendrecv(&out, 1, MPI_INT, (r + 1) % n, 9, &in, 1, MPI_INT, (r + n - 1) % n, 9, c,
                        EP_STATUS_IGNORE),
            EP_SUCCESS)
      << what;
  EXPECT_EQ(in, members[static_cast<size_t>((r + n - 1) % n)] * 100 + salt) << what;
}

TEST(Idup, MakesACongruentCommunicatorOnEveryLayout) {
  const Layout lay = ep_comm_test::uneven_layout();
  MatOp mop;
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = rank_of(world);
    for (const Keyed& k : layouts(lay.total)) {
      const std::string what = k.name;
      EP_Comm parent = EP_COMM_NULL;
      ASSERT_EQ(EP_Comm_split(world, 0, k.key(me), &parent), EP_SUCCESS) << what;
      const std::vector<int> members = expected_split(
          lay.total, [](int) { return 0; }, k.key, 0);
      EP_Comm nc = EP_COMM_NULL;
      EP_Request req = EP_REQUEST_NULL;
      ASSERT_EQ(EP_Comm_idup(parent, &nc, &req), EP_SUCCESS) << what << ": " << last_error(1);
      ASSERT_NE(req, EP_REQUEST_NULL) << what;
      EP_Status st;
      ASSERT_EQ(EP_Wait(&req, &st), EP_SUCCESS) << what;
      EXPECT_EQ(req, EP_REQUEST_NULL) << what;
      ASSERT_NE(nc, EP_COMM_NULL) << what;
      int cmp = -1;
      ASSERT_EQ(EP_Comm_compare(parent, nc, &cmp), EP_SUCCESS);
      EXPECT_EQ(cmp, EP_CONGRUENT) << what;
      check_intra_queries(nc, members, me, lay, what);
      check_intra_p2p(nc, members, me, what);
      check_intra_collectives(nc, members, me, mop, what);
      ASSERT_EQ(EP_Barrier(nc), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_free(&nc), EP_SUCCESS) << what;
      EXPECT_EQ(EP_Comm_free(&parent), EP_SUCCESS) << what;
    }
  });
}

TEST(Idup, SeveralOutstandingWaitedInReverseAndMixedWithPointToPoint) {
  const Layout lay = ep_comm_test::uneven_layout();
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = rank_of(world);
    const int n = lay.total;
    std::vector<int> members(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) members[static_cast<size_t>(r)] = r;
    // Round 1: three idups, waited one by one in reverse order.
    EP_Comm d[3] = {EP_COMM_NULL, EP_COMM_NULL, EP_COMM_NULL};
    EP_Request q[3];
    for (int i = 0; i < 3; ++i) ASSERT_EQ(EP_Comm_idup(world, &d[i], &q[i]), EP_SUCCESS);
    for (int i = 2; i >= 0; --i) ASSERT_EQ(EP_Wait(&q[i], EP_STATUS_IGNORE), EP_SUCCESS);
    // Round 2: idups and a ring's send and receive on world in one EP_Waitall.
    EP_Comm e[2] = {EP_COMM_NULL, EP_COMM_NULL};
    int out = me + 7, in = -1;
    EP_Request mix[4];
    ASSERT_EQ(EP_Irecv(&in, 1, MPI_INT, (me + n - 1) % n, 3, world, &mix[0]), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_idup(world, &e[0], &mix[1]), EP_SUCCESS);
    ASSERT_EQ(EP_Isend(&out, 1, MPI_INT, (me + 1) % n, 3, world, &mix[2]), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_idup(d[1], &e[1], &mix[3]), EP_SUCCESS);
    EP_Status sts[4];
    ASSERT_EQ(EP_Waitall(4, mix, sts), EP_SUCCESS);
    EXPECT_EQ(in, (me + n - 1) % n + 7);
    EXPECT_EQ(sts[0].EP_SOURCE, (me + n - 1) % n);
    // Five distinct communicators, all congruent to world.
    std::vector<EP_Comm> all = {d[0], d[1], d[2], e[0], e[1]};
    for (size_t i = 0; i < all.size(); ++i) {
      ASSERT_NE(all[i], EP_COMM_NULL) << i;
      int cmp = -1;
      EXPECT_EQ(EP_Comm_compare(world, all[i], &cmp), EP_SUCCESS);
      EXPECT_EQ(cmp, EP_CONGRUENT) << i;
      for (size_t j = 0; j < i; ++j) EXPECT_NE(all[i], all[j]);
    }
    // Messages with one tag on every communicator, received in reverse order of the
    // communicators: each arrives on its own.
    std::vector<EP_Request> sends(all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      const int v = me * 10 + static_cast<int>(i);
      ASSERT_EQ(EP_Isend(&v, 1, MPI_INT, (me + 1) % n, 5, all[i], &sends[i]), EP_SUCCESS);
    }
    for (size_t k = all.size(); k-- > 0;) {
      int got = -1;
      ASSERT_EQ(EP_Recv(&got, 1, MPI_INT, (me + n - 1) % n, 5, all[k], EP_STATUS_IGNORE),
                EP_SUCCESS);
      EXPECT_EQ(got, (me + n - 1) % n * 10 + static_cast<int>(k)) << "communicator " << k;
    }
    ASSERT_EQ(EP_Waitall(static_cast<int>(sends.size()), sends.data(), EP_STATUSES_IGNORE),
              EP_SUCCESS);
    for (size_t i = 0; i < all.size(); ++i)
      expect_ring(all[i], members, static_cast<int>(i), "ring");
    ASSERT_EQ(EP_Barrier(world), EP_SUCCESS);
    for (EP_Comm& c : all) EXPECT_EQ(EP_Comm_free(&c), EP_SUCCESS);
  });
}

TEST(Idup, CompletesWhileAnotherEndpointComputes) {
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = rank_of(world);
    int n = 0;
    EP_Comm_size(world, &n);
    EP_Comm nc = EP_COMM_NULL;
    EP_Request req = EP_REQUEST_NULL;
    ASSERT_EQ(EP_Comm_idup(world, &nc, &req), EP_SUCCESS);
    if (me == 0) {
      // Compute outside the library, then hear from every other endpoint that its idup
      // completed - before this one waits on its own request.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      for (int i = 1; i < n; ++i) {
        int who = -1;
        ASSERT_EQ(EP_Recv(&who, 1, MPI_INT, EP_ANY_SOURCE, 77, world, EP_STATUS_IGNORE),
                  EP_SUCCESS);
      }
      ASSERT_EQ(EP_Wait(&req, EP_STATUS_IGNORE), EP_SUCCESS);
    } else {
      ASSERT_EQ(EP_Wait(&req, EP_STATUS_IGNORE), EP_SUCCESS);
      ASSERT_NE(nc, EP_COMM_NULL);
      ASSERT_EQ(EP_Send(&me, 1, MPI_INT, 0, 77, world), EP_SUCCESS);
    }
    int sum = -1;
    ASSERT_EQ(EP_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, nc), EP_SUCCESS);
    EXPECT_EQ(sum, n * (n - 1) / 2);
    EXPECT_EQ(EP_Comm_free(&nc), EP_SUCCESS);
  });
}

TEST(Idup, DuplicatesIntercommunicators) {
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = rank_of(world);
    int n = 0;
    EP_Comm_size(world, &n);
    if (n < 2) return;
    EP_Comm half = EP_COMM_NULL, ic = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, me % 2, me, &half), EP_SUCCESS);
    ASSERT_EQ(EP_Intercomm_create(half, 0, world, me % 2 == 0 ? 1 : 0, 21, &ic), EP_SUCCESS);
    // Local group: world ranks of my parity in order; remote: the other parity.
    std::vector<int> local, remote;
    for (int r = 0; r < n; ++r) (r % 2 == me % 2 ? local : remote).push_back(r);
    EP_Comm x[2] = {EP_COMM_NULL, EP_COMM_NULL};
    EP_Request q[2];
    ASSERT_EQ(EP_Comm_idup(ic, &x[0], &q[0]), EP_SUCCESS) << last_error(EP_ERR_COMM);
    ASSERT_EQ(EP_Comm_idup(ic, &x[1], &q[1]), EP_SUCCESS);
    ASSERT_EQ(EP_Waitall(2, q, EP_STATUSES_IGNORE), EP_SUCCESS);
    for (int k = 0; k < 2; ++k) {
      const std::string what = "idup " + std::to_string(k) + " of the intercommunicator";
      ep_comm_test::check_inter_queries(x[k], local, remote, me, what);
      int cmp = -1;
      EXPECT_EQ(EP_Comm_compare(ic, x[k], &cmp), EP_SUCCESS);
      EXPECT_EQ(cmp, EP_CONGRUENT) << what;
      // Every local rank sends its world rank to every remote rank; received by source.
      const int my = ep_comm_test::index_in(local, me);
      std::vector<EP_Request> s(remote.size());
      for (size_t d = 0; d < remote.size(); ++d) {
        ASSERT_EQ(EP_Isend(&me, 1, MPI_INT, static_cast<int>(d), 40 + k, x[k], &s[d]), EP_SUCCESS);
      }
      for (size_t src = 0; src < remote.size(); ++src) {
        int got = -1;
        ASSERT_EQ(EP_Recv(&got, 1, MPI_INT, static_cast<int>(src), 40 + k, x[k], EP_STATUS_IGNORE),
                  EP_SUCCESS);
        EXPECT_EQ(got, remote[src]) << what;
      }
      ASSERT_EQ(EP_Waitall(static_cast<int>(s.size()), s.data(), EP_STATUSES_IGNORE), EP_SUCCESS);
      int sum = -1;
      ASSERT_EQ(EP_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, x[k]), EP_SUCCESS) << what;
      int expect = 0;
      for (int r : remote) expect += r;
      EXPECT_EQ(sum, expect) << what << " (the other group's sum; local rank " << my << ")";
    }
    ASSERT_EQ(EP_Barrier(world), EP_SUCCESS);
    for (EP_Comm& c : x) EXPECT_EQ(EP_Comm_free(&c), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&ic), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&half), EP_SUCCESS);
  });
}

void count_calls(EP_Comm*, int* code, ...) {
  static thread_local int dummy = 0;
  dummy += *code;
}

TEST(Idup, InheritsTheErrhandlerAndRefusesBadArguments) {
  EP_Errhandler eh = EP_ERRHANDLER_NULL;
  ASSERT_EQ(EP_Comm_create_errhandler(count_calls, &eh), EP_SUCCESS);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = rank_of(world);
    ASSERT_EQ(EP_Comm_set_errhandler(world, eh), EP_SUCCESS);
    EP_Comm nc = EP_COMM_NULL;
    EP_Request req = EP_REQUEST_NULL;
    ASSERT_EQ(EP_Comm_idup(world, &nc, &req), EP_SUCCESS);
    // The parent's handler changes after the call: the new handle keeps the old one.
    ASSERT_EQ(EP_Comm_set_errhandler(world, EP_ERRORS_RETURN), EP_SUCCESS);
    ASSERT_EQ(EP_Wait(&req, EP_STATUS_IGNORE), EP_SUCCESS);
    EP_Errhandler got = EP_ERRHANDLER_NULL;
    ASSERT_EQ(EP_Comm_get_errhandler(nc, &got), EP_SUCCESS);
    EXPECT_EQ(got, eh);
    EXPECT_EQ(EP_Errhandler_free(&got), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_set_errhandler(nc, EP_ERRORS_RETURN), EP_SUCCESS);
    // NULL arguments: every endpoint fails, nobody hangs, world still works.
    EXPECT_EQ(EP_Comm_idup(world, nullptr, &req), EP_ERR_ARG);
    EXPECT_NE(last_error(EP_ERR_ARG).find("EP_Comm_idup"), std::string::npos);
    EXPECT_EQ(EP_Comm_idup(world, &nc, nullptr), EP_ERR_ARG);
    EXPECT_EQ(EP_Comm_idup(EP_COMM_NULL, &nc, &req), EP_ERR_COMM);
    int sum = -1;
    ASSERT_EQ(EP_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, nc), EP_SUCCESS);
    int n = 0;
    EP_Comm_size(world, &n);
    EXPECT_EQ(sum, n * (n - 1) / 2);
    ASSERT_EQ(EP_Barrier(nc), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&nc), EP_SUCCESS);
  });
  EXPECT_EQ(EP_Errhandler_free(&eh), EP_SUCCESS);
}

}  // namespace
