// harness.h - helpers for libep's multi-process googletest programs.
//
// Every test program links //tests/common:mpi_main, whose main() calls
// MPI_Init_thread(MPI_THREAD_MULTIPLE), EP_Init, the tests, EP_Finalize, MPI_Finalize.
// Tests run in the same order in every process; a test that creates endpoints is
// collective over MPI_COMM_WORLD.
#ifndef EP_TESTS_COMMON_HARNESS_H_
#define EP_TESTS_COMMON_HARNESS_H_

#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ep/ep.h"

namespace ep_test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// Endpoints per process for the uneven pattern {3, 1, 2} (process p gets pattern[p % 3]).
inline int uneven(int p) {
  static const int pattern[] = {3, 1, 2};
  return pattern[p % 3];
}

// The seed of a seeded stress test program: LIBEP_STRESS_SEED=<n> replays a run, else
// a fresh one.  Chosen once per program and printed then, with `program`'s name.
inline uint64_t stress_seed(const char* program) {
  static const uint64_t seed = [program] {
    const char* s = std::getenv("LIBEP_STRESS_SEED");
    const uint64_t v = s != nullptr && *s != '\0'
                           ? std::strtoull(s, nullptr, 0)
                           : static_cast<uint64_t>(std::random_device{}()) ^
                                 (static_cast<uint64_t>(time(nullptr)) << 20);
    std::printf("%s: seed %" PRIu64 " (rerun with LIBEP_STRESS_SEED=%" PRIu64 ")\n", program, v, v);
    std::fflush(stdout);
    return v;
  }();
  return seed;
}

// Sanitizers slow everything down: scale iteration counts with this.
inline int scaled(int n) {
#if defined(EP_SANITIZER_THREAD) || defined(EP_SANITIZER_ADDRESS) || defined(EP_SANITIZER_UNDEFINED)
  return n / 8 > 0 ? n / 8 : 1;
#else
  return n;
#endif
}

// Creates an endpoints communicator with `num_ep` endpoints in this process and runs
// fn(comm, index) on one thread per endpoint; frees the handles afterwards.
inline void run_endpoints(int num_ep, const std::function<void(EP_Comm, int)>& fn,
                          MPI_Comm parent = MPI_COMM_WORLD) {
  std::vector<EP_Comm> comms(static_cast<size_t>(num_ep > 0 ? num_ep : 1));
  int err = EP_Comm_create_endpoints(parent, num_ep, MPI_INFO_NULL, comms.data());
  if (err != EP_SUCCESS) throw std::runtime_error("EP_Comm_create_endpoints failed");
  std::vector<std::thread> threads;
  for (int i = 0; i < num_ep; ++i) {
    threads.emplace_back([&, i] {
      EP_Comm_set_errhandler(comms[i], EP_ERRORS_RETURN);
      fn(comms[i], i);
      EP_Comm_free(&comms[i]);
    });
  }
  for (auto& t : threads) t.join();
}

// A barrier over the endpoints of one communicator built from point-to-point only
// (collectives belong to another layer): gather to rank 0, then release.
inline void ep_barrier(EP_Comm comm) {
  int rank = 0, size = 0;
  EP_Comm_rank(comm, &rank);
  EP_Comm_size(comm, &size);
  const int tag = 32000;
  char token = 0;
  if (rank == 0) {
    for (int i = 1; i < size; ++i) EP_Recv(&token, 1, MPI_CHAR, i, tag, comm, EP_STATUS_IGNORE);
    for (int i = 1; i < size; ++i) EP_Send(&token, 1, MPI_CHAR, i, tag, comm);
  } else {
    EP_Send(&token, 1, MPI_CHAR, 0, tag, comm);
    EP_Recv(&token, 1, MPI_CHAR, 0, tag, comm, EP_STATUS_IGNORE);
  }
}

// The end of every test program's main(): run the tests, make the whole job fail if
// any process failed, finalize libep (if a test left it initialized) and MPI.
inline int run_all_tests_and_finalize() {
  int result = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int init = 0;
  EP_Initialized(&init);
  if (init) EP_Finalize();
  MPI_Finalize();
  return worst;
}

inline std::string last_error(int code) {
  char buf[EP_MAX_ERROR_STRING];
  int len = 0;
  EP_Error_string(code, buf, &len);
  return std::string(buf, static_cast<size_t>(len));
}

// ---- Watchdog ----------------------------------------------------------------------------
//
// Aborts the job, naming the test, when one test runs longer than `limit_s` seconds
// (`sanitized_limit_s` under a sanitizer): a hang then fails fast with its name instead of
// running into Bazel's timeout.  Install at static-initialisation time:
//   [[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(90, 240);
class Watchdog : public ::testing::EmptyTestEventListener {
 public:
  explicit Watchdog(int limit_s) { st_->limit_s = limit_s; }
  void OnTestStart(const ::testing::TestInfo& info) override {
    {
      std::lock_guard<std::mutex> lk(st_->mu);
      st_->name = std::string(info.test_suite_name()) + "." + info.name();
    }
    st_->start.store(steady_s());
    static std::once_flag once;
    State* st = st_;
    std::call_once(once, [st] { std::thread([st] { watch(st); }).detach(); });
  }
  void OnTestEnd(const ::testing::TestInfo&) override { st_->start.store(0); }

 private:
  // Shared with the detached thread; deliberately never freed (the thread outlives the
  // listener, which googletest deletes at exit).
  struct State {
    std::mutex mu;
    std::string name;
    std::atomic<double> start{0};
    int limit_s = 0;
  };
  static double steady_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  static void watch(State* st) {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const double s = st->start.load();
      if (s > 0 && steady_s() - s > st->limit_s) {
        std::string name;
        {
          std::lock_guard<std::mutex> lk(st->mu);
          name = st->name;
        }
        std::fprintf(stderr, "WATCHDOG: test %s still running after %d s (hang); aborting\n",
                     name.c_str(), st->limit_s);
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
    }
  }
  State* st_ = new State;
};

inline bool install_watchdog(int limit_s, int sanitized_limit_s) {
#if defined(EP_SANITIZER_THREAD) || defined(EP_SANITIZER_ADDRESS) || defined(EP_SANITIZER_UNDEFINED)
  limit_s = sanitized_limit_s;
#else
  (void)sanitized_limit_s;
#endif
  ::testing::UnitTest::GetInstance()->listeners().Append(new Watchdog(limit_s));
  return true;
}

}  // namespace ep_test

#endif  // EP_TESTS_COMMON_HARNESS_H_
