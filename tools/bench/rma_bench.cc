// rma_bench.cc - one-sided benchmarks of libep against plain MPI: put rate and
// fetch-and-op latency in a passive epoch (dynamic and shared windows: rma_dyn_bench.cc).
//
//   mpiexec -n 2 rma_bench [--reps N]
//
// Two processes with 2 endpoints each (ranks 0, 1 in process 0; 2, 3 in process 1).
// Endpoint 0 of process 0 (rank 0) is the origin, endpoint 0 of process 1 (rank 2) the
// target; the other endpoints only take part in the collective calls (window creation,
// barriers, free).  In one passive epoch (EP_Win_lock_all) the origin measures
//   * the 8-byte put rate: {EP_Put of one int64 to rank 2; EP_Win_flush(2)}, ops/s;
//   * the 8-byte fetch-and-op latency: {EP_Fetch_and_op(MPI_SUM, int64); EP_Win_flush(2)},
//     us per operation;
// on an EP_Win_allocate window, on an EP_Win_create window, and on an EP_Win_create
// window with info ep_shared_memory=false ("handler": the target's progress thread serves
// every operation, the path to other nodes; compared with MPI_Win_create, no target).
// The baselines, in the
// same run and interleaved with the libep repetitions: MPI_Put + MPI_Win_flush and
// MPI_Fetch_and_op + MPI_Win_flush from MPI rank 0 to MPI rank 1 on an MPI_Win_allocate
// window and on an MPI_Win_create window over MPI_COMM_WORLD (MPI_Win_lock_all); MPI
// rank 1 waits in MPI_Barrier meanwhile (which drives MPICH's progress).
// Each figure is the median over --reps repetitions (default 5) of the mean over
// kIters operations, after a warm-up of kIters / 10.  At the end the target checks the
// fetch-and-op counters (every increment counted once) and the last value put.
// Output: "name value" lines for tools/bench/rma_run.sh.
#include <ep/ep.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
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

int g_reps = 5;
constexpr int kPutIters = 20000, kFopIters = 10000;
constexpr int kOrigin = 0, kTarget = 2;  // endpoint ranks
constexpr int kMpiTarget = 1;            // MPI rank of the target process

// Times `iters` calls of fn (after a warm-up of iters/10) and returns seconds per call.
template <class F>
double time_per_call(int iters, F&& fn) {
  for (int i = 0; i < iters / 10; ++i) fn();
  double t0 = now_s();
  for (int i = 0; i < iters; ++i) fn();
  return (now_s() - t0) / iters;
}

// Operations one measurement issues (warm-up included).
constexpr int64_t calls(int iters) { return iters + iters / 10; }

