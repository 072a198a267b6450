// Endpoints communicators: creation (rank order, uneven and zero counts), the query
// calls, dup, compare, groups, tag_ub, test_inter, error handlers and free.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/harness.h"

namespace {

using ep_test::last_error;
using ep_test::uneven;
using ep_test::world_rank;
using ep_test::world_size;

std::vector<int> allgather_counts(int mine) {
  std::vector<int> all(static_cast<size_t>(world_size()));
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  return all;
}

// Creates `n` endpoints here (collective), sets EP_ERRORS_RETURN on each, returns them.
// No barrier afterwards: a message may be sent the moment creation returns
// (CreateEndpoints.MessageSentRightAfterCreationIsDelivered).
std::vector<EP_Comm> create(int n) {
  std::vector<EP_Comm> comms(static_cast<size_t>(n > 0 ? n : 1), EP_COMM_NULL);
  int rc = EP_Comm_create_endpoints(MPI_COMM_WORLD, n, MPI_INFO_NULL, comms.data());
  EXPECT_EQ(rc, EP_SUCCESS) << last_error(rc);
  comms.resize(static_cast<size_t>(n));
  for (EP_Comm c : comms) EXPECT_EQ(EP_Comm_set_errhandler(c, EP_ERRORS_RETURN), EP_SUCCESS);
  return comms;
}

// Runs fn(i) on one thread per local endpoint.
void on_threads(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) ts.emplace_back([&, i] { fn(i); });
  for (auto& t : ts) t.join();
}

void free_all(std::vector<EP_Comm>& comms) {
  for (EP_Comm& c : comms) {
    EXPECT_EQ(EP_Comm_free(&c), EP_SUCCESS);
    EXPECT_EQ(c, EP_COMM_NULL);
  }
}

// Every endpoint sends (world rank, index) to every endpoint; each receiver checks that
// the message from rank r came from the process and index that rank r must be.
void check_identities_by_p2p(const std::vector<EP_Comm>& comms, const std::vector<int>& counts) {
  std::vector<int> first(counts.size() + 1, 0);  // first rank of each process
  std::partial_sum(counts.begin(), counts.end(), first.begin() + 1);
  const int total = first.back();
  on_threads(static_cast<int>(comms.size()), [&](int i) {
    EP_Comm comm = comms[i];
    int rank = -1;
    EP_Comm_rank(comm, &rank);
    int me[2] = {world_rank(), i};
    std::vector<EP_Request> sends(total);
    for (int d = 0; d < total; ++d) {
      ASSERT_EQ(EP_Isend(me, 2, MPI_INT, d, 40, comm, &sends[d]), EP_SUCCESS);
    }
    for (int k = 0; k < total; ++k) {
      int who[2] = {-1, -1};
      EP_Status st;
      ASSERT_EQ(EP_Recv(who, 2, MPI_INT, EP_ANY_SOURCE, 40, comm, &st), EP_SUCCESS);
      int r = st.EP_SOURCE;
      ASSERT_GE(r, 0);
      ASSERT_LT(r, total);
      EXPECT_GE(r, first[who[0]]) << "rank " << r << " lives in process " << who[0];
      EXPECT_LT(r, first[who[0] + 1]) << "rank " << r << " lives in process " << who[0];
      EXPECT_EQ(r - first[who[0]], who[1]) << "rank " << r << " is index " << who[1];
    }
    ASSERT_EQ(EP_Waitall(total, sends.data(), EP_STATUSES_IGNORE), EP_SUCCESS);
  });
}

void check_queries(const std::vector<EP_Comm>& comms, const std::vector<int>& counts) {
  const int total = std::accumulate(counts.begin(), counts.end(), 0);
  const int base = std::accumulate(counts.begin(), counts.begin() + world_rank(), 0);
  for (size_t i = 0; i < comms.size(); ++i) {
    int rank = -1, size = -1, lrank = -1, lsize = -1;
    ASSERT_EQ(EP_Comm_rank(comms[i], &rank), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_size(comms[i], &size), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_local_rank(comms[i], &lrank), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_local_size(comms[i], &lsize), EP_SUCCESS);
    EXPECT_EQ(rank, base + static_cast<int>(i));
    EXPECT_EQ(size, total);
    EXPECT_EQ(lrank, static_cast<int>(i));
    EXPECT_EQ(lsize, static_cast<int>(comms.size()));
  }
}

