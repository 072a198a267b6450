// Point-to-point semantics (MPI 3.1 chapter 3, "process" read as "endpoint"):
// modes, ordering, wildcards, probes, cancel, the request family, datatypes, large
// messages and asynchronous progress - each within a process and across processes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "tests/common/harness.h"
#include "tests/p2p/p2p_util.h"

namespace {

using ep_test::ep_barrier;
using ep_test::run_endpoints;
using ep_test::scaled;
using ep_test::uneven;
using ep_test::world_rank;
using ep_test::world_size;

using ep_p2p_test::Pair;
using ep_p2p_test::pairs;
using ep_p2p_test::proc_of;
using ep_p2p_test::rank_of;
using ep_p2p_test::size_of;

TEST(Modes, SsendCompletesOnlyAfterTheReceiveStarted) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      int me = rank_of(comm);
      for (int n : {8, 100000}) {  // eager-sized and rendezvous-sized
        std::vector<char> buf(n, 'x');
        if (me == p.a) {
          EP_Request r;
          ASSERT_EQ(EP_Issend(buf.data(), n, MPI_CHAR, p.b, 3, comm, &r), EP_SUCCESS);
          int flag = 1;
          for (int i = 0; i < 20; ++i) {  // ~100 ms before the receiver posts
            EP_Test(&r, &flag, EP_STATUS_IGNORE);
            EXPECT_EQ(flag, 0) << p.what << " n=" << n << ": Ssend done before the receive";
            if (flag) break;
            usleep(5000);
          }
          char go = 1;
          EP_Send(&go, 1, MPI_CHAR, p.b, 4, comm);  // now the receiver may post
          EXPECT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
        } else if (me == p.b) {
          char go;
          EP_Recv(&go, 1, MPI_CHAR, p.a, 4, comm, EP_STATUS_IGNORE);
          std::vector<char> in(n);
          EXPECT_EQ(EP_Recv(in.data(), n, MPI_CHAR, p.a, 3, comm, EP_STATUS_IGNORE), EP_SUCCESS);
          EXPECT_EQ(in, buf);
        }
      }
      ep_barrier(comm);
    }
  });
}

TEST(Modes, RsendWithReceivePostedFirstDelivers) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      int me = rank_of(comm), v = 0;
      if (me == p.b) {
        EP_Request r;
        EP_Irecv(&v, 1, MPI_INT, p.a, 8, comm, &r);
        EP_Send(&v, 0, MPI_INT, p.a, 9, comm);  // "posted"
        EP_Wait(&r, EP_STATUS_IGNORE);
        EXPECT_EQ(v, 77);
      } else if (me == p.a) {
        EP_Recv(&v, 0, MPI_INT, p.b, 9, comm, EP_STATUS_IGNORE);
        v = 77;
        EXPECT_EQ(EP_Rsend(&v, 1, MPI_INT, p.b, 8, comm), EP_SUCCESS);
      }
      ep_barrier(comm);
    }
  });
}

TEST(Modes, BsendUsesTheAttachedBufferAndDetachWaitsForIt) {
  // One buffer per process, attached by the main thread.
  const int big = 1 << 20;  // rendezvous-sized: stays in the buffer until received
  std::vector<char> attach(big + 4 * EP_BSEND_OVERHEAD + 4096);
  ASSERT_EQ(EP_Buffer_attach(attach.data(), static_cast<int>(attach.size())), EP_SUCCESS);
  std::atomic<bool> received{false};
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int me = rank_of(comm), size = size_of(comm);
    Pair p = pairs(size).back();
    if (me == p.a) {
      std::vector<char> msg(big, 'b');
      ASSERT_EQ(EP_Bsend(msg.data(), big, MPI_CHAR, p.b, 1, comm), EP_SUCCESS);
      std::fill(msg.begin(), msg.end(), 'z');  // the message was copied: reuse is safe
      // The buffer is now (nearly) full: the next one does not fit.
      int err = EP_Bsend(msg.data(), big, MPI_CHAR, p.b, 2, comm);
      EXPECT_EQ(err, EP_ERR_BUFFER);
      EXPECT_NE(ep_test::last_error(err).find("EP_Bsend"), std::string::npos);
      char go = 1;
      EP_Send(&go, 1, MPI_CHAR, p.b, 3, comm);
    } else if (me == p.b) {
      char go;
      EP_Recv(&go, 1, MPI_CHAR, p.a, 3, comm, EP_STATUS_IGNORE);
      usleep(100000);  // the buffered message waits in the buffer meanwhile
      std::vector<char> in(big);
      received.store(true);
      EXPECT_EQ(EP_Recv(in.data(), big, MPI_CHAR, p.a, 1, comm, EP_STATUS_IGNORE), EP_SUCCESS);
      EXPECT_EQ(in[0], 'b');
      EXPECT_EQ(in[big - 1], 'b');
    }
  });
  void* addr = nullptr;
  int sz = 0;
  ASSERT_EQ(EP_Buffer_detach(&addr, &sz), EP_SUCCESS);
  EXPECT_EQ(addr, attach.data());
  EXPECT_EQ(sz, static_cast<int>(attach.size()));
  EXPECT_EQ(EP_Buffer_detach(&addr, &sz), EP_ERR_BUFFER);  // nothing attached any more
  // Without a buffer, Bsend fails cleanly.
  run_endpoints(1, [](EP_Comm comm, int) {
    int v = 1;
    EXPECT_EQ(EP_Bsend(&v, 1, MPI_INT, rank_of(comm), 0, comm), EP_ERR_BUFFER);
  });
}

TEST(Modes, BsendBufferForOneMessageServesAnyNumberSentOneAfterAnother) {
  // A buffer attached for exactly one outstanding 1 MiB message (rendezvous-sized):
  // each EP_Bsend's message is received, and the receipt acknowledged, before the next
  // EP_Bsend, so every one must find the space of the previous one reclaimed (MPI 3.1
  // section 3.6.2), within a process and across processes.
  const int n = 1 << 20;
  std::vector<char> attach(n + EP_BSEND_OVERHEAD);
  ASSERT_EQ(EP_Buffer_attach(attach.data(), static_cast<int>(attach.size())), EP_SUCCESS);
  const int iters = scaled(200);
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      // The receipt reaches the sender as a message of the receiver's, or through a
      // barrier of every endpoint.
      for (bool by_barrier : {false, true}) {
        const int me = rank_of(comm);
        int refused = 0;
        std::vector<char> msg(n);
        for (int i = 0; i < iters; ++i) {
          const char fill = static_cast<char>('a' + i % 26);
          if (me == p.a) {
            std::fill(msg.begin(), msg.end(), fill);
            const int err = EP_Bsend(msg.data(), n, MPI_CHAR, p.b, 40, comm);
            if (err == EP_ERR_BUFFER) {
              ++refused;
              ASSERT_EQ(EP_Send(msg.data(), n, MPI_CHAR, p.b, 40, comm), EP_SUCCESS);
            } else {
              ASSERT_EQ(err, EP_SUCCESS);
            }
            char ack = 0;
            if (!by_barrier) {
              ASSERT_EQ(EP_Recv(&ack, 1, MPI_CHAR, p.b, 41, comm, EP_STATUS_IGNORE), EP_SUCCESS);
            }
          } else if (me == p.b) {
            ASSERT_EQ(EP_Recv(msg.data(), n, MPI_CHAR, p.a, 40, comm, EP_STATUS_IGNORE),
                      EP_SUCCESS);
            ASSERT_EQ(msg[0], fill);
            ASSERT_EQ(msg[n - 1], fill);
            char ack = 1;
            if (!by_barrier) {
              ASSERT_EQ(EP_Send(&ack, 1, MPI_CHAR, p.a, 41, comm), EP_SUCCESS);
            }
          }
          if (by_barrier) {
            ASSERT_EQ(EP_Barrier(comm), EP_SUCCESS);
          }
        }
        EXPECT_EQ(refused, 0) << p.what << (by_barrier ? " (barrier)" : " (ack)")
                              << ": EP_ERR_BUFFER in " << refused << " of " << iters;
        ep_barrier(comm);
      }
    }
  });
  void* addr = nullptr;
  int sz = 0;
  ASSERT_EQ(EP_Buffer_detach(&addr, &sz), EP_SUCCESS);
}

