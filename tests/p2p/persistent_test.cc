// Persistent point-to-point requests (MPI 3.1 section 3.9, "process" read as
// "endpoint"): EP_Send_init, EP_Bsend_init, EP_Ssend_init, EP_Rsend_init, EP_Recv_init,
// EP_Start, EP_Startall - restarted many times with fresh buffer contents, within a
// process and across processes, eager and rendezvous sizes; wildcards and
// EP_PROC_NULL; the Wait/Test family on inactive, active and completed requests; mixed
// with nonpersistent requests; EP_Request_free and EP_Cancel; the error cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/p2p/p2p_util.h"

namespace {

using ep_test::ep_barrier;
using ep_test::last_error;
using ep_test::run_endpoints;
using ep_test::scaled;
using ep_test::uneven;
using ep_test::world_rank;
using ep_test::world_size;

[[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(120, 600);

using ep_p2p_test::Pair;
using ep_p2p_test::pairs;
using ep_p2p_test::proc_of;
using ep_p2p_test::rank_of;
using ep_p2p_test::size_of;
// EP_EAGER_LIMIT=0: every message goes as a rendezvous.
bool rendezvous_only() {
  const char* v = std::getenv("EP_EAGER_LIMIT");
  return v != nullptr && std::string(v) == "0";
}
int count_of(const EP_Status& st, MPI_Datatype t = MPI_INT) {
  int n = -1;
  EP_Get_count(&st, t, &n);
  return n;
}

// The empty status (a null or inactive request): any source, any tag, count 0, EP_ERROR
// as the caller set it (kUntouched).
constexpr int kUntouched = 12345;
EP_Status fresh_status() {
  EP_Status st;
  std::memset(&st, 0x5a, sizeof st);
  st.EP_ERROR = kUntouched;
  return st;
}
void expect_empty(const EP_Status& st, const std::string& where) {
  EXPECT_EQ(st.EP_SOURCE, EP_ANY_SOURCE) << where;
  EXPECT_EQ(st.EP_TAG, EP_ANY_TAG) << where;
  EXPECT_EQ(count_of(st), 0) << where;
  EXPECT_EQ(st.EP_ERROR, kUntouched) << where;
  int cancelled = -1;
  EP_Test_cancelled(&st, &cancelled);
  EXPECT_EQ(cancelled, 0) << where;
}

enum class Mode { kStandard, kBuffered, kSynchronous, kReady };
const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kStandard:
      return "Send_init";
    case Mode::kBuffered:
      return "Bsend_init";
    case Mode::kSynchronous:
      return "Ssend_init";
    case Mode::kReady:
      return "Rsend_init";
  }
  return "?";
}
int send_init(Mode m, const void* buf, int count, MPI_Datatype t, int dest, int tag, EP_Comm comm,
              EP_Request* r) {
  switch (m) {
    case Mode::kStandard:
      return EP_Send_init(buf, count, t, dest, tag, comm, r);
    case Mode::kBuffered:
      return EP_Bsend_init(buf, count, t, dest, tag, comm, r);
    case Mode::kSynchronous:
      return EP_Ssend_init(buf, count, t, dest, tag, comm, r);
    case Mode::kReady:
      return EP_Rsend_init(buf, count, t, dest, tag, comm, r);
  }
  return -1;
}

// Every mode, restarted: each round the sender writes new contents into the same
// buffer (a start re-reads it) and the receiver restarts one Recv_init.  The receive is
// started before a go-ahead message, so that Rsend_init's ready mode is legal.
void restart_rounds(EP_Comm comm, const Pair& p, Mode mode, int n, int rounds) {
  const int me = rank_of(comm);
  const std::string where = std::string(p.what) + " " + mode_name(mode) + " n=" + std::to_string(n);
  std::vector<int> buf(static_cast<size_t>(n), -1);
  char go = 0;
  if (me == p.a) {
    EP_Request s = EP_REQUEST_NULL;
    ASSERT_EQ(send_init(mode, buf.data(), n, MPI_INT, p.b, 21, comm, &s), EP_SUCCESS) << where;
    ASSERT_NE(s, EP_REQUEST_NULL);
    for (int round = 0; round < rounds; ++round) {
      ASSERT_EQ(EP_Recv(&go, 1, MPI_CHAR, p.b, 22, comm, EP_STATUS_IGNORE), EP_SUCCESS);
      for (int i = 0; i < n; ++i) buf[static_cast<size_t>(i)] = round * 7919 + i;
      ASSERT_EQ(EP_Start(&s), EP_SUCCESS) << where << " round " << round;
      EP_Status st = fresh_status();
      ASSERT_EQ(EP_Wait(&s, &st), EP_SUCCESS) << where << " round " << round;
      ASSERT_NE(s, EP_REQUEST_NULL) << where << ": the handle stays";
      EXPECT_EQ(st.EP_ERROR, kUntouched) << where;
    }
    ASSERT_EQ(EP_Request_free(&s), EP_SUCCESS);
    EXPECT_EQ(s, EP_REQUEST_NULL);
  } else if (me == p.b) {
    EP_Request r = EP_REQUEST_NULL;
    ASSERT_EQ(EP_Recv_init(buf.data(), n, MPI_INT, p.a, 21, comm, &r), EP_SUCCESS) << where;
    for (int round = 0; round < rounds; ++round) {
      std::fill(buf.begin(), buf.end(), -1);
      ASSERT_EQ(EP_Start(&r), EP_SUCCESS) << where << " round " << round;
      ASSERT_EQ(EP_Send(&go, 1, MPI_CHAR, p.a, 22, comm), EP_SUCCESS);
      EP_Status st = fresh_status();
      ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS) << where << " round " << round;
      ASSERT_NE(r, EP_REQUEST_NULL) << where << ": the handle stays";
      EXPECT_EQ(st.EP_SOURCE, p.a) << where;
      EXPECT_EQ(st.EP_TAG, 21) << where;
      EXPECT_EQ(st.EP_ERROR, kUntouched) << where;
      EXPECT_EQ(count_of(st), n) << where;
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(buf[static_cast<size_t>(i)], round * 7919 + i)
            << where << " round " << round << " int " << i;
      }
    }
    ASSERT_EQ(EP_Request_free(&r), EP_SUCCESS);
    EXPECT_EQ(r, EP_REQUEST_NULL);
  }
}

