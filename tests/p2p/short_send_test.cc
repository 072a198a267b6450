// The blocking send's short way (runtime::send_small_remote, used by EP_Send): messages
// on both sides of its bounds - a local or remote peer, contiguous or strided types,
// a contiguous type with a nonzero true lower bound, packets up to and beyond
// progress::Engine::kSmallPacketBytes - arrive intact, with the right status, and the
// checks before it still report bad arguments.  The tests see results, not paths:
// every endpoint sends every size to every endpoint, and the program runs with the
// default EP_EAGER_LIMIT and with EP_EAGER_LIMIT=16, under which only messages of at
// most 16 bytes take the short way (BUILD.bazel).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/common/harness.h"

namespace {

using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;
using ep_test::world_size;

// Payload sizes around the short way's bound: a packet holds a 16-byte header and at
// most 240 payload bytes (progress::Engine::kSmallPacketBytes is 256).
const int kSizes[] = {0, 1, 7, 8, 9, 24, 100, 239, 240, 241, 300, 4000};

uint8_t byte_of(int src, int dst, int size, int i) {
  return static_cast<uint8_t>(src * 37 + dst * 11 + size * 3 + i * 13);
}

// Every endpoint sends one message of each size to every endpoint (itself included)
// with EP_Send, after all receives were posted; sources of this process and of others
// alike.
TEST(ShortSend, EverySizeAroundTheBoundArrivesIntactFromEverySource) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    for (int n : kSizes) {
      std::vector<std::vector<uint8_t>> in(size, std::vector<uint8_t>(n + 8, 0xee));
      std::vector<EP_Request> reqs(size);
      for (int s = 0; s < size; ++s) {
        ASSERT_EQ(EP_Irecv(in[s].data(), n + 8, MPI_BYTE, s, n, comm, &reqs[s]), EP_SUCCESS);
      }
      for (int d = 0; d < size; ++d) {
        std::vector<uint8_t> out(n);
        for (int i = 0; i < n; ++i) out[i] = byte_of(rank, d, n, i);
        ASSERT_EQ(EP_Send(out.data(), n, MPI_BYTE, d, n, comm), EP_SUCCESS);
      }
      for (int s = 0; s < size; ++s) {
        EP_Status st;
        ASSERT_EQ(EP_Wait(&reqs[s], &st), EP_SUCCESS);
        int count = -1;
        EP_Get_count(&st, MPI_BYTE, &count);
        EXPECT_EQ(count, n) << "from " << s;
        EXPECT_EQ(st.EP_SOURCE, s);
        EXPECT_EQ(st.EP_TAG, n);
        for (int i = 0; i < n; ++i) {
          ASSERT_EQ(in[s][i], byte_of(s, rank, n, i))
              << "byte " << i << " of " << n << " from " << s;
        }
        EXPECT_EQ(in[s][n], 0xee) << "written past the message";
      }
    }
  });
}

// Typed messages: a contiguous type whose data starts past its lower bound's zero
// (the short way reads from buf + true_lb), and a strided vector (never the short way:
// it is packed by the general path).
TEST(ShortSend, TypedMessagesArriveIntact) {
  // Two ints at byte displacement 8 of each element: contiguous data, true_lb 8.
  MPI_Datatype shifted;
  int blocklen = 2;
  MPI_Aint disp = 8;
  MPI_Type_create_hindexed(1, &blocklen, &disp, MPI_INT, &shifted);
  MPI_Type_commit(&shifted);
  MPI_Datatype strided;  // 3 ints, every other one
  MPI_Type_vector(3, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int shifted_out[4] = {-1, -1, 1000 + rank, 2000 + rank};
    int shifted_in[2] = {0, 0};
    EP_Request r;
    ASSERT_EQ(EP_Irecv(shifted_in, 2, MPI_INT, from, 1, comm, &r), EP_SUCCESS);
    ASSERT_EQ(EP_Send(shifted_out, 1, shifted, to, 1, comm), EP_SUCCESS);
    ASSERT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
    EXPECT_EQ(shifted_in[0], 1000 + from);
    EXPECT_EQ(shifted_in[1], 2000 + from);

    int strided_out[6];
    for (int i = 0; i < 6; ++i) strided_out[i] = i % 2 == 0 ? 10 * rank + i : -1;
    int strided_in[3] = {0, 0, 0};
    ASSERT_EQ(EP_Irecv(strided_in, 3, MPI_INT, from, 2, comm, &r), EP_SUCCESS);
    ASSERT_EQ(EP_Send(strided_out, 1, strided, to, 2, comm), EP_SUCCESS);
    ASSERT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(strided_in[i], 10 * from + 2 * i);
  });
  MPI_Type_free(&shifted);
  MPI_Type_free(&strided);
}