TEST(CreateEndpoints, RanksAreOrderedByProcessThenIndex) {
  const int mine = uneven(world_rank());
  std::vector<int> counts = allgather_counts(mine);
  std::vector<EP_Comm> comms = create(mine);
  check_queries(comms, counts);
  check_identities_by_p2p(comms, counts);
  free_all(comms);
}

TEST(CreateEndpoints, ZeroEndpointsOnSomeProcessIsAllowed) {
  static const int pattern[] = {2, 0, 1};
  const int mine = pattern[world_rank() % 3];
  std::vector<int> counts = allgather_counts(mine);
  EP_Comm untouched = reinterpret_cast<EP_Comm>(0x1);
  if (mine == 0) {
    // No handle is written for a process without endpoints.
    EXPECT_EQ(EP_Comm_create_endpoints(MPI_COMM_WORLD, 0, MPI_INFO_NULL, &untouched), EP_SUCCESS);
    EXPECT_EQ(untouched, reinterpret_cast<EP_Comm>(0x1));
    return;
  }
  std::vector<EP_Comm> comms = create(mine);
  check_queries(comms, counts);
  check_identities_by_p2p(comms, counts);
  free_all(comms);
}

TEST(CreateEndpoints, SeveralCommunicatorsCoexistAndKeepTheirOwnRanks) {
  const int a_n = uneven(world_rank()), b_n = uneven(world_rank() + 1);
  std::vector<int> a_counts = allgather_counts(a_n), b_counts = allgather_counts(b_n);
  std::vector<EP_Comm> a = create(a_n);
  std::vector<EP_Comm> b = create(b_n);
  check_queries(a, a_counts);
  check_queries(b, b_counts);
  check_identities_by_p2p(b, b_counts);
  check_identities_by_p2p(a, a_counts);
  free_all(b);
  free_all(a);
}

// Every endpoint sends to every endpoint right after `comms` came into existence and
// waits at most `seconds` for its messages.  Returns false (everywhere) if any message
// did not arrive; then the receives are cancelled so that the test can go on.
bool all_to_all_arrives(const std::vector<EP_Comm>& comms, double seconds) {
  std::atomic<int> lost{0};
  on_threads(static_cast<int>(comms.size()), [&](int i) {
    EP_Comm comm = comms[i];
    int rank = -1, size = -1;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    std::vector<int> in(size, -1);
    std::vector<EP_Request> recvs(size), sends(size);
    for (int s = 0; s < size; ++s) {
      ASSERT_EQ(EP_Irecv(&in[s], 1, MPI_INT, s, 41, comm, &recvs[s]), EP_SUCCESS);
    }
    for (int d = 0; d < size; ++d) {
      ASSERT_EQ(EP_Isend(&rank, 1, MPI_INT, d, 41, comm, &sends[d]), EP_SUCCESS);
    }
    double deadline = EP_Wtime() + seconds;
    int flag = 0;
    while (EP_Testall(size, recvs.data(), &flag, EP_STATUSES_IGNORE) == EP_SUCCESS && !flag &&
           EP_Wtime() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!flag) {
      for (int s = 0; s < size; ++s) {
        int done = 0;
        EP_Test(&recvs[s], &done, EP_STATUS_IGNORE);
        if (done) continue;
        ADD_FAILURE() << "endpoint " << rank << ": the message from " << s
                      << " sent right after creation never arrived";
        EP_Cancel(&recvs[s]);
        EP_Wait(&recvs[s], EP_STATUS_IGNORE);
      }
      lost.fetch_add(1);
    } else {
      for (int s = 0; s < size; ++s) EXPECT_EQ(in[s], s);
    }
    EXPECT_EQ(EP_Waitall(size, sends.data(), EP_STATUSES_IGNORE), EP_SUCCESS);
  });
  int mine = lost.load(), any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any == 0;
}

