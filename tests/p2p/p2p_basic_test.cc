// Point-to-point basics across and within processes, uneven endpoint counts.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "tests/common/harness.h"

namespace {

using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;

std::vector<uint8_t> pattern(int src, int dst, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(src * 31 + dst * 7 + i * 13);
  return v;
}

TEST(P2P, RingPassesRanks) {
  run_endpoints(uneven(world_rank()), [](EP_Comm comm, int) {
    int rank, size;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int got = -1;
    EP_Request r;
    ASSERT_EQ(EP_Irecv(&got, 1, MPI_INT, left, 5, comm, &r), EP_SUCCESS);
    ASSERT_EQ(EP_Send(&rank, 1, MPI_INT, right, 5, comm), EP_SUCCESS);
    EP_Status st;
    ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
    EXPECT_EQ(got, left);
    EXPECT_EQ(st.EP_SOURCE, left);
    EXPECT_EQ(st.EP_TAG, 5);
    EXPECT_EQ(r, EP_REQUEST_NULL);
  });
}

TEST(P2P, AllPairsAllSizesArriveIntact) {
  const size_t sizes[] = {0, 1, 100, 16384, 16385, 200000, 1 << 20};
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank, size;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    for (size_t n : sizes) {
      std::vector<std::vector<uint8_t>> in(size, std::vector<uint8_t>(n + 1, 0xee));
      std::vector<EP_Request> reqs;
      for (int s = 0; s < size; ++s) {
        EP_Request r;
        ASSERT_EQ(EP_Irecv(in[s].data(), static_cast<int>(n), MPI_BYTE, s, 9, comm, &r),
                  EP_SUCCESS);
        reqs.push_back(r);
      }
      std::vector<std::vector<uint8_t>> out;
      for (int d = 0; d < size; ++d) out.push_back(pattern(rank, d, n));
      for (int d = 0; d < size; ++d) {
        EP_Request r;
        ASSERT_EQ(EP_Isend(out[d].data(), static_cast<int>(n), MPI_BYTE, d, 9, comm, &r),
                  EP_SUCCESS);
        reqs.push_back(r);
      }
      std::vector<EP_Status> st(reqs.size());
      ASSERT_EQ(EP_Waitall(static_cast<int>(reqs.size()), reqs.data(), st.data()), EP_SUCCESS);
      for (int s = 0; s < size; ++s) {
        auto want = pattern(s, rank, n);
        EXPECT_TRUE(std::equal(want.begin(), want.end(), in[s].begin())) << "from " << s << " size " << n;
        EXPECT_EQ(in[s][n], 0xee) << "overrun from " << s;
        int count = -1;
        EP_Get_count(&st[s], MPI_BYTE, &count);
        EXPECT_EQ(count, static_cast<int>(n));
        EXPECT_EQ(st[s].EP_SOURCE, s);
      }
    }
  });
}

}  // namespace
