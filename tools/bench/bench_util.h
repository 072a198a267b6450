// bench_util.h - what every benchmark program of tools/bench shares: a wall clock, the
// median of repetitions, the host's steal time, a barrier that sleeps, a helper that runs
// a function on n threads, and a check that aborts the MPI job on a failed call.
//
// Header-only; each benchmark is one cc_binary that includes it.  lazy_barrier calls MPI
// from the calling thread only; on_threads joins its threads before it returns.
#ifndef EP_TOOLS_BENCH_BENCH_UTIL_H_
#define EP_TOOLS_BENCH_BENCH_UTIL_H_

#include <mpi.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

// Aborts the whole job if an EP_* or MPI_* call does not return 0 (success).
#define CHECK(x)                                                                  \
  do {                                                                            \
    int e_ = (x);                                                                 \
    if (e_ != 0) {                                                                \
      std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #x, e_); \
      std::fflush(stderr);                                                        \
      MPI_Abort(MPI_COMM_WORLD, 1);                                               \
    }                                                                             \
  } while (0)

namespace ep_bench {

// Seconds on the monotonic clock.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The median of the repetitions (0 for none).
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The whole machine's CPU time so far (/proc/stat's "cpu" line, in clock ticks): all of
// it, and the part a hypervisor ran something else on our virtual CPUs (steal).
// Steal during a measurement means the virtual CPUs stood still for part of it.
struct CpuTicks {
  unsigned long long total = 0, steal = 0;
};
inline CpuTicks cpu_ticks() {
  CpuTicks t;
  if (FILE* f = std::fopen("/proc/stat", "r")) {
    unsigned long long v[8] = {};
    if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                    &v[4], &v[5], &v[6], &v[7]) == 8) {
      for (unsigned long long x : v) t.total += x;
      t.steal = v[7];
    }
    std::fclose(f);
  }
  return t;
}
// Steal between two readings, in percent of all CPU time ("n/a" without /proc/stat).
inline std::string steal_percent(const CpuTicks& from, const CpuTicks& to) {
  if (to.total <= from.total) return "n/a";
  char s[32];
  std::snprintf(s, sizeof s, "%.1f%%",
                100.0 * static_cast<double>(to.steal - from.steal) /
                    static_cast<double>(to.total - from.total));
  return s;
}

inline void sleep_us(long us) {
  struct timespec ts;
  ts.tv_sec = us / 1000000;
  ts.tv_nsec = (us % 1000000) * 1000;
  nanosleep(&ts, nullptr);
}

// A barrier over `ctl`'s processes that sleeps poll_us between tests: MPICH's blocking
// calls busy-poll and would take a core from the measured threads.
inline void lazy_barrier(MPI_Comm ctl, long poll_us = 200) {
  MPI_Request r;
  CHECK(MPI_Ibarrier(ctl, &r));
  for (;;) {
    int flag = 0;
    CHECK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
    if (flag) return;
    sleep_us(poll_us);
  }
}

// Runs fn(i) for i = 0..n-1, each on a new thread, and joins them.
template <class F>
void on_threads(int n, F fn) {
  std::vector<std::thread> t;
  for (int i = 0; i < n; ++i) t.emplace_back([&fn, i] { fn(i); });
  for (auto& x : t) x.join();
}

}  // namespace ep_bench

#endif  // EP_TOOLS_BENCH_BENCH_UTIL_H_