TEST(Persistent, EveryModeRestartsWithFreshBufferContents) {
  const int big = 64 * 1024;  // 256 KiB of ints: above the eager limit (rendezvous)
  std::vector<char> attach(static_cast<size_t>(2 * (big * 4 + EP_BSEND_OVERHEAD) + 4096));
  ASSERT_EQ(EP_Buffer_attach(attach.data(), static_cast<int>(attach.size())), EP_SUCCESS);
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      for (Mode m : {Mode::kStandard, Mode::kBuffered, Mode::kSynchronous, Mode::kReady}) {
        restart_rounds(comm, p, m, 2, scaled(100));
        restart_rounds(comm, p, m, 0, 3);
        restart_rounds(comm, p, m, big, scaled(12) < 3 ? 3 : scaled(12));
        ep_barrier(comm);
      }
    }
  });
  void* addr = nullptr;
  int sz = 0;
  ASSERT_EQ(EP_Buffer_detach(&addr, &sz), EP_SUCCESS);
}

// Recv_init with EP_ANY_SOURCE and EP_ANY_TAG, restarted: every other endpoint streams
// `rounds` messages (tag = its rank) through one Send_init; each arrives exactly once,
// in order per source, with its status.
TEST(Persistent, WildcardReceiveRestartedGetsEverySourceInOrder) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    EP_Comm data = EP_COMM_NULL;  // the barrier's messages stay apart from the wildcard
    ASSERT_EQ(EP_Comm_dup(comm, &data), EP_SUCCESS);
    EP_Comm_set_errhandler(data, EP_ERRORS_RETURN);
    const int me = rank_of(comm), size = size_of(comm), rounds = scaled(40);
    int msg[2] = {-1, -1};
    if (me == 0) {
      EP_Request r = EP_REQUEST_NULL;
      ASSERT_EQ(EP_Recv_init(msg, 2, MPI_INT, EP_ANY_SOURCE, EP_ANY_TAG, data, &r), EP_SUCCESS);
      std::vector<int> next(static_cast<size_t>(size), 0);
      for (int k = 0; k < (size - 1) * rounds; ++k) {
        ASSERT_EQ(EP_Start(&r), EP_SUCCESS);
        EP_Status st = fresh_status();
        ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
        ASSERT_GT(st.EP_SOURCE, 0);
        ASSERT_LT(st.EP_SOURCE, size);
        EXPECT_EQ(st.EP_TAG, st.EP_SOURCE);
        EXPECT_EQ(count_of(st), 2);
        EXPECT_EQ(msg[0], st.EP_SOURCE);
        EXPECT_EQ(msg[1], next[static_cast<size_t>(st.EP_SOURCE)]++) << "per-source order";
      }
      for (int s = 1; s < size; ++s) EXPECT_EQ(next[static_cast<size_t>(s)], rounds);
      EP_Request_free(&r);
    } else {
      EP_Request s = EP_REQUEST_NULL;
      ASSERT_EQ(EP_Send_init(msg, 2, MPI_INT, 0, me, data, &s), EP_SUCCESS);
      for (int k = 0; k < rounds; ++k) {
        msg[0] = me;
        msg[1] = k;
        ASSERT_EQ(EP_Start(&s), EP_SUCCESS);
        ASSERT_EQ(EP_Wait(&s, EP_STATUS_IGNORE), EP_SUCCESS);
      }
      EP_Request_free(&s);
    }
    ep_barrier(comm);
    EP_Comm_free(&data);
  });
}

// EP_PROC_NULL: a start completes at once, with the PROC_NULL status for the receive.
TEST(Persistent, ProcNullCompletesAtOnceOnEveryStart) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int in[3] = {7, 8, 9}, out[3] = {1, 2, 3};
    EP_Request r = EP_REQUEST_NULL, s = EP_REQUEST_NULL;
    ASSERT_EQ(EP_Recv_init(in, 3, MPI_INT, EP_PROC_NULL, 5, comm, &r), EP_SUCCESS);
    ASSERT_EQ(EP_Ssend_init(out, 3, MPI_INT, EP_PROC_NULL, 5, comm, &s), EP_SUCCESS);
    for (int round = 0; round < 3; ++round) {
      EP_Request both[2] = {r, s};
      ASSERT_EQ(EP_Startall(2, both), EP_SUCCESS);
      int flag = 0;
      EP_Status st = fresh_status();
      ASSERT_EQ(EP_Test(&r, &flag, &st), EP_SUCCESS);
      EXPECT_EQ(flag, 1);
      EXPECT_EQ(st.EP_SOURCE, EP_PROC_NULL);
      EXPECT_EQ(st.EP_TAG, EP_ANY_TAG);
      EXPECT_EQ(count_of(st), 0);
      EXPECT_EQ(st.EP_ERROR, kUntouched);
      EXPECT_NE(r, EP_REQUEST_NULL);
      ASSERT_EQ(EP_Test(&s, &flag, EP_STATUS_IGNORE), EP_SUCCESS);
      EXPECT_EQ(flag, 1);
      EXPECT_NE(s, EP_REQUEST_NULL);
    }
    EXPECT_EQ(in[0], 7);
    EXPECT_EQ(in[2], 9);
    EP_Request_free(&r);
    EP_Request_free(&s);
  });
}

