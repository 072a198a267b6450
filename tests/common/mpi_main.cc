// main() for libep's multi-process googletest programs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "ep/ep.h"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (EP_Init() != EP_SUCCESS) {
    std::fprintf(stderr, "EP_Init failed\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int result = RUN_ALL_TESTS();
  // A process whose tests failed must make the whole job fail.
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  EP_Finalize();
  MPI_Finalize();
  return worst;
}