// Window memory layout (int64): [0] put target, [1] fetch-and-op counter.
struct Results {
  std::vector<double> put[3], fop[3];  // [0] allocate, [1] create, [2] handler (libep only)
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps")) g_reps = std::atoi(argv[i + 1]);
  }
  if (size != 2 || provided != MPI_THREAD_MULTIPLE || g_reps < 1) {
    if (rank == 0) std::fprintf(stderr, "usage: mpiexec -n 2 rma_bench [--reps N]\n");
    MPI_Finalize();
    return 2;
  }
  CHECK(EP_Init());
  EP_Comm comms[2];
  CHECK(EP_Comm_create_endpoints(MPI_COMM_WORLD, 2, MPI_INFO_NULL, comms));

  // The MPI baselines' windows (main thread; collective over MPI_COMM_WORLD).
  int64_t* mpi_abase = nullptr;
  MPI_Win mpi_win[2];
  std::vector<int64_t> mpi_cbuf(2, 0);
  CHECK(MPI_Win_allocate(16, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mpi_abase, &mpi_win[0]));
  mpi_abase[0] = mpi_abase[1] = 0;
  CHECK(MPI_Win_create(mpi_cbuf.data(), 16, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mpi_win[1]));
  MPI_Barrier(MPI_COMM_WORLD);
  int64_t* mpi_mem[2] = {mpi_abase, mpi_cbuf.data()};

  Results ep, mpi;
  int64_t mpi_last[2] = {-1, -1};  // the last value MPI rank 0 put into each MPI window
  bool ok = true;                  // this process's checks
  std::thread th[2];
  for (int i = 0; i < 2; ++i) {
    th[i] = std::thread([&, i] {
      EP_Comm c = comms[i];
      int me = -1;
      CHECK(EP_Comm_rank(c, &me));
      // [0] EP_Win_allocate, [1] EP_Win_create, [2] EP_Win_create served by handler calls.
      constexpr int kKinds = 3;
      EP_Win win[kKinds];
      int64_t* mem[kKinds];
      std::vector<int64_t> cbuf(2, 0), hbuf(2, 0);
      void* abase = nullptr;
      CHECK(EP_Win_allocate(16, 8, MPI_INFO_NULL, c, &abase, &win[0]));
      mem[0] = static_cast<int64_t*>(abase);
      mem[0][0] = mem[0][1] = 0;
      CHECK(EP_Win_create(cbuf.data(), 16, 8, MPI_INFO_NULL, c, &win[1]));
      mem[1] = cbuf.data();
      MPI_Info handler_only;
      MPI_Info_create(&handler_only);
      MPI_Info_set(handler_only, "ep_shared_memory", "false");
      CHECK(EP_Win_create(hbuf.data(), 16, 8, handler_only, c, &win[2]));
      MPI_Info_free(&handler_only);
      mem[2] = hbuf.data();
      CHECK(EP_Barrier(c));  // memory initialized before anyone accesses it
      const int64_t one = 1;
      int64_t v = 0, res = 0;
      int64_t ep_last[kKinds] = {-1, -1, -1};  // the last value put into each libep window
      if (me == kOrigin) {
        for (int k = 0; k < kKinds; ++k) CHECK(EP_Win_lock_all(0, win[k]));
        for (int k = 0; k < 2; ++k) CHECK(MPI_Win_lock_all(0, mpi_win[k]));
      }
      for (int r = 0; r < g_reps; ++r) {
        // libep: the origin measures while the other endpoints wait in the barrier.
        if (me == kOrigin) {
          for (int k = 0; k < kKinds; ++k) {
            ep.put[k].push_back(time_per_call(kPutIters, [&] {
              ++v;
              CHECK(EP_Put(&v, 1, MPI_INT64_T, kTarget, 0, 1, MPI_INT64_T, win[k]));
              CHECK(EP_Win_flush(kTarget, win[k]));
            }));
            ep_last[k] = v;
            ep.fop[k].push_back(time_per_call(kFopIters, [&] {
              CHECK(EP_Fetch_and_op(&one, &res, MPI_INT64_T, kTarget, 1, MPI_SUM, win[k]));
              CHECK(EP_Win_flush(kTarget, win[k]));
            }));
          }
        }
        CHECK(EP_Barrier(c));
        // Plain MPI between the same two processes: MPI rank 0 measures, rank 1 waits in
        // MPI_Barrier; the second endpoints wait in the next EP_Barrier.
        if (i == 0) {
          if (rank == 0) {
            for (int k = 0; k < 2; ++k) {
              mpi.put[k].push_back(time_per_call(kPutIters, [&] {
                ++v;
                CHECK(MPI_Put(&v, 1, MPI_INT64_T, kMpiTarget, 0, 1, MPI_INT64_T, mpi_win[k]));
                CHECK(MPI_Win_flush(kMpiTarget, mpi_win[k]));
              }));
              mpi_last[k] = v;
              mpi.fop[k].push_back(time_per_call(kFopIters, [&] {
                CHECK(
                    MPI_Fetch_and_op(&one, &res, MPI_INT64_T, kMpiTarget, 1, MPI_SUM, mpi_win[k]));
                CHECK(MPI_Win_flush(kMpiTarget, mpi_win[k]));
              }));
            }
          }
          MPI_Barrier(MPI_COMM_WORLD);
        }
        CHECK(EP_Barrier(c));
      }
      if (me == kOrigin) {
        for (int k = 0; k < kKinds; ++k) CHECK(EP_Win_unlock_all(win[k]));
        for (int k = 0; k < 2; ++k) CHECK(MPI_Win_unlock_all(mpi_win[k]));
      }
      // The origin tells everyone what it put last; the target checks its memory.
      CHECK(EP_Bcast(ep_last, kKinds, MPI_INT64_T, kOrigin, c));
      if (me == kTarget) {
        const int64_t fops = calls(kFopIters) * g_reps;
        static const char* kName[kKinds] = {"allocate", "create", "handler"};
        for (int k = 0; k < kKinds; ++k) {
          if (mem[k][1] != fops) {
            std::fprintf(stderr, "rma_bench: libep %s window: counter %lld, expected %lld\n",
                         kName[k], static_cast<long long>(mem[k][1]), static_cast<long long>(fops));
            ok = false;
          }
          if (mem[k][0] != ep_last[k]) {
            std::fprintf(stderr, "rma_bench: libep %s window: last put %lld, expected %lld\n",
                         kName[k], static_cast<long long>(mem[k][0]),
                         static_cast<long long>(ep_last[k]));
            ok = false;
          }
        }
      }
      for (int k = 0; k < kKinds; ++k) CHECK(EP_Win_free(&win[k]));
    });
  }
  for (auto& t : th) t.join();
  MPI_Bcast(mpi_last, 2, MPI_INT64_T, 0, MPI_COMM_WORLD);  // after rank 0's unlock_all
  if (rank == kMpiTarget) {
    const int64_t fops = calls(kFopIters) * g_reps;
    for (int k = 0; k < 2; ++k) {
      if (mpi_mem[k][1] != fops) {
        std::fprintf(stderr, "rma_bench: MPI window %d: counter %lld, expected %lld\n", k,
                     static_cast<long long>(mpi_mem[k][1]), static_cast<long long>(fops));
        ok = false;
      }
      if (mpi_mem[k][0] != mpi_last[k]) {
        std::fprintf(stderr, "rma_bench: MPI window %d: last put %lld, expected %lld\n", k,
                     static_cast<long long>(mpi_mem[k][0]), static_cast<long long>(mpi_last[k]));
        ok = false;
      }
    }
  }
  CHECK(MPI_Win_free(&mpi_win[0]));
  CHECK(MPI_Win_free(&mpi_win[1]));
  CHECK(EP_Comm_free(&comms[0]));
  CHECK(EP_Comm_free(&comms[1]));
  CHECK(EP_Finalize());
  int all_ok = ok ? 1 : 0, every = 0;
  MPI_Allreduce(&all_ok, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) {
    const char* kind[3] = {"alloc", "create", "handler"};
    for (int k = 0; k < 3; ++k) {
      std::printf("ep_%s_put8_rate %.0f\n", kind[k], 1.0 / median(ep.put[k]));
      std::printf("ep_%s_fop8_us %.3f\n", kind[k], median(ep.fop[k]) * 1e6);
      if (k == 2) continue;  // compared with MPI_Win_create
      std::printf("mpi_%s_put8_rate %.0f\n", kind[k], 1.0 / median(mpi.put[k]));
      std::printf("mpi_%s_fop8_us %.3f\n", kind[k], median(mpi.fop[k]) * 1e6);
    }
    std::printf("checks_ok %d\n", every);
  }
  MPI_Finalize();
  return every ? 0 : 1;
}
