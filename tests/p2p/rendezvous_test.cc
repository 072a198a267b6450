// True rendezvous (runtime.h, "Rendezvous"): a message above EP_EAGER_LIMIT to another
// process leaves its sender only once its receive has matched - so an unmatched
// backlog costs the receiving process nothing but envelopes, and a standard-mode send
// of such a message does not complete before its receive is posted.  Run with the
// default limit and with EP_EAGER_LIMIT=0 (every message with a payload is then a
// rendezvous).  The payloads the engine handed to MPI are read from its counters
// (data_sent), which count MPI_Isend calls of payloads in this process; to a process of
// this node with the node transport on, payloads never go through MPI (runtime/node.h:
// the receiver copies them after the match), and the count stays.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "runtime/runtime.h"
#include "tests/common/harness.h"

namespace {

using ep_test::run_endpoints;
using ep_test::scaled;
using ep_test::world_rank;
using ep_test::world_size;

[[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(120, 400);

// The size of a rendezvous message under the limit in force.
int rendezvous_bytes() {
  const char* v = std::getenv("EP_EAGER_LIMIT");
  return v != nullptr && std::string(v) == "0" ? 2 : 64 * 1024 + 1;
}

uint64_t payloads_sent() {
  return ep::runtime::engine_stats().data_sent.load(std::memory_order_relaxed);
}

// The payloads MPI carries for n rendezvous messages to process `proc`.
uint64_t mpi_payloads(int proc, int n) {
  return ep::runtime::runtime()->node.peer(proc) != nullptr ? 0 : static_cast<uint64_t>(n);
}

uint8_t pattern(int msg, size_t i) { return static_cast<uint8_t>(msg * 31 + i * 7 + 3); }

// Process 0's endpoint 0 sends a backlog of rendezvous messages (nonblocking) to the
// first endpoint of the last process, which posts no receive until told.  Meanwhile no
// payload may leave process 0 and no send may complete; then the receiver takes the
// messages in reverse order of their tags, and each arrives whole.
TEST(Rendezvous, PayloadsLeaveOnlyOnceTheirReceivesMatched) {
  if (world_size() < 2) GTEST_SKIP() << "needs two processes";
  const int bytes = rendezvous_bytes();
  const int n = scaled(64);
  const int last_proc = world_size() - 1;
  // Endpoint 0 of process 0 and of the last process: one endpoint per process here.
  run_endpoints(1, [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    const int sender = 0, receiver = last_proc;
    if (rank == sender) {
      std::vector<std::vector<uint8_t>> out(static_cast<size_t>(n));
      std::vector<EP_Request> reqs(static_cast<size_t>(n));
      const uint64_t before = payloads_sent();
      for (int m = 0; m < n; ++m) {
        out[m].resize(static_cast<size_t>(bytes));
        for (int i = 0; i < bytes; ++i) out[m][i] = pattern(m, i);
        ASSERT_EQ(EP_Isend(out[m].data(), bytes, MPI_BYTE, receiver, m, comm, &reqs[m]),
                  EP_SUCCESS);
      }
      // Drive the engine for a while: nothing may complete, nothing may leave.
      for (int k = 0; k < 50; ++k) {
        int flag = 1;
        ASSERT_EQ(EP_Testall(n, reqs.data(), &flag, EP_STATUSES_IGNORE), EP_SUCCESS);
        EXPECT_EQ(flag, 0) << "a rendezvous send completed before its receive was posted";
        usleep(2000);
      }
      EXPECT_EQ(payloads_sent(), before) << "a payload left before its receive matched";
      char go = 1;  // (no payload: eager under any limit)
      ASSERT_EQ(EP_Send(&go, 0, MPI_CHAR, receiver, 1 << 20, comm), EP_SUCCESS);
      ASSERT_EQ(EP_Waitall(n, reqs.data(), EP_STATUSES_IGNORE), EP_SUCCESS);
      EXPECT_EQ(payloads_sent(), before + mpi_payloads(last_proc, n));
    } else if (rank == receiver) {
      char go = 0;
      ASSERT_EQ(EP_Recv(&go, 0, MPI_CHAR, sender, 1 << 20, comm, EP_STATUS_IGNORE), EP_SUCCESS);
      std::vector<uint8_t> in(static_cast<size_t>(bytes));
      for (int m = n - 1; m >= 0; --m) {
        EP_Status st;
        ASSERT_EQ(EP_Recv(in.data(), bytes, MPI_BYTE, sender, m, comm, &st), EP_SUCCESS);
        int count = -1;
        EP_Get_count(&st, MPI_BYTE, &count);
        ASSERT_EQ(count, bytes);
        for (int i = 0; i < bytes; ++i) ASSERT_EQ(in[i], pattern(m, i)) << "message " << m;
      }
    }
  });
}

// A standard-mode EP_Send of a rendezvous message returns only after its receive was
// posted (MPI allows it to wait; libep's rendezvous does), across processes.
TEST(Rendezvous, BlockingSendWaitsForTheReceive) {
  if (world_size() < 2) GTEST_SKIP() << "needs two processes";
  const int bytes = rendezvous_bytes();
  const int last_proc = world_size() - 1;
  run_endpoints(1, [&](EP_Comm comm, int) {
    int rank = 0;
    EP_Comm_rank(comm, &rank);
    std::vector<uint8_t> buf(static_cast<size_t>(bytes), 7);
    if (rank == 0) {
      const double t0 = EP_Wtime();
      ASSERT_EQ(EP_Send(buf.data(), bytes, MPI_BYTE, last_proc, 3, comm), EP_SUCCESS);
      double posted = 0;
      ASSERT_EQ(EP_Recv(&posted, 1, MPI_DOUBLE, last_proc, 4, comm, EP_STATUS_IGNORE), EP_SUCCESS);
      // The receiver stamped the clock just before posting (one node: one clock).
      EXPECT_GE(EP_Wtime(), posted);
      EXPECT_GE(posted, t0);
    } else if (rank == last_proc) {
      usleep(100000);
      const double posted = EP_Wtime();
      ASSERT_EQ(EP_Recv(buf.data(), bytes, MPI_BYTE, 0, 3, comm, EP_STATUS_IGNORE), EP_SUCCESS);
      ASSERT_EQ(EP_Send(&posted, 1, MPI_DOUBLE, 0, 4, comm), EP_SUCCESS);
    }
  });
}

// A backlog of unmatched rendezvous messages from every endpoint to every endpoint of
// the other processes, then drained with wildcard receives: every message arrives once
// and whole, and each source's messages in send order.
TEST(Rendezvous, BacklogFromEverySourceDrainsInOrderExactlyOnce) {
  const int bytes = rendezvous_bytes();
  const int per_pair = scaled(40);
  run_endpoints(ep_test::uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    std::vector<EP_Request> reqs;
    std::vector<std::vector<uint8_t>> out;
    out.reserve(static_cast<size_t>(size * per_pair));
    for (int d = 0; d < size; ++d) {
      if (d == rank) continue;
      for (int m = 0; m < per_pair; ++m) {
        out.emplace_back(static_cast<size_t>(bytes));
        auto& v = out.back();
        v[0] = static_cast<uint8_t>(rank);
        for (int i = 1; i < bytes; ++i) v[i] = pattern(m, i);
        if (bytes >= 2) v[1] = static_cast<uint8_t>(m);
        reqs.emplace_back();
        ASSERT_EQ(EP_Isend(v.data(), bytes, MPI_BYTE, d, 9, comm, &reqs.back()), EP_SUCCESS);
      }
    }
    ep_test::ep_barrier(comm);  // every backlog is in place before anyone receives
    std::vector<int> next(static_cast<size_t>(size), 0);
    std::vector<uint8_t> in(static_cast<size_t>(bytes));
    for (int k = 0; k < (size - 1) * per_pair; ++k) {
      EP_Status st;
      ASSERT_EQ(EP_Recv(in.data(), bytes, MPI_BYTE, EP_ANY_SOURCE, 9, comm, &st), EP_SUCCESS);
      const int src = st.EP_SOURCE;
      ASSERT_EQ(in[0], static_cast<uint8_t>(src));
      if (bytes >= 2) {
        ASSERT_EQ(in[1], static_cast<uint8_t>(next[src])) << "out of order from " << src;
      }
      ++next[src];
    }
    for (int s = 0; s < size; ++s) EXPECT_EQ(next[s], s == rank ? 0 : per_pair);
    ASSERT_EQ(EP_Waitall(static_cast<int>(reqs.size()), reqs.data(), EP_STATUSES_IGNORE),
              EP_SUCCESS);
  });
}

}  // namespace