// A message sent as soon as EP_Comm_create_endpoints returned must be delivered, even
// if its destination process has not returned from the creation yet (MPI: the new
// communicator is usable when the call returns).  Repeated: the window is short.
TEST(CreateEndpoints, MessageSentRightAfterCreationIsDelivered) {
  const int kRounds = ep_test::scaled(200);
  for (int round = 0; round < kRounds; ++round) {
    std::vector<EP_Comm> comms = create(uneven(world_rank()));
    bool ok = all_to_all_arrives(comms, 5.0);
    MPI_Barrier(MPI_COMM_WORLD);  // nobody frees while a peer still sends
    free_all(comms);
    ASSERT_TRUE(ok) << "a message was lost in round " << round;
  }
}

// The same for EP_Comm_dup.
TEST(CommDup, MessageSentRightAfterDupIsDelivered) {
  const int kRounds = ep_test::scaled(200);
  const int mine = uneven(world_rank());
  std::vector<EP_Comm> comms = create(mine);
  for (int round = 0; round < kRounds; ++round) {
    std::vector<EP_Comm> dups(mine, EP_COMM_NULL);
    on_threads(mine, [&](int i) { ASSERT_EQ(EP_Comm_dup(comms[i], &dups[i]), EP_SUCCESS); });
    for (EP_Comm d : dups) EP_Comm_set_errhandler(d, EP_ERRORS_RETURN);
    bool ok = all_to_all_arrives(dups, 5.0);
    MPI_Barrier(MPI_COMM_WORLD);
    free_all(dups);
    ASSERT_TRUE(ok) << "a message was lost in round " << round;
  }
  free_all(comms);
}

TEST(CommDup, DupHasSameRanksAndItsMessagesDoNotMatchTheOriginal) {
  const int mine = uneven(world_rank());
  std::vector<EP_Comm> comms = create(mine);
  on_threads(mine, [&](int i) {
    EP_Comm comm = comms[i];
    EP_Comm dup = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(comm, &dup), EP_SUCCESS);
    ASSERT_NE(dup, EP_COMM_NULL);
    ASSERT_NE(dup, comm);
    int rank = -1, size = -1, drank = -1, dsize = -1, dl = -1, dls = -1;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    EXPECT_EQ(EP_Comm_rank(dup, &drank), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_size(dup, &dsize), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_local_rank(dup, &dl), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_local_size(dup, &dls), EP_SUCCESS);
    EXPECT_EQ(drank, rank);
    EXPECT_EQ(dsize, size);
    EXPECT_EQ(dl, i);
    EXPECT_EQ(dls, mine);
    int result = -1;
    EXPECT_EQ(EP_Comm_compare(comm, dup, &result), EP_SUCCESS);
    EXPECT_EQ(result, EP_CONGRUENT);
    EXPECT_EQ(EP_Comm_compare(dup, comm, &result), EP_SUCCESS);
    EXPECT_EQ(result, EP_CONGRUENT);
    EXPECT_EQ(EP_Comm_compare(dup, dup, &result), EP_SUCCESS);
    EXPECT_EQ(result, EP_IDENT);
    EP_Errhandler eh = EP_ERRORS_ARE_FATAL;
    EXPECT_EQ(EP_Comm_get_errhandler(dup, &eh), EP_SUCCESS);
    EXPECT_EQ(eh, EP_ERRORS_RETURN) << "a dup inherits its parent's error handler";

    // Same destination, same tag: first on the dup, then on the original.  Receiving in
    // the reverse order must still give each communicator its own message.
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int on_dup = 1000 + rank, on_orig = 2000 + rank;
    EP_Request s[2];
    ASSERT_EQ(EP_Isend(&on_dup, 1, MPI_INT, right, 1, dup, &s[0]), EP_SUCCESS);
    ASSERT_EQ(EP_Isend(&on_orig, 1, MPI_INT, right, 1, comm, &s[1]), EP_SUCCESS);
    int got_orig = -1, got_dup = -1;
    EP_Status st;
    // (tag 1, not EP_ANY_TAG: ep_barrier traffic on the dup must not be taken)
    ASSERT_EQ(EP_Recv(&got_orig, 1, MPI_INT, EP_ANY_SOURCE, 1, comm, &st), EP_SUCCESS);
    EXPECT_EQ(got_orig, 2000 + left);
    EXPECT_EQ(st.EP_SOURCE, left);
    ASSERT_EQ(EP_Recv(&got_dup, 1, MPI_INT, EP_ANY_SOURCE, 1, dup, &st), EP_SUCCESS);
    EXPECT_EQ(got_dup, 1000 + left);
    EXPECT_EQ(st.EP_SOURCE, left);
    ASSERT_EQ(EP_Waitall(2, s, EP_STATUSES_IGNORE), EP_SUCCESS);
    ep_test::ep_barrier(dup);  // nobody frees the dup while a peer still uses it
    EXPECT_EQ(EP_Comm_free(&dup), EP_SUCCESS);
    EXPECT_EQ(dup, EP_COMM_NULL);
  });
  free_all(comms);
}

