// EP_Init in a process bound to one CPU - the whole job runs under `taskset -c 0`
// (tests/api/bound_run.sh), as under `mpiexec -bind-to core` or OMP_PROC_BIND=close:
//   * EP_PROGRESS_CPUS naming a CPU outside that binding pins the progress thread there
//     (exactly that CPU), with no warning;
//   * a CPU the kernel refuses: EP_Init succeeds, each process warns once (variable, CPU,
//     the kernel's reason) and its progress thread runs unpinned, on the binding's CPU;
//   * no CPU named: the progress thread shares the one CPU, and world rank 0 warns once
//     for the job, saying how to give progress threads CPUs of their own;
//   * a malformed list is EP_ERR_ARG, said in one line.
// Its own main(): each test sets EP_PROGRESS_CPUS and calls EP_Init and EP_Finalize.
#include <gtest/gtest.h>
#include <mpi.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "ep/ep.h"
#include "tests/api/proc_util.h"
#include "tests/common/harness.h"

namespace {

using ep_test::affinity_of;
using ep_test::capture_stderr;
using ep_test::last_error;
using ep_test::lines_with;

// The CPU this process is bound to (the test's precondition: exactly one).
int bound_cpu() {
  std::vector<int> mine = affinity_of(0);
  return mine.size() == 1 ? mine[0] : -1;
}

// An online CPU of the machine other than `cpu` (/sys/devices/system/cpu/online: "0-1").
int other_online_cpu(int cpu) {
  std::ifstream f("/sys/devices/system/cpu/online");
  std::string list;
  std::getline(f, list);
  size_t p = 0;
  while (p < list.size()) {
    size_t comma = list.find(',', p);
    std::string item = list.substr(p, comma == std::string::npos ? std::string::npos : comma - p);
    const size_t dash = item.find('-');
    const int a = std::atoi(item.c_str());
    const int b = dash == std::string::npos ? a : std::atoi(item.c_str() + dash + 1);
    for (int c = a; c <= b; ++c) {
      if (c != cpu) return c;
    }
    if (comma == std::string::npos) break;
    p = comma + 1;
  }
  return -1;
}

pid_t progress_thread() {
  std::vector<pid_t> t = ep_test::threads_named("ep-progress");
  return t.size() == 1 ? t[0] : -1;
}

// EP_Init with EP_PROGRESS_CPUS=value (unset if nullptr); returns its stderr.
std::string init_with(const char* value, int* rc) {
  if (value == nullptr) {
    unsetenv("EP_PROGRESS_CPUS");
  } else {
    setenv("EP_PROGRESS_CPUS", value, 1);
  }
  std::string err = capture_stderr([&] { *rc = EP_Init(); });
  unsetenv("EP_PROGRESS_CPUS");
  return err;
}

void expect_traffic() {
  ep_test::run_endpoints(2, [](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    std::vector<int> out(5000, rank), in(5000, -1);
    EXPECT_EQ(EP_Sendrecv(out.data(), 5000, MPI_INT, (rank + 1) % size, 1, in.data(), 5000, MPI_INT,
                          (rank + size - 1) % size, 1, comm, EP_STATUS_IGNORE),
              EP_SUCCESS);
    EXPECT_EQ(in[4999], (rank + size - 1) % size);
  });
}

TEST(BoundProcess, RunsBoundToOneCpu) {
  ASSERT_GE(bound_cpu(), 0) << "run under taskset -c <cpu> (bound_run.sh): the process may run "
                               "on CPUs "
                            << ::testing::PrintToString(affinity_of(0));
  ASSERT_GE(other_online_cpu(bound_cpu()), 0) << "the machine needs a second CPU";
}

TEST(BoundProcess, ProgressCpusOutsideTheBindingPinTheProgressThreadThere) {
  const int bound = bound_cpu(), free_cpu = other_online_cpu(bound);
  ASSERT_GE(free_cpu, 0);
  const std::string value = std::to_string(free_cpu);
  int rc = -1;
  const std::string err = init_with(value.c_str(), &rc);
  ASSERT_EQ(rc, EP_SUCCESS) << last_error(EP_ERR_ARG) << "\nstderr:\n" << err;
  EXPECT_EQ(lines_with(err, {"warning", "CPU"}).size(), 0u) << err;
  const pid_t t = progress_thread();
  ASSERT_GT(t, 0) << "expected one thread named ep-progress";
  EXPECT_EQ(affinity_of(t), std::vector<int>{free_cpu});
  EXPECT_EQ(affinity_of(0), std::vector<int>{bound}) << "the caller's binding is unchanged";
  expect_traffic();
  ASSERT_EQ(EP_Finalize(), EP_SUCCESS);
}

TEST(BoundProcess, ACpuTheKernelRefusesIsWarnedOnceAndLeavesTheThreadUnpinned) {
  int rc = -1;
  const std::string err = init_with("4000", &rc);  // well-formed; no such CPU here
  ASSERT_EQ(rc, EP_SUCCESS) << last_error(EP_ERR_ARG) << "\nstderr:\n" << err;
  EXPECT_EQ(lines_with(err, {"warning", "EP_PROGRESS_CPUS", "4000", std::strerror(EINVAL)}).size(),
            1u)
      << err;
  EXPECT_EQ(lines_with(err, {"warning", "CPU"}).size(), 1u) << "one warning only:\n" << err;
  const pid_t t = progress_thread();
  ASSERT_GT(t, 0);
  EXPECT_EQ(affinity_of(t), std::vector<int>{bound_cpu()}) << "unpinned: the caller's CPU";
  expect_traffic();
  ASSERT_EQ(EP_Finalize(), EP_SUCCESS);
}

TEST(BoundProcess, NoCpuNamedIsWarnedOnceForTheJob) {
  int rc = -1;
  const std::string err = init_with(nullptr, &rc);
  ASSERT_EQ(rc, EP_SUCCESS) << last_error(EP_ERR_ARG) << "\nstderr:\n" << err;
  const size_t want = ep_test::world_rank() == 0 ? 1 : 0;
  EXPECT_EQ(lines_with(err, {"warning", "single CPU", "EP_PROGRESS_CPUS", "-bind-to"}).size(), want)
      << "world rank 0 warns, once:\n"
      << err;
  EXPECT_EQ(lines_with(err, {"warning", "CPU"}).size(), want) << err;
  const pid_t t = progress_thread();
  ASSERT_GT(t, 0);
  EXPECT_EQ(affinity_of(t), std::vector<int>{bound_cpu()});
  ASSERT_EQ(EP_Finalize(), EP_SUCCESS);
}

TEST(BoundProcess, AMalformedListIsErrArgSaidInOneLine) {
  int rc = -1;
  const std::string err = init_with("1,x", &rc);
  EXPECT_EQ(rc, EP_ERR_ARG);
  if (rc == EP_SUCCESS) EP_Finalize();
  EXPECT_EQ(lines_with(err, {"EP_ERR_ARG", "EP_Init", "EP_PROGRESS_CPUS", "1,x"}).size(), 1u)
      << err;
  EXPECT_EQ(lines_with(err, {}).size(), 1u) << "one line:\n" << err;
  EXPECT_EQ(ep_test::progress_thread_count(), 0);
}

}  // namespace

int main(int argc, char** argv) {
  unsetenv("EP_PROGRESS_CPUS");
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  return ep_test::run_all_tests_and_finalize();
}
