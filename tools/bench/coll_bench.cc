// coll_bench.cc - collective benchmarks of libep against plain MPI.
//
// Two modes, each printing "name value" lines (tools/bench/coll_run.sh runs both and
// prints the table):
//   mpiexec -n 2 coll_bench ep     libep with 2 endpoints per process (EP_Allreduce of
//                                  8 B and 1 MiB, EP_Barrier, and a new communicator:
//                                  dup + its first 8 B allreduce + free), and the
//                                  plain-MPI baselines on the same 2 processes
//                                  (MPI_Allreduce of 8 B and 1 MiB, dup + allreduce +
//                                  free), repetitions interleaved; and, when both
//                                  processes share a node, row 1's scheduling floor
//                                  (below);
//                                  Then the nonblocking rows (nb_rows): an
//                                  EP_Iallreduce of 1 MiB overlapped with 5 ms of
//                                  computation against the computation alone;
//                                  EP_Ialltoall / EP_Iallgather of 8 B and 64 KiB per
//                                  endpoint (start + wait) against the blocking calls;
//                                  blocking EP_Alltoall / EP_Allgather of 64 KiB;
//   mpiexec -n 4 coll_bench mpi4   plain MPI with 4 processes ("MPI everywhere":
//                                  MPI_Allreduce of 8 B, MPI_Barrier, MPI_Alltoall and
//                                  MPI_Allgather of 64 KiB per process).
// --nb-only skips every row but the nonblocking ones (and their MPI-everywhere
// baselines).
// Each figure is the median over --reps repetitions of the mean time per operation
// (endpoint 0 / rank 0 measures); bandwidth = bytes / time.
#include <ep/ep.h>
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tools/bench/bench_util.h"

namespace {

using ep_bench::median;
using ep_bench::now_s;

int g_reps = 7;
bool g_nb_only = false;
constexpr int kSmallIters = 20000, kBigIters = 100, kDupIters = 300;
// 4 busy-polling MPI processes on a 2-core machine take milliseconds per operation.
constexpr int kOversubscribedIters = 300;
constexpr int kBigCount = (1 << 20) / 8;  // 1 MiB of doubles
constexpr int k64kCount = (64 << 10) / 8;  // 64 KiB of doubles
constexpr int kOverlapIters = 20;          // overlapped allreduces per repetition
constexpr double kComputeS = 5e-3;         // the computation they overlap with

// Times `iters` calls of fn (after a warm-up of iters/10) and returns seconds per call.
template <class F>
double time_per_call(int iters, F&& fn) {
  for (int i = 0; i < iters / 10; ++i) fn();
  double t0 = now_s();
  for (int i = 0; i < iters; ++i) fn();
  return (now_s() - t0) / iters;
}

void print(const char* name, const std::vector<double>& v, double scale) {
  std::printf("%s %.4f\n", name, median(v) * scale);
}

// Row 1's scheduling floor: the same 4 threads (2 per process) do an 8 B sum allreduce
// with nothing but atomics on memory both processes map (MPI_Win_allocate_shared): no
// MPI call and no libep call per operation.  Every thread must run once per operation,
// so with fewer cores than threads each operation costs thread switches, whatever the
// library; libep's row 1 cannot be faster than this.  Waiters yield at every look (the
// faster of yielding and spinning with a yield every 64 looks, measured on 2 cores).
struct FloorShared {
  alignas(64) std::atomic<int64_t> arrived;     // arrivals at the current operation
  alignas(64) std::atomic<int64_t> generation;  // operations completed
  double result;                                // written before generation is bumped
  alignas(64) double in[2][4];                  // inputs, by operation parity and thread
};
static_assert(std::atomic<int64_t>::is_always_lock_free, "atomics shared between processes");

class Floor {
 public:
  // Collective over MPI_COMM_WORLD.  ok() is false unless there are exactly 2 processes
  // on one node.
  Floor() {
    int size = 0;
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_));
    int node_size = 0;
    CHECK(MPI_Comm_size(node_, &node_size));
    CHECK(MPI_Comm_rank(node_, &rank_));
    ok_ = size == 2 && node_size == 2;
    if (!ok_) return;
    void* base = nullptr;
    const MPI_Aint bytes = rank_ == 0 ? static_cast<MPI_Aint>(sizeof(FloorShared)) : 0;
    CHECK(MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, node_, &base, &win_));
    MPI_Aint got = 0;
    int unit = 0;
    CHECK(MPI_Win_shared_query(win_, 0, &got, &unit, &base));
    s_ = static_cast<FloorShared*>(base);
    if (rank_ == 0) new (s_) FloorShared{};
    CHECK(MPI_Barrier(node_));
  }
  ~Floor() {
    if (win_ != MPI_WIN_NULL) CHECK(MPI_Win_free(&win_));
    CHECK(MPI_Comm_free(&node_));
  }
  bool ok() const { return ok_; }

  // Seconds per operation seen by thread 0 of this process; both processes call it.
  double measure() {
    CHECK(MPI_Barrier(node_));
    const int64_t g0 = s_->generation.load(std::memory_order_acquire);
    double t[2] = {0, 0};
    std::thread th[2];
    for (int i = 0; i < 2; ++i) {
      th[i] = std::thread([&, i] {
        int64_t g = g0;
        double y = 0;
        t[i] = time_per_call(kSmallIters, [&] { y = allreduce(rank_ * 2 + i, 1.0, &g); });
        if (y != 4) {
          std::fprintf(stderr, "coll_bench: wrong floor result %g\n", y);
          std::abort();
        }
      });
    }
    for (auto& x : th) x.join();
    return t[0];
  }

 private:
  // Thread `me` (0..3) of the 4 contributes x to operation *g; returns the sum.
  double allreduce(int me, double x, int64_t* g) {
    FloorShared& s = *s_;
    s.in[*g & 1][me] = x;
    // acq_rel: releases our input to the last arrival; the last arrival acquires all.
    if (s.arrived.fetch_add(1, std::memory_order_acq_rel) == 3) {
      s.result = s.in[*g & 1][0] + s.in[*g & 1][1] + s.in[*g & 1][2] + s.in[*g & 1][3];
      s.arrived.store(0, std::memory_order_relaxed);          // ordered by the release below
      s.generation.store(*g + 1, std::memory_order_release);  // pairs: the waiters' acquire
    } else {
      while (s.generation.load(std::memory_order_acquire) == *g) sched_yield();
    }
    ++*g;
    return s.result;
  }

  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  FloorShared* s_ = nullptr;
  int rank_ = 0;
  bool ok_ = false;
};

