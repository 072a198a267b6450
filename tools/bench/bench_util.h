// bench_util.h - what every benchmark program of tools/bench shares: a wall clock, the
// median of repetitions, and a check that aborts the MPI job on a failed call.
//
// Header-only; each benchmark is one cc_binary that includes it.
#ifndef EP_TOOLS_BENCH_BENCH_UTIL_H_
#define EP_TOOLS_BENCH_BENCH_UTIL_H_

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

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

}  // namespace ep_bench

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

#endif  // EP_TOOLS_BENCH_BENCH_UTIL_H_
