// Argument errors of point-to-point and request calls: every bad input returns its
// EP_ERR_* code and EP_Error_string names the call and the argument; truncation;
// concurrent entry on one endpoint; and errors never disturb other traffic.
//
// Every communicator here has EP_ERRORS_RETURN (run_endpoints sets it, the others set it
// by hand) so that provoked errors return instead of aborting the job.
//
// Not tested: an uncommitted derived datatype.  libep does not detect it
// (runtime/datatype.cc describe() only calls MPI_Type_get_envelope and the size/extent
// queries, which all accept uncommitted types), and using one would make MPI_Pack abort
// the job.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/harness.h"
#include "tests/common/harness.h"

namespace {

using ep_test::last_error;
using ep_test::uneven;
using ep_test::world_rank;
using ep_test::world_size;

// Checks the code and that the detail names the call, the argument and (optionally) the
// offending value.  The detail is per code and per thread, so consecutive checks use
// different calls or values: a call that forgot to record its detail cannot pass on a
// stale message.
void expect_error(int rc, int code, const std::string& call, const std::string& arg,
                  const std::string& value = "", const std::string& where = "") {
  EXPECT_EQ(rc, code) << where << " " << call << " (" << arg << ")";
  if (rc != code) return;
  std::string s = last_error(code);
  SCOPED_TRACE(where + " error string: " + s);
  char name[EP_MAX_ERROR_STRING];
  int len = 0;
  EP_Error_string(code, name, &len);
  EXPECT_EQ(std::string(name, len), s);
  EXPECT_NE(s.find(call + ":"), std::string::npos) << "does not name the call " << call;
  EXPECT_NE(s.find(arg), std::string::npos) << "does not name the argument " << arg;
  if (!value.empty()) {
    EXPECT_NE(s.find(value), std::string::npos) << "does not give the value " << value;
  }
}

std::vector<uint8_t> pattern(int src, int k, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(src * 37 + k * 11 + i * 7 + 1);
  return v;
}

// ---- The send calls, blocking and nonblocking ----------------------------------------

using SendCall = std::function<int(const void*, int, MPI_Datatype, int, int, EP_Comm)>;
struct SendFn {
  const char* name;
  SendCall fn;
};

SendCall nonblocking(int (*f)(const void*, int, MPI_Datatype, int, int, EP_Comm, EP_Request*)) {
  return [f](const void* b, int c, MPI_Datatype t, int d, int tag, EP_Comm comm) {
    EP_Request r = EP_REQUEST_NULL;
    int rc = f(b, c, t, d, tag, comm, &r);
    if (rc == EP_SUCCESS) EP_Wait(&r, EP_STATUS_IGNORE);  // not expected: test fails anyway
    return rc;
  };
}

const std::vector<SendFn>& send_fns() {
  static const std::vector<SendFn> fns = {
      {"EP_Send", EP_Send},
      {"EP_Bsend", EP_Bsend},
      {"EP_Ssend", EP_Ssend},
      {"EP_Rsend", EP_Rsend},
      {"EP_Isend", nonblocking(EP_Isend)},
      {"EP_Ibsend", nonblocking(EP_Ibsend)},
      {"EP_Issend", nonblocking(EP_Issend)},
      {"EP_Irsend", nonblocking(EP_Irsend)},
  };
  return fns;
}

// The send half of EP_Sendrecv / EP_Sendrecv_replace (the receive half is from
// EP_PROC_NULL, so it completes at once).
const std::vector<SendFn>& sendrecv_fns() {
  static const std::vector<SendFn> fns = {
      {"EP_Sendrecv",
       [](const void* b, int c, MPI_Datatype t, int d, int tag, EP_Comm comm) {
         int in = 0;
         return EP_Sendrecv(b, c, t, d, tag, &in, 1, MPI_INT, EP_PROC_NULL, 0, comm,
                            EP_STATUS_IGNORE);
       }},
      {"EP_Sendrecv_replace",
       [](const void* b, int c, MPI_Datatype t, int d, int tag, EP_Comm comm) {
         return EP_Sendrecv_replace(const_cast<void*>(b), c, t, d, tag, EP_PROC_NULL, 0, comm,
                                    EP_STATUS_IGNORE);
       }},
  };
  return fns;
}

// Runs `check(fn, comm)` for every send call on an endpoints communicator.
void for_each_send(const std::vector<SendFn>& fns,
                   const std::function<void(const SendFn&, EP_Comm, int rank, int size)>& check) {
  ep_test::run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    for (const SendFn& f : fns) check(f, comm, rank, size);
  });
}

TEST(SendErrors, DestEqualToSizeIsErrRankNamingCallAndArgument) {
  for_each_send(send_fns(), [](const SendFn& f, EP_Comm comm, int, int size) {
    int v = 1;
    expect_error(f.fn(&v, 1, MPI_INT, size, 0, comm), EP_ERR_RANK, f.name, "dest",
                 std::to_string(size));
  });
}

TEST(SendErrors, DestFarAboveSizeIsErrRank) {
  for_each_send(send_fns(), [](const SendFn& f, EP_Comm comm, int, int size) {
    int v = 1;
    expect_error(f.fn(&v, 1, MPI_INT, size + 1000, 0, comm), EP_ERR_RANK, f.name, "dest",
                 std::to_string(size + 1000));
  });
}

TEST(SendErrors, NegativeDestIsErrRank) {
  for_each_send(send_fns(), [](const SendFn& f, EP_Comm comm, int, int) {
    int v = 1;
    expect_error(f.fn(&v, 1, MPI_INT, -7, 0, comm), EP_ERR_RANK, f.name, "dest", "-7");
  });
}

TEST(SendErrors, AnySourceAsDestIsErrRank) {
  for_each_send(send_fns(), [](const SendFn& f, EP_Comm comm, int, int) {
    int v = 1;
    expect_error(f.fn(&v, 1, MPI_INT, EP_ANY_SOURCE, 0, comm), EP_ERR_RANK, f.name, "dest",
                 "EP_ANY_SOURCE");
  });
}

TEST(SendErrors, NegativeTagIsErrTagNamingCallAndArgument) {
  for_each_send(send_fns(), [](const SendFn& f, EP_Comm comm, int rank, int) {
    int v = 1;
    expect_error(f.fn(&v, 1, MPI_INT, rank, -5, comm), EP_ERR_TAG, f.name, "tag", "-5");
  });
}

