// Engine::packet_bytes (the byte count of a received packet, read from its status)
// against MPI_Get_count, for every size class a packet comes in: empty, a header, the
// small packets handed over in place, a bundle's, and the largest one the posted
// receive takes.  Received as the engine receives: MPI_Irecv(MPI_ANY_SOURCE,
// MPI_ANY_TAG) of kMaxPacketBytes, completed by MPI_Test.
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "progress/engine.h"

namespace {

using ep::progress::Engine;

TEST(PacketBytes, AgreesWithMpiGetCount) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ASSERT_EQ(size, 2) << "run with 2 processes";
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const int sizes[] = {0, 1, 7, 24, 255, 256, 257, 4096, 65536, 65537,
                       static_cast<int>(Engine::kMaxPacketBytes)};
  std::vector<char> buf(Engine::kMaxPacketBytes);
  for (int n : sizes) {
    if (rank == 0) {
      for (int i = 0; i < n; ++i) buf[i] = static_cast<char>(i * 7 + n);
      ASSERT_EQ(MPI_Send(buf.data(), n, MPI_BYTE, 1, n % 3, comm), MPI_SUCCESS);
      continue;
    }
    MPI_Request req;
    ASSERT_EQ(MPI_Irecv(buf.data(), static_cast<int>(Engine::kMaxPacketBytes), MPI_BYTE,
                        MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &req),
              MPI_SUCCESS);
    int flag = 0;
    MPI_Status st;
    while (!flag) ASSERT_EQ(MPI_Test(&req, &flag, &st), MPI_SUCCESS);
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    EXPECT_EQ(count, n);
    EXPECT_EQ(Engine::packet_bytes(st), count) << "packet of " << n << " bytes";
    EXPECT_EQ(st.MPI_SOURCE, 0);
    EXPECT_EQ(st.MPI_TAG, n % 3);
    for (int i = 0; i < n; ++i) ASSERT_EQ(buf[i], static_cast<char>(i * 7 + n)) << "byte " << i;
  }
  MPI_Comm_free(&comm);
}

}  // namespace