TEST(Modes, BsendBufferForOneMessageAfterAnMpiBarrier) {
  // The same, one endpoint per process, with the receipt learned through MPI_Barrier on
  // a communicator of the application's: the sender's thread then never drives libep
  // between its buffered sends, and the message's data may have left without libep
  // having noticed yet when the next EP_Bsend asks for space.
  if (world_size() < 2) GTEST_SKIP() << "needs two processes";
  const int n = 1 << 20;
  std::vector<char> attach(n + EP_BSEND_OVERHEAD);
  ASSERT_EQ(EP_Buffer_attach(attach.data(), static_cast<int>(attach.size())), EP_SUCCESS);
  MPI_Comm app;
  MPI_Comm_dup(MPI_COMM_WORLD, &app);
  const int iters = scaled(200);
  run_endpoints(1, [&](EP_Comm comm, int) {
    const int me = rank_of(comm);
    int refused = 0;
    std::vector<char> msg(n);
    for (int i = 0; i < iters; ++i) {
      const char fill = static_cast<char>('a' + i % 26);
      if (me == 0) {
        std::fill(msg.begin(), msg.end(), fill);
        const int err = EP_Bsend(msg.data(), n, MPI_CHAR, 1, 42, comm);
        if (err == EP_ERR_BUFFER) {
          ++refused;
          ASSERT_EQ(EP_Send(msg.data(), n, MPI_CHAR, 1, 42, comm), EP_SUCCESS);
        } else {
          ASSERT_EQ(err, EP_SUCCESS);
        }
      } else if (me == 1) {
        ASSERT_EQ(EP_Recv(msg.data(), n, MPI_CHAR, 0, 42, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        ASSERT_EQ(msg[n - 1], fill);
      }
      MPI_Barrier(app);
    }
    EXPECT_EQ(refused, 0) << "EP_ERR_BUFFER in " << refused << " of " << iters;
  });
  MPI_Comm_free(&app);
  void* addr = nullptr;
  int sz = 0;
  ASSERT_EQ(EP_Buffer_detach(&addr, &sz), EP_SUCCESS);
}

TEST(Modes, BufferDetachBlocksUntilBufferedMessagesHaveLeft) {
  // In every process: endpoint 0 Bsends 1 MiB (rendezvous-sized, so it stays in the
  // attached buffer) to endpoint 1, which receives only 300 ms later; the detach that
  // endpoint 0 calls right after the Bsend must wait for that receive.
  const int n = 1 << 20;
  std::vector<char> attach(n + EP_BSEND_OVERHEAD + 64);
  ASSERT_EQ(EP_Buffer_attach(attach.data(), static_cast<int>(attach.size())), EP_SUCCESS);
  std::atomic<double> received_at{0};
  run_endpoints(2, [&](EP_Comm comm, int index) {
    int me = rank_of(comm);
    if (index == 0) {
      std::vector<char> msg(n, 'd');
      ASSERT_EQ(EP_Bsend(msg.data(), n, MPI_CHAR, me + 1, 6, comm), EP_SUCCESS);
      void* addr = nullptr;
      int sz = 0;
      ASSERT_EQ(EP_Buffer_detach(&addr, &sz), EP_SUCCESS);
      // The receiver stamps received_at just before it posts the receive, the only
      // thing that lets the buffered message leave.  (Not a duration: under load this
      // thread may reach its Bsend late.)
      double posted = received_at.load();
      EXPECT_GT(posted, 0) << "detach returned while the message was still buffered";
      EXPECT_GE(EP_Wtime(), posted);
      EXPECT_EQ(addr, attach.data());
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::vector<char> in(n);
      received_at.store(EP_Wtime());
      ASSERT_EQ(EP_Recv(in.data(), n, MPI_CHAR, me - 1, 6, comm, EP_STATUS_IGNORE), EP_SUCCESS);
      EXPECT_EQ(in[n - 1], 'd');
    }
  });
}

TEST(Ordering, NonOvertakingWithWildcardsAndMixedSizes) {
  const int n = scaled(200);
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      int me = rank_of(comm);
      if (me == p.a) {
        std::vector<EP_Request> reqs;
        std::vector<std::vector<int>> bufs(n);
        for (int i = 0; i < n; ++i) {
          int len = (i % 7 == 0) ? 20000 : 1 + i % 5;  // mix eager and rendezvous
          bufs[i].assign(len, i);
          EP_Request r;
          if (i % 3 == 0) {
            EP_Issend(bufs[i].data(), len, MPI_INT, p.b, i % 4, comm, &r);
          } else {
            EP_Isend(bufs[i].data(), len, MPI_INT, p.b, i % 4, comm, &r);
          }
          reqs.push_back(r);
        }
        EXPECT_EQ(EP_Waitall(n, reqs.data(), EP_STATUSES_IGNORE), EP_SUCCESS);
      } else if (me == p.b) {
        std::vector<int> in(20000);
        int last = -1;
        for (int i = 0; i < n; ++i) {
          EP_Status st;
          int src = (i % 2) ? EP_ANY_SOURCE : p.a;
          ASSERT_EQ(EP_Recv(in.data(), 20000, MPI_INT, src, EP_ANY_TAG, comm, &st), EP_SUCCESS);
          EXPECT_EQ(st.EP_SOURCE, p.a);
          EXPECT_EQ(in[0], last + 1) << p.what;
          EXPECT_EQ(st.EP_TAG, in[0] % 4);
          last = in[0];
        }
      }
      ep_barrier(comm);
    }
  });
}