TEST(SendErrors, TagAboveTagUbIsErrTag) {
  for_each_send(send_fns(), [](const SendFn& f, EP_Comm comm, int rank, int) {
    int ub = 0;
    ASSERT_EQ(EP_Comm_tag_ub(comm, &ub), EP_SUCCESS);
    ASSERT_GE(ub, 32767);
    ASSERT_LT(ub, INT32_MAX);
    int v = 1;
    expect_error(f.fn(&v, 1, MPI_INT, rank, ub + 1, comm), EP_ERR_TAG, f.name, "tag",
                 std::to_string(ub + 1));
  });
}

TEST(SendErrors, AnyTagOnSendIsErrTag) {
  for_each_send(send_fns(), [](const SendFn& f, EP_Comm comm, int rank, int) {
    int v = 1;
    expect_error(f.fn(&v, 1, MPI_INT, rank, EP_ANY_TAG, comm), EP_ERR_TAG, f.name, "tag",
                 "EP_ANY_TAG");
  });
}

TEST(SendErrors, NegativeCountIsErrCount) {
  for_each_send(send_fns(), [](const SendFn& f, EP_Comm comm, int rank, int) {
    int v = 1;
    expect_error(f.fn(&v, -3, MPI_INT, rank, 0, comm), EP_ERR_COUNT, f.name, "count", "-3");
  });
}

TEST(SendErrors, NullDatatypeIsErrType) {
  for_each_send(send_fns(), [](const SendFn& f, EP_Comm comm, int rank, int) {
    int v = 1;
    expect_error(f.fn(&v, 1, MPI_DATATYPE_NULL, rank, 0, comm), EP_ERR_TYPE, f.name,
                 "datatype");
  });
}

TEST(SendErrors, NullBufferWithPositiveCountIsErrBuffer) {
  for_each_send(send_fns(), [](const SendFn& f, EP_Comm comm, int rank, int) {
    expect_error(f.fn(nullptr, 4, MPI_INT, rank, 0, comm), EP_ERR_BUFFER, f.name, "buffer");
  });
}

TEST(SendErrors, NullCommIsErrCommWhateverTheHandler) {
  // No communicator, no handler: the code is returned (the job must not abort).
  for (const SendFn& f : send_fns()) {
    int v = 1;
    expect_error(f.fn(&v, 1, MPI_INT, 0, 0, EP_COMM_NULL), EP_ERR_COMM, f.name, "communicator",
                 "EP_COMM_NULL");
  }
}

TEST(SendErrors, FreedCommIsErrComm) {
  ep_test::run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    EP_Comm dup = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(comm, &dup), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_free(&dup), EP_SUCCESS);
    EXPECT_EQ(dup, EP_COMM_NULL);
    int v = 1;
    expect_error(EP_Send(&v, 1, MPI_INT, 0, 0, dup), EP_ERR_COMM, "EP_Send", "communicator");
  });
}

TEST(SendErrors, MisalignedCommIsErrCommEvenIfItsFirstWordIsAnEndpointsKind) {
  ep_test::run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    // The endpoint's kind word, copied where no endpoint can lie (8 bytes into a 64-byte
    // aligned block): the handle is refused before anything there is read.
    alignas(64) unsigned char fake[256] = {};
    std::memcpy(fake + 8, reinterpret_cast<const void*>(comm), sizeof(uint32_t));
    int v = 1;
    expect_error(EP_Send(&v, 1, MPI_INT, 0, 0, reinterpret_cast<EP_Comm>(fake + 8)),
                 EP_ERR_COMM, "EP_Send", "communicator");
  });
}

TEST(SendErrors, NullRequestPointerIsErrArg) {
  ep_test::run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int rank = 0, v = 1;
    EP_Comm_rank(comm, &rank);
    expect_error(EP_Isend(&v, 1, MPI_INT, rank, 0, comm, nullptr), EP_ERR_ARG, "EP_Isend",
                 "request");
    expect_error(EP_Irecv(&v, 1, MPI_INT, rank, 0, comm, nullptr), EP_ERR_ARG, "EP_Irecv",
                 "request");
  });
}

TEST(SendErrors, NullBufferWithZeroCountIsAllowed) {
  ep_test::run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    EP_Request r;
    ASSERT_EQ(EP_Irecv(nullptr, 0, MPI_INT, left, 6, comm, &r), EP_SUCCESS);
    ASSERT_EQ(EP_Send(nullptr, 0, MPI_INT, right, 6, comm), EP_SUCCESS);
    EP_Status st;
    ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
    EXPECT_EQ(st.EP_SOURCE, left);
    int count = -1;
    EP_Get_count(&st, MPI_INT, &count);
    EXPECT_EQ(count, 0);
  });
}

// EP_Sendrecv and EP_Sendrecv_replace must name themselves, not an internal call.
TEST(SendrecvErrors, BadDestIsErrRankNamingTheSendrecvCall) {
  for_each_send(sendrecv_fns(), [](const SendFn& f, EP_Comm comm, int, int size) {
    int v = 1;
    expect_error(f.fn(&v, 1, MPI_INT, size + 3, 0, comm), EP_ERR_RANK, f.name, "dest",
                 std::to_string(size + 3));
  });
}

TEST(SendrecvErrors, BadSendTagIsErrTagNamingTheSendrecvCall) {
  for_each_send(sendrecv_fns(), [](const SendFn& f, EP_Comm comm, int rank, int) {
    int v = 1;
    expect_error(f.fn(&v, 1, MPI_INT, rank, -9, comm), EP_ERR_TAG, f.name, "tag", "-9");
  });
}

TEST(SendrecvErrors, NegativeCountIsErrCountNamingTheSendrecvCall) {
  for_each_send(sendrecv_fns(), [](const SendFn& f, EP_Comm comm, int rank, int) {
    int v = 1;
    expect_error(f.fn(&v, -2, MPI_INT, rank, 0, comm), EP_ERR_COUNT, f.name, "count", "-2");
  });
}

// ---- Receives and probes ----------------------------------------------------------------

using RecvCall = std::function<int(void*, int, MPI_Datatype, int, int, EP_Comm)>;
struct RecvFn {
  const char* name;
  RecvCall fn;
  bool has_buffer;
};

