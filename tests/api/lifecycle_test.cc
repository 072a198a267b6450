// EP_Init / EP_Finalize and the environment calls, in the order a program lives:
// before MPI_Init, between MPI_Init and EP_Init, initialized, after EP_Finalize.
//
// Its own main(): EP_Init is what is tested.  main() records what EP_Init does before
// MPI_Init_thread, then initializes MPI (MPI_THREAD_MULTIPLE) and runs the tests in
// definition order (googletest keeps it; do not shuffle): BeforeEpInit.*, EpInit.*,
// Initialized.*, EpFinalize.*, AfterEpFinalize.*.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ep/ep.h"
#include "tests/api/proc_util.h"
#include "tests/common/harness.h"
#include "tests/common/harness.h"

namespace {

using ep_test::last_error;
using ep_test::progress_thread_count;

int g_init_before_mpi = -1;
std::string g_init_before_mpi_text, g_init_before_mpi_stderr;
int g_initialized_before_mpi_rc = -1, g_initialized_before_mpi_flag = -1;
int g_progress_threads_before_mpi = -1;

// Every call of the API but EP_Initialized, EP_Error_string (and EP_Wtime, which returns
// no code), with arguments that would be valid or garbage: the handles are never looked at.
struct Call {
  const char* name;
  std::function<int()> fn;
};

std::vector<Call> all_calls() {
  static char junk[256];
  EP_Comm comm = reinterpret_cast<EP_Comm>(junk);
  static int ibuf[4];
  static EP_Status st;
  static EP_Request req_storage;
  static EP_Message msg_storage;
  static EP_Group grp_storage;
  static EP_Errhandler eh_storage;
  static EP_Comm comm_storage;
  static int flag, n, idx[4];
  static int ranks1[1] = {0}, ranks2[1];
  EP_Request garbage_req = reinterpret_cast<EP_Request>(junk);
  EP_Group garbage_grp = reinterpret_cast<EP_Group>(junk);
  return {
      {"EP_Finalize", [] { return EP_Finalize(); }},
      {"EP_Query_thread", [] { return EP_Query_thread(&n); }},
      {"EP_Is_thread_main", [] { return EP_Is_thread_main(&flag); }},
      {"EP_Comm_set_errhandler", [=] { return EP_Comm_set_errhandler(comm, EP_ERRORS_RETURN); }},
      {"EP_Comm_get_errhandler", [=] { return EP_Comm_get_errhandler(comm, &eh_storage); }},
      {"EP_Comm_create_endpoints",
       [] { return EP_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, &comm_storage); }},
      {"EP_Comm_rank", [=] { return EP_Comm_rank(comm, &n); }},
      {"EP_Comm_size", [=] { return EP_Comm_size(comm, &n); }},
      {"EP_Comm_local_rank", [=] { return EP_Comm_local_rank(comm, &n); }},
      {"EP_Comm_local_size", [=] { return EP_Comm_local_size(comm, &n); }},
      {"EP_Comm_dup", [=] { return EP_Comm_dup(comm, &comm_storage); }},
      {"EP_Comm_free", [=] {
         comm_storage = comm;
         return EP_Comm_free(&comm_storage);
       }},
      {"EP_Comm_compare", [=] { return EP_Comm_compare(comm, comm, &n); }},
      {"EP_Comm_test_inter", [=] { return EP_Comm_test_inter(comm, &flag); }},
      {"EP_Comm_tag_ub", [=] { return EP_Comm_tag_ub(comm, &n); }},
      {"EP_Comm_group", [=] { return EP_Comm_group(comm, &grp_storage); }},
      {"EP_Group_size", [=] { return EP_Group_size(garbage_grp, &n); }},
      {"EP_Group_rank", [=] { return EP_Group_rank(garbage_grp, &n); }},
      {"EP_Group_free", [=] {
         grp_storage = garbage_grp;
         return EP_Group_free(&grp_storage);
       }},
      {"EP_Group_translate_ranks",
       [=] { return EP_Group_translate_ranks(garbage_grp, 1, ranks1, garbage_grp, ranks2); }},
      {"EP_Send", [=] { return EP_Send(ibuf, 1, MPI_INT, 0, 0, comm); }},
      {"EP_Bsend", [=] { return EP_Bsend(ibuf, 1, MPI_INT, 0, 0, comm); }},
      {"EP_Ssend", [=] { return EP_Ssend(ibuf, 1, MPI_INT, 0, 0, comm); }},
      {"EP_Rsend", [=] { return EP_Rsend(ibuf, 1, MPI_INT, 0, 0, comm); }},
      {"EP_Isend", [=] { return EP_Isend(ibuf, 1, MPI_INT, 0, 0, comm, &req_storage); }},
      {"EP_Ibsend", [=] { return EP_Ibsend(ibuf, 1, MPI_INT, 0, 0, comm, &req_storage); }},
      {"EP_Issend", [=] { return EP_Issend(ibuf, 1, MPI_INT, 0, 0, comm, &req_storage); }},
      {"EP_Irsend", [=] { return EP_Irsend(ibuf, 1, MPI_INT, 0, 0, comm, &req_storage); }},
      {"EP_Recv", [=] { return EP_Recv(ibuf, 1, MPI_INT, 0, 0, comm, &st); }},
      {"EP_Irecv", [=] { return EP_Irecv(ibuf, 1, MPI_INT, 0, 0, comm, &req_storage); }},
      {"EP_Sendrecv",
       [=] { return EP_Sendrecv(ibuf, 1, MPI_INT, 0, 0, ibuf + 1, 1, MPI_INT, 0, 0, comm, &st); }},
      {"EP_Sendrecv_replace",
       [=] { return EP_Sendrecv_replace(ibuf, 1, MPI_INT, 0, 0, 0, 0, comm, &st); }},
      {"EP_Probe", [=] { return EP_Probe(0, 0, comm, &st); }},
      {"EP_Iprobe", [=] { return EP_Iprobe(0, 0, comm, &flag, &st); }},
      {"EP_Mprobe", [=] { return EP_Mprobe(0, 0, comm, &msg_storage, &st); }},
      {"EP_Improbe", [=] { return EP_Improbe(0, 0, comm, &flag, &msg_storage, &st); }},
      {"EP_Mrecv", [=] {
         msg_storage = reinterpret_cast<EP_Message>(junk);
         return EP_Mrecv(ibuf, 1, MPI_INT, &msg_storage, &st);
       }},
      {"EP_Imrecv", [=] {
         msg_storage = reinterpret_cast<EP_Message>(junk);
         return EP_Imrecv(ibuf, 1, MPI_INT, &msg_storage, &req_storage);
       }},
      {"EP_Buffer_attach", [] { return EP_Buffer_attach(junk, sizeof(junk)); }},
      {"EP_Buffer_detach", [] {
         void* p = nullptr;
         return EP_Buffer_detach(&p, &n);
       }},
      {"EP_Get_count", [] { return EP_Get_count(&st, MPI_INT, &n); }},
      {"EP_Get_elements", [] { return EP_Get_elements(&st, MPI_INT, &n); }},
      {"EP_Wait", [] {
         req_storage = EP_REQUEST_NULL;
         return EP_Wait(&req_storage, &st);
       }},
      {"EP_Wait(garbage)", [=] {
         req_storage = garbage_req;
         return EP_Wait(&req_storage, &st);
       }},
      {"EP_Test", [] {
         req_storage = EP_REQUEST_NULL;
         return EP_Test(&req_storage, &flag, &st);
       }},
      {"EP_Waitall", [] {
         req_storage = EP_REQUEST_NULL;
         return EP_Waitall(1, &req_storage, &st);
       }},
      {"EP_Testall", [] {
         req_storage = EP_REQUEST_NULL;
         return EP_Testall(1, &req_storage, &flag, &st);
       }},
      {"EP_Waitany", [] {
         req_storage = EP_REQUEST_NULL;
         return EP_Waitany(1, &req_storage, &n, &st);
       }},
      {"EP_Testany", [] {
         req_storage = EP_REQUEST_NULL;
         return EP_Testany(1, &req_storage, &n, &flag, &st);
       }},
      {"EP_Waitsome", [] {
         req_storage = EP_REQUEST_NULL;
         return EP_Waitsome(1, &req_storage, &n, idx, &st);
       }},
      {"EP_Testsome", [] {
         req_storage = EP_REQUEST_NULL;
         return EP_Testsome(1, &req_storage, &n, idx, &st);
       }},
      {"EP_Request_free", [=] {
         req_storage = garbage_req;
         return EP_Request_free(&req_storage);
       }},
      {"EP_Cancel", [=] {
         req_storage = garbage_req;
         return EP_Cancel(&req_storage);
       }},
      {"EP_Test_cancelled", [] { return EP_Test_cancelled(&st, &flag); }},
      {"EP_Request_get_status", [] { return EP_Request_get_status(EP_REQUEST_NULL, &flag, &st); }},
      // ---- persistent requests
      {"EP_Send_init", [=] { return EP_Send_init(ibuf, 1, MPI_INT, 0, 0, comm, &req_storage); }},
      {"EP_Bsend_init", [=] { return EP_Bsend_init(ibuf, 1, MPI_INT, 0, 0, comm, &req_storage); }},
      {"EP_Ssend_init", [=] { return EP_Ssend_init(ibuf, 1, MPI_INT, 0, 0, comm, &req_storage); }},
      {"EP_Rsend_init", [=] { return EP_Rsend_init(ibuf, 1, MPI_INT, 0, 0, comm, &req_storage); }},
      {"EP_Recv_init", [=] { return EP_Recv_init(ibuf, 1, MPI_INT, 0, 0, comm, &req_storage); }},
      {"EP_Start", [=] {
         req_storage = garbage_req;
         return EP_Start(&req_storage);
       }},
      {"EP_Startall", [=] {
         req_storage = garbage_req;
         return EP_Startall(1, &req_storage);
       }},
  };
}

