// rma_dyn_bench.cc - one-sided benchmarks of libep against plain MPI on dynamic and shared
// windows, with request-based operations.
//
//   mpiexec -n 2 rma_dyn_bench [--reps N]
//
// Two processes with 2 endpoints each (ranks 0, 1 in process 0; 2, 3 in process 1).
// Endpoint rank 0 is the origin; rank 2 (the other process) is the target, rank 1 (the
// origin's process) the same-process target of the information rows.  In one passive
// epoch (lock_all) on a dynamic window (16 attached bytes per endpoint, addresses
// exchanged with EP_Allgather), the origin measures
//   * the 8-byte EP_Rput rate: {EP_Rput of one int64; EP_Wait; EP_Win_flush}, ops/s;
//   * the 8-byte EP_Rget latency: {EP_Rget of one int64; EP_Wait}, us per operation.
// Twice: with the node path (the origin checks the target's published regions and copies
// by cross-memory attach) and with ep_shared_memory=false (the target's progress thread
// checks and serves: the path of other nodes).  Information rows: the same to rank 1,
// a target in the origin's own process.  Baseline in the same run, interleaved: MPI_Rput / MPI_Rget
// with the same completion on an MPI_Win_create_dynamic window from MPI rank 0 to MPI rank 1 (which
// waits in MPI_Barrier meanwhile, driving MPICH's progress).
// Shared windows: a load/store ping-pong between ranks 0 and 2 through
// EP_Win_allocate_shared memory (one std::atomic<int64_t> flag in each one's segment,
// release stores, acquire loads polled with a pause), us per round trip; baseline: the
// same loop between MPI ranks 0 and 1 on MPI_Win_allocate_shared memory.
// Each figure is the median over --reps repetitions (default 5) of the mean over the
// iterations, after a warm-up of a tenth.  At the end the target checks the last value
// put and the ping-pong counters.  Output: "name value" lines for rma_run.sh.
#include <ep/ep.h>
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "tools/bench/bench_util.h"

namespace {

using ep_bench::median;
using ep_bench::now_s;

int g_reps = 5;
constexpr int kPutIters = 20000, kGetIters = 10000, kPingIters = 20000;
constexpr int kOrigin = 0, kLocalTarget = 1, kTarget = 2;  // endpoint ranks

template <class F>
double time_per_call(int iters, F&& fn) {
  for (int i = 0; i < iters / 10; ++i) fn();
  double t0 = now_s();
  for (int i = 0; i < iters; ++i) fn();
  return (now_s() - t0) / iters;
}

inline void relax() { __builtin_ia32_pause(); }

// One side of a ping-pong of `iters` round trips (plus a tenth of warm-up) on two
// flags; `seq` continues across calls.  Returns seconds per round trip (initiator).
double pingpong(std::atomic<int64_t>* ping, std::atomic<int64_t>* pong, bool initiator, int iters,
                int64_t* seq) {
  const int total = iters + iters / 10;
  double t0 = 0;
  for (int i = 0; i < total; ++i) {
    if (i == iters / 10) t0 = now_s();
    const int64_t v = ++*seq;
    if (initiator) {
      ping->store(v, std::memory_order_release);  // pairs: the responder's acquire load
      while (pong->load(std::memory_order_acquire) != v) relax();
    } else {
      while (ping->load(std::memory_order_acquire) != v) relax();
      pong->store(v, std::memory_order_release);  // pairs: the initiator's acquire load
    }
  }
  return (now_s() - t0) / iters;
}

struct Series {
  std::vector<double> put, get, put_local, get_local, put_handler, get_handler, ping;
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
    if (rank == 0) std::fprintf(stderr, "usage: mpiexec -n 2 rma_dyn_bench [--reps N]\n");
    MPI_Finalize();
    return 2;
  }
  CHECK(EP_Init());
  EP_Comm comms[2];
  CHECK(EP_Comm_create_endpoints(MPI_COMM_WORLD, 2, MPI_INFO_NULL, comms));