// A blocking send of a small message may leave on its own, straight from its caller's
// stack ("Lone blocking sends" in progress/engine.h) - but only when none of the
// endpoint's earlier packets still waits in its outbox: here every blocking send
// follows a burst of nonblocking ones that has not left yet, or another blocking one.
TEST(Ordering, BlockingSendsBetweenBurstsOfIsendKeepTheirPlace) {
  const int rounds = scaled(300);
  const int per = 9;  // messages per round: 4 EP_Isend, EP_Send, 3 EP_Isend, EP_Bsend
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      int me = rank_of(comm);
      if (me == p.a) {
        std::vector<char> bsend_buf(per * (256 + EP_BSEND_OVERHEAD));
        void* detached = nullptr;
        int detached_size = 0;
        // The attached buffer is per process: only endpoint 0 of each process sends here.
        ASSERT_EQ(EP_Buffer_attach(bsend_buf.data(), static_cast<int>(bsend_buf.size())),
                  EP_SUCCESS);
        for (int r = 0; r < rounds; ++r) {
          std::vector<std::vector<int>> bufs(per);
          std::vector<EP_Request> reqs;
          for (int k = 0; k < per; ++k) {
            // Mostly one int; every fifth round one of 50 ints (still a small packet).
            int len = (r % 5 == 0 && k % 3 == 1) ? 50 : 1;
            bufs[k].assign(len, r * per + k);
            const int tag = k % 3;
            if (k == 4) {
              ASSERT_EQ(EP_Send(bufs[k].data(), len, MPI_INT, p.b, tag, comm), EP_SUCCESS);
            } else if (k == 8) {
              ASSERT_EQ(EP_Bsend(bufs[k].data(), len, MPI_INT, p.b, tag, comm), EP_SUCCESS);
            } else {
              EP_Request q;
              ASSERT_EQ(EP_Isend(bufs[k].data(), len, MPI_INT, p.b, tag, comm, &q), EP_SUCCESS);
              reqs.push_back(q);
            }
          }
          ASSERT_EQ(EP_Waitall(static_cast<int>(reqs.size()), reqs.data(), EP_STATUSES_IGNORE),
                    EP_SUCCESS);
        }
        ASSERT_EQ(EP_Buffer_detach(&detached, &detached_size), EP_SUCCESS);
      } else if (me == p.b) {
        std::vector<int> in(50);
        for (int i = 0; i < rounds * per; ++i) {
          EP_Status st;
          int src = (i % 2) ? EP_ANY_SOURCE : p.a;
          ASSERT_EQ(EP_Recv(in.data(), 50, MPI_INT, src, EP_ANY_TAG, comm, &st), EP_SUCCESS);
          ASSERT_EQ(in[0], i) << p.what << ": message " << in[0] << " arrived in place of " << i;
          EXPECT_EQ(st.EP_TAG, (i % per) % 3);
        }
      }
      ep_barrier(comm);
    }
  });
}

TEST(Ordering, SpecificTagReceivesSkipOtherTagsButKeepTheirOrder) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      int me = rank_of(comm);
      if (me == p.a) {
        for (int i = 0; i < 6; ++i) EP_Send(&i, 1, MPI_INT, p.b, i < 3 ? 1 : 2, comm);
      } else if (me == p.b) {
        int v;
        for (int i = 3; i < 6; ++i) {  // tag 2 first: 3,4,5
          EP_Recv(&v, 1, MPI_INT, p.a, 2, comm, EP_STATUS_IGNORE);
          EXPECT_EQ(v, i);
        }
        for (int i = 0; i < 3; ++i) {  // then tag 1: 0,1,2
          EP_Recv(&v, 1, MPI_INT, EP_ANY_SOURCE, 1, comm, EP_STATUS_IGNORE);
          EXPECT_EQ(v, i);
        }
      }
      ep_barrier(comm);
    }
  });
}

TEST(ProcNull, SendRecvProbeOfProcNullCompleteAtOnce) {
  run_endpoints(1, [](EP_Comm comm, int) {
    int v = 5;
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, EP_PROC_NULL, 0, comm), EP_SUCCESS);
    EP_Status st;
    EXPECT_EQ(EP_Recv(&v, 1, MPI_INT, EP_PROC_NULL, 0, comm, &st), EP_SUCCESS);
    EXPECT_EQ(st.EP_SOURCE, EP_PROC_NULL);
    EXPECT_EQ(st.EP_TAG, EP_ANY_TAG);
    int count = -1;
    EP_Get_count(&st, MPI_INT, &count);
    EXPECT_EQ(count, 0);
    int flag = 0;
    EXPECT_EQ(EP_Iprobe(EP_PROC_NULL, 0, comm, &flag, &st), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    EP_Message m;
    EXPECT_EQ(EP_Mprobe(EP_PROC_NULL, 0, comm, &m, &st), EP_SUCCESS);
    EXPECT_EQ(m, EP_MESSAGE_NO_PROC);
    EXPECT_EQ(EP_Mrecv(&v, 1, MPI_INT, &m, &st), EP_SUCCESS);
    EXPECT_EQ(st.EP_SOURCE, EP_PROC_NULL);
    EXPECT_EQ(m, EP_MESSAGE_NULL);
  });
}

TEST(Probe, ProbeMprobeAndImprobeSeeAndTakeTheRightMessage) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      int me = rank_of(comm);
      for (int n : {3, 50000}) {
        if (me == p.a) {
          // Nonblocking: a large standard send may wait for its receive (MPI 3.4),
          // and the receiver probes for the second message first.
          std::vector<int> a(n, 1), b(n, 2);
          EP_Request r[2];
          EP_Isend(a.data(), n, MPI_INT, p.b, 10, comm, &r[0]);
          EP_Isend(b.data(), n, MPI_INT, p.b, 11, comm, &r[1]);
          EXPECT_EQ(EP_Waitall(2, r, EP_STATUSES_IGNORE), EP_SUCCESS);
        } else if (me == p.b) {
          EP_Status st;
          ASSERT_EQ(EP_Probe(p.a, 11, comm, &st), EP_SUCCESS);  // the second one
          EXPECT_EQ(st.EP_TAG, 11);
          int count = 0;
          EP_Get_count(&st, MPI_INT, &count);
          EXPECT_EQ(count, n);
          int flag = 0;
          EP_Message m = EP_MESSAGE_NULL;
          ASSERT_EQ(EP_Improbe(EP_ANY_SOURCE, EP_ANY_TAG, comm, &flag, &m, &st), EP_SUCCESS);
          ASSERT_EQ(flag, 1);
          EXPECT_EQ(st.EP_TAG, 10);  // the first one, now taken
          // A probe no longer sees the taken message.
          ASSERT_EQ(EP_Iprobe(p.a, 10, comm, &flag, &st), EP_SUCCESS);
          EXPECT_EQ(flag, 0);
          std::vector<int> in(n);
          EP_Request r;
          ASSERT_EQ(EP_Imrecv(in.data(), n, MPI_INT, &m, &r), EP_SUCCESS);
          EXPECT_EQ(m, EP_MESSAGE_NULL);
          EXPECT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
          EXPECT_EQ(in[n - 1], 1);
          ASSERT_EQ(EP_Mprobe(p.a, 11, comm, &m, &st), EP_SUCCESS);
          EXPECT_EQ(EP_Mrecv(in.data(), n, MPI_INT, &m, &st), EP_SUCCESS);
          EXPECT_EQ(in[0], 2);
          EXPECT_EQ(st.EP_SOURCE, p.a);
        }
        ep_barrier(comm);  // the next size's messages only after this size's probes
      }
    }
  });
}

TEST(Cancel, PendingReceiveIsCancelledAndMatchedOneIsNot) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int me = rank_of(comm), v = 0;
    EP_Request r;
    ASSERT_EQ(EP_Irecv(&v, 1, MPI_INT, EP_ANY_SOURCE, 999, comm, &r), EP_SUCCESS);
    ASSERT_EQ(EP_Cancel(&r), EP_SUCCESS);
    EP_Status st;
    ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
    int flag = 0;
    EP_Test_cancelled(&st, &flag);
    EXPECT_EQ(flag, 1);
    ep_barrier(comm);  // nobody sends tag 999 before every receive above was cancelled
    // A message sent afterwards is not swallowed by the cancelled receive.
    int to = (me + 1) % size_of(comm), from = (me + size_of(comm) - 1) % size_of(comm);
    EP_Request s;
    int out = me;
    EP_Isend(&out, 1, MPI_INT, to, 999, comm, &s);
    ASSERT_EQ(EP_Irecv(&v, 1, MPI_INT, from, 999, comm, &r), EP_SUCCESS);
    EP_Wait(&s, EP_STATUS_IGNORE);
    // Wait until it matched, then cancel: too late, it completes normally.
    int done = 0;
    while (!done) EP_Request_get_status(r, &done, &st);
    EXPECT_EQ(EP_Cancel(&r), EP_SUCCESS);
    ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
    EP_Test_cancelled(&st, &flag);
    EXPECT_EQ(flag, 0);
    EXPECT_EQ(v, from);
  });
}

