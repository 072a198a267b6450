// inproc_bench.cc - point-to-point between endpoints of one process, with fixed operation
// counts: the same work in every run, so instruction counts (callgrind) compare exactly
// and wall times compare across builds.
//
//   mpiexec -n 1 inproc_bench [--sizes LIST] [--pp N] [--windows N] [--deep LIST]
//                             [--deep-iters N] [--reps N]
//
// Kernels (each one a function of its own, kernel_*, so that
// `valgrind --tool=callgrind --toggle-collect='kernel_*'` counts only them):
//   pp SIZE    blocking EP_Send/EP_Recv ping-pong of SIZE bytes (MPI_BYTE) between
//              endpoints 0 and 1, one thread each, N round trips (--pp); us one-way.
//   stream     endpoint 0 streams 8 B messages to endpoint 1 in windows of 64
//              (EP_Isend x64 + EP_Waitall; the receiver EP_Irecv x64 + EP_Waitall, then a
//              1-byte ack), N windows (--windows); M msg/s.
//   deep K     one thread: endpoint 1 has K-1 receives posted (tags nobody sends), then
//              posts one more (the K-th, last posted) and endpoint 0 sends it its
//              message; per iteration one EP_Irecv + EP_Send + EP_Wait, --deep-iters
//              iterations; ns per iteration.  The K-1 receives are cancelled at the end.
// Output: `pp SIZE US_ONE_WAY`, `stream MSG_PER_S`, `deep K NS_PER_ITER` - the median of
// --reps repetitions (after one warm-up) - and `checks_ok 0|1`.  Uses only ep/ep.h and MPI.
#include <ep/ep.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tools/bench/bench_util.h"