// A ring through EP_Startall and EP_Waitall: [receive from the left, send to the right],
// restarted; exact statuses; the handles stay.
TEST(Persistent, StartallAndWaitallDriveARing) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    const int me = rank_of(comm), size = size_of(comm);
    const int left = (me + size - 1) % size, right = (me + 1) % size;
    int in[4], out[4];
    EP_Request reqs[2];
    ASSERT_EQ(EP_Recv_init(in, 4, MPI_INT, left, 3, comm, &reqs[0]), EP_SUCCESS);
    ASSERT_EQ(EP_Send_init(out, 4, MPI_INT, right, 3, comm, &reqs[1]), EP_SUCCESS);
    for (int round = 0; round < scaled(100); ++round) {
      for (int i = 0; i < 4; ++i) out[i] = me * 1000 + round * 4 + i;
      ASSERT_EQ(EP_Startall(2, reqs), EP_SUCCESS);
      EP_Status st[2] = {fresh_status(), fresh_status()};
      ASSERT_EQ(EP_Waitall(2, reqs, st), EP_SUCCESS);
      ASSERT_NE(reqs[0], EP_REQUEST_NULL);
      ASSERT_NE(reqs[1], EP_REQUEST_NULL);
      EXPECT_EQ(st[0].EP_SOURCE, left);
      EXPECT_EQ(st[0].EP_TAG, 3);
      EXPECT_EQ(count_of(st[0]), 4);
      EXPECT_EQ(st[0].EP_ERROR, kUntouched);
      for (int i = 0; i < 4; ++i) ASSERT_EQ(in[i], left * 1000 + round * 4 + i) << round;
    }
    EP_Request_free(&reqs[0]);
    EP_Request_free(&reqs[1]);
    EXPECT_EQ(reqs[0], EP_REQUEST_NULL);
  });
}