TEST(Requests, NullRequestsAndTheAnySomeAllForms) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int me = rank_of(comm), size = size_of(comm);
    EP_Request reqs[4] = {EP_REQUEST_NULL, EP_REQUEST_NULL, EP_REQUEST_NULL, EP_REQUEST_NULL};
    int index = 0, flag = 0, outcount = 0, indices[4];
    EP_Status st, sts[4];
    EXPECT_EQ(EP_Waitany(4, reqs, &index, &st), EP_SUCCESS);
    EXPECT_EQ(index, EP_UNDEFINED);
    EXPECT_EQ(st.EP_SOURCE, EP_ANY_SOURCE);
    EXPECT_EQ(EP_Testany(4, reqs, &index, &flag, &st), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(index, EP_UNDEFINED);
    EXPECT_EQ(EP_Waitsome(4, reqs, &outcount, indices, sts), EP_SUCCESS);
    EXPECT_EQ(outcount, EP_UNDEFINED);
    EXPECT_EQ(EP_Testall(4, reqs, &flag, sts), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(EP_Request_get_status(EP_REQUEST_NULL, &flag, &st), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    // Two receives, one never matched: Waitany/Waitsome report the matched one.
    int to = (me + 1) % size, from = (me + size - 1) % size, in = -1, out = me, never = 0;
    EP_Irecv(&never, 1, MPI_INT, from, 555, comm, &reqs[1]);
    EP_Irecv(&in, 1, MPI_INT, from, 7, comm, &reqs[2]);
    EXPECT_EQ(EP_Testsome(4, reqs, &outcount, indices, sts), EP_SUCCESS);
    EXPECT_EQ(outcount, 0);
    ep_barrier(comm);  // every endpoint tested before anyone sends tag 7
    EP_Send(&out, 1, MPI_INT, to, 7, comm);
    EXPECT_EQ(EP_Waitsome(4, reqs, &outcount, indices, sts), EP_SUCCESS);
    ASSERT_EQ(outcount, 1);
    EXPECT_EQ(indices[0], 2);
    EXPECT_EQ(sts[0].EP_SOURCE, from);
    EXPECT_EQ(in, from);
    EXPECT_EQ(reqs[2], EP_REQUEST_NULL);
    EXPECT_EQ(EP_Testall(4, reqs, &flag, sts), EP_SUCCESS);
    EXPECT_EQ(flag, 0);
    EP_Cancel(&reqs[1]);
    EXPECT_EQ(EP_Waitall(4, reqs, sts), EP_SUCCESS);
    int cancelled = 0;
    EP_Test_cancelled(&sts[1], &cancelled);
    EXPECT_EQ(cancelled, 1);
    ep_barrier(comm);
  });
}

// A buffer of a freed operation: nothing tells the program when MPI has finished with
// it (MPI 3.1 section 3.7.3), so it lives until the program ends (after MPI_Finalize,
// which completes every transfer).
std::vector<int>& kept_until_exit(size_t n, int value) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<std::vector<int>>> kept;
  std::lock_guard<std::mutex> lock(mu);
  kept.push_back(std::make_unique<std::vector<int>>(n, value));
  return *kept.back();
}

TEST(Requests, FreedPendingRequestsStillComplete) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int me = rank_of(comm), size = size_of(comm);
    int to = (me + 1) % size, from = (me + size - 1) % size;
    std::vector<int>& in = kept_until_exit(40000, -1);
    std::vector<int>& out = kept_until_exit(40000, me);
    EP_Request r, s;
    ASSERT_EQ(EP_Irecv(in.data(), 40000, MPI_INT, from, 1, comm, &r), EP_SUCCESS);
    ASSERT_EQ(EP_Request_free(&r), EP_SUCCESS);  // freed while pending
    EXPECT_EQ(r, EP_REQUEST_NULL);
    ASSERT_EQ(EP_Isend(out.data(), 40000, MPI_INT, to, 1, comm, &s), EP_SUCCESS);
    ASSERT_EQ(EP_Request_free(&s), EP_SUCCESS);
    // A later message on the same path arrives after the freed one (non-overtaking).
    // The freed receive took the first message: had it not, this one-int receive
    // would have matched the 40000-int message and failed with EP_ERR_TRUNCATE.
    int token = 42, got = 0;
    ASSERT_EQ(EP_Send(&token, 1, MPI_INT, to, 1, comm), EP_SUCCESS);
    ASSERT_EQ(EP_Recv(&got, 1, MPI_INT, from, 1, comm, EP_STATUS_IGNORE), EP_SUCCESS);
    EXPECT_EQ(got, 42);
    // Its data: from an endpoint of this process, our matcher copied it before it
    // delivered the token (one matcher, per-source order, acq_rel hand-overs), so the
    // token's completion orders that copy before these reads.  From another process it
    // lands through MPI at a moment nothing tells us: reading the buffer would race
    // with that write, so only the truncation-free token above checks that case.
    int local_rank = 0, local_size = 0;
    ASSERT_EQ(EP_Comm_local_rank(comm, &local_rank), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_local_size(comm, &local_size), EP_SUCCESS);
    const int first_local = me - local_rank;  // endpoints of a process are contiguous here
    if (from >= first_local && from < first_local + local_size) {
      EXPECT_EQ(in[0], from);
      EXPECT_EQ(in[39999], from);
    }
    ep_barrier(comm);
  });
}

TEST(Requests, GetStatusDoesNotFreeTheRequest) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int me = rank_of(comm), size = size_of(comm), v = -1;
    EP_Request r;
    EP_Irecv(&v, 1, MPI_INT, (me + size - 1) % size, 2, comm, &r);
    EP_Send(&me, 1, MPI_INT, (me + 1) % size, 2, comm);
    int flag = 0;
    EP_Status st;
    while (!flag) EP_Request_get_status(r, &flag, &st);
    EXPECT_NE(r, EP_REQUEST_NULL);
    EXPECT_EQ(st.EP_SOURCE, (me + size - 1) % size);
    EXPECT_EQ(EP_Request_get_status(r, &flag, &st), EP_SUCCESS);  // again
    EXPECT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
    EXPECT_EQ(r, EP_REQUEST_NULL);
  });
}