// The same calls with an argument that is also wrong: EP_ERR_NOT_INITIALIZED must win
// (the contract: every call but EP_Initialized and EP_Error_string).
std::vector<Call> calls_with_bad_arguments() {
  static int ibuf[2], n, flag, idx[1];
  static EP_Request reqs[1];
  static EP_Status st;
  return {
      {"EP_Isend(request NULL)", [] { return EP_Isend(ibuf, 1, MPI_INT, 0, 0, EP_COMM_NULL, nullptr); }},
      {"EP_Irecv(request NULL)", [] { return EP_Irecv(ibuf, 1, MPI_INT, 0, 0, EP_COMM_NULL, nullptr); }},
      {"EP_Send(count -1)", [] { return EP_Send(ibuf, -1, MPI_INT, 0, 0, EP_COMM_NULL); }},
      {"EP_Waitall(-1)", [] { return EP_Waitall(-1, reqs, &st); }},
      {"EP_Testall(-1)", [] { return EP_Testall(-1, reqs, &flag, &st); }},
      {"EP_Waitany(-1)", [] { return EP_Waitany(-1, reqs, &n, &st); }},
      {"EP_Testany(-1)", [] { return EP_Testany(-1, reqs, &n, &flag, &st); }},
      {"EP_Waitsome(-1)", [] { return EP_Waitsome(-1, reqs, &n, idx, &st); }},
      {"EP_Testsome(-1)", [] { return EP_Testsome(-1, reqs, &n, idx, &st); }},
      {"EP_Comm_create_endpoints(num_ep -1)",
       [] { return EP_Comm_create_endpoints(MPI_COMM_WORLD, -1, MPI_INFO_NULL, nullptr); }},
      // ---- persistent requests
      {"EP_Send_init(request NULL)",
       [] { return EP_Send_init(ibuf, 1, MPI_INT, 0, 0, EP_COMM_NULL, nullptr); }},
      {"EP_Recv_init(request NULL)",
       [] { return EP_Recv_init(ibuf, 1, MPI_INT, 0, 0, EP_COMM_NULL, nullptr); }},
      {"EP_Start(NULL)", [] { return EP_Start(nullptr); }},
      {"EP_Startall(-1)", [] { return EP_Startall(-1, reqs); }},
  };
}

