// grequest_bench.cc - how promptly EP_Grequest_complete from another thread wakes an
// endpoint blocked in EP_Wait, and what the waiting costs in CPU.
//
// A waiter thread blocks in EP_Wait on a generalized request; a completer thread sleeps
// `delay` and calls EP_Grequest_complete.  Printed per delay (median over --reps): the
// wake-up latency (from just before EP_Grequest_complete to EP_Wait's return) and the
// waiter's CPU time per wait (CLOCK_THREAD_CPUTIME_ID) as a share of the wait: the
// back-off policy (progress/backoff.h: spin 20 us, yield until 200 us, then futex
// sleeps) bounds it.  Baseline: the same hand-off through a std::condition_variable.
//
//   mpiexec -n 1 grequest_bench [--reps 51]
#include <ep/ep.h>
#include <mpi.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "tools/bench/bench_util.h"

namespace {

using ep_bench::median;
using ep_bench::now_s;

double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

int noop_query(void*, EP_Status* st) {
  EP_Status_set_elements(st, MPI_BYTE, 0);
  return EP_SUCCESS;
}
int noop_free(void*) { return EP_SUCCESS; }
int noop_cancel(void*, int) { return EP_SUCCESS; }

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int reps = 51;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  }
  if (EP_Init() != EP_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
  std::printf(
      "grequest_bench: EP_Wait woken by EP_Grequest_complete from another thread "
      "(median of %d)\n",
      reps);
  std::printf("%-10s %18s %16s %20s\n", "delay", "wake latency us", "waiter CPU %",
              "condvar latency us");
  for (double delay_ms : {0.01, 0.1, 1.0, 10.0}) {
    std::vector<double> lat, cpu, cv_lat;
    for (int r = 0; r < reps; ++r) {
      EP_Request req;
      EP_Grequest_start(noop_query, noop_free, noop_cancel, nullptr, &req);
      std::atomic<double> t_complete{0};
      EP_Request copy = req;
      std::thread completer([&] {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay_ms));
        t_complete.store(now_s());
        EP_Grequest_complete(copy);
      });
      double c0 = thread_cpu_s(), w0 = now_s();
      EP_Wait(&req, EP_STATUS_IGNORE);
      double t1 = now_s(), c1 = thread_cpu_s();
      completer.join();
      lat.push_back((t1 - t_complete.load()) * 1e6);
      cpu.push_back(100.0 * (c1 - c0) / (t1 - w0));
      // Baseline: a condition variable hand-off with the same delay.
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      std::thread c2([&] {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay_ms));
        std::lock_guard<std::mutex> lock(mu);
        t_complete.store(now_s());
        done = true;
        cv.notify_one();
      });
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return done; });
      }
      double t2 = now_s();
      c2.join();
      cv_lat.push_back((t2 - t_complete.load()) * 1e6);
    }
    std::printf("%7.2f ms %18.1f %16.1f %20.1f\n", delay_ms, median(lat), median(cpu),
                median(cv_lat));
  }
  EP_Finalize();
  MPI_Finalize();
  return 0;
}