TEST(CommDup, DupOfDupWorks) {
  const int mine = uneven(world_rank());
  std::vector<EP_Comm> comms = create(mine);
  on_threads(mine, [&](int i) {
    EP_Comm d1 = EP_COMM_NULL, d2 = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(comms[i], &d1), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_dup(d1, &d2), EP_SUCCESS);
    int result = -1;
    EXPECT_EQ(EP_Comm_compare(comms[i], d2, &result), EP_SUCCESS);
    EXPECT_EQ(result, EP_CONGRUENT);
    ep_test::ep_barrier(d2);
    EXPECT_EQ(EP_Comm_free(&d1), EP_SUCCESS);  // the parent dup may go first
    ep_test::ep_barrier(d2);
    EXPECT_EQ(EP_Comm_free(&d2), EP_SUCCESS);
  });
  free_all(comms);
}

TEST(CommCompare, HandlesOfOneCommunicatorAreIdentEvenHeldByDifferentEndpoints) {
  const int mine = uneven(world_rank());
  std::vector<EP_Comm> comms = create(mine);
  std::vector<EP_Comm> unrelated = create(mine);          // same shape, new endpoints
  std::vector<EP_Comm> other_size = create(mine == 1 ? 2 : 1);
  for (int i = 0; i < mine; ++i) {
    for (int j = 0; j < mine; ++j) {
      int result = -1;
      ASSERT_EQ(EP_Comm_compare(comms[i], comms[j], &result), EP_SUCCESS);
      EXPECT_EQ(result, EP_IDENT) << i << " vs " << j;
      ASSERT_EQ(EP_Comm_compare(comms[i], unrelated[j], &result), EP_SUCCESS);
      EXPECT_EQ(result, EP_UNEQUAL) << i << " vs unrelated " << j;
    }
    int result = -1;
    ASSERT_EQ(EP_Comm_compare(comms[i], other_size[0], &result), EP_SUCCESS);
    EXPECT_EQ(result, EP_UNEQUAL);
  }
  int result = -1;
  EXPECT_EQ(EP_Comm_compare(comms[0], EP_COMM_NULL, &result), EP_ERR_COMM);
  EXPECT_EQ(EP_Comm_compare(EP_COMM_NULL, comms[0], &result), EP_ERR_COMM);
  free_all(other_size);
  free_all(unrelated);
  free_all(comms);
}