const std::vector<RecvFn>& recv_fns() {
  static const std::vector<RecvFn> fns = {
      {"EP_Recv",
       [](void* b, int c, MPI_Datatype t, int s, int tag, EP_Comm comm) {
         return EP_Recv(b, c, t, s, tag, comm, EP_STATUS_IGNORE);
       },
       true},
      {"EP_Irecv",
       [](void* b, int c, MPI_Datatype t, int s, int tag, EP_Comm comm) {
         EP_Request r = EP_REQUEST_NULL;
         int rc = EP_Irecv(b, c, t, s, tag, comm, &r);
         if (rc == EP_SUCCESS) {  // not expected; do not leave a receive behind
           EP_Cancel(&r);
           EP_Wait(&r, EP_STATUS_IGNORE);
         }
         return rc;
       },
       true},
      {"EP_Iprobe",
       [](void*, int, MPI_Datatype, int s, int tag, EP_Comm comm) {
         int flag = 0;
         return EP_Iprobe(s, tag, comm, &flag, EP_STATUS_IGNORE);
       },
       false},
      {"EP_Improbe",
       [](void*, int, MPI_Datatype, int s, int tag, EP_Comm comm) {
         int flag = 0;
         EP_Message m = EP_MESSAGE_NULL;
         return EP_Improbe(s, tag, comm, &flag, &m, EP_STATUS_IGNORE);
       },
       false},
  };
  return fns;
}

// The blocking probes: a bad argument must be reported at once (not waited on), and the
// message must name the call the user made.
const std::vector<RecvFn>& blocking_probe_fns() {
  static const std::vector<RecvFn> fns = {
      {"EP_Probe",
       [](void*, int, MPI_Datatype, int s, int tag, EP_Comm comm) {
         return EP_Probe(s, tag, comm, EP_STATUS_IGNORE);
       },
       false},
      {"EP_Mprobe",
       [](void*, int, MPI_Datatype, int s, int tag, EP_Comm comm) {
         EP_Message m = EP_MESSAGE_NULL;
         return EP_Mprobe(s, tag, comm, &m, EP_STATUS_IGNORE);
       },
       false},
  };
  return fns;
}

void for_each_recv(const std::function<void(const RecvFn&, EP_Comm, int rank, int size)>& check,
                   const std::vector<RecvFn>& fns = recv_fns()) {
  ep_test::run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    for (const RecvFn& f : fns) check(f, comm, rank, size);
  });
}

TEST(RecvErrors, SourceEqualToSizeIsErrRankNamingCallAndArgument) {
  for_each_recv([](const RecvFn& f, EP_Comm comm, int, int size) {
    int v = 0;
    expect_error(f.fn(&v, 1, MPI_INT, size, 0, comm), EP_ERR_RANK, f.name, "source",
                 std::to_string(size));
  });
}

TEST(RecvErrors, NegativeSourceIsErrRank) {
  for_each_recv([](const RecvFn& f, EP_Comm comm, int, int) {
    int v = 0;
    expect_error(f.fn(&v, 1, MPI_INT, -9, 0, comm), EP_ERR_RANK, f.name, "source", "-9");
  });
}

TEST(RecvErrors, NegativeTagOtherThanAnyTagIsErrTag) {
  for_each_recv([](const RecvFn& f, EP_Comm comm, int rank, int) {
    int v = 0;
    expect_error(f.fn(&v, 1, MPI_INT, rank, -4, comm), EP_ERR_TAG, f.name, "tag", "-4");
  });
}

TEST(RecvErrors, TagAboveTagUbIsErrTag) {
  for_each_recv([](const RecvFn& f, EP_Comm comm, int rank, int) {
    int ub = 0;
    ASSERT_EQ(EP_Comm_tag_ub(comm, &ub), EP_SUCCESS);
    int v = 0;
    expect_error(f.fn(&v, 1, MPI_INT, rank, ub + 1, comm), EP_ERR_TAG, f.name, "tag",
                 std::to_string(ub + 1));
  });
}

TEST(RecvErrors, NegativeCountIsErrCount) {
  for_each_recv([](const RecvFn& f, EP_Comm comm, int rank, int) {
    if (!f.has_buffer) return;
    int v = 0;
    expect_error(f.fn(&v, -6, MPI_INT, rank, 0, comm), EP_ERR_COUNT, f.name, "count", "-6");
  });
}

TEST(RecvErrors, NullDatatypeIsErrType) {
  for_each_recv([](const RecvFn& f, EP_Comm comm, int rank, int) {
    if (!f.has_buffer) return;
    int v = 0;
    expect_error(f.fn(&v, 1, MPI_DATATYPE_NULL, rank, 0, comm), EP_ERR_TYPE, f.name, "datatype");
  });
}

TEST(RecvErrors, NullBufferWithPositiveCountIsErrBuffer) {
  for_each_recv([](const RecvFn& f, EP_Comm comm, int rank, int) {
    if (!f.has_buffer) return;
    expect_error(f.fn(nullptr, 2, MPI_INT, rank, 0, comm), EP_ERR_BUFFER, f.name, "buffer");
  });
}

TEST(RecvErrors, NullCommIsErrComm) {
  for (const RecvFn& f : recv_fns()) {
    int v = 0;
    expect_error(f.fn(&v, 1, MPI_INT, 0, 0, EP_COMM_NULL), EP_ERR_COMM, f.name, "communicator",
                 "EP_COMM_NULL");
  }
}

TEST(BlockingProbeErrors, BadSourceIsErrRankAtOnceNamingTheBlockingCall) {
  for_each_recv(
      [](const RecvFn& f, EP_Comm comm, int, int size) {
        expect_error(f.fn(nullptr, 0, MPI_INT, size + 4, 0, comm), EP_ERR_RANK, f.name,
                     "source", std::to_string(size + 4));
      },
      blocking_probe_fns());
}

TEST(BlockingProbeErrors, BadTagIsErrTagAtOnceNamingTheBlockingCall) {
  for_each_recv(
      [](const RecvFn& f, EP_Comm comm, int rank, int) {
        expect_error(f.fn(nullptr, 0, MPI_INT, rank, -8, comm), EP_ERR_TAG, f.name, "tag", "-8");
      },
      blocking_probe_fns());
}

TEST(BlockingProbeErrors, NullCommIsErrCommNamingTheBlockingCall) {
  for (const RecvFn& f : blocking_probe_fns()) {
    expect_error(f.fn(nullptr, 0, MPI_INT, 0, 0, EP_COMM_NULL), EP_ERR_COMM, f.name,
                 "communicator", "EP_COMM_NULL");
  }
}

