// Point-to-point between endpoints of different processes of one node (runtime/node.h):
// every send mode and size, blocking and not, wildcard receives mixing sources of this
// process and of others, probes and matched probes, cancel, truncation of eager and
// rendezvous messages, synchronous completion, buffered and persistent sends, derived
// types, a sleeping receiver woken by a node message, a ring that fills while its
// receiver posts late, a payload the kernel cannot copy, and no MPI traffic for any of
// it.  The same program runs with the node transport on (default), off, and with the
// shared staging buffers instead of cross-memory attach (BUILD.bazel): the results are
// the same; what differs by way is asserted where the way is known.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/mpi_calls.h"
#include "progress/mpi_count.h"
#include "runtime/runtime.h"
#include "runtime/wait.h"
#include "tests/common/harness.h"

namespace {

using ep_test::ep_barrier;
using ep_test::last_error;
using ep_test::run_endpoints;
using ep_test::scaled;
using ep_test::uneven;
using ep_test::world_rank;
using ep_test::world_size;

[[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(120, 500);

// Sizes around the default eager limit (16 KiB) and a large rendezvous.
const int kSizes[] = {0, 8, 4000, 16384, 16385, 300000};

uint8_t byte_of(int src, int dst, int tag, int i) {
  return static_cast<uint8_t>(src * 37 + dst * 11 + tag * 3 + i * 13 + 1);
}
std::vector<uint8_t> message(int src, int dst, int tag, int n) {
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = byte_of(src, dst, tag, i);
  return v;
}

// The process of `rank` in a communicator of uneven(p) endpoints per process.
int proc_of(int rank) {
  for (int p = 0;; ++p) {
    if (rank < uneven(p)) return p;
    rank -= uneven(p);
  }
}
bool node_way() { return ep::runtime::runtime()->node.on(); }

enum Mode { kSend, kSsend, kBsend, kRsend, kIsend, kIssend, kIbsend, kIrsend, kModes };
const char* mode_name(int m) {
  static const char* names[] = {"EP_Send",  "EP_Ssend",  "EP_Bsend",  "EP_Rsend",
                                "EP_Isend", "EP_Issend", "EP_Ibsend", "EP_Irsend"};
  return names[m];
}
int start_send(int mode, const void* buf, int n, MPI_Datatype t, int dest, int tag, EP_Comm comm,
               EP_Request* r) {
  *r = EP_REQUEST_NULL;
  switch (mode) {
    case kSend:
      return EP_Send(buf, n, t, dest, tag, comm);
    case kSsend:
      return EP_Ssend(buf, n, t, dest, tag, comm);
    case kBsend:
      return EP_Bsend(buf, n, t, dest, tag, comm);
    case kRsend:
      return EP_Rsend(buf, n, t, dest, tag, comm);
    case kIsend:
      return EP_Isend(buf, n, t, dest, tag, comm, r);
    case kIssend:
      return EP_Issend(buf, n, t, dest, tag, comm, r);
    case kIbsend:
      return EP_Ibsend(buf, n, t, dest, tag, comm, r);
    default:
      return EP_Irsend(buf, n, t, dest, tag, comm, r);
  }
}

// Every endpoint sends every size in every mode to every endpoint (itself, this
// process's and the others'), all receives posted first (ready mode needs them).
TEST(NodeP2P, EveryModeAndSizeArrivesIntactFromEveryEndpoint) {
  std::vector<char> attached(64 << 20);
  ASSERT_EQ(EP_Buffer_attach(attached.data(), static_cast<int>(attached.size())), EP_SUCCESS);
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    for (int mode = 0; mode < kModes; ++mode) {
      for (int si = 0; si < 6; ++si) {
        const int n = kSizes[si], tag = mode * 10 + si;
        std::vector<std::vector<uint8_t>> in(size, std::vector<uint8_t>(n + 1, 0xee));
        std::vector<EP_Request> rreq(size);
        for (int s = 0; s < size; ++s) {
          ASSERT_EQ(EP_Irecv(in[s].data(), n, MPI_BYTE, s, tag, comm, &rreq[s]), EP_SUCCESS);
        }
        ep_barrier(comm);
        std::vector<std::vector<uint8_t>> out(size);
        std::vector<EP_Request> sreq(size);
        for (int d = 0; d < size; ++d) {
          out[d] = message(rank, d, tag, n);
          ASSERT_EQ(start_send(mode, out[d].data(), n, MPI_BYTE, d, tag, comm, &sreq[d]),
                    EP_SUCCESS)
              << mode_name(mode) << " " << n;
        }
        std::vector<EP_Status> st(size);
        ASSERT_EQ(EP_Waitall(size, rreq.data(), st.data()), EP_SUCCESS);
        ASSERT_EQ(EP_Waitall(size, sreq.data(), EP_STATUSES_IGNORE), EP_SUCCESS);
        for (int s = 0; s < size; ++s) {
          int count = -1;
          EP_Get_count(&st[s], MPI_BYTE, &count);
          EXPECT_EQ(count, n) << mode_name(mode) << " from " << s;
          EXPECT_EQ(st[s].EP_SOURCE, s);
          EXPECT_EQ(st[s].EP_TAG, tag);
          for (int i = 0; i < n; ++i) {
            ASSERT_EQ(in[s][i], byte_of(s, rank, tag, i))
                << mode_name(mode) << " " << n << " bytes from " << s << ", byte " << i;
          }
          EXPECT_EQ(in[s][n], 0xee) << "written past the message";
        }
        ep_barrier(comm);  // nobody's next receives see this round's messages
      }
    }
  });
  void* b = nullptr;
  int bsize = 0;
  ASSERT_EQ(EP_Buffer_detach(&b, &bsize), EP_SUCCESS);
}

// Wildcard receives take messages of every source - this process's and the others',
// eager and rendezvous interleaved - and each source's in send order.
TEST(NodeP2P, WildcardReceivesKeepPerSourceOrderAcrossWays) {
  const int per_source = scaled(60);
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    // Message k of a source: eager or rendezvous by k; its first ints say who and which.
    auto bytes_of = [](int k) { return k % 3 == 2 ? 40000 : 8 + 64 * (k % 7); };
    std::vector<EP_Request> sreq;
    std::vector<std::vector<int>> out;
    out.reserve(static_cast<size_t>(size * per_source));
    for (int k = 0; k < per_source; ++k) {
      for (int d = 0; d < size; ++d) {
        out.emplace_back(static_cast<size_t>(bytes_of(k) / 4), k);
        out.back()[0] = rank;
        sreq.emplace_back();
        ASSERT_EQ(
            EP_Isend(out.back().data(), bytes_of(k) / 4, MPI_INT, d, k % 5, comm, &sreq.back()),
            EP_SUCCESS);
      }
    }
    std::vector<int> next(static_cast<size_t>(size), 0);
    std::vector<int> in(40000 / 4);
    for (int m = 0; m < per_source * size; ++m) {
      EP_Status st;
      ASSERT_EQ(EP_Recv(in.data(), 40000 / 4, MPI_INT, EP_ANY_SOURCE, EP_ANY_TAG, comm, &st),
                EP_SUCCESS);
      const int s = st.EP_SOURCE, k = next[s];
      ASSERT_EQ(in[0], s);
      ASSERT_EQ(in[1], k) << "from " << s << " out of order";
      EXPECT_EQ(st.EP_TAG, k % 5);
      int count = -1;
      EP_Get_count(&st, MPI_INT, &count);
      EXPECT_EQ(count, bytes_of(k) / 4);
      ++next[s];
    }
    ASSERT_EQ(EP_Waitall(static_cast<int>(sreq.size()), sreq.data(), EP_STATUSES_IGNORE),
              EP_SUCCESS);
  });
}