  // MPI baselines: a dynamic window with 16 attached bytes per rank, a shared window.
  std::vector<int64_t> mpi_dmem(2, 0);
  MPI_Win mpi_dyn, mpi_shm;
  CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &mpi_dyn));
  CHECK(MPI_Win_attach(mpi_dyn, mpi_dmem.data(), 16));
  MPI_Aint mine = 0, mpi_addr[2];
  MPI_Get_address(mpi_dmem.data(), &mine);
  MPI_Allgather(&mine, 1, MPI_AINT, mpi_addr, 1, MPI_AINT, MPI_COMM_WORLD);
  std::atomic<int64_t>* mpi_flag[2];
  {
    void* b = nullptr;
    CHECK(MPI_Win_allocate_shared(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &b, &mpi_shm));
    for (int r = 0; r < 2; ++r) {
      MPI_Aint sz = 0;
      int du = 0;
      void* p = nullptr;
      CHECK(MPI_Win_shared_query(mpi_shm, r, &sz, &du, &p));
      mpi_flag[r] = static_cast<std::atomic<int64_t>*>(p);
    }
    new (b) std::atomic<int64_t>(0);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  Series ep, mpi;
  int64_t mpi_seq = 0, mpi_last = -1, mpi_v = 0, mpi_got = 0;
  CHECK(MPI_Win_lock_all(0, mpi_dyn));  // rank 0's passive epoch (rank 1 never accesses)
  bool ok = true;
  std::thread th[2];
  for (int i = 0; i < 2; ++i) {
    th[i] = std::thread([&, i] {
      EP_Comm c = comms[i];
      int me = -1, n = 0;
      CHECK(EP_Comm_rank(c, &me));
      CHECK(EP_Comm_size(c, &n));
      EP_Win dyn, hdyn, shm;
      std::vector<int64_t> dmem(2, 0), hmem(2, 0);
      CHECK(EP_Win_create_dynamic(MPI_INFO_NULL, c, &dyn));
      CHECK(EP_Win_attach(dyn, dmem.data(), 16));
      MPI_Info handler_only;
      MPI_Info_create(&handler_only);
      MPI_Info_set(handler_only, "ep_shared_memory", "false");
      CHECK(EP_Win_create_dynamic(handler_only, c, &hdyn));
      MPI_Info_free(&handler_only);
      CHECK(EP_Win_attach(hdyn, hmem.data(), 16));
      MPI_Aint ha = 0;
      MPI_Get_address(hmem.data(), &ha);
      std::vector<MPI_Aint> haddr(4);
      MPI_Aint a = 0;
      MPI_Get_address(dmem.data(), &a);
      std::vector<MPI_Aint> addr(static_cast<size_t>(n));
      CHECK(EP_Allgather(&a, 1, MPI_AINT, addr.data(), 1, MPI_AINT, c));
      haddr.resize(static_cast<size_t>(n));
      CHECK(EP_Allgather(&ha, 1, MPI_AINT, haddr.data(), 1, MPI_AINT, c));
      void* sbase = nullptr;
      CHECK(EP_Win_allocate_shared(64, 1, MPI_INFO_NULL, c, &sbase, &shm));
      new (sbase) std::atomic<int64_t>(0);
      std::atomic<int64_t>* flag[4];
      for (int r = 0; r < n; ++r) {
        MPI_Aint sz = 0;
        int du = 0;
        void* p = nullptr;
        CHECK(EP_Win_shared_query(shm, r, &sz, &du, &p));
        flag[r] = static_cast<std::atomic<int64_t>*>(p);
      }
      CHECK(EP_Barrier(c));
      int64_t v = 0, got = 0, seq = 0, last = -1;
      if (me == kOrigin) CHECK(EP_Win_lock_all(0, dyn));
      if (me == kOrigin) CHECK(EP_Win_lock_all(0, hdyn));
      for (int r = 0; r < g_reps; ++r) {
        if (me == kOrigin) {
          auto rput = [&](EP_Win w, const std::vector<MPI_Aint>& ad, int t,
                          std::vector<double>* out) {
            out->push_back(time_per_call(kPutIters, [&] {
              ++v;
              EP_Request q;
              CHECK(EP_Rput(&v, 1, MPI_INT64_T, t, ad[t], 1, MPI_INT64_T, w, &q));
              CHECK(EP_Wait(&q, EP_STATUS_IGNORE));
              CHECK(EP_Win_flush(t, w));
            }));
          };
          auto rget = [&](EP_Win w, const std::vector<MPI_Aint>& ad, int t,
                          std::vector<double>* out) {
            out->push_back(time_per_call(kGetIters, [&] {
              EP_Request q;
              CHECK(EP_Rget(&got, 1, MPI_INT64_T, t, ad[t] + 8, 1, MPI_INT64_T, w, &q));
              CHECK(EP_Wait(&q, EP_STATUS_IGNORE));
            }));
          };
          rput(dyn, addr, kTarget, &ep.put);
          last = v;
          rget(dyn, addr, kTarget, &ep.get);
          rput(hdyn, haddr, kTarget, &ep.put_handler);
          rget(hdyn, haddr, kTarget, &ep.get_handler);
          rput(dyn, addr, kLocalTarget, &ep.put_local);
          rget(dyn, addr, kLocalTarget, &ep.get_local);
        }
        CHECK(EP_Barrier(c));
        if (me == kOrigin || me == kTarget) {
          const double s = pingpong(flag[kTarget], flag[kOrigin], me == kOrigin, kPingIters, &seq);
          if (me == kOrigin) ep.ping.push_back(s);
        }
        CHECK(EP_Barrier(c));
        if (i == 0) {  // plain MPI between the same two processes
          if (rank == 0) {
            mpi.put.push_back(time_per_call(kPutIters, [&] {
              ++mpi_v;
              MPI_Request q;
              CHECK(MPI_Rput(&mpi_v, 1, MPI_INT64_T, 1, mpi_addr[1], 1, MPI_INT64_T, mpi_dyn, &q));
              CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
              CHECK(MPI_Win_flush(1, mpi_dyn));
            }));
            mpi_last = mpi_v;
            mpi.get.push_back(time_per_call(kGetIters, [&] {
              MPI_Request q;
              CHECK(MPI_Rget(&mpi_got, 1, MPI_INT64_T, 1, mpi_addr[1] + 8, 1, MPI_INT64_T, mpi_dyn,
                             &q));
              CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
            }));
          }
          MPI_Barrier(MPI_COMM_WORLD);
          const double s = pingpong(mpi_flag[1], mpi_flag[0], rank == 0, kPingIters, &mpi_seq);
          if (rank == 0) mpi.ping.push_back(s);
          MPI_Barrier(MPI_COMM_WORLD);
        }
        CHECK(EP_Barrier(c));
      }
      if (me == kOrigin) CHECK(EP_Win_unlock_all(dyn));
      if (me == kOrigin) CHECK(EP_Win_unlock_all(hdyn));
      CHECK(EP_Bcast(&last, 1, MPI_INT64_T, kOrigin, c));
      if (me == kTarget && dmem[0] != last) {
        std::fprintf(stderr, "rma_dyn_bench: last put %lld, expected %lld\n",
                     static_cast<long long>(dmem[0]), static_cast<long long>(last));
        ok = false;
      }
      if ((me == kOrigin || me == kTarget) &&
          flag[me == kOrigin ? kTarget : kOrigin]->load() != seq) {
        std::fprintf(stderr, "rma_dyn_bench: ping-pong flag mismatch\n");
        ok = false;
      }
      CHECK(EP_Barrier(c));
      CHECK(EP_Win_detach(dyn, dmem.data()));
      CHECK(EP_Win_free(&dyn));
      CHECK(EP_Win_detach(hdyn, hmem.data()));
      CHECK(EP_Win_free(&hdyn));
      CHECK(EP_Win_free(&shm));
    });
  }
  for (auto& t : th) t.join();
  CHECK(MPI_Win_unlock_all(mpi_dyn));
  MPI_Bcast(&mpi_last, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  if (rank == 1 && mpi_dmem[0] != mpi_last) {
    std::fprintf(stderr, "rma_dyn_bench: MPI last put %lld, expected %lld\n",
                 static_cast<long long>(mpi_dmem[0]), static_cast<long long>(mpi_last));
    ok = false;
  }
  if (mpi_flag[rank == 0 ? 1 : 0]->load() != mpi_seq) {
    std::fprintf(stderr, "rma_dyn_bench: MPI ping-pong flag mismatch\n");
    ok = false;
  }
  CHECK(MPI_Win_detach(mpi_dyn, mpi_dmem.data()));
  CHECK(MPI_Win_free(&mpi_dyn));
  CHECK(MPI_Win_free(&mpi_shm));
  CHECK(EP_Comm_free(&comms[0]));
  CHECK(EP_Comm_free(&comms[1]));
  CHECK(EP_Finalize());
  int all_ok = ok ? 1 : 0, every = 0;
  MPI_Allreduce(&all_ok, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("ep_dyn_rput8_rate %.0f\n", 1.0 / median(ep.put));
    std::printf("ep_dyn_rget8_us %.3f\n", median(ep.get) * 1e6);
    std::printf("ep_dynh_rput8_rate %.0f\n", 1.0 / median(ep.put_handler));
    std::printf("ep_dynh_rget8_us %.3f\n", median(ep.get_handler) * 1e6);
    std::printf("ep_dyn_local_rput8_rate %.0f\n", 1.0 / median(ep.put_local));
    std::printf("ep_dyn_local_rget8_us %.3f\n", median(ep.get_local) * 1e6);
    std::printf("ep_shm_ping_us %.3f\n", median(ep.ping) * 1e6);
    std::printf("mpi_dyn_rput8_rate %.0f\n", 1.0 / median(mpi.put));
    std::printf("mpi_dyn_rget8_us %.3f\n", median(mpi.get) * 1e6);
    std::printf("mpi_shm_ping_us %.3f\n", median(mpi.ping) * 1e6);
    std::printf("checks_ok %d\n", every);
  }
  MPI_Finalize();
  return every ? 0 : 1;
}
