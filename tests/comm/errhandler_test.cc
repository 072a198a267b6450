// Error handlers of the user's own, on 1-3 processes with uneven endpoints:
//  * a failing call (a bad tag) on a communicator with a user handler calls it once, in
//    the failing call's thread, with the communicator's handle and the code, and returns
//    the code; the handler may call libep on that communicator (EP_Comm_rank);
//  * EP_Comm_get_errhandler gives the user handler (a new reference, freed);
//  * EP_Comm_call_errhandler calls it with the given code and returns EP_SUCCESS;
//  * EP_Comm_dup and EP_Comm_split inherit it: a failure on the new communicator calls
//    it with the new handle;
//  * a failed request (a truncated receive) calls the handler of its communicator in
//    EP_Wait and EP_Test;
//  * EP_Errhandler_free while communicators use it: the handle becomes
//    EP_ERRHANDLER_NULL, the communicators keep calling it, new ones inherit it;
//  * bad handles and arguments give EP_ERR_ARG.
// Every expectation is exact: call counts, handles, codes.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "tests/comm/comm_util.h"
#include "tests/common/harness.h"

namespace {

using ep_test::last_error;
using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;

[[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(120, 480);

// What the handler saw in this thread (it must run in the failing call's thread).
struct Seen {
  int calls = 0;
  EP_Comm comm = EP_COMM_NULL;
  int code = EP_SUCCESS;
  int rank = -1;     // EP_Comm_rank of the communicator, asked from inside the handler
  int rank_rc = -1;  // its return code
};
thread_local Seen t_seen;

void record(EP_Comm* comm, int* code, ...) {
  ++t_seen.calls;
  t_seen.comm = *comm;
  t_seen.code = *code;
  t_seen.rank_rc = EP_Comm_rank(*comm, &t_seen.rank);
}

// Expects exactly one handler call since the last reset, with `comm` and `code`.
void expect_one_call(EP_Comm comm, int code, int rank, const std::string& what) {
  EXPECT_EQ(t_seen.calls, 1) << what;
  EXPECT_EQ(t_seen.comm, comm) << what;
  EXPECT_EQ(t_seen.code, code) << what;
  EXPECT_EQ(t_seen.rank_rc, EP_SUCCESS) << what << ": the handler could not use the comm";
  EXPECT_EQ(t_seen.rank, rank) << what;
  t_seen = Seen{};
}

using ep_comm_test::rank_of;

TEST(Errhandler, UserHandlerRunsInTheFailingThreadWithCommAndCode) {
  EP_Errhandler eh = EP_ERRHANDLER_NULL;
  ASSERT_EQ(EP_Comm_create_errhandler(record, &eh), EP_SUCCESS);
  ASSERT_NE(eh, EP_ERRHANDLER_NULL);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    t_seen = Seen{};
    const int me = rank_of(world);
    ASSERT_EQ(EP_Comm_set_errhandler(world, eh), EP_SUCCESS);
    int v = 1;
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, me, -5, world), EP_ERR_TAG);
    expect_one_call(world, EP_ERR_TAG, me, "EP_Send with tag -5");
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, 1 << 30, 0, world), EP_ERR_RANK);
    expect_one_call(world, EP_ERR_RANK, me, "EP_Send to rank 2^30");
    // Successful calls do not call it.
    EXPECT_EQ(EP_Barrier(world), EP_SUCCESS);
    EXPECT_EQ(t_seen.calls, 0);
    // get gives it back (a new reference: freed here).
    EP_Errhandler got = EP_ERRHANDLER_NULL;
    ASSERT_EQ(EP_Comm_get_errhandler(world, &got), EP_SUCCESS);
    EXPECT_EQ(got, eh);
    EXPECT_EQ(EP_Errhandler_free(&got), EP_SUCCESS);
    EXPECT_EQ(got, EP_ERRHANDLER_NULL);
    // EP_Comm_call_errhandler: the handler with the given code; the call succeeds.
    EXPECT_EQ(EP_Comm_call_errhandler(world, EP_ERR_OTHER), EP_SUCCESS);
    expect_one_call(world, EP_ERR_OTHER, me, "EP_Comm_call_errhandler");
    EXPECT_EQ(EP_Comm_call_errhandler(world, 12345), EP_SUCCESS);
    expect_one_call(world, 12345, me, "EP_Comm_call_errhandler with a user's code");
    ASSERT_EQ(EP_Comm_set_errhandler(world, EP_ERRORS_RETURN), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_call_errhandler(world, EP_ERR_OTHER), EP_SUCCESS);
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, me, -5, world), EP_ERR_TAG);
    EXPECT_EQ(t_seen.calls, 0) << "EP_ERRORS_RETURN calls nothing";
    ASSERT_EQ(EP_Comm_get_errhandler(world, &got), EP_SUCCESS);
    EXPECT_EQ(got, EP_ERRORS_RETURN);
    EXPECT_EQ(EP_Errhandler_free(&got), EP_SUCCESS) << "a predefined handler frees nothing";
  });
  EXPECT_EQ(EP_Errhandler_free(&eh), EP_SUCCESS);
  EXPECT_EQ(eh, EP_ERRHANDLER_NULL);
}