// The receiving endpoint is rank 0 (process 0), the sending one the last rank (the last
// process): endpoints of two processes when there are two, of one otherwise.
template <class Fn>
void on_pair(Fn&& fn) {
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    if (rank == 0 || rank == size - 1) fn(comm, rank == 0, rank == 0 ? size - 1 : 0);
  });
}

TEST(NodeP2P, ProbesAndMatchedProbesSeeNodeMessages) {
  on_pair([](EP_Comm comm, bool receiver, int peer) {
    const int sizes[] = {8, 16385, 300000};
    if (!receiver) {
      for (int k = 0; k < 4; ++k) {
        for (int si = 0; si < 3; ++si) {
          const int tag = k * 10 + si;
          std::vector<uint8_t> out = message(1, 0, tag, sizes[si]);
          ASSERT_EQ(EP_Send(out.data(), sizes[si], MPI_BYTE, peer, tag, comm), EP_SUCCESS);
        }
      }
      return;
    }
    for (int k = 0; k < 4; ++k) {
      for (int si = 0; si < 3; ++si) {
        const int n = sizes[si], tag = k * 10 + si;
        EP_Status st;
        int count = -1;
        std::vector<uint8_t> in(static_cast<size_t>(n));
        if (k == 0) {  // EP_Probe, then EP_Recv
          ASSERT_EQ(EP_Probe(peer, tag, comm, &st), EP_SUCCESS);
          ASSERT_EQ(EP_Recv(in.data(), n, MPI_BYTE, peer, tag, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        } else if (k == 1) {  // EP_Iprobe until found
          int flag = 0;
          while (flag == 0) ASSERT_EQ(EP_Iprobe(EP_ANY_SOURCE, tag, comm, &flag, &st), EP_SUCCESS);
          ASSERT_EQ(EP_Recv(in.data(), n, MPI_BYTE, peer, tag, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        } else if (k == 2) {  // EP_Mprobe, EP_Mrecv
          EP_Message msg;
          ASSERT_EQ(EP_Mprobe(peer, tag, comm, &msg, &st), EP_SUCCESS);
          ASSERT_EQ(EP_Mrecv(in.data(), n, MPI_BYTE, &msg, EP_STATUS_IGNORE), EP_SUCCESS);
        } else {  // EP_Improbe until found, EP_Imrecv
          EP_Message msg;
          int flag = 0;
          while (flag == 0) {
            ASSERT_EQ(EP_Improbe(peer, EP_ANY_TAG, comm, &flag, &msg, &st), EP_SUCCESS);
          }
          EP_Request r;
          ASSERT_EQ(EP_Imrecv(in.data(), n, MPI_BYTE, &msg, &r), EP_SUCCESS);
          ASSERT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
        }
        EP_Get_count(&st, MPI_BYTE, &count);
        EXPECT_EQ(count, n) << "probe " << k;
        EXPECT_EQ(st.EP_SOURCE, peer);
        EXPECT_EQ(st.EP_TAG, tag);
        EXPECT_EQ(in, message(1, 0, tag, n)) << "probe " << k << ", " << n << " bytes";
      }
    }
  });
}

// A cancelled receive takes nothing; the message goes to the next matching receive.
TEST(NodeP2P, CancelledReceiveLeavesTheMessageToTheNextOne) {
  on_pair([](EP_Comm comm, bool receiver, int peer) {
    for (const int n : {8, 300000}) {
      std::vector<uint8_t> buf(static_cast<size_t>(n), 0);
      if (receiver) {
        EP_Request r;
        ASSERT_EQ(EP_Irecv(buf.data(), n, MPI_BYTE, peer, 5, comm, &r), EP_SUCCESS);
        ASSERT_EQ(EP_Cancel(&r), EP_SUCCESS);
        EP_Status st;
        ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
        int cancelled = 0;
        EP_Test_cancelled(&st, &cancelled);
        EXPECT_EQ(cancelled, 1);
        ASSERT_EQ(EP_Send(nullptr, 0, MPI_BYTE, peer, 6, comm), EP_SUCCESS);  // now send
        ASSERT_EQ(EP_Recv(buf.data(), n, MPI_BYTE, peer, 5, comm, &st), EP_SUCCESS);
        EXPECT_EQ(buf, message(1, 0, 5, n));
      } else {
        ASSERT_EQ(EP_Recv(nullptr, 0, MPI_BYTE, peer, 6, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        buf = message(1, 0, 5, n);
        ASSERT_EQ(EP_Send(buf.data(), n, MPI_BYTE, peer, 5, comm), EP_SUCCESS);
      }
    }
  });
}

// A message longer than its receive: the receive gets what fits and EP_ERR_TRUNCATE;
// the send completes normally.  Eager, rendezvous and a small synchronous one.
TEST(NodeP2P, TruncationOfEagerAndRendezvousMessages) {
  on_pair([](EP_Comm comm, bool receiver, int peer) {
    const int cap = 50;
    for (const int n : {100, 16385, 300000}) {
      for (const bool sync : {false, true}) {
        const int tag = n % 1000 + (sync ? 1 : 0);
        if (receiver) {
          std::vector<uint8_t> in(cap + 1, 0xee);
          EP_Status st;
          EXPECT_EQ(EP_Recv(in.data(), cap, MPI_BYTE, peer, tag, comm, &st), EP_ERR_TRUNCATE);
          EXPECT_NE(last_error(EP_ERR_TRUNCATE).find("EP_Recv"), std::string::npos);
          int count = -1;
          EP_Get_count(&st, MPI_BYTE, &count);
          EXPECT_EQ(count, cap);
          for (int i = 0; i < cap; ++i) ASSERT_EQ(in[i], byte_of(1, 0, tag, i)) << n;
          EXPECT_EQ(in[cap], 0xee);
        } else {
          std::vector<uint8_t> out = message(1, 0, tag, n);
          EXPECT_EQ(sync ? EP_Ssend(out.data(), n, MPI_BYTE, peer, tag, comm)
                         : EP_Send(out.data(), n, MPI_BYTE, peer, tag, comm),
                    EP_SUCCESS);
        }
      }
    }
  });
}

// A synchronous send (even a small one) completes only once its receive matched.
TEST(NodeP2P, SynchronousSendCompletesOnlyAfterTheMatch) {
  on_pair([](EP_Comm comm, bool receiver, int peer) {
    int v = 42;
    if (receiver) {
      ASSERT_EQ(EP_Recv(nullptr, 0, MPI_BYTE, peer, 1, comm, EP_STATUS_IGNORE), EP_SUCCESS);
      int got = 0;
      ASSERT_EQ(EP_Recv(&got, 1, MPI_INT, peer, 2, comm, EP_STATUS_IGNORE), EP_SUCCESS);
      EXPECT_EQ(got, 42);
      return;
    }
    EP_Request r;
    ASSERT_EQ(EP_Issend(&v, 1, MPI_INT, peer, 2, comm, &r), EP_SUCCESS);
    for (int k = 0; k < 20; ++k) {
      int flag = 1;
      ASSERT_EQ(EP_Test(&r, &flag, EP_STATUS_IGNORE), EP_SUCCESS);
      ASSERT_EQ(flag, 0) << "completed before the receive was posted";
      usleep(2000);
    }
    ASSERT_EQ(EP_Send(nullptr, 0, MPI_BYTE, peer, 1, comm), EP_SUCCESS);  // go
    ASSERT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
  });
}

// Persistent sends and receives restarted, eager and rendezvous.
TEST(NodeP2P, PersistentRequestsRestart) {
  on_pair([](EP_Comm comm, bool receiver, int peer) {
    for (const int n : {8, 300000}) {
      std::vector<uint8_t> buf(static_cast<size_t>(n));
      EP_Request p;
      if (receiver) {
        ASSERT_EQ(EP_Recv_init(buf.data(), n, MPI_BYTE, peer, 7, comm, &p), EP_SUCCESS);
      } else {
        ASSERT_EQ(EP_Ssend_init(buf.data(), n, MPI_BYTE, peer, 7, comm, &p), EP_SUCCESS);
      }
      for (int round = 0; round < 5; ++round) {
        if (!receiver) {  // (into the buffer the request holds)
          const std::vector<uint8_t> m = message(1, 0, round, n);
          std::copy(m.begin(), m.end(), buf.begin());
        }
        ASSERT_EQ(EP_Start(&p), EP_SUCCESS);
        EP_Status st;
        ASSERT_EQ(EP_Wait(&p, &st), EP_SUCCESS);
        if (receiver) EXPECT_EQ(buf, message(1, 0, round, n)) << "round " << round;
      }
      ASSERT_EQ(EP_Request_free(&p), EP_SUCCESS);
    }
  });
}

// Strided types on both sides, eager and rendezvous: what arrives is the sender's
// elements, in the receiver's layout.
TEST(NodeP2P, DerivedTypesOnBothSides) {
  MPI_Datatype every_other;  // 1 int of every 2
  MPI_Type_vector(1, 1, 2, MPI_INT, &every_other);
  MPI_Datatype strided;
  MPI_Type_create_resized(every_other, 0, 2 * sizeof(int), &strided);
  MPI_Type_commit(&strided);
  on_pair([&](EP_Comm comm, bool receiver, int peer) {
    for (const int n : {100, 50000}) {  // ints: 400 B eager, 200 KB rendezvous
      std::vector<int> buf(static_cast<size_t>(2 * n), -1);
      if (receiver) {
        // Contiguous receive of a strided send, then strided receive of a contiguous one.
        std::vector<int> in(static_cast<size_t>(n), -1);
        ASSERT_EQ(EP_Recv(in.data(), n, MPI_INT, peer, 1, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        for (int i = 0; i < n; ++i) ASSERT_EQ(in[i], 3 * i) << n;
        ASSERT_EQ(EP_Recv(buf.data(), n, strided, peer, 2, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        for (int i = 0; i < n; ++i) {
          ASSERT_EQ(buf[2 * i], 5 * i) << n;
          ASSERT_EQ(buf[2 * i + 1], -1) << "a gap was written";
        }
      } else {
        for (int i = 0; i < n; ++i) buf[2 * i] = 3 * i;
        ASSERT_EQ(EP_Send(buf.data(), n, strided, peer, 1, comm), EP_SUCCESS);
        std::vector<int> out(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) out[i] = 5 * i;
        ASSERT_EQ(EP_Send(out.data(), n, MPI_INT, peer, 2, comm), EP_SUCCESS);
      }
    }
  });
  MPI_Type_free(&strided);
  MPI_Type_free(&every_other);
}

// A receiver that has gone to sleep in EP_Recv (and in EP_Probe) is woken by a node
// message: by its process's progress thread, not by the safety timeout of its sleep
// (which would count a lost wake-up).
TEST(NodeP2P, SleepingReceiverIsWokenByANodeMessage) {
  const uint64_t lost = ep::runtime::lost_wakeups();
  on_pair([](EP_Comm comm, bool receiver, int peer) {
    for (const int n : {8, 300000}) {
      std::vector<uint8_t> buf(static_cast<size_t>(n));
      if (receiver) {
        EP_Status st;
        ASSERT_EQ(EP_Probe(peer, 1, comm, &st), EP_SUCCESS);
        ASSERT_EQ(EP_Recv(buf.data(), n, MPI_BYTE, peer, 1, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        ASSERT_EQ(EP_Recv(buf.data(), n, MPI_BYTE, peer, 2, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        EXPECT_EQ(buf, message(1, 0, 2, n));
      } else {
        usleep(300000);  // long past the receiver's spinning and yielding
        buf = message(1, 0, 1, n);
        ASSERT_EQ(EP_Send(buf.data(), n, MPI_BYTE, peer, 1, comm), EP_SUCCESS);
        usleep(300000);
        buf = message(1, 0, 2, n);
        ASSERT_EQ(EP_Send(buf.data(), n, MPI_BYTE, peer, 2, comm), EP_SUCCESS);
      }
    }
  });
  EXPECT_EQ(ep::runtime::lost_wakeups(), lost);
}

// Far more eager bytes than a ring holds, sent while the receiver is away: the sender
// never blocks (what does not fit waits in its backlog), and the receiver, posting late,
// gets every message once, in order, intact.
TEST(NodeP2P, FullRingBacklogWithALatePoster) {
  const int n = scaled(200), bytes = 16384;
  on_pair([&](EP_Comm comm, bool receiver, int peer) {
    if (receiver) {
      usleep(200000);
      std::vector<uint8_t> in(bytes);
      for (int k = 0; k < n; ++k) {
        ASSERT_EQ(EP_Recv(in.data(), bytes, MPI_BYTE, peer, 3, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        ASSERT_EQ(in[0], static_cast<uint8_t>(k)) << "out of order";
        ASSERT_EQ(in[bytes - 1], static_cast<uint8_t>(k * 7)) << "message " << k;
      }
      return;
    }
    std::vector<EP_Request> reqs(static_cast<size_t>(n));
    std::vector<std::vector<uint8_t>> out(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) {
      out[k].assign(bytes, 0);
      out[k][0] = static_cast<uint8_t>(k);
      out[k][bytes - 1] = static_cast<uint8_t>(k * 7);
      ASSERT_EQ(EP_Isend(out[k].data(), bytes, MPI_BYTE, peer, 3, comm, &reqs[k]), EP_SUCCESS);
    }
    ASSERT_EQ(EP_Waitall(n, reqs.data(), EP_STATUSES_IGNORE), EP_SUCCESS);
  });
}

// A payload the kernel cannot copy (the sender unmapped its buffer before the receive
// matched - an erroneous program): with cross-memory attach, the receive completes with
// EP_ERR_OTHER naming process_vm_readv and the send completes; with staging buffers the
// payload was copied at the send and arrives.  Nothing crashes either way.
TEST(NodeP2P, UncopyablePayloadFailsTheReceiveCleanly) {
  if (world_size() < 2 || !node_way()) GTEST_SKIP() << "needs the node transport";
  on_pair([](EP_Comm comm, bool receiver, int peer) {
    const int n = 1 << 20;
    if (receiver) {
      ASSERT_EQ(EP_Recv(nullptr, 0, MPI_BYTE, peer, 1, comm, EP_STATUS_IGNORE), EP_SUCCESS);
      std::vector<uint8_t> in(static_cast<size_t>(n));
      const int rc = EP_Recv(in.data(), n, MPI_BYTE, peer, 2, comm, EP_STATUS_IGNORE);
      if (ep::runtime::runtime()->node.cma()) {
        EXPECT_EQ(rc, EP_ERR_OTHER);
        EXPECT_NE(last_error(EP_ERR_OTHER).find("process_vm_readv"), std::string::npos)
            << last_error(EP_ERR_OTHER);
      } else {
        EXPECT_EQ(rc, EP_SUCCESS);
        EXPECT_EQ(in[n - 1], 0x5a);
      }
      return;
    }
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    std::memset(p, 0x5a, n);
    EP_Request r;
    ASSERT_EQ(EP_Isend(p, n, MPI_BYTE, peer, 2, comm, &r), EP_SUCCESS);
    munmap(p, n);
    ASSERT_EQ(EP_Send(nullptr, 0, MPI_BYTE, peer, 1, comm), EP_SUCCESS);
    EXPECT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
  });
}

// With the node transport on, none of the above needs MPI: an exchange of every kind
// between processes of this node sends no packet and no payload through the engine, and
// the two threads that exchange make no MPI call at all - neither one of libep's own
// (EP_MPI, base/mpi_calls.h) nor one of the engine's (a waiter driving it).
TEST(NodeP2P, NodeTrafficMakesNoMpiCall) {
  if (world_size() < 2 || !node_way()) GTEST_SKIP() << "needs the node transport";
  const auto& s = ep::runtime::engine_stats();
  const uint64_t packets = s.packets_sent.load(), data = s.data_sent.load();
  on_pair([](EP_Comm comm, bool receiver, int peer) {
    // This thread's counts (base/mpi_calls.h keeps one counter per thread).
    auto own_calls = [] {
      const std::atomic<uint64_t>* c = ep::mpi_calls_internal::t_counter;
      return (c != nullptr ? c->load() : 0) + ep::progress::engine_mpi_calls_here();
    };
    std::vector<uint8_t> big(300000, 1), small(8, 2);
    // A derived type, described once by libep at its first use (MPI calls of its own):
    // that use comes before the count.
    MPI_Datatype vec;
    MPI_Type_vector(125, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    if (receiver) {
      ASSERT_EQ(EP_Recv(big.data(), 1, vec, peer, 6, comm, EP_STATUS_IGNORE), EP_SUCCESS);
    } else {
      ASSERT_EQ(EP_Send(big.data(), 1, vec, peer, 6, comm), EP_SUCCESS);
    }
    const uint64_t before = own_calls();
    if (receiver) {
      EP_Status st;
      ASSERT_EQ(EP_Recv(small.data(), 8, MPI_BYTE, peer, 1, comm, &st), EP_SUCCESS);
      ASSERT_EQ(EP_Recv(big.data(), 300000, MPI_BYTE, EP_ANY_SOURCE, 2, comm, &st), EP_SUCCESS);
      ASSERT_EQ(EP_Probe(peer, 3, comm, &st), EP_SUCCESS);
      ASSERT_EQ(EP_Recv(small.data(), 8, MPI_BYTE, peer, 3, comm, &st), EP_SUCCESS);
      EP_Request r;
      ASSERT_EQ(EP_Irecv(big.data(), 1, vec, peer, 5, comm, &r), EP_SUCCESS);
      ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
      ASSERT_EQ(EP_Send(small.data(), 8, MPI_BYTE, peer, 4, comm), EP_SUCCESS);
    } else {
      ASSERT_EQ(EP_Send(small.data(), 8, MPI_BYTE, peer, 1, comm), EP_SUCCESS);
      ASSERT_EQ(EP_Send(big.data(), 300000, MPI_BYTE, peer, 2, comm), EP_SUCCESS);
      ASSERT_EQ(EP_Ssend(small.data(), 8, MPI_BYTE, peer, 3, comm), EP_SUCCESS);
      EP_Request r;
      ASSERT_EQ(EP_Isend(big.data(), 1, vec, peer, 5, comm, &r), EP_SUCCESS);
      ASSERT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
      ASSERT_EQ(EP_Recv(small.data(), 8, MPI_BYTE, peer, 4, comm, EP_STATUS_IGNORE), EP_SUCCESS);
    }
    EXPECT_EQ(own_calls(), before) << (receiver ? "receiver" : "sender");
    MPI_Type_free(&vec);
  });
  EXPECT_EQ(s.packets_sent.load(), packets);
  EXPECT_EQ(s.data_sent.load(), data);
}

}  // namespace