// ---- Requests -----------------------------------------------------------------------------

TEST(RequestErrors, RequestFreeTwiceIsErrRequest) {
  ep_test::run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int rank = 0, v = 17, got = 0;
    EP_Comm_rank(comm, &rank);
    EP_Request r = EP_REQUEST_NULL;
    ASSERT_EQ(EP_Isend(&v, 1, MPI_INT, rank, 2, comm, &r), EP_SUCCESS);
    ASSERT_EQ(EP_Request_free(&r), EP_SUCCESS);
    EXPECT_EQ(r, EP_REQUEST_NULL);
    expect_error(EP_Request_free(&r), EP_ERR_REQUEST, "EP_Request_free", "request",
                 "EP_REQUEST_NULL");
    // The freed send still delivers.
    ASSERT_EQ(EP_Recv(&got, 1, MPI_INT, rank, 2, comm, EP_STATUS_IGNORE), EP_SUCCESS);
    EXPECT_EQ(got, 17);
  });
}

TEST(RequestErrors, CancelOfNullRequestIsErrRequest) {
  EP_Request r = EP_REQUEST_NULL;
  expect_error(EP_Cancel(&r), EP_ERR_REQUEST, "EP_Cancel", "request", "EP_REQUEST_NULL");
}

void expect_empty_status(const EP_Status& st, const char* where) {
  EXPECT_EQ(st.EP_SOURCE, EP_ANY_SOURCE) << where;
  EXPECT_EQ(st.EP_TAG, EP_ANY_TAG) << where;
  int count = -1;
  EXPECT_EQ(EP_Get_count(&st, MPI_INT, &count), EP_SUCCESS);
  EXPECT_EQ(count, 0) << where;
  int cancelled = -1;
  EXPECT_EQ(EP_Test_cancelled(&st, &cancelled), EP_SUCCESS);
  EXPECT_EQ(cancelled, 0) << where;
}

EP_Status garbage_status() {
  EP_Status st;
  std::memset(&st, 0x5a, sizeof(st));
  return st;
}

TEST(RequestErrors, WaitOfNullRequestSucceedsWithEmptyStatus) {
  EP_Request r = EP_REQUEST_NULL;
  EP_Status st = garbage_status();
  ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
  expect_empty_status(st, "EP_Wait");

  int flag = 0;
  st = garbage_status();
  ASSERT_EQ(EP_Test(&r, &flag, &st), EP_SUCCESS);
  EXPECT_EQ(flag, 1);
  expect_empty_status(st, "EP_Test");

  flag = 0;
  st = garbage_status();
  ASSERT_EQ(EP_Request_get_status(EP_REQUEST_NULL, &flag, &st), EP_SUCCESS);
  EXPECT_EQ(flag, 1);
  expect_empty_status(st, "EP_Request_get_status");

  EP_Request reqs[3] = {EP_REQUEST_NULL, EP_REQUEST_NULL, EP_REQUEST_NULL};
  EP_Status sts[3] = {garbage_status(), garbage_status(), garbage_status()};
  ASSERT_EQ(EP_Waitall(3, reqs, sts), EP_SUCCESS);
  for (auto& s : sts) expect_empty_status(s, "EP_Waitall");

  int index = 0;
  st = garbage_status();
  ASSERT_EQ(EP_Waitany(3, reqs, &index, &st), EP_SUCCESS);
  EXPECT_EQ(index, EP_UNDEFINED);
  expect_empty_status(st, "EP_Waitany");

  int outcount = 0, indices[3];
  ASSERT_EQ(EP_Waitsome(3, reqs, &outcount, indices, sts), EP_SUCCESS);
  EXPECT_EQ(outcount, EP_UNDEFINED);
  ASSERT_EQ(EP_Testsome(3, reqs, &outcount, indices, sts), EP_SUCCESS);
  EXPECT_EQ(outcount, EP_UNDEFINED);
  flag = 0;
  ASSERT_EQ(EP_Testany(3, reqs, &index, &flag, &st), EP_SUCCESS);
  EXPECT_EQ(flag, 1);
  EXPECT_EQ(index, EP_UNDEFINED);
}