TEST(Errhandler, DupAndSplitInheritTheHandler) {
  EP_Errhandler eh = EP_ERRHANDLER_NULL;
  ASSERT_EQ(EP_Comm_create_errhandler(record, &eh), EP_SUCCESS);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    t_seen = Seen{};
    const int me = rank_of(world);
    int size = 0;
    EP_Comm_size(world, &size);
    ASSERT_EQ(EP_Comm_set_errhandler(world, eh), EP_SUCCESS);
    EP_Comm dup = EP_COMM_NULL, split = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(world, &dup), EP_SUCCESS);
    // Reversed order: rank size-1-me in the split.
    ASSERT_EQ(EP_Comm_split(world, 0, size - me, &split), EP_SUCCESS);
    EXPECT_EQ(t_seen.calls, 0);
    int v = 0;
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, 0, -1, dup), EP_ERR_TAG);
    expect_one_call(dup, EP_ERR_TAG, me, "on the dup");
    EXPECT_EQ(EP_Recv(&v, 1, MPI_INT, -9, 0, split, EP_STATUS_IGNORE), EP_ERR_RANK);
    expect_one_call(split, EP_ERR_RANK, size - 1 - me, "on the split");
    EP_Errhandler got = EP_ERRHANDLER_NULL;
    ASSERT_EQ(EP_Comm_get_errhandler(split, &got), EP_SUCCESS);
    EXPECT_EQ(got, eh);
    EXPECT_EQ(EP_Errhandler_free(&got), EP_SUCCESS);
    // Changing the parent's handler leaves the children's alone.
    ASSERT_EQ(EP_Comm_set_errhandler(world, EP_ERRORS_RETURN), EP_SUCCESS);
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, 0, -1, world), EP_ERR_TAG);
    EXPECT_EQ(t_seen.calls, 0);
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, 0, -1, dup), EP_ERR_TAG);
    expect_one_call(dup, EP_ERR_TAG, me, "on the dup after the parent changed");
    EXPECT_EQ(EP_Barrier(world), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&dup), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&split), EP_SUCCESS);
  });
  EXPECT_EQ(EP_Errhandler_free(&eh), EP_SUCCESS);
}

// A receive of 1 int gets a message of 2 from this endpoint itself: the request fails
// with EP_ERR_TRUNCATE, and EP_Wait / EP_Test call the handler of its communicator.
TEST(Errhandler, FailedRequestCallsTheHandlerOfItsCommunicator) {
  EP_Errhandler eh = EP_ERRHANDLER_NULL;
  ASSERT_EQ(EP_Comm_create_errhandler(record, &eh), EP_SUCCESS);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    t_seen = Seen{};
    const int me = rank_of(world);
    EP_Comm dup = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(world, &dup), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_set_errhandler(dup, eh), EP_SUCCESS);
    for (int use_test = 0; use_test < 2; ++use_test) {
      int out[2] = {me, 7}, in = -1;
      EP_Request s = EP_REQUEST_NULL, r = EP_REQUEST_NULL;
      ASSERT_EQ(EP_Isend(out, 2, MPI_INT, me, 3, dup, &s), EP_SUCCESS);
      ASSERT_EQ(EP_Irecv(&in, 1, MPI_INT, me, 3, dup, &r), EP_SUCCESS);
      if (use_test == 0) {
        EXPECT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_ERR_TRUNCATE);
      } else {
        int flag = 0, rc = EP_SUCCESS;
        while (flag == 0) rc = EP_Test(&r, &flag, EP_STATUS_IGNORE);
        EXPECT_EQ(rc, EP_ERR_TRUNCATE);
      }
      EXPECT_EQ(r, EP_REQUEST_NULL);
      expect_one_call(dup, EP_ERR_TRUNCATE, me, use_test ? "EP_Test" : "EP_Wait");
      EXPECT_EQ(EP_Wait(&s, EP_STATUS_IGNORE), EP_SUCCESS);
    }
    EXPECT_EQ(t_seen.calls, 0);
    EXPECT_EQ(EP_Comm_free(&dup), EP_SUCCESS);
  });
  EXPECT_EQ(EP_Errhandler_free(&eh), EP_SUCCESS);
}