// Small messages (libep keeps up to 24 bytes with the request's status and copies them
// into the buffer when the completion is first observed, runtime/request.h "Inline
// payload"): the data is in the buffer after every completion form, exactly once -
// a Wait after Request_get_status found the request complete must not copy it again
// over what the user wrote meanwhile - and a receive freed before its message came
// still gets its data.  Within a process and across, with a whole and a partial
// last element and a truncating receive.
TEST(Requests, SmallPayloadsReachTheBufferOnceInEveryCompletionForm) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int me = rank_of(comm), size = size_of(comm);
    const int to = (me + 1) % size, from = (me + size - 1) % size;
    constexpr int kForms = 9;
    int64_t in[kForms][3];
    EP_Request r[kForms];
    for (int f = 0; f < kForms; ++f) {
      in[f][0] = in[f][1] = in[f][2] = -1;
      ASSERT_EQ(EP_Irecv(in[f], 3, MPI_INT64_T, from, 20 + f, comm, &r[f]), EP_SUCCESS);
    }
    ASSERT_EQ(EP_Request_free(&r[8]), EP_SUCCESS);  // freed before its message comes
    ep_barrier(comm);  // every receive is posted: the messages meet posted receives
    for (int f = 0; f < kForms; ++f) {
      int64_t out[3] = {me * 1000 + f, me * 1000 + f + 1, me * 1000 + f + 2};
      ASSERT_EQ(EP_Send(out, 3, MPI_INT64_T, to, 20 + f, comm), EP_SUCCESS);
    }
    auto check = [&](int f) {
      EXPECT_EQ(in[f][0], from * 1000 + f) << "form " << f;
      EXPECT_EQ(in[f][2], from * 1000 + f + 2) << "form " << f;
    };
    EP_Status st;
    int flag = 0, index = -1, outcount = 0, indices[1];
    // 0: Request_get_status, then the user writes, then Wait: no second copy.
    while (!flag) ASSERT_EQ(EP_Request_get_status(r[0], &flag, &st), EP_SUCCESS);
    check(0);
    in[0][0] = 77;
    ASSERT_EQ(EP_Wait(&r[0], &st), EP_SUCCESS);
    EXPECT_EQ(in[0][0], 77);
    EXPECT_EQ(st.EP_SOURCE, from);
    int count = 0;
    EP_Get_count(&st, MPI_INT64_T, &count);
    EXPECT_EQ(count, 3);
    // 1-7: each completion form.
    ASSERT_EQ(EP_Wait(&r[1], EP_STATUS_IGNORE), EP_SUCCESS);
    check(1);
    for (flag = 0; !flag;) ASSERT_EQ(EP_Test(&r[2], &flag, EP_STATUS_IGNORE), EP_SUCCESS);
    check(2);
    ASSERT_EQ(EP_Waitany(1, &r[3], &index, EP_STATUS_IGNORE), EP_SUCCESS);
    check(3);
    for (flag = 0; !flag;) EP_Testany(1, &r[4], &index, &flag, EP_STATUS_IGNORE);
    check(4);
    ASSERT_EQ(EP_Waitsome(1, &r[5], &outcount, indices, EP_STATUSES_IGNORE), EP_SUCCESS);
    check(5);
    for (outcount = 0; outcount == 0;) {
      EP_Testsome(1, &r[6], &outcount, indices, EP_STATUSES_IGNORE);
    }
    check(6);
    for (flag = 0; !flag;) EP_Testall(1, &r[7], &flag, EP_STATUSES_IGNORE);
    check(7);
    // 8: freed; non-overtaking puts its message before this later one.
    int64_t token = 0, got = -1;
    EP_Sendrecv(&token, 1, MPI_INT64_T, to, 20 + 8, &got, 1, MPI_INT64_T, from, 20 + 8, comm,
                EP_STATUS_IGNORE);
    const double t0 = EP_Wtime();
    volatile int64_t* last = &in[8][2];
    while (*last != from * 1000 + 10 && EP_Wtime() - t0 < 10) usleep(1000);
    check(8);
    // A partial last element (20 bytes into int64s: 2 whole ones) and a truncating
    // receive (3 elements into 2): only whole elements land, the rest stays.
    int64_t part[3] = {-1, -1, -1}, small[2] = {-1, -1};
    EP_Request a, b;
    ASSERT_EQ(EP_Irecv(part, 3, MPI_INT64_T, from, 40, comm, &a), EP_SUCCESS);
    ASSERT_EQ(EP_Irecv(small, 2, MPI_INT64_T, from, 41, comm, &b), EP_SUCCESS);
    ep_barrier(comm);
    int64_t five[3] = {me + 100, me + 200, me + 300};
    ASSERT_EQ(EP_Send(five, 20, MPI_BYTE, to, 40, comm), EP_SUCCESS);
    ASSERT_EQ(EP_Send(five, 3, MPI_INT64_T, to, 41, comm), EP_SUCCESS);
    ASSERT_EQ(EP_Wait(&a, &st), EP_SUCCESS);
    EXPECT_EQ(part[0], from + 100);
    EXPECT_EQ(part[1], from + 200);
    EXPECT_EQ(part[2], -1);
    int elements = 0;
    EP_Get_elements(&st, MPI_BYTE, &elements);
    EXPECT_EQ(elements, 20);
    EXPECT_EQ(EP_Wait(&b, &st), EP_ERR_TRUNCATE);
    EXPECT_EQ(small[0], from + 100);
    EXPECT_EQ(small[1], from + 200);
    // The same with 12-byte elements (not a power of two): 20 bytes are 1 whole one,
    // inline with the status; 40 bytes are 3, written straight into the buffer.
    MPI_Datatype triple;
    MPI_Type_contiguous(3, MPI_INT32_T, &triple);
    MPI_Type_commit(&triple);
    int32_t t1[6], t3[12];
    std::fill(std::begin(t1), std::end(t1), -1);
    std::fill(std::begin(t3), std::end(t3), -1);
    ASSERT_EQ(EP_Irecv(t1, 2, triple, from, 42, comm, &a), EP_SUCCESS);
    ASSERT_EQ(EP_Irecv(t3, 4, triple, from, 43, comm, &b), EP_SUCCESS);
    ep_barrier(comm);
    int32_t ten[10];
    for (int i = 0; i < 10; ++i) ten[i] = me * 100 + i;
    ASSERT_EQ(EP_Send(ten, 20, MPI_BYTE, to, 42, comm), EP_SUCCESS);
    ASSERT_EQ(EP_Send(ten, 40, MPI_BYTE, to, 43, comm), EP_SUCCESS);
    ASSERT_EQ(EP_Wait(&a, &st), EP_SUCCESS);
    EP_Get_elements(&st, MPI_BYTE, &elements);
    EXPECT_EQ(elements, 20);
    ASSERT_EQ(EP_Wait(&b, &st), EP_SUCCESS);
    EP_Get_elements(&st, MPI_BYTE, &elements);
    EXPECT_EQ(elements, 40);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(t1[i], i < 3 ? from * 100 + i : -1) << "t1 " << i;
    for (int i = 0; i < 12; ++i) EXPECT_EQ(t3[i], i < 9 ? from * 100 + i : -1) << "t3 " << i;
    MPI_Type_free(&triple);
    ep_barrier(comm);
  });
}

