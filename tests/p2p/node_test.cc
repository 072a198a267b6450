// Point-to-point between endpoints of different processes of one node (runtime/node.h):
// every send mode and size, blocking and not, wildcard receives mixing sources of this
// process and of others, probes and matched probes, cancel, truncation of eager and
// rendezvous messages, synchronous completion, buffered and persistent sends, derived
// types, a sleeping receiver woken by a node message, a ring that fills while its
// receiver posts late, a payload the kernel cannot copy, and no MPI traffic for any of
// it.  The tests of one pair of endpoints run between two processes of one node
// (node_pair()); a job with no two processes on one node (tools/multihost_test.sh)
// skips them in every process.  The same program runs with the node transport on
// (default), off, and with the shared staging buffers instead of cross-memory attach
// (BUILD.bazel): the results are the same; what differs by way is asserted where the way
// is known.
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

// The two endpoints on_pair() exchanges between, as ranks of the world endpoints
// communicator (uneven(p) endpoints per process), the same in every process: the first
// endpoint of the first process that shares its node with another process (the
// receiver), and the last endpoint of the last process of that node (the sender).  A
// job of one process pairs its first and last endpoints.  None (-1, -1) when the job has
// several processes but no two on one node (tools/multihost_test.sh's hosts): such a
// pair would exchange through MPI, not through the node transport.  Collective over
// MPI_COMM_WORLD at its first call.
struct Pair {
  int receiver = -1, sender = -1;            // endpoint ranks
  int receiver_proc = -1, sender_proc = -1;  // their MPI_COMM_WORLD ranks
  bool found() const { return receiver >= 0; }
};
const Pair& node_pair() {
  static const Pair pair = [] {
    Pair p;
    const int np = world_size();
    if (np == 1) return Pair{0, uneven(0) - 1, 0, 0};
    std::vector<int> first(static_cast<size_t>(np), 0);  // each process's first endpoint rank
    for (int q = 1; q < np; ++q) first[q] = first[q - 1] + uneven(q - 1);
    // node_of[q]: the lowest MPI_COMM_WORLD rank on process q's node.
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int lowest = world_rank();
    MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    std::vector<int> node_of(static_cast<size_t>(np));
    MPI_Allgather(&lowest, 1, MPI_INT, node_of.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int q = 0; q < np && !p.found(); ++q) {
      for (int s = np - 1; s > q; --s) {
        if (node_of[s] != node_of[q]) continue;
        p = Pair{first[q], first[s] + uneven(s) - 1, q, s};
        break;
      }
    }
    return p;
  }();
  return pair;
}

// Why a test of the node pair cannot run here ("" when it can), the same in every
// process, so that all of them skip it or none does (the test's endpoints communicator
// is created collectively).  `transport`: the test needs the node transport on in both
// processes of the pair.
std::string why_no_pair(bool transport) {
  const Pair& p = node_pair();
  if (!p.found()) return "no two processes of this job share a node";
  if (!transport) return "";
  if (p.receiver_proc == p.sender_proc) return "needs endpoints of two processes of one node";
  const int me = world_rank();
  int ok = me == p.receiver_proc || me == p.sender_proc ? (node_way() ? 1 : 0) : 1;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return ok == 1 ? "" : "needs the node transport in both processes";
}

#define SKIP_WITHOUT_NODE_PAIR(transport) \
  if (const std::string why = why_no_pair(transport); !why.empty()) GTEST_SKIP() << why

// Runs fn(comm, receiver, peer) on the two endpoints of node_pair() (world endpoints
// communicator); the other endpoints only take part in its creation and release.
template <class Fn>
void on_pair(Fn&& fn) {
  const Pair& p = node_pair();
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank = 0;
    EP_Comm_rank(comm, &rank);
    if (rank == p.receiver) fn(comm, true, p.sender);
    if (rank == p.sender) fn(comm, false, p.receiver);
  });
}

// on_pair() on the communicator of the pair's node (the world endpoints communicator
// split by EP_COMM_TYPE_SHARED), fn's ranks being ranks there: a wildcard receive or a
// probe on it has no source off the node.  Every endpoint of that node takes part in an
// ep_barrier() before fn and one after, so that fn's exchange runs alone in its
// processes.
template <class Fn>
void on_node_pair(Fn&& fn) {
  const Pair& p = node_pair();
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    int rank = 0;
    EP_Comm_rank(world, &rank);
    EP_Comm node = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split_type(world, EP_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
              EP_SUCCESS);
    EP_Comm_set_errhandler(node, EP_ERRORS_RETURN);
    const bool mine = rank == p.receiver || rank == p.sender;
    int peer = -1;
    if (mine) {  // the other one's rank in the node communicator
      EP_Group wg, ng;
      ASSERT_EQ(EP_Comm_group(world, &wg), EP_SUCCESS);
      ASSERT_EQ(EP_Comm_group(node, &ng), EP_SUCCESS);
      const int other = rank == p.receiver ? p.sender : p.receiver;
      ASSERT_EQ(EP_Group_translate_ranks(wg, 1, &other, ng, &peer), EP_SUCCESS);
      ASSERT_GE(peer, 0);
      EP_Group_free(&wg);
      EP_Group_free(&ng);
    }
    ep_barrier(node);
    if (mine) fn(node, rank == p.receiver, peer);
    ep_barrier(node);
    EXPECT_EQ(EP_Comm_free(&node), EP_SUCCESS);
  });
}

TEST(NodeP2P, ProbesAndMatchedProbesSeeNodeMessages) {
  SKIP_WITHOUT_NODE_PAIR(false);
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
  SKIP_WITHOUT_NODE_PAIR(false);
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
  SKIP_WITHOUT_NODE_PAIR(false);
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
  SKIP_WITHOUT_NODE_PAIR(false);
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
  SKIP_WITHOUT_NODE_PAIR(false);
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
        if (receiver) {
          EXPECT_EQ(buf, message(1, 0, round, n)) << "round " << round;
        }
      }
      ASSERT_EQ(EP_Request_free(&p), EP_SUCCESS);
    }
  });
}

// Strided types on both sides, eager and rendezvous: what arrives is the sender's
// elements, in the receiver's layout.
TEST(NodeP2P, DerivedTypesOnBothSides) {
  SKIP_WITHOUT_NODE_PAIR(false);
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
  SKIP_WITHOUT_NODE_PAIR(false);
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
  SKIP_WITHOUT_NODE_PAIR(false);
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
  SKIP_WITHOUT_NODE_PAIR(true);
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
// between processes of this node, on a communicator of this node's endpoints, sends no
// packet and no payload through the engine, and the two threads that exchange make no
// MPI call at all - neither one of libep's own (EP_MPI, base/mpi_calls.h) nor one of the
// engine's (a waiter driving it).
TEST(NodeP2P, NodeTrafficMakesNoMpiCall) {
  SKIP_WITHOUT_NODE_PAIR(true);
  on_node_pair([](EP_Comm comm, bool receiver, int peer) {
    const auto& s = ep::runtime::engine_stats();
    const uint64_t packets = s.packets_sent.load(), data = s.data_sent.load();
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
    EXPECT_EQ(s.packets_sent.load(), packets);
    EXPECT_EQ(s.data_sent.load(), data);
  });
}

}  // namespace