void expect_all_not_initialized(const std::vector<Call>& calls, bool check_names = false) {
  for (const Call& c : calls) {
    int rc = c.fn();
    EXPECT_EQ(rc, EP_ERR_NOT_INITIALIZED) << c.name << " returned " << rc << ": "
                                          << last_error(rc);
    if (rc == EP_ERR_NOT_INITIALIZED && check_names) {
      std::string s = last_error(rc);
      std::string call = c.name;
      call = call.substr(0, call.find('('));
      EXPECT_NE(s.find(call + ":"), std::string::npos) << s;
    }
  }
}

void expect_initialized_flag(int want) {
  int flag = -1;
  ASSERT_EQ(EP_Initialized(&flag), EP_SUCCESS);
  EXPECT_EQ(flag, want);
}

// ---- Before EP_Init ---------------------------------------------------------------------

TEST(BeforeEpInit, EpInitBeforeMpiInitIsNotInitializedAndStartsNoThread) {
  EXPECT_EQ(g_init_before_mpi, EP_ERR_NOT_INITIALIZED);
  EXPECT_NE(g_init_before_mpi_text.find("EP_Init:"), std::string::npos) << g_init_before_mpi_text;
  EXPECT_NE(g_init_before_mpi_text.find("MPI"), std::string::npos) << g_init_before_mpi_text;
  EXPECT_EQ(g_initialized_before_mpi_rc, EP_SUCCESS);
  EXPECT_EQ(g_initialized_before_mpi_flag, 0);
  EXPECT_EQ(g_progress_threads_before_mpi, 0);
  // The reason, in one line on stderr.
  EXPECT_EQ(ep_test::lines_with(g_init_before_mpi_stderr,
                                {"EP_ERR_NOT_INITIALIZED", "EP_Init", "MPI"}).size(),
            1u)
      << g_init_before_mpi_stderr;
  EXPECT_EQ(ep_test::lines_with(g_init_before_mpi_stderr, {}).size(), 1u)
      << g_init_before_mpi_stderr;
}

