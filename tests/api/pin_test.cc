// EP_PROGRESS_CPUS pins the progress thread (set by the BUILD target's env for every
// process): the i-th process of a node takes entry i mod n of the list; the thread is
// pinned to exactly that CPU when EP_Init returns, and nothing else is pinned.
// main() is //tests/common:mpi_main (EP_Init with the target's environment).
#include <gtest/gtest.h>
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "ep/ep.h"
#include "tests/api/proc_util.h"
#include "tests/common/harness.h"
#include "tests/common/harness.h"

namespace {

// The list the target sets: comma-separated single CPUs (what the targets use).
std::vector<int> configured_cpus() {
  std::vector<int> cpus;
  const char* v = std::getenv("EP_PROGRESS_CPUS");
  if (v == nullptr) return cpus;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) cpus.push_back(std::atoi(item.c_str()));
  return cpus;
}

int node_local_index() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, ep_test::world_rank(), MPI_INFO_NULL,
                      &node);
  int r = 0;
  MPI_Comm_rank(node, &r);
  MPI_Comm_free(&node);
  return r;
}

TEST(ProgressCpus, ProgressThreadIsPinnedToItsEntryOnly) {
  std::vector<int> cpus = configured_cpus();
  ASSERT_FALSE(cpus.empty()) << "the target must set EP_PROGRESS_CPUS";
  int want = cpus[node_local_index() % cpus.size()];
  std::vector<pid_t> threads = ep_test::threads_named("ep-progress");
  ASSERT_EQ(threads.size(), 1u) << "expected exactly one thread named ep-progress";
  std::vector<int> got = ep_test::affinity_of(threads[0]);
  EXPECT_EQ(got, std::vector<int>{want}) << "process " << ep_test::world_rank()
                                          << " (node-local " << node_local_index() << ")";
}

TEST(ProgressCpus, MainThreadIsNotPinned) {
  std::vector<int> mine = ep_test::affinity_of(0);
  // The machine's mask (0-1 here) is unchanged for the application's threads.
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu >= 2) {
    EXPECT_GE(mine.size(), 2u);
  }
}

TEST(ProgressCpus, PinnedProgressThreadCarriesTraffic) {
  ep_test::run_endpoints(2, [](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    std::vector<char> out(100000, static_cast<char>(rank)), in(100000, -1);
    EXPECT_EQ(EP_Sendrecv(out.data(), 100000, MPI_CHAR, (rank + 1) % size, 1, in.data(), 100000,
                          MPI_CHAR, (rank + size - 1) % size, 1, comm, EP_STATUS_IGNORE),
              EP_SUCCESS);
    EXPECT_EQ(in[99999], static_cast<char>((rank + size - 1) % size));
  });
}

}  // namespace