void mpi_only(int rank) {
  std::vector<double> ar, bar;
  double x = 1, y = 0;
  for (int r = 0; r < (g_nb_only ? 0 : g_reps); ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    ar.push_back(time_per_call(kOversubscribedIters, [&] {
      CHECK(MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    }));
    MPI_Barrier(MPI_COMM_WORLD);
    bar.push_back(time_per_call(kOversubscribedIters, [&] { CHECK(MPI_Barrier(MPI_COMM_WORLD)); }));
  }
  if (rank == 0 && !g_nb_only) {
    print("mpi4_allreduce8_us", ar, 1e6);
    print("mpi4_barrier_us", bar, 1e6);
  }
  // 64 KiB per process (per peer for the all-to-all).
  int n = 0;
  CHECK(MPI_Comm_size(MPI_COMM_WORLD, &n));
  std::vector<double> in(static_cast<size_t>(n) * k64kCount, 1.0),
      out(static_cast<size_t>(n) * k64kCount);
  std::vector<double> a2a, ag;
  for (int r = 0; r < g_reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    a2a.push_back(time_per_call(kBigIters, [&] {
      CHECK(MPI_Alltoall(in.data(), k64kCount, MPI_DOUBLE, out.data(), k64kCount, MPI_DOUBLE,
                         MPI_COMM_WORLD));
    }));
    MPI_Barrier(MPI_COMM_WORLD);
    ag.push_back(time_per_call(kBigIters, [&] {
      CHECK(MPI_Allgather(in.data(), k64kCount, MPI_DOUBLE, out.data(), k64kCount, MPI_DOUBLE,
                          MPI_COMM_WORLD));
    }));
  }
  if (rank == 0) {
    print("mpi4_alltoall64k_us", a2a, 1e6);
    print("mpi4_allgather64k_us", ag, 1e6);
  }
}

// ---- Nonblocking rows -------------------------------------------------------------------

// A busy loop of `n` steps outside libep (the "computation").
double g_sink = 0;
void work(int64_t n) {
  double x = 1.0;
  for (int64_t i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
  g_sink += x;  // keeps the loop
}

// Steps of work() that take kComputeS on one otherwise idle thread (best of 5).
int64_t calibrate_work() {
  const int64_t probe = 1 << 22;
  double best = 1e9;
  for (int i = 0; i < 5; ++i) {
    const double t0 = now_s();
    work(probe);
    best = std::min(best, now_s() - t0);
  }
  return static_cast<int64_t>(probe * kComputeS / best);
}

// Per endpoint 0 of this process, seconds: the median over the repetitions.
struct NbTimes {
  std::vector<double> alone, overlap, iallreduce, wait, done, done_sleep;  // row 6
  std::vector<double> ia2a8, a2a8, ia2a64, a2a64;          // rows 7, 9
  std::vector<double> iag8, ag8, iag64, ag64;              // rows 8, 9
};

// Start + wait of a nonblocking call, per call.
template <class F>
double time_nb(int iters, F&& start) {
  return time_per_call(iters, [&] {
    EP_Request rq = EP_REQUEST_NULL;
    CHECK(start(&rq));
    CHECK(EP_Wait(&rq, EP_STATUS_IGNORE));
  });
}

// One repetition on endpoint `i` (comm c, n ranks); endpoint 0 records into *t.
void nb_rep(EP_Comm c, int i, int64_t steps, NbTimes* t) {
  int n = 0;
  CHECK(EP_Comm_size(c, &n));
  std::vector<double> big_in(kBigCount, 1.0), big_out(kBigCount);
  double alone = 0, overlap = 0, comm = 0, wait = 0;
  int done = 0;  // overlapped allreduces already complete when the computation ended
  int done_sleep = 0;  // the same when the endpoints sleep instead of computing
  for (int it = 0; it < kOverlapIters; ++it) {
    CHECK(EP_Barrier(c));
    double t0 = now_s();
    work(steps);
    alone += now_s() - t0;
    CHECK(EP_Barrier(c));
    t0 = now_s();
    EP_Request rq = EP_REQUEST_NULL;
    CHECK(EP_Iallreduce(big_in.data(), big_out.data(), kBigCount, MPI_DOUBLE, MPI_SUM, c, &rq));
    work(steps);
    const double t1 = now_s();
    int flag = 0;
    CHECK(EP_Test(&rq, &flag, EP_STATUS_IGNORE));
    done += flag;
    if (!flag) CHECK(EP_Wait(&rq, EP_STATUS_IGNORE));
    wait += now_s() - t1;
    overlap += now_s() - t0;
    CHECK(EP_Barrier(c));
    CHECK(EP_Iallreduce(big_in.data(), big_out.data(), kBigCount, MPI_DOUBLE, MPI_SUM, c, &rq));
    std::this_thread::sleep_for(std::chrono::duration<double>(kComputeS));
    CHECK(EP_Test(&rq, &flag, EP_STATUS_IGNORE));
    done_sleep += flag;
    if (!flag) CHECK(EP_Wait(&rq, EP_STATUS_IGNORE));
    CHECK(EP_Barrier(c));
    t0 = now_s();
    CHECK(EP_Iallreduce(big_in.data(), big_out.data(), kBigCount, MPI_DOUBLE, MPI_SUM, c, &rq));
    CHECK(EP_Wait(&rq, EP_STATUS_IGNORE));
    comm += now_s() - t0;
  }
  if (big_out[kBigCount - 1] != n) {
    std::fprintf(stderr, "coll_bench: wrong overlapped allreduce result %g\n", big_out[0]);
    std::abort();
  }
  std::vector<double> in(static_cast<size_t>(n) * k64kCount, 1.0 + i),
      out(static_cast<size_t>(n) * k64kCount);
  auto a2a = [&](int count, EP_Request* rq) {
    return rq ? EP_Ialltoall(in.data(), count, MPI_DOUBLE, out.data(), count, MPI_DOUBLE, c, rq)
              : EP_Alltoall(in.data(), count, MPI_DOUBLE, out.data(), count, MPI_DOUBLE, c);
  };
  auto ag = [&](int count, EP_Request* rq) {
    return rq ? EP_Iallgather(in.data(), count, MPI_DOUBLE, out.data(), count, MPI_DOUBLE, c, rq)
              : EP_Allgather(in.data(), count, MPI_DOUBLE, out.data(), count, MPI_DOUBLE, c);
  };
  // Nonblocking and blocking alternate in chunks, so that drift (the machine is shared)
  // and warm-up weigh on both alike.
  auto pair = [&](int iters, const std::function<int(EP_Request*)>& call, double* nb,
                  double* b) {
    constexpr int kChunks = 5;
    *nb = *b = 0;
    for (int k = 0; k < kChunks; ++k) {
      *nb += time_nb(iters / kChunks, call) / kChunks;
      *b += time_per_call(iters / kChunks, [&] { CHECK(call(nullptr)); }) / kChunks;
    }
  };
  const int small = 2000;
  double ia2a8, a2a8, ia2a64, a2a64, iag8, ag8, iag64, ag64;
  CHECK(EP_Barrier(c));
  pair(small, [&](EP_Request* rq) { return a2a(1, rq); }, &ia2a8, &a2a8);
  pair(kBigIters, [&](EP_Request* rq) { return a2a(k64kCount, rq); }, &ia2a64, &a2a64);
  pair(small, [&](EP_Request* rq) { return ag(1, rq); }, &iag8, &ag8);
  pair(kBigIters, [&](EP_Request* rq) { return ag(k64kCount, rq); }, &iag64, &ag64);
  if (i != 0) return;
  t->alone.push_back(alone / kOverlapIters);
  t->overlap.push_back(overlap / kOverlapIters);
  t->iallreduce.push_back(comm / kOverlapIters);
  t->wait.push_back(wait / kOverlapIters);
  t->done.push_back(static_cast<double>(done) / kOverlapIters);
  t->done_sleep.push_back(static_cast<double>(done_sleep) / kOverlapIters);
  t->ia2a8.push_back(ia2a8);
  t->a2a8.push_back(a2a8);
  t->ia2a64.push_back(ia2a64);
  t->a2a64.push_back(a2a64);
  t->iag8.push_back(iag8);
  t->ag8.push_back(ag8);
  t->iag64.push_back(iag64);
  t->ag64.push_back(ag64);
}

void nb_rows(EP_Comm comms[2], int rank) {
  const int64_t steps = calibrate_work();
  NbTimes t;
  std::vector<double> ratio6;  // per repetition, so the spread shows
  for (int r = 0; r < g_reps; ++r) {
    std::thread th[2];
    for (int i = 0; i < 2; ++i) th[i] = std::thread([&, i] { nb_rep(comms[i], i, steps, &t); });
    for (auto& x : th) x.join();
    ratio6.push_back(t.overlap.back() / t.alone.back());
  }
  if (rank != 0) return;
  print("nb_compute_alone_us", t.alone, 1e6);
  print("nb_overlap_us", t.overlap, 1e6);
  print("nb_iallreduce1m_us", t.iallreduce, 1e6);
  print("nb_overlap_wait_us", t.wait, 1e6);
  print("nb_overlap_done_at_test", t.done, 1);
  print("nb_sleep_done_at_test", t.done_sleep, 1);
  std::printf("nb_overlap_ratio_min %.3f\nnb_overlap_ratio_max %.3f\n",
              *std::min_element(ratio6.begin(), ratio6.end()),
              *std::max_element(ratio6.begin(), ratio6.end()));
  print("ep_ialltoall8_us", t.ia2a8, 1e6);
  print("ep_alltoall8_us", t.a2a8, 1e6);
  print("ep_ialltoall64k_us", t.ia2a64, 1e6);
  print("ep_alltoall64k_us", t.a2a64, 1e6);
  print("ep_iallgather8_us", t.iag8, 1e6);
  print("ep_allgather8_us", t.ag8, 1e6);
  print("ep_iallgather64k_us", t.iag64, 1e6);
  print("ep_allgather64k_us", t.ag64, 1e6);
}

void with_endpoints(int rank) {
  CHECK(EP_Init());
  EP_Comm comms[2];
  CHECK(EP_Comm_create_endpoints(MPI_COMM_WORLD, 2, MPI_INFO_NULL, comms));
  std::vector<double> ep8, ep1m, epbar, epdup, mpi8, mpi1m, mpidup, floor8;
  Floor floor;
  std::vector<double> big_in(kBigCount, 1.0), big_out(kBigCount);
  std::vector<std::vector<double>> ep_in(2, std::vector<double>(kBigCount, 1.0)),
      ep_out(2, std::vector<double>(kBigCount));
  for (int r = 0; r < (g_nb_only ? 0 : g_reps); ++r) {
    // libep: 2 endpoints per process, each on its own thread.
    double t8 = 0, t1m = 0, tb = 0, tdup = 0;
    std::thread th[2];
    for (int i = 0; i < 2; ++i) {
      th[i] = std::thread([&, i] {
        EP_Comm c = comms[i];
        double x = 1, y = 0;
        double a = time_per_call(kSmallIters,
                                 [&] { CHECK(EP_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c)); });
        if (y != 4) {
          std::fprintf(stderr, "coll_bench: wrong 8-byte result %g\n", y);
          std::abort();
        }
        double b = time_per_call(kBigIters, [&] {
          CHECK(EP_Allreduce(ep_in[i].data(), ep_out[i].data(), kBigCount, MPI_DOUBLE, MPI_SUM, c));
        });
        if (ep_out[i][kBigCount - 1] != 4) {
          std::fprintf(stderr, "coll_bench: wrong 1 MiB result %g\n", ep_out[i][kBigCount - 1]);
          std::abort();
        }
        double d = time_per_call(kSmallIters, [&] { CHECK(EP_Barrier(c)); });
        double e = time_per_call(kDupIters, [&] {
          EP_Comm dup = EP_COMM_NULL;
          CHECK(EP_Comm_dup(c, &dup));
          CHECK(EP_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, dup));
          CHECK(EP_Comm_free(&dup));
        });
        if (i == 0) {
          t8 = a;
          t1m = b;
          tb = d;
          tdup = e;
        }
      });
    }
    for (auto& t : th) t.join();
    ep8.push_back(t8);
    ep1m.push_back(t1m);
    epbar.push_back(tb);
    epdup.push_back(tdup);
    // Plain MPI on the same 2 processes, one thread each.
    double x = 1, y = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    mpi8.push_back(time_per_call(kSmallIters, [&] {
      CHECK(MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    }));
    MPI_Barrier(MPI_COMM_WORLD);
    mpi1m.push_back(time_per_call(kBigIters, [&] {
      CHECK(MPI_Allreduce(big_in.data(), big_out.data(), kBigCount, MPI_DOUBLE, MPI_SUM,
                          MPI_COMM_WORLD));
    }));
    MPI_Barrier(MPI_COMM_WORLD);
    mpidup.push_back(time_per_call(kDupIters, [&] {
      MPI_Comm dup = MPI_COMM_NULL;
      CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
      CHECK(MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, dup));
      CHECK(MPI_Comm_free(&dup));
    }));
    if (floor.ok()) floor8.push_back(floor.measure());
  }
  nb_rows(comms, rank);
  CHECK(EP_Comm_free(&comms[0]));
  CHECK(EP_Comm_free(&comms[1]));
  CHECK(EP_Finalize());
  if (rank == 0 && !g_nb_only) {
    const double mib = 1.0 / (1 << 20);
    print("ep_allreduce8_us", ep8, 1e6);
    print("mpi2_allreduce8_us", mpi8, 1e6);
    if (!floor8.empty()) print("floor_allreduce8_us", floor8, 1e6);
    std::printf("ep_allreduce1m_mibps %.1f\n", 1.0 / median(ep1m) * (kBigCount * 8.0) * mib);
    std::printf("mpi2_allreduce1m_mibps %.1f\n", 1.0 / median(mpi1m) * (kBigCount * 8.0) * mib);
    print("ep_barrier_us", epbar, 1e6);
    print("ep_dup_allreduce_free_us", epdup, 1e6);
    print("mpi2_dup_allreduce_free_us", mpidup, 1e6);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::string mode = argc > 1 ? argv[1] : "ep";
  for (int i = 2; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps")) g_reps = std::atoi(argv[i + 1]);
  }
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--nb-only")) g_nb_only = true;
  }
  if (mode == "mpi4") {
    mpi_only(rank);
  } else {
    with_endpoints(rank);
  }
  MPI_Finalize();
  return 0;
}