TEST(BeforeEpInit, InitializedIsZeroAndErrorStringWorks) {
  expect_initialized_flag(0);
  char s[EP_MAX_ERROR_STRING];
  int len = -1;
  ASSERT_EQ(EP_Error_string(EP_ERR_TAG, s, &len), EP_SUCCESS);
  EXPECT_GT(len, 0);
  EXPECT_NE(std::string(s, len).find("EP_ERR_TAG"), std::string::npos);
  EXPECT_EQ(progress_thread_count(), 0);
}

TEST(BeforeEpInit, EveryCallIsErrNotInitialized) {
  expect_all_not_initialized(all_calls());
  expect_initialized_flag(0);
  EXPECT_EQ(progress_thread_count(), 0);
}

TEST(BeforeEpInit, ErrNotInitializedTextNamesTheCallTheUserMade) {
  expect_all_not_initialized(all_calls(), /*check_names=*/true);
}

TEST(BeforeEpInit, ArgumentErrorsDoNotHideErrNotInitialized) {
  expect_all_not_initialized(calls_with_bad_arguments());
}

// ---- EP_Init --------------------------------------------------------------------------------

TEST(EpInit, SucceedsAndStartsOneThreadNamedEpProgress) {
  ASSERT_EQ(EP_Init(), EP_SUCCESS) << last_error(EP_ERR_ARG);
  expect_initialized_flag(1);
  EXPECT_EQ(progress_thread_count(), 1);
}

TEST(EpInit, SecondEpInitFailsSaysWhyAndKeepsOneProgressThread) {
  int rc = EP_SUCCESS;
  const std::string err = ep_test::capture_stderr([&] { rc = EP_Init(); });
  EXPECT_NE(rc, EP_SUCCESS);
  EXPECT_EQ(ep_test::lines_with(err, {"EP_Init", "already initialized"}).size(), 1u) << err;
  EXPECT_EQ(ep_test::lines_with(err, {}).size(), 1u) << err;
  expect_initialized_flag(1);
  EXPECT_EQ(progress_thread_count(), 1);
}

