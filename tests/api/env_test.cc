// The EP_* environment variables as EP_Init sees them.
//
// Its own main(): MPI_Init_thread(MPI_THREAD_MULTIPLE), then the tests, each of which
// sets variables with setenv() and calls EP_Init itself (EP_Init reads the environment
// once per call; a failed EP_Init leaves libep uninitialized, so the next test can try
// again).  Every process sets the same values, so a failure is the same everywhere.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ep/ep.h"
#include "tests/api/proc_util.h"
#include "tests/common/harness.h"
#include "tests/common/harness.h"

namespace {

using ep_test::capture_stderr;
using ep_test::last_error;
using ep_test::lines_with;
using ep_test::progress_thread_count;

const char* const kVars[] = {"EP_PROGRESS_CPUS", "EP_PROGRESS_POLICY", "EP_EAGER_LIMIT",
                             "EP_STATS", "EP_VERBOSE", "EP_FOO"};

void clear_vars() {
  for (const char* v : kVars) unsetenv(v);
}

int initialized() {
  int flag = -1;
  EP_Initialized(&flag);
  return flag;
}

// EP_Init with one malformed variable fails with EP_ERR_ARG naming the variable and the
// value, says so in one line on stderr, and leaves nothing behind.
void expect_rejected(const char* var, const char* value) {
  SCOPED_TRACE(std::string(var) + "=" + value);
  clear_vars();
  ASSERT_EQ(setenv(var, value, 1), 0);
  int rc = -1;
  const std::string err = capture_stderr([&] { rc = EP_Init(); });
  EXPECT_EQ(rc, EP_ERR_ARG);
  EXPECT_EQ(lines_with(err, {"EP_ERR_ARG", "EP_Init", var, value}).size(), 1u)
      << "stderr during EP_Init:\n" << err;
  EXPECT_EQ(lines_with(err, {}).size(), 1u) << "one line, nothing else:\n" << err;
  if (rc == EP_SUCCESS) {
    EP_Finalize();
    unsetenv(var);
    return;
  }
  std::string s = last_error(EP_ERR_ARG);
  EXPECT_NE(s.find("EP_Init:"), std::string::npos) << s;
  EXPECT_NE(s.find(var), std::string::npos) << s;
  EXPECT_NE(s.find(value), std::string::npos) << s;
  EXPECT_EQ(initialized(), 0);
  EXPECT_EQ(progress_thread_count(), 0) << "a failed EP_Init left a progress thread behind";
  int rank = 0;
  EXPECT_EQ(EP_Comm_rank(EP_COMM_NULL, &rank), EP_ERR_NOT_INITIALIZED);
  unsetenv(var);
}

TEST(EnvRejected, ProgressCpusNotANumber) { expect_rejected("EP_PROGRESS_CPUS", "abc"); }
TEST(EnvRejected, ProgressCpusAboveAnyCpu) { expect_rejected("EP_PROGRESS_CPUS", "9999"); }
TEST(EnvRejected, ProgressCpusTrailingComma) { expect_rejected("EP_PROGRESS_CPUS", "0,"); }
TEST(EnvRejected, ProgressCpusReversedRange) { expect_rejected("EP_PROGRESS_CPUS", "1-0"); }
TEST(EnvRejected, ProgressCpusNegative) { expect_rejected("EP_PROGRESS_CPUS", "-1"); }

// A well-formed CPU number that the kernel refuses (no such CPU here) is no error: the
// progress thread runs unpinned, with the affinity of EP_Init's caller, and each process
// warns once, naming the variable, the CPU and the kernel's reason.
TEST(EnvAccepted, ProgressCpuTheKernelRefusesIsWarnedOnceAndLeftUnpinned) {
  clear_vars();
  setenv("EP_PROGRESS_CPUS", "4000", 1);
  int rc = -1;
  const std::string err = capture_stderr([&] { rc = EP_Init(); });
  ASSERT_EQ(rc, EP_SUCCESS) << last_error(EP_ERR_ARG);
  SCOPED_TRACE("stderr during EP_Init:\n" + err);
  EXPECT_EQ(lines_with(err, {"warning", "EP_PROGRESS_CPUS", "4000", std::strerror(EINVAL)}).size(),
            1u);
  EXPECT_EQ(lines_with(err, {"warning", "CPU"}).size(), 1u) << "one warning, and only one";
  std::vector<pid_t> threads = ep_test::threads_named("ep-progress");
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(ep_test::affinity_of(threads[0]), ep_test::affinity_of(0))
      << "unpinned: the caller's CPUs";
  ASSERT_EQ(EP_Finalize(), EP_SUCCESS);
  clear_vars();
}

TEST(EnvRejected, ProgressPolicyUnknown) { expect_rejected("EP_PROGRESS_POLICY", "fast"); }
TEST(EnvRejected, ProgressPolicyWrongCase) { expect_rejected("EP_PROGRESS_POLICY", "Spin"); }
TEST(EnvRejected, EagerLimitNegative) { expect_rejected("EP_EAGER_LIMIT", "-5"); }
TEST(EnvRejected, EagerLimitTrailingGarbage) { expect_rejected("EP_EAGER_LIMIT", "12x"); }
TEST(EnvRejected, EagerLimitEmpty) { expect_rejected("EP_EAGER_LIMIT", ""); }
TEST(EnvRejected, EagerLimitAboveOneGiB) { expect_rejected("EP_EAGER_LIMIT", "2048M"); }
// 17592186044417 MiB = 2^64 + 1 MiB bytes: the suffix multiplication must not wrap around.
TEST(EnvRejected, EagerLimitOverflowingSuffix) {
  expect_rejected("EP_EAGER_LIMIT", "17592186044417M");
}
TEST(EnvRejected, StatsMaybe) { expect_rejected("EP_STATS", "maybe"); }
TEST(EnvRejected, VerboseTwo) { expect_rejected("EP_VERBOSE", "2"); }

int count_of(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// Valid values of every variable are accepted (in sequence, each with a full
// EP_Init/EP_Finalize).
TEST(EnvAccepted, ValidValuesInitAndFinalize) {
  const std::vector<std::pair<const char*, const char*>> ok = {
      {"EP_PROGRESS_CPUS", "0"},     {"EP_PROGRESS_CPUS", "0-1"},  {"EP_PROGRESS_CPUS", "1,0"},
      {"EP_PROGRESS_POLICY", "spin"}, {"EP_PROGRESS_POLICY", "yield"},
      {"EP_PROGRESS_POLICY", "adaptive"}, {"EP_EAGER_LIMIT", "0"}, {"EP_EAGER_LIMIT", "4K"},
      {"EP_EAGER_LIMIT", "1M"},      {"EP_STATS", "0"},            {"EP_VERBOSE", "0"},
  };
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof(set), &set);
  for (auto [var, value] : ok) {
    SCOPED_TRACE(std::string(var) + "=" + value);
    if (std::string(var) == "EP_PROGRESS_CPUS" && !(CPU_ISSET(0, &set) && CPU_ISSET(1, &set))) {
      continue;  // (this machine's mask is 0-1; elsewhere only the other rows apply)
    }
    clear_vars();
    setenv(var, value, 1);
    ASSERT_EQ(EP_Init(), EP_SUCCESS) << last_error(EP_ERR_ARG);
    EXPECT_EQ(progress_thread_count(), 1);
    // The endpoints work under this setting (eager limit 0 included).
    ep_test::run_endpoints(2, [](EP_Comm comm, int) {
      int rank = 0, size = 0;
      EP_Comm_rank(comm, &rank);
      EP_Comm_size(comm, &size);
      std::vector<int> out(3000, rank), in(3000, -1);
      EXPECT_EQ(EP_Sendrecv(out.data(), 3000, MPI_INT, (rank + 1) % size, 1, in.data(), 3000,
                            MPI_INT, (rank + size - 1) % size, 1, comm, EP_STATUS_IGNORE),
                EP_SUCCESS);
      EXPECT_EQ(in[2999], (rank + size - 1) % size);
    });
    ASSERT_EQ(EP_Finalize(), EP_SUCCESS);
    EXPECT_EQ(progress_thread_count(), 0);
  }
  clear_vars();
}

// An unknown EP_* variable is warned about (once, by process 0) and ignored; EP_VERBOSE=1
// prints every setting.  This is the last test: EP_Init succeeds.
TEST(EnvAccepted, UnknownVariableIsWarnedOnceAndVerbosePrintsEverySetting) {
  clear_vars();
  setenv("EP_FOO", "1", 1);
  setenv("EP_VERBOSE", "1", 1);
  setenv("EP_EAGER_LIMIT", "8K", 1);
  int rc = -1;
  std::string err = capture_stderr([&] { rc = EP_Init(); });
  ASSERT_EQ(rc, EP_SUCCESS) << last_error(EP_ERR_ARG);
  SCOPED_TRACE("stderr during EP_Init:\n" + err);
  if (ep_test::world_rank() == 0) {
    EXPECT_EQ(count_of(err, "EP_FOO"), 1) << "unknown variable not warned about exactly once";
  } else {
    EXPECT_EQ(count_of(err, "EP_FOO"), 0) << "only process 0 warns";
  }
  for (const char* v : {"EP_PROGRESS_CPUS", "EP_PROGRESS_POLICY", "EP_EAGER_LIMIT", "EP_STATS",
                        "EP_VERBOSE"}) {
    EXPECT_EQ(count_of(err, std::string(v) + "="), 1) << v << " not printed once";
  }
  EXPECT_NE(err.find("EP_EAGER_LIMIT=8192"), std::string::npos) << "effective value not shown";
  EXPECT_NE(err.find("EP_VERBOSE=1"), std::string::npos);
  EXPECT_EQ(progress_thread_count(), 1);
  EXPECT_EQ(EP_Finalize(), EP_SUCCESS);
  EXPECT_EQ(progress_thread_count(), 0);
  clear_vars();
}

}  // namespace

int main(int argc, char** argv) {
  clear_vars();
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  return ep_test::run_all_tests_and_finalize();
}
