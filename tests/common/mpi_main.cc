// main() for libep's multi-process googletest programs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "ep/ep.h"
#include "tests/common/harness.h"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  if (EP_Init() != EP_SUCCESS) {
    std::fprintf(stderr, "EP_Init failed\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return ep_test::run_all_tests_and_finalize();
}