// Every call of the Wait/Test family on inactive requests: at once, the empty status,
// EP_UNDEFINED from the any/some forms, the handles kept.
TEST(Persistent, InactiveRequestsAreTreatedAsNullButKept) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    const int me = rank_of(comm);
    int a = 0, b = 0;
    EP_Request r[3] = {EP_REQUEST_NULL, EP_REQUEST_NULL, EP_REQUEST_NULL};
    ASSERT_EQ(EP_Recv_init(&a, 1, MPI_INT, me, 1, comm, &r[0]), EP_SUCCESS);
    ASSERT_EQ(EP_Send_init(&b, 1, MPI_INT, me, 1, comm, &r[1]), EP_SUCCESS);
    const EP_Request h0 = r[0], h1 = r[1];
    auto kept = [&](const char* call) {
      EXPECT_EQ(r[0], h0) << call;
      EXPECT_EQ(r[1], h1) << call;
      EXPECT_EQ(r[2], EP_REQUEST_NULL) << call;
    };
    EP_Status st = fresh_status();
    ASSERT_EQ(EP_Wait(&r[0], &st), EP_SUCCESS);
    expect_empty(st, "EP_Wait");
    kept("EP_Wait");
    int flag = 0, index = 0, outcount = 0, indices[3];
    st = fresh_status();
    ASSERT_EQ(EP_Test(&r[1], &flag, &st), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    expect_empty(st, "EP_Test");
    st = fresh_status();
    flag = 0;
    ASSERT_EQ(EP_Request_get_status(r[0], &flag, &st), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    expect_empty(st, "EP_Request_get_status");
    EP_Status sts[3] = {fresh_status(), fresh_status(), fresh_status()};
    ASSERT_EQ(EP_Waitall(3, r, sts), EP_SUCCESS);
    for (const EP_Status& s : sts) expect_empty(s, "EP_Waitall");
    kept("EP_Waitall");
    flag = 0;
    ASSERT_EQ(EP_Testall(3, r, &flag, EP_STATUSES_IGNORE), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    kept("EP_Testall");
    st = fresh_status();
    ASSERT_EQ(EP_Waitany(3, r, &index, &st), EP_SUCCESS);
    EXPECT_EQ(index, EP_UNDEFINED);
    expect_empty(st, "EP_Waitany");
    flag = 0;
    st = fresh_status();
    ASSERT_EQ(EP_Testany(3, r, &index, &flag, &st), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(index, EP_UNDEFINED);
    expect_empty(st, "EP_Testany");
    ASSERT_EQ(EP_Waitsome(3, r, &outcount, indices, EP_STATUSES_IGNORE), EP_SUCCESS);
    EXPECT_EQ(outcount, EP_UNDEFINED);
    ASSERT_EQ(EP_Testsome(3, r, &outcount, indices, EP_STATUSES_IGNORE), EP_SUCCESS);
    EXPECT_EQ(outcount, EP_UNDEFINED);
    kept("the any/some forms");
    EXPECT_EQ(EP_Cancel(&r[0]), EP_ERR_REQUEST);  // nothing to cancel: erroneous
    EXPECT_NE(last_error(EP_ERR_REQUEST).find("EP_Cancel: request is an inactive persistent"),
              std::string::npos);
    kept("EP_Cancel");
    ASSERT_EQ(EP_Request_free(&r[0]), EP_SUCCESS);
    ASSERT_EQ(EP_Request_free(&r[1]), EP_SUCCESS);
    EXPECT_EQ(r[0], EP_REQUEST_NULL);
    EXPECT_EQ(r[1], EP_REQUEST_NULL);
  });
}

// An active receive: pending, then complete (Request_get_status does not complete it),
// then completed by Testany, Waitsome, Test or Testall; the handles stay and are
// inactive after.
TEST(Persistent, ActiveAndCompletedRequestsInTheWaitFamily) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    const int me = rank_of(comm);
    int in = -1, out = 0;
    EP_Request r[2] = {EP_REQUEST_NULL, EP_REQUEST_NULL};
    ASSERT_EQ(EP_Recv_init(&in, 1, MPI_INT, me, 4, comm, &r[1]), EP_SUCCESS);
    const EP_Request h = r[1];
    for (int how = 0; how < 4; ++how) {
      ASSERT_EQ(EP_Start(&r[1]), EP_SUCCESS);
      int flag = 1, index = 0, outcount = 0, indices[2] = {-1, -1};
      ASSERT_EQ(EP_Test(&r[1], &flag, EP_STATUS_IGNORE), EP_SUCCESS);
      EXPECT_EQ(flag, 0) << "nothing was sent yet";
      ASSERT_EQ(EP_Request_get_status(r[1], &flag, EP_STATUS_IGNORE), EP_SUCCESS);
      EXPECT_EQ(flag, 0);
      ASSERT_EQ(EP_Testany(2, r, &index, &flag, EP_STATUS_IGNORE), EP_SUCCESS);
      EXPECT_EQ(flag, 0);
      EXPECT_EQ(index, EP_UNDEFINED);
      ASSERT_EQ(EP_Testsome(2, r, &outcount, indices, EP_STATUSES_IGNORE), EP_SUCCESS);
      EXPECT_EQ(outcount, 0);
      out = 100 + how;
      ASSERT_EQ(EP_Send(&out, 1, MPI_INT, me, 4, comm), EP_SUCCESS);  // to itself
      EP_Status st = fresh_status();
      flag = 0;
      while (!flag) ASSERT_EQ(EP_Request_get_status(r[1], &flag, &st), EP_SUCCESS);
      EXPECT_EQ(st.EP_SOURCE, me);
      EXPECT_EQ(st.EP_TAG, 4);
      EXPECT_EQ(count_of(st), 1);
      EXPECT_EQ(in, 100 + how);
      ASSERT_EQ(EP_Request_get_status(r[1], &flag, EP_STATUS_IGNORE), EP_SUCCESS);
      EXPECT_EQ(flag, 1) << "still active and complete";
      st = fresh_status();
      if (how == 0) {
        ASSERT_EQ(EP_Testany(2, r, &index, &flag, &st), EP_SUCCESS);
        EXPECT_EQ(flag, 1);
        EXPECT_EQ(index, 1);
      } else if (how == 1) {
        EP_Status sts[2] = {fresh_status(), fresh_status()};
        ASSERT_EQ(EP_Waitsome(2, r, &outcount, indices, sts), EP_SUCCESS);
        EXPECT_EQ(outcount, 1);
        EXPECT_EQ(indices[0], 1);
        st = sts[0];
      } else if (how == 2) {
        ASSERT_EQ(EP_Test(&r[1], &flag, &st), EP_SUCCESS);
        EXPECT_EQ(flag, 1);
      } else {
        EP_Status sts[2] = {fresh_status(), fresh_status()};
        ASSERT_EQ(EP_Testall(2, r, &flag, sts), EP_SUCCESS);
        EXPECT_EQ(flag, 1);
        expect_empty(sts[0], "EP_Testall's null entry");
        st = sts[1];
      }
      EXPECT_EQ(st.EP_SOURCE, me) << how;
      EXPECT_EQ(st.EP_TAG, 4) << how;
      EXPECT_EQ(count_of(st), 1) << how;
      EXPECT_EQ(st.EP_ERROR, kUntouched) << how;
      EXPECT_EQ(r[1], h) << how << ": the handle stays";
      st = fresh_status();
      ASSERT_EQ(EP_Wait(&r[1], &st), EP_SUCCESS);
      expect_empty(st, "EP_Wait after completion: inactive again");
    }
    EP_Request_free(&r[1]);
  });
}