// MPI 3.1 section 3.2.5: EP_ERROR is written only by the multi-completion calls, and only
// when they return EP_ERR_IN_STATUS; every other call that fills a status leaves it as
// the caller set it (API.md, clarifications).  Each endpoint receives from its left
// neighbour (another process when there are several) with every receive and probe form.
TEST(StatusError, OnlyMultiCompletionCallsReturningErrInStatusWriteEpError) {
  ep_test::run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    constexpr int kSentinel = 0x7eadbeef;
    const int kMsgs = 10;  // tags 60..69, each received once below
    std::vector<int> out(kMsgs);
    for (int i = 0; i < kMsgs; ++i) out[i] = rank * 100 + i;
    std::vector<EP_Request> sends(kMsgs);
    for (int i = 0; i < kMsgs; ++i) {
      ASSERT_EQ(EP_Isend(&out[i], 1, MPI_INT, right, 60 + i, comm, &sends[i]), EP_SUCCESS);
    }
    auto fresh = [] {
      EP_Status st{};
      st.EP_ERROR = kSentinel;
      return st;
    };
    int v = -1, flag = 0;
    EP_Status st = fresh();
    ASSERT_EQ(EP_Recv(&v, 1, MPI_INT, left, 60, comm, &st), EP_SUCCESS);
    EXPECT_EQ(v, left * 100);
    EXPECT_EQ(st.EP_SOURCE, left);
    EXPECT_EQ(st.EP_ERROR, kSentinel) << "EP_Recv";
    st = fresh();
    ASSERT_EQ(EP_Probe(left, 61, comm, &st), EP_SUCCESS);
    EXPECT_EQ(st.EP_TAG, 61);
    EXPECT_EQ(st.EP_ERROR, kSentinel) << "EP_Probe";
    st = fresh();
    do {
      ASSERT_EQ(EP_Iprobe(left, 61, comm, &flag, &st), EP_SUCCESS);
    } while (!flag);
    EXPECT_EQ(st.EP_ERROR, kSentinel) << "EP_Iprobe";
    EP_Message msg = EP_MESSAGE_NULL;
    st = fresh();
    ASSERT_EQ(EP_Mprobe(left, 61, comm, &msg, &st), EP_SUCCESS);
    EXPECT_EQ(st.EP_ERROR, kSentinel) << "EP_Mprobe";
    st = fresh();
    ASSERT_EQ(EP_Mrecv(&v, 1, MPI_INT, &msg, &st), EP_SUCCESS);
    EXPECT_EQ(v, left * 100 + 1);
    EXPECT_EQ(st.EP_ERROR, kSentinel) << "EP_Mrecv";
    st = fresh();
    do {
      ASSERT_EQ(EP_Improbe(left, 62, comm, &flag, &msg, &st), EP_SUCCESS);
    } while (!flag);
    EXPECT_EQ(st.EP_ERROR, kSentinel) << "EP_Improbe";
    EP_Request r = EP_REQUEST_NULL;
    ASSERT_EQ(EP_Imrecv(&v, 1, MPI_INT, &msg, &r), EP_SUCCESS);
    st = fresh();
    ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
    EXPECT_EQ(st.EP_ERROR, kSentinel) << "EP_Wait";
    ASSERT_EQ(EP_Irecv(&v, 1, MPI_INT, left, 63, comm, &r), EP_SUCCESS);
    st = fresh();
    do {
      ASSERT_EQ(EP_Test(&r, &flag, &st), EP_SUCCESS);
    } while (!flag);
    EXPECT_EQ(v, left * 100 + 3);
    EXPECT_EQ(st.EP_ERROR, kSentinel) << "EP_Test";
    ASSERT_EQ(EP_Irecv(&v, 1, MPI_INT, left, 64, comm, &r), EP_SUCCESS);
    st = fresh();
    int index = -1;
    ASSERT_EQ(EP_Waitany(1, &r, &index, &st), EP_SUCCESS);
    EXPECT_EQ(st.EP_ERROR, kSentinel) << "EP_Waitany";
    ASSERT_EQ(EP_Irecv(&v, 1, MPI_INT, left, 65, comm, &r), EP_SUCCESS);
    st = fresh();
    ASSERT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
    st = fresh();
    ASSERT_EQ(EP_Request_get_status(EP_REQUEST_NULL, &flag, &st), EP_SUCCESS);
    EXPECT_EQ(st.EP_ERROR, kSentinel) << "EP_Request_get_status";
    st = fresh();
    ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);  // a null request: an empty status
    EXPECT_EQ(st.EP_ERROR, kSentinel) << "EP_Wait of EP_REQUEST_NULL";
    // A successful EP_Waitall, EP_Testall, EP_Waitsome: EP_ERROR untouched.
    EP_Request two[2];
    int vv[2];
    ASSERT_EQ(EP_Irecv(&vv[0], 1, MPI_INT, left, 66, comm, &two[0]), EP_SUCCESS);
    ASSERT_EQ(EP_Irecv(&vv[1], 1, MPI_INT, left, 67, comm, &two[1]), EP_SUCCESS);
    EP_Status sts[2] = {fresh(), fresh()};
    ASSERT_EQ(EP_Waitall(2, two, sts), EP_SUCCESS);
    EXPECT_EQ(sts[0].EP_ERROR, kSentinel) << "EP_Waitall";
    EXPECT_EQ(sts[1].EP_ERROR, kSentinel) << "EP_Waitall";
    EXPECT_EQ(sts[1].EP_TAG, 67);
    ASSERT_EQ(EP_Irecv(&vv[0], 1, MPI_INT, left, 68, comm, &two[0]), EP_SUCCESS);
    sts[0] = fresh();
    int outcount = 0, indices[2];
    do {
      ASSERT_EQ(EP_Testsome(1, two, &outcount, indices, sts), EP_SUCCESS);
    } while (outcount == 0);
    EXPECT_EQ(sts[0].EP_ERROR, kSentinel) << "EP_Testsome";
    // A failing EP_Waitall writes every status's EP_ERROR, EP_SUCCESS included.
    int small_in = 0;
    ASSERT_EQ(EP_Irecv(&vv[0], 1, MPI_INT, left, 69, comm, &two[0]), EP_SUCCESS);
    ASSERT_EQ(EP_Irecv(&small_in, 0, MPI_INT, left, 75, comm, &two[1]), EP_SUCCESS);
    int big_out[2] = {1, 2};
    EP_Request extra;
    ASSERT_EQ(EP_Isend(big_out, 2, MPI_INT, right, 75, comm, &extra), EP_SUCCESS);
    sts[0] = fresh();
    sts[1] = fresh();
    EXPECT_EQ(EP_Waitall(2, two, sts), EP_ERR_IN_STATUS);
    EXPECT_EQ(sts[0].EP_ERROR, EP_SUCCESS);
    EXPECT_EQ(sts[1].EP_ERROR, EP_ERR_TRUNCATE);
    ASSERT_EQ(EP_Waitall(kMsgs, sends.data(), EP_STATUSES_IGNORE), EP_SUCCESS);
    ASSERT_EQ(EP_Wait(&extra, EP_STATUS_IGNORE), EP_SUCCESS);
  });
}

TEST(ErrorString, CodeThatIsNoEpCodeIsErrArg) {
  char s[EP_MAX_ERROR_STRING];
  int len = 0;
  for (int code : {-1, static_cast<int>(EP_ERR_LASTCODE), 12345, INT32_MIN}) {
    expect_error(EP_Error_string(code, s, &len), EP_ERR_ARG, "EP_Error_string", "code",
                 std::to_string(code));
  }
  ASSERT_EQ(EP_Error_string(EP_ERR_OTHER, s, &len), EP_SUCCESS);
  ASSERT_EQ(EP_Error_string(EP_SUCCESS, s, &len), EP_SUCCESS);
  EXPECT_NE(std::string(s, len).find("EP_SUCCESS"), std::string::npos);
}

TEST(RequestErrors, NegativeArrayLengthIsErrCount) {
  EP_Request reqs[1] = {EP_REQUEST_NULL};
  EP_Status sts[1];
  int flag = 0, index = 0, outcount = 0, indices[1];
  expect_error(EP_Waitall(-1, reqs, sts), EP_ERR_COUNT, "EP_Waitall", "count", "-1");
  expect_error(EP_Testall(-2, reqs, &flag, sts), EP_ERR_COUNT, "EP_Testall", "count", "-2");
  expect_error(EP_Testany(-4, reqs, &index, &flag, sts), EP_ERR_COUNT, "EP_Testany", "count",
               "-4");
  expect_error(EP_Testsome(-6, reqs, &outcount, indices, sts), EP_ERR_COUNT, "EP_Testsome",
               "count", "-6");
}