// The cases of a blocking receive of a small message, between the communicator's ranks
// 0 (sender) and 1 (receiver): data, status and error of each, in a ping-pong loop and
// then one by one.
void small_blocking_receives(EP_Comm comm) {
  int me = 0;
  EP_Comm_rank(comm, &me);
  const int peer = 1 - me;
  EP_Status st;
  int count = 0;
  // Ping-pong: every value arrives once, in order (8-byte int64, 2 x int32, 5 chars).
  for (int i = 0; i < scaled(4000); ++i) {
    if ((i % 2) == me) {
      int64_t v = 1000000 + i;
      ASSERT_EQ(EP_Send(&v, 1, MPI_INT64_T, peer, i % 3, comm), EP_SUCCESS);
    } else {
      int64_t v = -1;
      ASSERT_EQ(EP_Recv(&v, 1, MPI_INT64_T, peer, i % 3, comm, &st), EP_SUCCESS);
      ASSERT_EQ(v, 1000000 + i);
      ASSERT_EQ(st.EP_SOURCE, peer);
      ASSERT_EQ(st.EP_TAG, i % 3);
    }
  }
  if (me == 0) {
    int32_t two[2] = {7, 8};
    char five[5] = {'a', 'b', 'c', 'd', 'e'};
    int64_t eight = 0x0102030405060708;
    int32_t four = 44;
    ASSERT_EQ(EP_Send(two, 2, MPI_INT32_T, 1, 10, comm), EP_SUCCESS);
    ASSERT_EQ(EP_Send(five, 5, MPI_CHAR, 1, 11, comm), EP_SUCCESS);
    ASSERT_EQ(EP_Send(&eight, 1, MPI_INT64_T, 1, 12, comm), EP_SUCCESS);   // truncates
    ASSERT_EQ(EP_Send(&four, 1, MPI_INT32_T, 1, 13, comm), EP_SUCCESS);    // half a double
    ASSERT_EQ(EP_Send(nullptr, 0, MPI_INT32_T, 1, 14, comm), EP_SUCCESS);  // empty
    // The receiver sleeps in EP_Recv before this one comes (it withdraws from the
    // line first): it still gets it, and the next.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(EP_Send(&eight, 1, MPI_INT64_T, 1, 15, comm), EP_SUCCESS);
    ASSERT_EQ(EP_Send(&four, 1, MPI_INT32_T, 1, 16, comm), EP_SUCCESS);
    // 40 bytes: more than a request's inline payload.
    const int64_t forty[5] = {11, 22, 33, 44, 55};
    ASSERT_EQ(EP_Send(forty, 5, MPI_INT64_T, 1, 20, comm), EP_SUCCESS);
    // With an EP_Irecv posted first, EP_Recv is not the only receive: the first
    // message goes to the EP_Irecv, the second to EP_Recv.
    // 3-byte elements (not a power of two): 6 bytes are 2 whole ones and may go
    // on the line, 7 are not whole and may not (the 6 whole bytes land).
    const char seven[7] = {'p', 'q', 'r', 's', 't', 'u', 'v'};
    ASSERT_EQ(EP_Send(seven, 6, MPI_CHAR, 1, 18, comm), EP_SUCCESS);
    ASSERT_EQ(EP_Send(seven, 7, MPI_CHAR, 1, 19, comm), EP_SUCCESS);
    int64_t first = 501, second = 502;
    ep_test::ep_barrier(comm);
    ASSERT_EQ(EP_Send(&first, 1, MPI_INT64_T, 1, 17, comm), EP_SUCCESS);
    ASSERT_EQ(EP_Send(&second, 1, MPI_INT64_T, 1, 17, comm), EP_SUCCESS);
    return;
  }
  int32_t two[2] = {-1, -1};
  ASSERT_EQ(EP_Recv(two, 2, MPI_INT32_T, 0, 10, comm, &st), EP_SUCCESS);
  EXPECT_EQ(two[0], 7);
  EXPECT_EQ(two[1], 8);
  EP_Get_count(&st, MPI_INT32_T, &count);
  EXPECT_EQ(count, 2);
  char five[8] = {'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x'};
  ASSERT_EQ(EP_Recv(five, 8, MPI_CHAR, EP_ANY_SOURCE, EP_ANY_TAG, comm, &st), EP_SUCCESS);
  EXPECT_EQ(std::memcmp(five, "abcdexxx", 8), 0);
  EXPECT_EQ(st.EP_TAG, 11);
  EP_Get_count(&st, MPI_CHAR, &count);
  EXPECT_EQ(count, 5);
  int32_t half[2] = {-1, -1};
  st.EP_ERROR = 12345;
  EXPECT_EQ(EP_Recv(half, 1, MPI_INT32_T, 0, 12, comm, &st), EP_ERR_TRUNCATE);
  EXPECT_EQ(st.EP_ERROR, 12345);  // the error is returned, not written (MPI 3.1 3.2.5)
  EXPECT_EQ(half[1], -1);  // nothing beyond the buffer
  double d = -1;
  ASSERT_EQ(EP_Recv(&d, 1, MPI_DOUBLE, 0, 13, comm, &st), EP_SUCCESS);
  EXPECT_EQ(d, -1);  // no whole element arrived
  EP_Get_count(&st, MPI_DOUBLE, &count);
  EXPECT_EQ(count, EP_UNDEFINED);
  EP_Get_elements(&st, MPI_BYTE, &count);
  EXPECT_EQ(count, 4);
  int32_t none = -1;
  ASSERT_EQ(EP_Recv(&none, 1, MPI_INT32_T, 0, 14, comm, &st), EP_SUCCESS);
  EXPECT_EQ(none, -1);
  EP_Get_count(&st, MPI_INT32_T, &count);
  EXPECT_EQ(count, 0);
  int64_t late = 0;
  ASSERT_EQ(EP_Recv(&late, 1, MPI_INT64_T, 0, 15, comm, &st), EP_SUCCESS);
  EXPECT_EQ(late, 0x0102030405060708);
  int32_t four = -1;
  ASSERT_EQ(EP_Recv(&four, 1, MPI_INT32_T, 0, EP_ANY_TAG, comm, &st), EP_SUCCESS);
  EXPECT_EQ(four, 44);
  EXPECT_EQ(st.EP_TAG, 16);
  int64_t forty[6] = {-1, -1, -1, -1, -1, -1};
  ASSERT_EQ(EP_Recv(forty, 6, MPI_INT64_T, 0, 20, comm, &st), EP_SUCCESS);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(forty[i], i < 5 ? 11 * (i + 1) : -1) << i;
  EP_Get_count(&st, MPI_INT64_T, &count);
  EXPECT_EQ(count, 5);
  MPI_Datatype triple;
  MPI_Type_contiguous(3, MPI_CHAR, &triple);
  MPI_Type_commit(&triple);
  for (int tag : {18, 19}) {
    char got[9] = {'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x'};
    ASSERT_EQ(EP_Recv(got, 3, triple, 0, tag, comm, &st), EP_SUCCESS) << "tag " << tag;
    EXPECT_EQ(std::memcmp(got, "pqrstuxxx", 9), 0) << "tag " << tag;
    EP_Get_count(&st, triple, &count);
    EXPECT_EQ(count, tag == 18 ? 2 : EP_UNDEFINED) << "tag " << tag;
    EP_Get_elements(&st, MPI_CHAR, &count);
    EXPECT_EQ(count, tag == 18 ? 6 : 7) << "tag " << tag;
  }
  MPI_Type_free(&triple);
  int64_t first = -1, second = -1;
  EP_Request r;
  ASSERT_EQ(EP_Irecv(&first, 1, MPI_INT64_T, 0, 17, comm, &r), EP_SUCCESS);
  ep_test::ep_barrier(comm);
  ASSERT_EQ(EP_Recv(&second, 1, MPI_INT64_T, 0, 17, comm, &st), EP_SUCCESS);
  ASSERT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
  EXPECT_EQ(first, 501);
  EXPECT_EQ(second, 502);
}