// Persistent and nonpersistent requests in one EP_Waitall (and EP_Waitany across
// processes): exact statuses; the persistent handles stay, the others become null.
TEST(Persistent, MixedWithNonpersistentRequests) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      const int me = rank_of(comm);
      int v[3] = {0, 0, 0};
      if (me == p.b) {
        EP_Request pr[2];
        ASSERT_EQ(EP_Recv_init(&v[0], 1, MPI_INT, p.a, 10, comm, &pr[0]), EP_SUCCESS);
        ASSERT_EQ(EP_Recv_init(&v[2], 1, MPI_INT, p.a, 12, comm, &pr[1]), EP_SUCCESS);
        for (int round = 0; round < scaled(40); ++round) {
          EP_Request reqs[4] = {pr[0], EP_REQUEST_NULL, pr[1], EP_REQUEST_NULL};
          ASSERT_EQ(EP_Start(&reqs[0]), EP_SUCCESS);
          ASSERT_EQ(EP_Irecv(&v[1], 1, MPI_INT, p.a, 11, comm, &reqs[1]), EP_SUCCESS);
          ASSERT_EQ(EP_Start(&reqs[2]), EP_SUCCESS);
          char go = 0;
          ASSERT_EQ(EP_Send(&go, 1, MPI_CHAR, p.a, 13, comm), EP_SUCCESS);
          EP_Status st[4] = {fresh_status(), fresh_status(), fresh_status(), fresh_status()};
          ASSERT_EQ(EP_Waitall(4, reqs, st), EP_SUCCESS);
          EXPECT_EQ(reqs[0], pr[0]);
          EXPECT_EQ(reqs[1], EP_REQUEST_NULL);
          EXPECT_EQ(reqs[2], pr[1]);
          for (int k = 0; k < 3; ++k) {
            EXPECT_EQ(st[k].EP_SOURCE, p.a) << p.what << " " << k;
            EXPECT_EQ(st[k].EP_TAG, 10 + k) << p.what << " " << k;
            EXPECT_EQ(v[k], round * 3 + k) << p.what << " round " << round;
          }
          expect_empty(st[3], "the null entry");
          // The same receives through EP_Waitany (and its sleep across processes).
          ASSERT_EQ(EP_Startall(2, pr), EP_SUCCESS);
          ASSERT_EQ(EP_Send(&go, 1, MPI_CHAR, p.a, 13, comm), EP_SUCCESS);
          int seen = 0;
          for (int k = 0; k < 3; ++k) {
            int index = -2;
            EP_Status s = fresh_status();
            ASSERT_EQ(EP_Waitany(2, pr, &index, &s), EP_SUCCESS);
            if (k == 2) {
              EXPECT_EQ(index, EP_UNDEFINED);
              expect_empty(s, "EP_Waitany over inactive requests");
            } else {
              ASSERT_TRUE(index == 0 || index == 1);
              seen |= 1 << index;
              EXPECT_EQ(s.EP_TAG, index == 0 ? 10 : 12);
              EXPECT_EQ(v[index * 2], -(round * 3 + index * 2));
            }
          }
          EXPECT_EQ(seen, 3);
        }
        EP_Request_free(&pr[0]);
        EP_Request_free(&pr[1]);
      } else if (me == p.a) {
        for (int round = 0; round < scaled(40); ++round) {
          char go;
          ASSERT_EQ(EP_Recv(&go, 1, MPI_CHAR, p.b, 13, comm, EP_STATUS_IGNORE), EP_SUCCESS);
          for (int k = 0; k < 3; ++k) v[k] = round * 3 + k;
          EP_Request s[3];
          for (int k = 0; k < 3; ++k) {
            ASSERT_EQ(EP_Isend(&v[k], 1, MPI_INT, p.b, 10 + k, comm, &s[k]), EP_SUCCESS);
          }
          ASSERT_EQ(EP_Waitall(3, s, EP_STATUSES_IGNORE), EP_SUCCESS);
          ASSERT_EQ(EP_Recv(&go, 1, MPI_CHAR, p.b, 13, comm, EP_STATUS_IGNORE), EP_SUCCESS);
          v[0] = -(round * 3);
          v[2] = -(round * 3 + 2);
          ASSERT_EQ(EP_Send(&v[2], 1, MPI_INT, p.b, 12, comm), EP_SUCCESS);
          ASSERT_EQ(EP_Send(&v[0], 1, MPI_INT, p.b, 10, comm), EP_SUCCESS);
        }
      }
      ep_barrier(comm);
    }
  });
}