TEST(Errhandler, FreedHandlerStaysWithTheCommunicatorsThatUseIt) {
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    t_seen = Seen{};
    const int me = rank_of(world);
    // Each endpoint has its own handler object here.
    EP_Errhandler eh = EP_ERRHANDLER_NULL;
    ASSERT_EQ(EP_Comm_create_errhandler(record, &eh), EP_SUCCESS);
    EP_Comm dup = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(world, &dup), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_set_errhandler(dup, eh), EP_SUCCESS);
    const EP_Errhandler kept = eh;
    ASSERT_EQ(EP_Errhandler_free(&eh), EP_SUCCESS);
    EXPECT_EQ(eh, EP_ERRHANDLER_NULL);
    int v = 0;
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, 0, -2, dup), EP_ERR_TAG);
    expect_one_call(dup, EP_ERR_TAG, me, "after EP_Errhandler_free");
    EP_Comm dup2 = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(dup, &dup2), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&dup), EP_SUCCESS);  // dup2 still holds the handler
    EP_Errhandler got = EP_ERRHANDLER_NULL;
    ASSERT_EQ(EP_Comm_get_errhandler(dup2, &got), EP_SUCCESS);
    EXPECT_EQ(got, kept);
    EXPECT_EQ(EP_Errhandler_free(&got), EP_SUCCESS);
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, 0, -2, dup2), EP_ERR_TAG);
    expect_one_call(dup2, EP_ERR_TAG, me, "on a dup made after the free");
    EXPECT_EQ(EP_Comm_free(&dup2), EP_SUCCESS);  // the last user: the handler goes
  });
}

TEST(Errhandler, BadHandlesAndArgumentsAreRefused) {
  EP_Errhandler eh = EP_ERRHANDLER_NULL;
  EXPECT_EQ(EP_Comm_create_errhandler(nullptr, &eh), EP_ERR_ARG);
  EXPECT_EQ(EP_Comm_create_errhandler(record, nullptr), EP_ERR_ARG);
  EP_Errhandler null_eh = EP_ERRHANDLER_NULL;
  EXPECT_EQ(EP_Errhandler_free(&null_eh), EP_ERR_ARG);
  EXPECT_NE(last_error(EP_ERR_ARG).find("EP_Errhandler_free"), std::string::npos);
  EXPECT_EQ(EP_Errhandler_free(nullptr), EP_ERR_ARG);
  EP_Errhandler junk = reinterpret_cast<EP_Errhandler>(99);
  EXPECT_EQ(EP_Errhandler_free(&junk), EP_ERR_ARG);
  EXPECT_EQ(EP_Comm_call_errhandler(EP_COMM_NULL, EP_ERR_OTHER), EP_ERR_COMM);
  ASSERT_EQ(EP_Comm_create_errhandler(record, &eh), EP_SUCCESS);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    t_seen = Seen{};
    EXPECT_EQ(EP_Comm_set_errhandler(world, reinterpret_cast<EP_Errhandler>(99)), EP_ERR_ARG);
    EXPECT_NE(last_error(EP_ERR_ARG).find("EP_Comm_set_errhandler"), std::string::npos);
    EXPECT_EQ(EP_Comm_set_errhandler(world, EP_ERRHANDLER_NULL), EP_ERR_ARG);
    EXPECT_EQ(EP_Comm_set_errhandler(world, reinterpret_cast<EP_Errhandler>(world)), EP_ERR_ARG);
    EP_Errhandler as_eh = reinterpret_cast<EP_Errhandler>(world);
    EXPECT_EQ(EP_Errhandler_free(&as_eh), EP_ERR_ARG);
    EXPECT_EQ(as_eh, reinterpret_cast<EP_Errhandler>(world)) << "a refused handle stays";
    EXPECT_EQ(EP_Comm_get_errhandler(world, nullptr), EP_ERR_ARG);
    // Windows take only the predefined handlers.
    int mem[4] = {0, 0, 0, 0};
    EP_Win win = EP_WIN_NULL;
    ASSERT_EQ(EP_Win_create(mem, sizeof(mem), sizeof(int), MPI_INFO_NULL, world, &win), EP_SUCCESS);
    ASSERT_EQ(EP_Win_set_errhandler(win, EP_ERRORS_RETURN), EP_SUCCESS);
    EXPECT_EQ(EP_Win_set_errhandler(win, eh), EP_ERR_ARG);
    EXPECT_EQ(EP_Win_free(&win), EP_SUCCESS);
    EXPECT_EQ(t_seen.calls, 0) << "no user handler was set on this communicator";
  });
  EXPECT_EQ(EP_Errhandler_free(&eh), EP_SUCCESS);
}

}  // namespace