// ---- Initialized ----------------------------------------------------------------------------

TEST(Initialized, QueryThreadIsMultiple) {
  int provided = -1;
  ASSERT_EQ(EP_Query_thread(&provided), EP_SUCCESS);
  EXPECT_EQ(provided, MPI_THREAD_MULTIPLE);
}

TEST(Initialized, IsThreadMainTrueOnMainThreadFalseOnAnother) {
  int flag = -1;
  ASSERT_EQ(EP_Is_thread_main(&flag), EP_SUCCESS);
  EXPECT_TRUE(flag);
  int other = -1, rc = -1;
  std::thread t([&] { rc = EP_Is_thread_main(&other); });
  t.join();
  EXPECT_EQ(rc, EP_SUCCESS);
  EXPECT_FALSE(other);
}

TEST(Initialized, WtimeIncreases) {
  double t0 = EP_Wtime();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  double t1 = EP_Wtime();
  EXPECT_GT(t1, t0);
  EXPECT_GE(t1 - t0, 0.015);
  EXPECT_LT(t1 - t0, 5.0);
}

TEST(Initialized, EndpointsWork) {
  ep_test::run_endpoints(2, [](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    int got = -1;
    EXPECT_EQ(EP_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 1, &got, 1, MPI_INT,
                          (rank + size - 1) % size, 1, comm, EP_STATUS_IGNORE),
              EP_SUCCESS);
    EXPECT_EQ(got, (rank + size - 1) % size);
  });
}

// ---- EP_Finalize ----------------------------------------------------------------------------

TEST(EpFinalize, SucceedsAndStopsTheProgressThread) {
  // A communicator left alive is cleaned up by EP_Finalize.
  EP_Comm leftover[2];
  ASSERT_EQ(EP_Comm_create_endpoints(MPI_COMM_WORLD, 2, MPI_INFO_NULL, leftover), EP_SUCCESS);
  ASSERT_EQ(EP_Finalize(), EP_SUCCESS);
  expect_initialized_flag(0);
  EXPECT_EQ(progress_thread_count(), 0);
}

// ---- After EP_Finalize ---------------------------------------------------------------------

TEST(AfterEpFinalize, EveryCallIsErrNotInitialized) {
  expect_all_not_initialized(all_calls());
  expect_initialized_flag(0);
  EXPECT_EQ(progress_thread_count(), 0);
}

TEST(AfterEpFinalize, ErrNotInitializedTextNamesTheCallTheUserMade) {
  expect_all_not_initialized(all_calls(), /*check_names=*/true);
}

TEST(AfterEpFinalize, ArgumentErrorsDoNotHideErrNotInitialized) {
  expect_all_not_initialized(calls_with_bad_arguments());
}

TEST(AfterEpFinalize, ErrorStringStillWorks) {
  char s[EP_MAX_ERROR_STRING];
  int len = -1;
  EXPECT_EQ(EP_Finalize(), EP_ERR_NOT_INITIALIZED);
  ASSERT_EQ(EP_Error_string(EP_ERR_NOT_INITIALIZED, s, &len), EP_SUCCESS);
  EXPECT_NE(std::string(s, len).find("EP_Finalize"), std::string::npos) << s;
}

}  // namespace

int main(int argc, char** argv) {
  g_progress_threads_before_mpi = progress_thread_count();
  g_init_before_mpi_stderr = ep_test::capture_stderr([] { g_init_before_mpi = EP_Init(); });
  g_init_before_mpi_text = last_error(EP_ERR_NOT_INITIALIZED);
  g_initialized_before_mpi_rc = EP_Initialized(&g_initialized_before_mpi_flag);
  if (progress_thread_count() != 0) g_progress_threads_before_mpi = progress_thread_count();

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  return ep_test::run_all_tests_and_finalize();  // finalizes libep if a test left it up
}