// EP_Recv of a small message from an endpoint of this process may take it from the
// receiver's matcher line (matching.h, "Delivered on the line"): 8 bytes or fewer,
// whole elements, the only receive posted.  Every other case completes the request
// as usual.  The ping-pong loop is the line's own pattern.
TEST(BlockingReceive, SmallLocalMessagesOnAndOffTheMatcherLine) {
  run_endpoints(
      2, [](EP_Comm comm, int) { small_blocking_receives(comm); }, MPI_COMM_SELF);
}

// The same between endpoints of processes 0 and 1: the receiving thread drives the
// engine while it waits and usually delivers its own message (runtime::deliver_inline:
// straight into the buffer; a truncated or partial one takes deliver()).  With one
// process there is no other to receive from: the test above covers that case.
TEST(BlockingReceive, SmallRemoteMessagesMostlyDeliveredByTheirWaiter) {
  if (world_size() < 2) return;
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() < 2 ? 0 : MPI_UNDEFINED, world_rank(), &pair);
  if (pair == MPI_COMM_NULL) return;  // a third process has no part in it
  run_endpoints(
      1, [](EP_Comm comm, int) { small_blocking_receives(comm); }, pair);
  MPI_Comm_free(&pair);
}

// An eager send is complete when EP_Isend returns (its data was copied), before any
// receive is posted; its request behaves like any other complete send request in
// every Wait/Test form, get_status, cancel and free.  (libep hands every such send
// one shared complete request: these calls must neither free nor change it.)
TEST(Requests, EagerSendsAreCompleteAtOnceInEveryForm) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int me = rank_of(comm), size = size_of(comm);
    int to = (me + 1) % size, from = (me + size - 1) % size;
    constexpr int kN = 6;
    int out[kN], in[kN];
    EP_Request s[kN];
    for (int i = 0; i < kN; ++i) {
      out[i] = me * 100 + i;
      ASSERT_EQ(EP_Isend(&out[i], 1, MPI_INT, to, 3, comm, &s[i]), EP_SUCCESS);
    }
    int flag = 0;
    EP_Status st;
    st.EP_ERROR = -7;
    ASSERT_EQ(EP_Request_get_status(s[0], &flag, &st), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(st.EP_ERROR, -7);  // a single-request call leaves EP_ERROR alone
    EXPECT_NE(s[0], EP_REQUEST_NULL);         // get_status does not free it
    ASSERT_EQ(EP_Cancel(&s[0]), EP_SUCCESS);  // too late: the send stays complete
    ASSERT_EQ(EP_Wait(&s[0], &st), EP_SUCCESS);
    EXPECT_EQ(s[0], EP_REQUEST_NULL);
    EP_Test_cancelled(&st, &flag);
    EXPECT_EQ(flag, 0);
    ASSERT_EQ(EP_Test(&s[1], &flag, EP_STATUS_IGNORE), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(s[1], EP_REQUEST_NULL);
    int index = -1;
    ASSERT_EQ(EP_Testany(1, &s[2], &index, &flag, EP_STATUS_IGNORE), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(index, 0);
    ASSERT_EQ(EP_Request_free(&s[3]), EP_SUCCESS);
    EXPECT_EQ(s[3], EP_REQUEST_NULL);
    ASSERT_EQ(EP_Testall(2, &s[4], &flag, EP_STATUSES_IGNORE), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(s[4], EP_REQUEST_NULL);
    EXPECT_EQ(s[5], EP_REQUEST_NULL);
    // Only now the receives: every message arrives, in order.
    for (int i = 0; i < kN; ++i) {
      ASSERT_EQ(EP_Recv(&in[i], 1, MPI_INT, from, 3, comm, &st), EP_SUCCESS);
      EXPECT_EQ(in[i], from * 100 + i);
    }
    // A rendezvous Isend is not complete before its receive started (the receiver
    // posts only after the barrier), so its request is a request of its own.
    std::vector<char> big(1 << 20, static_cast<char>(me)), got(1 << 20);
    EP_Request b;
    ASSERT_EQ(EP_Issend(big.data(), 1 << 20, MPI_CHAR, to, 4, comm, &b), EP_SUCCESS);
    ASSERT_EQ(EP_Request_get_status(b, &flag, EP_STATUS_IGNORE), EP_SUCCESS);
    EXPECT_EQ(flag, 0);
    ep_barrier(comm);
    ASSERT_EQ(EP_Recv(got.data(), 1 << 20, MPI_CHAR, from, 4, comm, EP_STATUS_IGNORE), EP_SUCCESS);
    EXPECT_EQ(got[12345], static_cast<char>(from));
    ASSERT_EQ(EP_Wait(&b, EP_STATUS_IGNORE), EP_SUCCESS);
    ep_barrier(comm);
  });
}

TEST(Datatypes, NonContiguousVectorTypesWithinAndAcrossProcesses) {
  MPI_Datatype vec, col;  // every other int: 4 blocks of 1 with stride 2, extent 8 ints
  MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
  MPI_Type_create_resized(vec, 0, 8 * sizeof(int), &col);
  MPI_Type_commit(&col);
  MPI_Type_free(&vec);
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      int me = rank_of(comm);
      for (int reps : {1, 3000}) {  // 16 bytes per element: eager and rendezvous
        if (me == p.a) {
          std::vector<int> src(8 * reps);
          std::iota(src.begin(), src.end(), 0);
          EP_Send(src.data(), reps, col, p.b, 1, comm);  // strided -> contiguous
          std::vector<int> dense(4 * reps);
          std::iota(dense.begin(), dense.end(), 1000);
          EP_Send(dense.data(), 4 * reps, MPI_INT, p.b, 2, comm);  // contiguous -> strided
        } else if (me == p.b) {
          std::vector<int> dense(4 * reps, -1);
          EP_Status st;
          ASSERT_EQ(EP_Recv(dense.data(), 4 * reps, MPI_INT, p.a, 1, comm, &st), EP_SUCCESS);
          for (int i = 0; i < 4 * reps; ++i) ASSERT_EQ(dense[i], 2 * i) << p.what;
          std::vector<int> strided(8 * reps, -1);
          ASSERT_EQ(EP_Recv(strided.data(), reps, col, p.a, 2, comm, &st), EP_SUCCESS);
          for (int i = 0; i < 8 * reps; ++i) {
            ASSERT_EQ(strided[i], i % 2 == 0 ? 1000 + i / 2 : -1) << p.what << " at " << i;
          }
          int count = 0, elements = 0;
          EP_Get_count(&st, col, &count);
          EP_Get_elements(&st, col, &elements);
          EXPECT_EQ(count, reps);
          EXPECT_EQ(elements, 4 * reps);
        }
      }
      ep_barrier(comm);
    }
  });
  MPI_Type_free(&col);
}

TEST(Datatypes, PartialElementsGiveUndefinedCountButElements) {
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  run_endpoints(1, [&](EP_Comm comm, int) {
    int me = rank_of(comm), size = size_of(comm);
    int out[3] = {1, 2, 3}, in[4];
    EP_Request r;
    EP_Irecv(in, 2, pair, (me + size - 1) % size, 0, comm, &r);
    EP_Send(out, 3, MPI_INT, (me + 1) % size, 0, comm);
    EP_Status st;
    EP_Wait(&r, &st);
    int count = 0, elements = 0;
    EP_Get_count(&st, pair, &count);
    EP_Get_elements(&st, pair, &elements);
    EXPECT_EQ(count, EP_UNDEFINED);
    EXPECT_EQ(elements, 3);
    ep_barrier(comm);
  });
  MPI_Type_free(&pair);
}