namespace {

using ep_bench::median;
using ep_bench::now_s;

bool g_ok = true;
EP_Comm g_ep[2];

std::vector<long> parse_list(const char* s) {
  std::vector<long> v;
  for (const char* p = s; *p != '\0';) {
    v.push_back(std::strtol(p, const_cast<char**>(&p), 10));
    if (*p == ',') ++p;
  }
  return v;
}

[[gnu::noinline]] void kernel_pp_side(int me, long size, long n) {
  std::vector<char> buf(static_cast<size_t>(std::max(size, 1L)), static_cast<char>(me));
  const int peer = 1 - me;
  for (long i = 0; i < n; ++i) {
    if (me == 0) {
      CHECK(EP_Send(buf.data(), static_cast<int>(size), MPI_BYTE, peer, 1, g_ep[me]));
      CHECK(EP_Recv(buf.data(), static_cast<int>(size), MPI_BYTE, peer, 1, g_ep[me],
                    EP_STATUS_IGNORE));
    } else {
      CHECK(EP_Recv(buf.data(), static_cast<int>(size), MPI_BYTE, peer, 1, g_ep[me],
                    EP_STATUS_IGNORE));
      CHECK(EP_Send(buf.data(), static_cast<int>(size), MPI_BYTE, peer, 1, g_ep[me]));
    }
  }
  if (size > 0 && buf[0] != 0) g_ok = false;  // endpoint 0's bytes went round
}

double pp(long size, long n) {
  double t0 = 0, t1 = 0;
  std::thread other([&] { kernel_pp_side(1, size, n); });
  t0 = now_s();
  kernel_pp_side(0, size, n);
  t1 = now_s();
  other.join();
  return (t1 - t0) / static_cast<double>(n) / 2 * 1e6;
}

constexpr int kWindow = 64;

[[gnu::noinline]] void kernel_stream_side(int me, long windows) {
  int64_t buf[kWindow];
  EP_Request req[kWindow];
  char ack = 0;
  for (long w = 0; w < windows; ++w) {
    if (me == 0) {
      for (int j = 0; j < kWindow; ++j) {
        buf[j] = w;
        CHECK(EP_Isend(&buf[j], 8, MPI_BYTE, 1, 3, g_ep[0], &req[j]));
      }
      CHECK(EP_Waitall(kWindow, req, EP_STATUSES_IGNORE));
      CHECK(EP_Recv(&ack, 1, MPI_BYTE, 1, 4, g_ep[0], EP_STATUS_IGNORE));
    } else {
      for (int j = 0; j < kWindow; ++j) {
        CHECK(EP_Irecv(&buf[j], 8, MPI_BYTE, 0, 3, g_ep[1], &req[j]));
      }
      CHECK(EP_Waitall(kWindow, req, EP_STATUSES_IGNORE));
      for (int j = 0; j < kWindow; ++j) {
        if (buf[j] != w) g_ok = false;
      }
      CHECK(EP_Send(&ack, 1, MPI_BYTE, 0, 4, g_ep[1]));
    }
  }
}

double stream(long windows) {
  std::thread other([&] { kernel_stream_side(1, windows); });
  const double t0 = now_s();
  kernel_stream_side(0, windows);
  const double t1 = now_s();
  other.join();
  return static_cast<double>(windows) * kWindow / (t1 - t0);
}

[[gnu::noinline]] void kernel_deep(long iters) {
  int64_t in = 0;
  for (long i = 0; i < iters; ++i) {
    int64_t out = i + 1;
    EP_Request r;
    CHECK(EP_Irecv(&in, 8, MPI_BYTE, 0, 5, g_ep[1], &r));
    CHECK(EP_Send(&out, 8, MPI_BYTE, 1, 5, g_ep[0]));
    CHECK(EP_Wait(&r, EP_STATUS_IGNORE));
    if (in != out) g_ok = false;
  }
}

double deep(long k, long iters) {
  std::vector<EP_Request> others(static_cast<size_t>(k - 1));
  std::vector<int64_t> sink(static_cast<size_t>(k));
  for (long i = 0; i + 1 < k; ++i) {  // tags 1000 + i: never sent
    CHECK(EP_Irecv(&sink[static_cast<size_t>(i)], 8, MPI_BYTE, 0, static_cast<int>(1000 + i),
                   g_ep[1], &others[static_cast<size_t>(i)]));
  }
  const double t0 = now_s();
  kernel_deep(iters);
  const double t1 = now_s();
  for (EP_Request& r : others) {
    CHECK(EP_Cancel(&r));
    CHECK(EP_Wait(&r, EP_STATUS_IGNORE));
  }
  return (t1 - t0) / static_cast<double>(iters) * 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long> sizes = {8, 64, 128, 256, 512, 1024};
  std::vector<long> ks = {1, 64, 1024};
  long pp_n = 20000, windows = 2000, deep_iters = 20000;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--sizes") sizes = parse_list(argv[i + 1]);
    else if (a == "--pp") pp_n = std::atol(argv[i + 1]);
    else if (a == "--windows") windows = std::atol(argv[i + 1]);
    else if (a == "--deep") ks = parse_list(argv[i + 1]);
    else if (a == "--deep-iters") deep_iters = std::atol(argv[i + 1]);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  CHECK(EP_Init());
  CHECK(EP_Comm_create_endpoints(MPI_COMM_SELF, 2, MPI_INFO_NULL, g_ep));
  auto run = [&](auto f) {
    std::vector<double> v;
    f();  // warm-up
    for (int r = 0; r < reps; ++r) v.push_back(f());
    return median(v);
  };
  for (long s : sizes) {
    if (pp_n > 0) std::printf("pp %ld %.3f\n", s, run([&] { return pp(s, pp_n); }));
  }
  if (windows > 0) std::printf("stream %.0f\n", run([&] { return stream(windows); }));
  for (long k : ks) {
    if (deep_iters > 0 && k >= 1) {
      std::printf("deep %ld %.1f\n", k, run([&] { return deep(k, deep_iters); }));
    }
  }
  std::printf("checks_ok %d\n", g_ok ? 1 : 0);
  EP_Comm_free(&g_ep[0]);
  EP_Comm_free(&g_ep[1]);
  CHECK(EP_Finalize());
  MPI_Finalize();
  return g_ok ? 0 : 1;
}
