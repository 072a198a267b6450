// Self-test of the ep_mpi_test macro and tools/mpirun_test.sh: googletest with its own main()
// under mpiexec, MPI_THREAD_MULTIPLE.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <thread>
#include <vector>

namespace {

TEST(MpiSelfTest, AllreduceSumOfRanks) {
  int rank = -1, size = 0;
  ASSERT_EQ(MPI_Comm_rank(MPI_COMM_WORLD, &rank), MPI_SUCCESS);
  ASSERT_EQ(MPI_Comm_size(MPI_COMM_WORLD, &size), MPI_SUCCESS);
  long long mine = rank + 1, sum = 0;
  ASSERT_EQ(MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(sum, static_cast<long long>(size) * (size + 1) / 2);
}

// Two threads per process each do their own Allreduce on a private duplicate communicator,
// exercising MPI_THREAD_MULTIPLE (and TSAN's view of MPICH) the way libep will.
TEST(MpiSelfTest, ConcurrentAllreduceFromThreads) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  constexpr int kThreads = 2;
  std::vector<MPI_Comm> comms(kThreads);
  for (auto& c : comms) ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &c), MPI_SUCCESS);
  std::vector<int> results(kThreads, -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      int one = t + 1;
      MPI_Allreduce(&one, &results[t], 1, MPI_INT, MPI_SUM, comms[t]);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(results[t], (t + 1) * size);
  for (auto& c : comms) MPI_Comm_free(&c);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "MPI_Init_thread failed\n");
    return 1;
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "MPI_THREAD_MULTIPLE not provided (got %d)\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  ::testing::InitGoogleTest(&argc, argv);
  int local_fail = RUN_ALL_TESTS();
  // Every rank must agree on the result, otherwise one rank could exit 0 and hide a failure
  // (mpiexec already fails on any nonzero exit, this also makes it visible on rank 0).
  int any_fail = 0;
  MPI_Allreduce(&local_fail, &any_fail, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_fail ? 1 : 0;
}