TEST(RequestErrors, NegativeArrayLengthInWaitanyAndWaitsomeIsErrCountNamingThatCall) {
  EP_Request reqs[1] = {EP_REQUEST_NULL};
  EP_Status sts[1];
  int index = 0, outcount = 0, indices[1];
  expect_error(EP_Waitany(-3, reqs, &index, sts), EP_ERR_COUNT, "EP_Waitany", "count", "-3");
  expect_error(EP_Waitsome(-5, reqs, &outcount, indices, sts), EP_ERR_COUNT, "EP_Waitsome",
               "count", "-5");
}

// ---- Truncation -----------------------------------------------------------------------------

// Every endpoint sends to every endpoint (itself, its process's others and, with more
// than one process, remote ones) one small (eager) and one large (> 16 KiB eager limit,
// rendezvous) message; every receive is too small.
TEST(Truncation, TooSmallRecvIsErrTruncateAndDeliversTheFirstBytes) {
  const size_t kSmall = 100, kLarge = 64 * 1024 + 3;
  const int kSmallCap = 10, kLargeCap = 20000;
  ep_test::run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    std::vector<std::vector<uint8_t>> out;
    std::vector<EP_Request> sends;
    for (int d = 0; d < size; ++d) {
      out.push_back(pattern(rank, d, kSmall));
      out.push_back(pattern(rank, d + 1000, kLarge));
    }
    for (int d = 0; d < size; ++d) {
      EP_Request r;
      ASSERT_EQ(EP_Isend(out[2 * d].data(), kSmall, MPI_BYTE, d, 21, comm, &r), EP_SUCCESS);
      sends.push_back(r);
      ASSERT_EQ(EP_Isend(out[2 * d + 1].data(), kLarge, MPI_BYTE, d, 22, comm, &r), EP_SUCCESS);
      sends.push_back(r);
    }
    for (int s = 0; s < size; ++s) {
      for (int large = 0; large < 2; ++large) {
        const int cap = large ? kLargeCap : kSmallCap;
        std::vector<uint8_t> in(cap + 16, 0xee);
        EP_Status st = garbage_status();
        int rc = EP_Recv(in.data(), cap, MPI_BYTE, s, large ? 22 : 21, comm, &st);
        std::string where = "from " + std::to_string(s) + (large ? " large" : " small");
        expect_error(rc, EP_ERR_TRUNCATE, "EP_Recv", "count", std::to_string(cap), where);
        auto want = pattern(s, large ? rank + 1000 : rank, cap);
        EXPECT_TRUE(std::equal(want.begin(), want.end(), in.begin())) << where;
        for (size_t i = cap; i < in.size(); ++i) {
          ASSERT_EQ(in[i], 0xee) << "overrun at byte " << i << " " << where;
        }
        EXPECT_EQ(st.EP_SOURCE, s) << where;
        EXPECT_EQ(st.EP_TAG, large ? 22 : 21) << where;
        // Returned, not written into the status (MPI 3.1 section 3.2.5).
        EXPECT_EQ(st.EP_ERROR, garbage_status().EP_ERROR) << where;
      }
    }
    std::vector<EP_Status> sts(sends.size());
    EXPECT_EQ(EP_Waitall(static_cast<int>(sends.size()), sends.data(), sts.data()), EP_SUCCESS)
        << "a truncated receive must not fail its sender";
  });
}

TEST(Truncation, IrecvWaitIsErrTruncateAcrossProcesses) {
  // Ring: with more than one process, the right neighbour of the last endpoint of each
  // process is in another process.
  ep_test::run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (size_t n : {size_t{64}, size_t{40000}}) {
      auto out = pattern(rank, static_cast<int>(n), n);
      std::vector<uint8_t> in(n, 0xee);
      EP_Request rr, sr;
      const int cap = static_cast<int>(n / 2);
      ASSERT_EQ(EP_Irecv(in.data(), cap, MPI_BYTE, left, 23, comm, &rr), EP_SUCCESS);
      ASSERT_EQ(EP_Isend(out.data(), static_cast<int>(n), MPI_BYTE, right, 23, comm, &sr),
                EP_SUCCESS);
      EP_Status st = garbage_status();
      expect_error(EP_Wait(&rr, &st), EP_ERR_TRUNCATE, "EP_Wait", "buffer", "", std::to_string(n));
      EXPECT_EQ(rr, EP_REQUEST_NULL);
      EXPECT_EQ(st.EP_ERROR, garbage_status().EP_ERROR);  // returned, not written
      EXPECT_EQ(st.EP_SOURCE, left);
      auto want = pattern(left, static_cast<int>(n), cap);
      EXPECT_TRUE(std::equal(want.begin(), want.end(), in.begin())) << n;
      for (size_t i = cap; i < n; ++i) ASSERT_EQ(in[i], 0xee) << "overrun at " << i;
      EXPECT_EQ(EP_Wait(&sr, EP_STATUS_IGNORE), EP_SUCCESS);
    }
  });
}

TEST(Truncation, WaitallReportsErrInStatusWithTruncateInThatStatus) {
  ep_test::run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int big[4] = {1, 2, 3, 4}, ok = 9;
    int small_in[2] = {0, 0}, ok_in = 0;
    EP_Request reqs[4];
    ASSERT_EQ(EP_Irecv(&ok_in, 1, MPI_INT, left, 24, comm, &reqs[0]), EP_SUCCESS);
    ASSERT_EQ(EP_Irecv(small_in, 2, MPI_INT, left, 25, comm, &reqs[1]), EP_SUCCESS);
    ASSERT_EQ(EP_Isend(&ok, 1, MPI_INT, right, 24, comm, &reqs[2]), EP_SUCCESS);
    ASSERT_EQ(EP_Isend(big, 4, MPI_INT, right, 25, comm, &reqs[3]), EP_SUCCESS);
    EP_Status sts[4];
    EXPECT_EQ(EP_Waitall(4, reqs, sts), EP_ERR_IN_STATUS);
    EXPECT_EQ(sts[0].EP_ERROR, EP_SUCCESS);
    EXPECT_EQ(sts[1].EP_ERROR, EP_ERR_TRUNCATE);
    EXPECT_EQ(sts[2].EP_ERROR, EP_SUCCESS);
    EXPECT_EQ(sts[3].EP_ERROR, EP_SUCCESS);
    EXPECT_EQ(ok_in, 9);
    EXPECT_EQ(small_in[0], 1);
    EXPECT_EQ(small_in[1], 2);
    for (auto& r : reqs) EXPECT_EQ(r, EP_REQUEST_NULL);
  });
}