TEST(CommGroup, GroupOfDupTranslatesEveryRankToItself) {
  const int mine = uneven(world_rank());
  std::vector<EP_Comm> comms = create(mine);
  std::vector<EP_Comm> unrelated = create(mine);
  on_threads(mine, [&](int i) {
    EP_Comm comm = comms[i];
    int rank = -1, size = -1;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    EP_Comm dup = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(comm, &dup), EP_SUCCESS);
    EP_Group g = EP_GROUP_NULL, gd = EP_GROUP_NULL, gu = EP_GROUP_NULL;
    ASSERT_EQ(EP_Comm_group(comm, &g), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_group(dup, &gd), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_group(unrelated[i], &gu), EP_SUCCESS);
    int gsize = -1, grank = -1;
    EXPECT_EQ(EP_Group_size(g, &gsize), EP_SUCCESS);
    EXPECT_EQ(gsize, size);
    EXPECT_EQ(EP_Group_rank(g, &grank), EP_SUCCESS);
    EXPECT_EQ(grank, rank);
    EXPECT_EQ(EP_Group_rank(gd, &grank), EP_SUCCESS);
    EXPECT_EQ(grank, rank);

    std::vector<int> in(size + 1), out(size + 1, -7);
    std::iota(in.begin(), in.begin() + size, 0);
    in[size] = EP_PROC_NULL;
    ASSERT_EQ(EP_Group_translate_ranks(g, size + 1, in.data(), gd, out.data()), EP_SUCCESS);
    for (int r = 0; r < size; ++r) EXPECT_EQ(out[r], r);
    EXPECT_EQ(out[size], EP_PROC_NULL);
    // To an unrelated communicator's group: no rank is a member.
    ASSERT_EQ(EP_Group_translate_ranks(g, size, in.data(), gu, out.data()), EP_SUCCESS);
    for (int r = 0; r < size; ++r) EXPECT_EQ(out[r], EP_UNDEFINED);

    int bad[2] = {0, size};
    int res[2];
    EXPECT_EQ(EP_Group_translate_ranks(g, 2, bad, gd, res), EP_ERR_RANK);
    std::string s = last_error(EP_ERR_RANK);
    EXPECT_NE(s.find("EP_Group_translate_ranks:"), std::string::npos) << s;
    EXPECT_NE(s.find("ranks1"), std::string::npos) << s;
    EXPECT_NE(s.find(std::to_string(size)), std::string::npos) << s;
    int neg[1] = {-5};
    EXPECT_EQ(EP_Group_translate_ranks(g, 1, neg, gd, res), EP_ERR_RANK);
    EXPECT_EQ(EP_Group_translate_ranks(g, -1, neg, gd, res), EP_ERR_COUNT);
    EXPECT_EQ(EP_Group_translate_ranks(EP_GROUP_NULL, 1, in.data(), gd, res), EP_ERR_GROUP);

    for (EP_Group* p : {&g, &gd, &gu}) {
      EXPECT_EQ(EP_Group_free(p), EP_SUCCESS);
      EXPECT_EQ(*p, EP_GROUP_NULL);
    }
    EXPECT_EQ(EP_Group_free(&g), EP_ERR_GROUP);
    EXPECT_EQ(EP_Group_size(EP_GROUP_NULL, &gsize), EP_ERR_GROUP);
    EXPECT_EQ(EP_Group_rank(EP_GROUP_NULL, &grank), EP_ERR_GROUP);
    ep_test::ep_barrier(dup);
    EXPECT_EQ(EP_Comm_free(&dup), EP_SUCCESS);
  });
  free_all(unrelated);
  free_all(comms);
}

TEST(CommTagUb, AtLeast32767AlsoWith256EndpointsInOneProcess) {
  const int kN = 256;
  std::vector<int> counts = allgather_counts(kN);
  std::vector<EP_Comm> comms = create(kN);
  ASSERT_EQ(comms.size(), static_cast<size_t>(kN));
  check_queries(comms, counts);
  int first_ub = -1;
  for (int i = 0; i < kN; ++i) {
    int ub = -1;
    ASSERT_EQ(EP_Comm_tag_ub(comms[i], &ub), EP_SUCCESS);
    EXPECT_GE(ub, 32767) << "endpoint " << i;
    if (i == 0) first_ub = ub;
    EXPECT_EQ(ub, first_ub) << "tag_ub differs between endpoints of one communicator";
  }
  // The largest tag works (one message from the last endpoint to the first).
  int v = 5, got = 0;
  int first_rank = -1;
  EP_Comm_rank(comms[0], &first_rank);
  ASSERT_EQ(EP_Send(&v, 1, MPI_INT, first_rank, first_ub, comms[kN - 1]), EP_SUCCESS);
  ASSERT_EQ(EP_Recv(&got, 1, MPI_INT, first_rank + kN - 1, first_ub, comms[0], EP_STATUS_IGNORE),
            EP_SUCCESS);
  EXPECT_EQ(got, 5);
  free_all(comms);
}