// EP_PROC_NULL is a no-op, and EP_Send's errors are still reported: a call that the
// short way's glance does not pass (api/p2p.cc) takes the general way, whose checks
// name the argument - each bound of the glance is crossed here once.
TEST(ShortSend, ProcNullAndBadArgumentsKeepTheirMeaning) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int size = 0, v = 7, tag_ub = 0;
    EP_Comm_size(comm, &size);
    EP_Comm_tag_ub(comm, &tag_ub);
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, EP_PROC_NULL, 0, comm), EP_SUCCESS);
    EXPECT_EQ(EP_Send(nullptr, 0, MPI_INT, EP_PROC_NULL, 0, comm), EP_SUCCESS);
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, size, 0, comm), EP_ERR_RANK);
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, -7, 0, comm), EP_ERR_RANK);
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, EP_ANY_SOURCE, 0, comm), EP_ERR_RANK);
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, 0, -3, comm), EP_ERR_TAG);
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, 0, EP_ANY_TAG, comm), EP_ERR_TAG);
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, 0, tag_ub + 1, comm), EP_ERR_TAG);
    EXPECT_EQ(EP_Send(&v, -1, MPI_INT, 0, 0, comm), EP_ERR_COUNT);
    EXPECT_EQ(EP_Send(nullptr, 1, MPI_INT, 0, 0, comm), EP_ERR_BUFFER);
    EXPECT_EQ(EP_Send(&v, 1, MPI_DATATYPE_NULL, 0, 0, comm), EP_ERR_TYPE);
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, 0, 0, EP_COMM_NULL), EP_ERR_COMM);
    char bogus[4096] = {};  // not an endpoint handle
    EXPECT_EQ(EP_Send(&v, 1, MPI_INT, 0, 0, reinterpret_cast<EP_Comm>(bogus)), EP_ERR_COMM);
  });
}

// Between endpoints of two processes (communicator rank 0 in process 0, the last rank
// in the last process): a 100-byte message started before a small one may be received
// after it - with the default limit the first is eager (the short way: EP_Send returns
// before any receive is posted), under EP_EAGER_LIMIT=16 it is a rendezvous, whose
// payload leaves only once its receive is posted (so it is started with EP_Isend).
// Both arrive intact, each to its own receive.
TEST(ShortSend, ALaterMessageMayBeReceivedFirst) {
  if (world_size() < 2) GTEST_SKIP() << "needs two processes";
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    const int sender = 0, receiver = size - 1;  // in process 0 and in the last process
    std::vector<uint8_t> data(100), in(100, 0);
    for (int i = 0; i < 100; ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
    int first = 11, second = 0;
    if (rank == sender) {
      EP_Request r = EP_REQUEST_NULL;
      ASSERT_EQ(EP_Isend(data.data(), 100, MPI_BYTE, receiver, 1, comm, &r), EP_SUCCESS);
      ASSERT_EQ(EP_Send(&first, 1, MPI_INT, receiver, 2, comm), EP_SUCCESS);
      ASSERT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
    } else if (rank == receiver) {
      ASSERT_EQ(EP_Recv(&second, 1, MPI_INT, sender, 2, comm, EP_STATUS_IGNORE), EP_SUCCESS);
      EP_Status st;
      ASSERT_EQ(EP_Recv(in.data(), 100, MPI_BYTE, sender, 1, comm, &st), EP_SUCCESS);
      int count = -1;
      EP_Get_count(&st, MPI_BYTE, &count);
      EXPECT_EQ(count, 100);
      EXPECT_EQ(second, 11);
      EXPECT_EQ(in, data);
    }
  });
}

}  // namespace