// ---- Concurrent entry ---------------------------------------------------------------------------

// Thread A blocks in EP_Recv on endpoint E; thread B then enters E and must be refused
// with EP_ERR_CONCURRENT (A's call is not disturbed); B releases A with a message from
// endpoint F.  Afterwards E works normally.
TEST(Concurrent, SecondThreadOnBusyEndpointGetsErrConcurrent) {
  EP_Comm comms[2];
  ASSERT_EQ(EP_Comm_create_endpoints(MPI_COMM_WORLD, 2, MPI_INFO_NULL, comms), EP_SUCCESS);
  for (EP_Comm c : comms) ASSERT_EQ(EP_Comm_set_errhandler(c, EP_ERRORS_RETURN), EP_SUCCESS);
  const EP_Comm E = comms[0], F = comms[1];
  int e_rank = 0, f_rank = 0;
  EP_Comm_rank(E, &e_rank);
  EP_Comm_rank(F, &f_rank);

  std::atomic<bool> a_calling{false};
  int a_rc = -1, a_got = 0, a_retries = 0;
  EP_Status a_st;
  std::thread a([&] {
    a_calling.store(true);
    do {
      a_rc = EP_Recv(&a_got, 1, MPI_INT, f_rank, 11, E, &a_st);
      if (a_rc == EP_ERR_CONCURRENT) ++a_retries;  // B was inside its probe: retry
    } while (a_rc == EP_ERR_CONCURRENT && a_retries < 100000);
  });

  std::thread b([&] {
    while (!a_calling.load()) std::this_thread::yield();
    // Probe E until the probe is refused: then A is inside EP_Recv (it cannot leave it:
    // the message it waits for is sent below).
    int rc = EP_SUCCESS, flag = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      rc = EP_Iprobe(EP_ANY_SOURCE, 999, E, &flag, EP_STATUS_IGNORE);
      if (rc != EP_SUCCESS) break;
      EXPECT_EQ(flag, 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    expect_error(rc, EP_ERR_CONCURRENT, "EP_Iprobe", "endpoint", std::to_string(e_rank));
    int v = 5, flag2 = 0;
    expect_error(EP_Send(&v, 1, MPI_INT, f_rank, 12, E), EP_ERR_CONCURRENT, "EP_Send",
                 "endpoint");
    EP_Request r = EP_REQUEST_NULL;
    expect_error(EP_Isend(&v, 1, MPI_INT, f_rank, 12, E, &r), EP_ERR_CONCURRENT, "EP_Isend",
                 "endpoint");
    EXPECT_EQ(r, EP_REQUEST_NULL);
    expect_error(EP_Irecv(&v, 1, MPI_INT, f_rank, 12, E, &r), EP_ERR_CONCURRENT, "EP_Irecv",
                 "endpoint");
    expect_error(EP_Recv(&v, 1, MPI_INT, f_rank, 12, E, EP_STATUS_IGNORE), EP_ERR_CONCURRENT,
                 "EP_Recv", "endpoint");
    expect_error(EP_Iprobe(f_rank, 11, E, &flag2, EP_STATUS_IGNORE), EP_ERR_CONCURRENT,
                 "EP_Iprobe", "endpoint");
    int rank = -1;
    expect_error(EP_Comm_rank(E, &rank), EP_ERR_CONCURRENT, "EP_Comm_rank", "endpoint");
    EP_Comm e_copy = E;
    expect_error(EP_Comm_free(&e_copy), EP_ERR_CONCURRENT, "EP_Comm_free", "endpoint");
    EXPECT_EQ(e_copy, E) << "a refused EP_Comm_free must not free the handle";
    // F is another endpoint: fully usable meanwhile.  Release A.
    int msg = 4242;
    EXPECT_EQ(EP_Send(&msg, 1, MPI_INT, e_rank, 11, F), EP_SUCCESS);
  });
  b.join();
  a.join();
  EXPECT_EQ(a_rc, EP_SUCCESS);
  EXPECT_EQ(a_got, 4242);
  EXPECT_EQ(a_st.EP_SOURCE, f_rank);
  EXPECT_EQ(a_st.EP_TAG, 11);

  // E is intact: nothing of B's refused calls was sent or posted.
  int flag = 1;
  ASSERT_EQ(EP_Iprobe(EP_ANY_SOURCE, EP_ANY_TAG, F, &flag, EP_STATUS_IGNORE), EP_SUCCESS);
  EXPECT_EQ(flag, 0) << "a refused send left a message behind";
  int x = 77, y = 0;
  ASSERT_EQ(EP_Send(&x, 1, MPI_INT, f_rank, 13, E), EP_SUCCESS);
  ASSERT_EQ(EP_Recv(&y, 1, MPI_INT, e_rank, 13, F, EP_STATUS_IGNORE), EP_SUCCESS);
  EXPECT_EQ(y, 77);
  x = 78;
  ASSERT_EQ(EP_Send(&x, 1, MPI_INT, e_rank, 14, F), EP_SUCCESS);
  ASSERT_EQ(EP_Recv(&y, 1, MPI_INT, f_rank, 14, E, EP_STATUS_IGNORE), EP_SUCCESS);
  EXPECT_EQ(y, 78);
  flag = 1;
  ASSERT_EQ(EP_Iprobe(EP_ANY_SOURCE, EP_ANY_TAG, E, &flag, EP_STATUS_IGNORE), EP_SUCCESS);
  EXPECT_EQ(flag, 0) << "a refused receive was posted after all";
  EXPECT_EQ(EP_Comm_free(&comms[0]), EP_SUCCESS);
  EXPECT_EQ(EP_Comm_free(&comms[1]), EP_SUCCESS);
}

// ---- Endpoints creation ------------------------------------------------------------------------

TEST(CreateEndpointsErrors, NegativeNumEpOnOneProcessIsErrArgOnEveryProcess) {
  EP_Comm comms[2] = {EP_COMM_NULL, EP_COMM_NULL};
  int n = world_rank() == world_size() - 1 ? -1 : 2;
  expect_error(EP_Comm_create_endpoints(MPI_COMM_WORLD, n, MPI_INFO_NULL, comms), EP_ERR_ARG,
               "EP_Comm_create_endpoints", "num_ep", "-1");
  EXPECT_EQ(comms[0], EP_COMM_NULL);
  // Everybody negative.
  expect_error(EP_Comm_create_endpoints(MPI_COMM_WORLD, -3, MPI_INFO_NULL, comms), EP_ERR_ARG,
               "EP_Comm_create_endpoints", "num_ep", "-3");
  // A later creation works.
  ASSERT_EQ(EP_Comm_create_endpoints(MPI_COMM_WORLD, 2, MPI_INFO_NULL, comms), EP_SUCCESS);
  int size = 0;
  EXPECT_EQ(EP_Comm_size(comms[0], &size), EP_SUCCESS);
  EXPECT_EQ(size, 2 * world_size());
  EP_Comm_free(&comms[0]);
  EP_Comm_free(&comms[1]);
}

TEST(CreateEndpointsErrors, NullParentIsErrComm) {
  EP_Comm comms[1] = {EP_COMM_NULL};
  expect_error(EP_Comm_create_endpoints(MPI_COMM_NULL, 1, MPI_INFO_NULL, comms), EP_ERR_COMM,
               "EP_Comm_create_endpoints", "parent", "MPI_COMM_NULL");
  EXPECT_EQ(comms[0], EP_COMM_NULL);
}

// ---- Errors leave everything else intact ------------------------------------------------------

// Each endpoint streams numbered messages (small and large, interleaved) to its right
// neighbour and, between the sends, makes failing calls of every kind on the same
// endpoint (and truncated receives on another tag).  All stream messages arrive intact
// and in order.
TEST(ErrorsLeaveOtherTrafficIntact, StreamsBetweenEndpointsArriveInOrder) {
  const int kN = ep_test::scaled(60) < 12 ? 12 : ep_test::scaled(60);
  ep_test::run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    auto msg_size = [](int k) -> size_t { return k % 3 == 2 ? 40000 + k : 8 + k; };
    std::vector<std::vector<uint8_t>> out(kN);
    std::vector<EP_Request> sends;
    int v = 1;
    uint8_t trunc_out[64];
    std::memset(trunc_out, rank, sizeof(trunc_out));
    for (int k = 0; k < kN; ++k) {
      out[k] = pattern(rank, k, msg_size(k));
      EP_Request r;
      ASSERT_EQ(EP_Isend(out[k].data(), static_cast<int>(out[k].size()), MPI_BYTE, right, 3, comm,
                         &r),
                EP_SUCCESS);
      sends.push_back(r);
      // A failing call of some kind.
      switch (k % 9) {
        case 0:
          EXPECT_EQ(EP_Send(&v, 1, MPI_INT, right, -1 - k, comm), EP_ERR_TAG);
          break;
        case 1:
          EXPECT_EQ(EP_Isend(&v, 1, MPI_INT, size + k, 3, comm, &r), EP_ERR_RANK);
          break;
        case 2:
          EXPECT_EQ(EP_Send(nullptr, 3, MPI_INT, right, 3, comm), EP_ERR_BUFFER);
          break;
        case 3:
          EXPECT_EQ(EP_Irecv(&v, 1, MPI_INT, size + 2, 3, comm, &r), EP_ERR_RANK);
          break;
        case 4:
          EXPECT_EQ(EP_Recv(&v, -1, MPI_INT, left, 3, comm, EP_STATUS_IGNORE), EP_ERR_COUNT);
          break;
        case 5: {
          EP_Request null_req = EP_REQUEST_NULL;
          EXPECT_EQ(EP_Request_free(&null_req), EP_ERR_REQUEST);
          EXPECT_EQ(EP_Cancel(&null_req), EP_ERR_REQUEST);
          EXPECT_EQ(EP_Waitall(-1, &null_req, EP_STATUSES_IGNORE), EP_ERR_COUNT);
          break;
        }
        case 6:
          EXPECT_EQ(EP_Send(&v, 1, MPI_DATATYPE_NULL, right, 3, comm), EP_ERR_TYPE);
          break;
        case 7: {
          // A truncated receive on another tag.
          uint8_t in[8];
          ASSERT_EQ(EP_Send(trunc_out, sizeof(trunc_out), MPI_BYTE, right, 4, comm), EP_SUCCESS);
          EXPECT_EQ(EP_Recv(in, sizeof(in), MPI_BYTE, left, 4, comm, EP_STATUS_IGNORE),
                    EP_ERR_TRUNCATE);
          EXPECT_EQ(in[0], static_cast<uint8_t>(left));
          break;
        }
        case 8:
          EXPECT_EQ(EP_Send(&v, 1, MPI_INT, right, 3, EP_COMM_NULL), EP_ERR_COMM);
          break;
      }
    }
    for (int k = 0; k < kN; ++k) {
      size_t n = msg_size(k);
      std::vector<uint8_t> in(n + 8, 0xee);
      EP_Status st;
      ASSERT_EQ(EP_Recv(in.data(), static_cast<int>(in.size()), MPI_BYTE, left, 3, comm, &st),
                EP_SUCCESS)
          << "message " << k;
      int count = -1;
      EP_Get_count(&st, MPI_BYTE, &count);
      ASSERT_EQ(count, static_cast<int>(n)) << "message " << k << " out of order or lost";
      auto want = pattern(left, k, n);
      ASSERT_TRUE(std::equal(want.begin(), want.end(), in.begin())) << "message " << k;
    }
    std::vector<EP_Status> sts(sends.size());
    EXPECT_EQ(EP_Waitall(static_cast<int>(sends.size()), sends.data(), sts.data()), EP_SUCCESS);
    for (int tag : {3, 4}) {
      int flag = 1;
      EXPECT_EQ(EP_Iprobe(EP_ANY_SOURCE, tag, comm, &flag, EP_STATUS_IGNORE), EP_SUCCESS);
      EXPECT_EQ(flag, 0) << "an erroneous call left a message with tag " << tag << " behind";
    }
    ep_test::ep_barrier(comm);
  });
}

}  // namespace