TEST(CommTestInter, IsZeroForAnEndpointsCommunicator) {
  const int mine = uneven(world_rank());
  std::vector<EP_Comm> comms = create(mine);
  for (EP_Comm c : comms) {
    int flag = -1;
    ASSERT_EQ(EP_Comm_test_inter(c, &flag), EP_SUCCESS);
    EXPECT_EQ(flag, 0);
  }
  int flag = -1;
  EXPECT_EQ(EP_Comm_test_inter(EP_COMM_NULL, &flag), EP_ERR_COMM);
  free_all(comms);
}

TEST(CommErrhandler, DefaultIsFatalAndSetGetRoundTrips) {
  EP_Comm comms[1];
  ASSERT_EQ(EP_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, comms), EP_SUCCESS);
  EP_Errhandler eh = EP_ERRORS_RETURN;
  ASSERT_EQ(EP_Comm_get_errhandler(comms[0], &eh), EP_SUCCESS);
  EXPECT_EQ(eh, EP_ERRORS_ARE_FATAL);
  ASSERT_EQ(EP_Comm_set_errhandler(comms[0], EP_ERRORS_RETURN), EP_SUCCESS);
  ASSERT_EQ(EP_Comm_get_errhandler(comms[0], &eh), EP_SUCCESS);
  EXPECT_EQ(eh, EP_ERRORS_RETURN);
  // An invalid handler is refused (returned: the current handler is EP_ERRORS_RETURN)
  // and changes nothing.
  EXPECT_EQ(EP_Comm_set_errhandler(comms[0], reinterpret_cast<EP_Errhandler>(77)), EP_ERR_ARG);
  std::string s = last_error(EP_ERR_ARG);
  EXPECT_NE(s.find("EP_Comm_set_errhandler:"), std::string::npos) << s;
  EXPECT_NE(s.find("errhandler"), std::string::npos) << s;
  ASSERT_EQ(EP_Comm_get_errhandler(comms[0], &eh), EP_SUCCESS);
  EXPECT_EQ(eh, EP_ERRORS_RETURN);
  ASSERT_EQ(EP_Comm_set_errhandler(comms[0], EP_ERRORS_ARE_FATAL), EP_SUCCESS);
  ASSERT_EQ(EP_Comm_get_errhandler(comms[0], &eh), EP_SUCCESS);
  EXPECT_EQ(eh, EP_ERRORS_ARE_FATAL);
  EXPECT_EQ(EP_Comm_set_errhandler(EP_COMM_NULL, EP_ERRORS_RETURN), EP_ERR_COMM);
  EXPECT_EQ(EP_Comm_get_errhandler(EP_COMM_NULL, &eh), EP_ERR_COMM);
  EXPECT_EQ(EP_Comm_free(&comms[0]), EP_SUCCESS);
}

TEST(CommFree, SetsTheHandleToNullAndNullIsErrComm) {
  const int mine = uneven(world_rank());
  std::vector<EP_Comm> comms = create(mine);
  free_all(comms);
  EP_Comm c = EP_COMM_NULL;
  EXPECT_EQ(EP_Comm_free(&c), EP_ERR_COMM);
  std::string s = last_error(EP_ERR_COMM);
  EXPECT_NE(s.find("EP_Comm_free:"), std::string::npos) << s;
  int rank = -1;
  EXPECT_EQ(EP_Comm_rank(EP_COMM_NULL, &rank), EP_ERR_COMM);
  EXPECT_EQ(EP_Comm_size(EP_COMM_NULL, &rank), EP_ERR_COMM);
  EXPECT_EQ(EP_Comm_local_rank(EP_COMM_NULL, &rank), EP_ERR_COMM);
  EXPECT_EQ(EP_Comm_local_size(EP_COMM_NULL, &rank), EP_ERR_COMM);
  EXPECT_EQ(EP_Comm_tag_ub(EP_COMM_NULL, &rank), EP_ERR_COMM);
  EP_Group g;
  EXPECT_EQ(EP_Comm_group(EP_COMM_NULL, &g), EP_ERR_COMM);
  EP_Comm d;
  EXPECT_EQ(EP_Comm_dup(EP_COMM_NULL, &d), EP_ERR_COMM);
}

}  // namespace