// EP_Request_free of an inactive request, of an active receive (it still takes exactly
// the first matching message, into its buffer) and of an active rendezvous send (its
// message still arrives whole).
TEST(Persistent, RequestFreeOfInactiveAndActiveRequests) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      const int me = rank_of(comm);
      const int big = 64 * 1024;
      std::vector<int> large(big, 0);
      int first = -1, second = -1;
      if (me == p.b) {
        EP_Request r = EP_REQUEST_NULL, idle = EP_REQUEST_NULL;
        ASSERT_EQ(EP_Recv_init(&first, 1, MPI_INT, p.a, 30, comm, &idle), EP_SUCCESS);
        ASSERT_EQ(EP_Request_free(&idle), EP_SUCCESS);
        EXPECT_EQ(idle, EP_REQUEST_NULL);
        ASSERT_EQ(EP_Recv_init(&first, 1, MPI_INT, p.a, 30, comm, &r), EP_SUCCESS);
        ASSERT_EQ(EP_Start(&r), EP_SUCCESS);
        ASSERT_EQ(EP_Request_free(&r), EP_SUCCESS);
        EXPECT_EQ(r, EP_REQUEST_NULL);
        char go = 0;
        ASSERT_EQ(EP_Send(&go, 1, MPI_CHAR, p.a, 31, comm), EP_SUCCESS);
        ASSERT_EQ(EP_Recv(&second, 1, MPI_INT, p.a, 30, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        EXPECT_EQ(second, 2) << p.what << ": the freed receive took the first message";
        // An eager message reached the freed receive's buffer before the next one was
        // delivered; a rendezvous payload (EP_EAGER_LIMIT=0) may land later.
        if (!rendezvous_only()) {
          EXPECT_EQ(first, 1) << p.what << ": into its buffer";
        }
        ASSERT_EQ(EP_Recv(large.data(), big, MPI_INT, p.a, 32, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        for (int i = 0; i < big; i += 997) ASSERT_EQ(large[static_cast<size_t>(i)], i) << p.what;
        EXPECT_EQ(large[big - 1], big - 1);
      } else if (me == p.a) {
        char go;
        ASSERT_EQ(EP_Recv(&go, 1, MPI_CHAR, p.b, 31, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        int one = 1, two = 2;
        ASSERT_EQ(EP_Send(&one, 1, MPI_INT, p.b, 30, comm), EP_SUCCESS);
        ASSERT_EQ(EP_Send(&two, 1, MPI_INT, p.b, 30, comm), EP_SUCCESS);
        for (int i = 0; i < big; ++i) large[static_cast<size_t>(i)] = i;
        EP_Request s = EP_REQUEST_NULL;
        ASSERT_EQ(EP_Send_init(large.data(), big, MPI_INT, p.b, 32, comm, &s), EP_SUCCESS);
        ASSERT_EQ(EP_Start(&s), EP_SUCCESS);
        ASSERT_EQ(EP_Request_free(&s), EP_SUCCESS);  // completes on its own
        EXPECT_EQ(s, EP_REQUEST_NULL);
      }
      ep_barrier(comm);  // `large` outlives the freed send's transfer
    }
  });
}

// A user error handler that counts its calls (per thread: each endpoint its own).
thread_local int t_handler_calls = 0;
thread_local int t_handler_code = EP_SUCCESS;
void counting_handler(EP_Comm*, int* code, ...) {
  ++t_handler_calls;
  t_handler_code = *code;
}

// A receive too small for its message: the wait reports EP_ERR_TRUNCATE with the prefix
// delivered (eager, and a rendezvous whose payload is drained), through the error
// handler of the request's communicator; the request stays, inactive, and receives the
// next message normally.
TEST(Persistent, TruncatedReceiveReportsAndStaysUsable) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      const int me = rank_of(comm);
      for (int n : {2, 64 * 1024}) {
        std::vector<int> buf(static_cast<size_t>(n), -1);
        char go = 0;
        if (me == p.b) {
          EP_Request r = EP_REQUEST_NULL;
          ASSERT_EQ(EP_Recv_init(buf.data(), n / 2, MPI_INT, p.a, 70, comm, &r), EP_SUCCESS);
          // The handler the communicator has when the request starts applies.
          EP_Errhandler eh = EP_ERRHANDLER_NULL;
          ASSERT_EQ(EP_Comm_create_errhandler(counting_handler, &eh), EP_SUCCESS);
          ASSERT_EQ(EP_Comm_set_errhandler(comm, eh), EP_SUCCESS);
          t_handler_calls = 0;
          ASSERT_EQ(EP_Start(&r), EP_SUCCESS);
          ASSERT_EQ(EP_Send(&go, 1, MPI_CHAR, p.a, 71, comm), EP_SUCCESS);
          EP_Status st = fresh_status();
          EXPECT_EQ(EP_Wait(&r, &st), EP_ERR_TRUNCATE) << p.what << " n=" << n;
          EXPECT_EQ(t_handler_calls, 1) << "the communicator's handler ran once";
          EXPECT_EQ(t_handler_code, EP_ERR_TRUNCATE);
          ASSERT_EQ(EP_Comm_set_errhandler(comm, EP_ERRORS_RETURN), EP_SUCCESS);
          ASSERT_EQ(EP_Errhandler_free(&eh), EP_SUCCESS);
          EXPECT_EQ(st.EP_ERROR, kUntouched);
          EXPECT_EQ(count_of(st), n / 2);
          ASSERT_NE(r, EP_REQUEST_NULL);
          for (int i = 0; i < n / 2; ++i) ASSERT_EQ(buf[static_cast<size_t>(i)], 1000 + i);
          EXPECT_EQ(buf[static_cast<size_t>(n / 2)], -1) << "nothing past the buffer";
          int flag = 0;
          st = fresh_status();
          ASSERT_EQ(EP_Test(&r, &flag, &st), EP_SUCCESS);
          EXPECT_EQ(flag, 1);
          expect_empty(st, "inactive after the truncated receive");
          ASSERT_EQ(EP_Start(&r), EP_SUCCESS);
          ASSERT_EQ(EP_Send(&go, 1, MPI_CHAR, p.a, 71, comm), EP_SUCCESS);
          ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS) << p.what << " n=" << n;
          EXPECT_EQ(count_of(st), 1);
          EXPECT_EQ(buf[0], 2000);
          EP_Request_free(&r);
        } else if (me == p.a) {
          for (int i = 0; i < n; ++i) buf[static_cast<size_t>(i)] = 1000 + i;
          ASSERT_EQ(EP_Recv(&go, 1, MPI_CHAR, p.b, 71, comm, EP_STATUS_IGNORE), EP_SUCCESS);
          ASSERT_EQ(EP_Send(buf.data(), n, MPI_INT, p.b, 70, comm), EP_SUCCESS);
          ASSERT_EQ(EP_Recv(&go, 1, MPI_CHAR, p.b, 71, comm, EP_STATUS_IGNORE), EP_SUCCESS);
          const int v = 2000;
          ASSERT_EQ(EP_Send(&v, 1, MPI_INT, p.b, 70, comm), EP_SUCCESS);
        }
      }
      ep_barrier(comm);
    }
  });
}

// EP_Cancel of an active persistent receive: the wait reports it cancelled and leaves
// the request inactive; restarted, it receives normally.
TEST(Persistent, CancelOfAnActiveReceive) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      const int me = rank_of(comm);
      int v = -1;
      if (me == p.b) {
        EP_Request r = EP_REQUEST_NULL;
        ASSERT_EQ(EP_Recv_init(&v, 1, MPI_INT, p.a, 40, comm, &r), EP_SUCCESS);
        ASSERT_EQ(EP_Start(&r), EP_SUCCESS);
        ASSERT_EQ(EP_Cancel(&r), EP_SUCCESS);
        EP_Status st = fresh_status();
        ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
        int cancelled = 0;
        EP_Test_cancelled(&st, &cancelled);
        EXPECT_EQ(cancelled, 1) << p.what;
        EXPECT_NE(r, EP_REQUEST_NULL);
        EXPECT_EQ(v, -1);
        int flag = 0;
        st = fresh_status();
        ASSERT_EQ(EP_Test(&r, &flag, &st), EP_SUCCESS);
        EXPECT_EQ(flag, 1);
        expect_empty(st, "inactive after the cancelled wait");
        ASSERT_EQ(EP_Start(&r), EP_SUCCESS);
        char go = 0;
        ASSERT_EQ(EP_Send(&go, 1, MPI_CHAR, p.a, 41, comm), EP_SUCCESS);
        st = fresh_status();
        ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
        EP_Test_cancelled(&st, &cancelled);
        EXPECT_EQ(cancelled, 0);
        EXPECT_EQ(st.EP_SOURCE, p.a);
        EXPECT_EQ(v, 77) << p.what;
        EP_Request_free(&r);
      } else if (me == p.a) {
        char go;
        ASSERT_EQ(EP_Recv(&go, 1, MPI_CHAR, p.b, 41, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        v = 77;
        ASSERT_EQ(EP_Send(&v, 1, MPI_INT, p.b, 40, comm), EP_SUCCESS);
      }
      ep_barrier(comm);
    }
  });
}