TEST(Sendrecv, RingShiftAndReplace) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int me = rank_of(comm), size = size_of(comm);
    int to = (me + 1) % size, from = (me + size - 1) % size, got = -1;
    EP_Status st;
    ASSERT_EQ(EP_Sendrecv(&me, 1, MPI_INT, to, 4, &got, 1, MPI_INT, from, 4, comm, &st),
              EP_SUCCESS);
    EXPECT_EQ(got, from);
    EXPECT_EQ(st.EP_SOURCE, from);
    std::vector<double> buf(30000, me);  // rendezvous-sized
    ASSERT_EQ(EP_Sendrecv_replace(buf.data(), 30000, MPI_DOUBLE, to, 5, from, 5, comm, &st),
              EP_SUCCESS);
    EXPECT_EQ(buf[0], from);
    EXPECT_EQ(buf[29999], from);
  });
}

TEST(Large, SixtyFourMiBWithinAndAcrossProcesses) {
  const int n = 64 << 20;
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      int me = rank_of(comm);
      if (me == p.a) {
        std::vector<unsigned char> out(n);
        for (int i = 0; i < n; i += 4096) out[i] = static_cast<unsigned char>(i >> 12);
        out[n - 1] = 0x5a;
        ASSERT_EQ(EP_Send(out.data(), n, MPI_BYTE, p.b, 1, comm), EP_SUCCESS);
      } else if (me == p.b) {
        std::vector<unsigned char> in(n, 0);
        EP_Status st;
        ASSERT_EQ(EP_Recv(in.data(), n, MPI_BYTE, p.a, 1, comm, &st), EP_SUCCESS);
        for (int i = 0; i < n; i += 4096) {
          ASSERT_EQ(in[i], static_cast<unsigned char>(i >> 12)) << p.what << " at " << i;
        }
        EXPECT_EQ(in[n - 1], 0x5a);
        int count = 0;
        EP_Get_count(&st, MPI_BYTE, &count);
        EXPECT_EQ(count, n);
      }
      ep_barrier(comm);
    }
  });
}

// A window of small EP_Isend whose thread then sleeps: the flush held back for the
// burst ("Bursts" in progress/engine.h) must still go out, although another endpoint
// of the sending process is waiting meanwhile (its passes, not the progress thread's,
// run then).  Rank 0 sends, rank 1 (same process) waits for the receiver's reply,
// which the receiver sends only after the whole window arrived.
TEST(Progress, IsendWindowLeavesWhileItsThreadSleeps) {
  constexpr int kWindow = 64;
  std::atomic<bool> sender_awake{true};
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    const int me = rank_of(comm), last = size_of(comm) - 1;
    ep_barrier(comm);
    if (me == 0) {
      int64_t out[kWindow];
      EP_Request r[kWindow];
      for (int i = 0; i < kWindow; ++i) {
        out[i] = 1000 + i;
        ASSERT_EQ(EP_Isend(&out[i], 1, MPI_INT64_T, last, 7, comm, &r[i]), EP_SUCCESS);
      }
      sender_awake.store(false, std::memory_order_release);          // pairs: rank 1's acquire
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // no libep call
      sender_awake.store(true, std::memory_order_release);
      EXPECT_EQ(EP_Waitall(kWindow, r, EP_STATUSES_IGNORE), EP_SUCCESS);
    } else if (me == 1) {
      int64_t reply = 0;
      EP_Request r;
      ASSERT_EQ(EP_Irecv(&reply, 1, MPI_INT64_T, last, 8, comm, &r), EP_SUCCESS);
      // acquire: pairs with rank 0's release; then the window is all appended.
      while (sender_awake.load(std::memory_order_acquire)) std::this_thread::yield();
      int done = 0;
      const double t0 = EP_Wtime();
      while (!done && EP_Wtime() - t0 < 0.8) ASSERT_EQ(EP_Test(&r, &done, EP_STATUS_IGNORE), 0);
      EXPECT_TRUE(done) << "the window did not leave while its sender slept";
      EXPECT_FALSE(sender_awake.load(std::memory_order_acquire));
      if (!done) {
        EXPECT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
      }
      EXPECT_EQ(reply, kWindow);
    }
    if (me == last) {
      int64_t in[kWindow];
      for (int i = 0; i < kWindow; ++i) {
        ASSERT_EQ(EP_Recv(&in[i], 1, MPI_INT64_T, 0, 7, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        EXPECT_EQ(in[i], 1000 + i);
      }
      int64_t n = kWindow;
      ASSERT_EQ(EP_Send(&n, 1, MPI_INT64_T, 1, 8, comm), EP_SUCCESS);
    }
    ep_barrier(comm);
  });
}

TEST(Progress, EightMiBSendCompletesWhileTheSenderSleeps) {
  const int n = 8 << 20;
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    for (Pair p : pairs(size_of(comm))) {
      int me = rank_of(comm);
      ep_barrier(comm);
      if (me == p.a) {
        std::vector<char> out(n, 's');
        EP_Request r;
        ASSERT_EQ(EP_Isend(out.data(), n, MPI_CHAR, p.b, 1, comm, &r), EP_SUCCESS);
        // No libep call for 1.5 s: the transfer must progress on its own.
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        EXPECT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
      } else if (me == p.b) {
        std::vector<char> in(n);
        double t0 = EP_Wtime();
        ASSERT_EQ(EP_Recv(in.data(), n, MPI_CHAR, p.a, 1, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        double dt = EP_Wtime() - t0;
        EXPECT_LT(dt, 1.0) << p.what << ": the receive waited for the sender to wake up";
        EXPECT_EQ(in[n - 1], 's');
      }
      ep_barrier(comm);
    }
  });
}

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

TEST(Eager, UnmatchedLargeMessagesCostTheReceiverAlmostNoMemory) {
  // 64 x 1 MiB sent to a receiver that has not posted: above EP_EAGER_LIMIT nothing is
  // buffered at the receiver, so its resident memory must not grow by ~64 MiB.
  const int n = 1 << 20, k = 64;
  if (world_size() < 2) {
    run_endpoints(0, [](EP_Comm, int) {});
    SUCCEED() << "needs two processes: exercised by the np2/np3 runs";
    return;
  }
  // Process 0: one sender; process 1: one receiver.  Others: none.
  int mine = world_rank() < 2 ? 1 : 0;
  run_endpoints(mine, [&](EP_Comm comm, int) {
    int me = rank_of(comm);
    if (me == 0) {
      std::vector<char> out(n, 'f');
      std::vector<EP_Request> reqs(k);
      for (int i = 0; i < k; ++i) EP_Isend(out.data(), n, MPI_CHAR, 1, i, comm, &reqs[i]);
      EXPECT_EQ(EP_Waitall(k, reqs.data(), EP_STATUSES_IGNORE), EP_SUCCESS);
    } else {
      long before = rss_kib();
      std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let them all arrive
      long after = rss_kib();
      EXPECT_LT(after - before, 16 * 1024) << "receiver grew by " << (after - before) << " KiB";
      std::vector<char> in(n);
      for (int i = k - 1; i >= 0; --i) {  // reverse tag order: matching by tag
        ASSERT_EQ(EP_Recv(in.data(), n, MPI_CHAR, 0, i, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        EXPECT_EQ(in[n - 1], 'f');
      }
    }
  });
}

}  // namespace