// Starting an active request, EP_Startall with an active, null, repeated or
// nonpersistent entry (none is started), and bad handles.
TEST(Persistent, StartErrorsHaveExactCodesAndStartNothing) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    const int me = rank_of(comm);
    int a = 0, b = 0;
    EP_Request ra = EP_REQUEST_NULL, rb = EP_REQUEST_NULL;
    ASSERT_EQ(EP_Recv_init(&a, 1, MPI_INT, me, 50, comm, &ra), EP_SUCCESS);
    ASSERT_EQ(EP_Recv_init(&b, 1, MPI_INT, me, 51, comm, &rb), EP_SUCCESS);
    ASSERT_EQ(EP_Start(&rb), EP_SUCCESS);
    EXPECT_EQ(EP_Start(&rb), EP_ERR_REQUEST);
    EXPECT_NE(last_error(EP_ERR_REQUEST).find("EP_Start: request is active"), std::string::npos)
        << last_error(EP_ERR_REQUEST);
    auto inactive = [&](EP_Request r, const char* where) {
      int flag = 0;
      EP_Status st = fresh_status();
      ASSERT_EQ(EP_Request_get_status(r, &flag, &st), EP_SUCCESS);
      EXPECT_EQ(flag, 1) << where << ": not started";
      expect_empty(st, where);
    };
    EP_Request two[2] = {ra, rb};
    EXPECT_EQ(EP_Startall(2, two), EP_ERR_REQUEST);
    EXPECT_NE(last_error(EP_ERR_REQUEST).find("EP_Startall: requests[1] is active"),
              std::string::npos);
    inactive(ra, "Startall with an active entry");
    EP_Request twice[2] = {ra, ra};
    EXPECT_EQ(EP_Startall(2, twice), EP_ERR_REQUEST);
    EXPECT_NE(last_error(EP_ERR_REQUEST).find("appears twice"), std::string::npos);
    inactive(ra, "Startall with a repeated entry");
    EP_Request with_null[2] = {ra, EP_REQUEST_NULL};
    EXPECT_EQ(EP_Startall(2, with_null), EP_ERR_REQUEST);
    inactive(ra, "Startall with a null entry");
    EP_Request plain = EP_REQUEST_NULL;
    ASSERT_EQ(EP_Isend(&a, 1, MPI_INT, EP_PROC_NULL, 0, comm, &plain), EP_SUCCESS);
    EP_Request with_plain[2] = {ra, plain};
    EXPECT_EQ(EP_Startall(2, with_plain), EP_ERR_REQUEST);
    EXPECT_NE(last_error(EP_ERR_REQUEST).find("requests[1] is not a persistent request"),
              std::string::npos);
    inactive(ra, "Startall with a nonpersistent entry");
    EXPECT_EQ(EP_Start(&plain), EP_ERR_REQUEST);
    ASSERT_EQ(EP_Wait(&plain, EP_STATUS_IGNORE), EP_SUCCESS);
    EP_Request irecv = EP_REQUEST_NULL;
    ASSERT_EQ(EP_Irecv(&a, 1, MPI_INT, me, 52, comm, &irecv), EP_SUCCESS);
    EXPECT_EQ(EP_Start(&irecv), EP_ERR_REQUEST);
    EP_Cancel(&irecv);
    ASSERT_EQ(EP_Wait(&irecv, EP_STATUS_IGNORE), EP_SUCCESS);
    EXPECT_EQ(EP_Start(nullptr), EP_ERR_ARG);
    EP_Request null_req = EP_REQUEST_NULL;
    EXPECT_EQ(EP_Start(&null_req), EP_ERR_REQUEST);
    EP_Request comm_as_req = reinterpret_cast<EP_Request>(comm);
    EXPECT_EQ(EP_Start(&comm_as_req), EP_ERR_REQUEST);
    EXPECT_EQ(EP_Startall(-1, two), EP_ERR_COUNT);
    EXPECT_EQ(EP_Startall(1, nullptr), EP_ERR_ARG);
    EXPECT_EQ(EP_Startall(0, nullptr), EP_SUCCESS);
    // The active one still completes normally.
    ASSERT_EQ(EP_Send(&me, 1, MPI_INT, me, 51, comm), EP_SUCCESS);
    EP_Status st = fresh_status();
    ASSERT_EQ(EP_Wait(&rb, &st), EP_SUCCESS);
    EXPECT_EQ(st.EP_TAG, 51);
    EXPECT_EQ(b, me);
    ASSERT_EQ(EP_Startall(2, two), EP_SUCCESS);  // both inactive now
    EXPECT_EQ(EP_Cancel(&two[0]), EP_SUCCESS);
    EXPECT_EQ(EP_Cancel(&two[1]), EP_SUCCESS);
    ASSERT_EQ(EP_Waitall(2, two, EP_STATUSES_IGNORE), EP_SUCCESS);
    EP_Request_free(&ra);
    EP_Request_free(&rb);
  });
}

// Buffered persistent sends check the attached buffer at each start: with none, the
// start fails (EP_ERR_BUFFER, naming EP_Start) and the request stays inactive.
TEST(Persistent, BsendInitWithoutBufferFailsAtStart) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    const int me = rank_of(comm);
    int v = 3;
    EP_Request s = EP_REQUEST_NULL;
    ASSERT_EQ(EP_Bsend_init(&v, 1, MPI_INT, me, 60, comm, &s), EP_SUCCESS);
    EXPECT_EQ(EP_Start(&s), EP_ERR_BUFFER);
    EXPECT_NE(last_error(EP_ERR_BUFFER).find("EP_Start:"), std::string::npos);
    int flag = 0;
    EP_Status st = fresh_status();
    ASSERT_EQ(EP_Test(&s, &flag, &st), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    expect_empty(st, "after a failed start");
    EXPECT_EQ(EP_Startall(1, &s), EP_ERR_BUFFER);
    EXPECT_NE(last_error(EP_ERR_BUFFER).find("EP_Startall:"), std::string::npos);
    EP_Request_free(&s);
    int flag2 = 0;
    ASSERT_EQ(EP_Iprobe(me, 60, comm, &flag2, EP_STATUS_IGNORE), EP_SUCCESS);
    EXPECT_EQ(flag2, 0) << "nothing was sent";
  });
}

// The init calls check what EP_Isend/EP_Irecv check, with the same codes, under their
// own names, and leave *request alone when they fail.
TEST(Persistent, InitArgumentErrorsMatchIsendAndIrecv) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    const int size = size_of(comm);
    int buf[4] = {0, 0, 0, 0};
    int ub = 0;
    EP_Comm_tag_ub(comm, &ub);
    struct Case {
      const void* buf;
      int count;
      MPI_Datatype type;
      int peer, tag;
      EP_Comm comm;
      bool null_request;
    };
    const std::vector<Case> sends = {
        {buf, -1, MPI_INT, 0, 1, comm, false},
        {buf, 1, MPI_DATATYPE_NULL, 0, 1, comm, false},
        {nullptr, 1, MPI_INT, 0, 1, comm, false},
        {EP_IN_PLACE, 1, MPI_INT, 0, 1, comm, false},
        {buf, 1, MPI_INT, size, 1, comm, false},
        {buf, 1, MPI_INT, EP_ANY_SOURCE, 1, comm, false},
        {buf, 1, MPI_INT, -7, 1, comm, false},
        {buf, 1, MPI_INT, 0, EP_ANY_TAG, comm, false},
        {buf, 1, MPI_INT, 0, -5, comm, false},
        {buf, 1, MPI_INT, 0, ub + 1, comm, false},
        {buf, 1, MPI_INT, 0, 1, EP_COMM_NULL, false},
        {buf, 1, MPI_INT, 0, 1, comm, true},
    };
    using SendFn = int (*)(const void*, int, MPI_Datatype, int, int, EP_Comm, EP_Request*);
    const std::vector<std::pair<SendFn, std::string>> inits = {{EP_Send_init, "EP_Send_init"},
                                                               {EP_Bsend_init, "EP_Bsend_init"},
                                                               {EP_Ssend_init, "EP_Ssend_init"},
                                                               {EP_Rsend_init, "EP_Rsend_init"}};
    for (size_t k = 0; k < sends.size(); ++k) {
      const Case& c = sends[k];
      EP_Request iso = EP_REQUEST_NULL;
      const int want =
          EP_Isend(c.buf, c.count, c.type, c.peer, c.tag, c.comm, c.null_request ? nullptr : &iso);
      ASSERT_NE(want, EP_SUCCESS) << "case " << k;
      for (const auto& [fn, name] : inits) {
        EP_Request r = reinterpret_cast<EP_Request>(&buf[3]);  // a sentinel: left alone
        EXPECT_EQ(fn(c.buf, c.count, c.type, c.peer, c.tag, c.comm, c.null_request ? nullptr : &r),
                  want)
            << name << " case " << k;
        EXPECT_NE(last_error(want).find(name + ":"), std::string::npos) << last_error(want);
        EXPECT_EQ(r, reinterpret_cast<EP_Request>(&buf[3])) << name << " case " << k;
      }
    }
    const std::vector<Case> recvs = {
        {buf, -1, MPI_INT, 0, 1, comm, false},     {buf, 1, MPI_DATATYPE_NULL, 0, 1, comm, false},
        {nullptr, 1, MPI_INT, 0, 1, comm, false},  {buf, 1, MPI_INT, size, 1, comm, false},
        {buf, 1, MPI_INT, -7, 1, comm, false},     {buf, 1, MPI_INT, 0, -5, comm, false},
        {buf, 1, MPI_INT, 0, ub + 1, comm, false}, {buf, 1, MPI_INT, 0, 1, EP_COMM_NULL, false},
        {buf, 1, MPI_INT, 0, 1, comm, true},
    };
    for (size_t k = 0; k < recvs.size(); ++k) {
      const Case& c = recvs[k];
      void* b = const_cast<void*>(c.buf);
      EP_Request iro = EP_REQUEST_NULL;
      const int want =
          EP_Irecv(b, c.count, c.type, c.peer, c.tag, c.comm, c.null_request ? nullptr : &iro);
      ASSERT_NE(want, EP_SUCCESS) << "case " << k;
      EP_Request r = reinterpret_cast<EP_Request>(&buf[3]);
      EXPECT_EQ(
          EP_Recv_init(b, c.count, c.type, c.peer, c.tag, c.comm, c.null_request ? nullptr : &r),
          want)
          << "EP_Recv_init case " << k;
      EXPECT_NE(last_error(want).find("EP_Recv_init:"), std::string::npos) << last_error(want);
      EXPECT_EQ(r, reinterpret_cast<EP_Request>(&buf[3]));
    }
  });
}

}  // namespace
