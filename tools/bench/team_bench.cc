// team_bench.cc - a 4 MiB allreduce helped by a helper team, against the same without one.
//
// Every process has --ep endpoints (default 1; endpoint 0 on thread A, the others on
// their own threads) and one more thread (B).  Per repetition,
// `iters` operations of EP_Allreduce (count MiB of float, MPI_SUM) by A in three modes,
// interleaved so that machine noise hits all of them alike:
//   mpi      plain MPI_Allreduce on MPI_COMM_WORLD (B idle);
//   alone    no team: B sleeps (blocked on a condition variable) while A reduces;
//   team     A and B join a team of 2 (EP_Team_join); A runs the allreduce, then
//            EP_Team_leave; B goes straight to EP_Team_leave and helps (the draft's
//            example 12.3).  Timed per operation: join + allreduce + leave on A.
// Printed: the median over --reps repetitions of the mean time per operation, its
// bandwidth (bytes/time), and the ratio alone/team.  Rank 0 prints.
//
// With --ep 2 the fragment also combines two inputs (oneTBB's parallel_for without a
// team, the team's chunks with one).
//   mpiexec -n 1 team_bench [--mib 4] [--iters 40] [--reps 9] [--ep 1]
//   mpiexec -n 2 team_bench ...
#include <ep/ep.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tools/bench/bench_util.h"

namespace {

using ep_bench::median;
using ep_bench::now_s;

// A tiny command channel from A to B: B sleeps on it between commands.
struct Channel {
  std::mutex mu;
  std::condition_variable cv;
  int seq = 0;
  int cmd = 0;  // 0 idle, 1 join+leave `count` times, 2 quit
  int count = 0;
  int acked = 0;
  void send(int c, int n) {
    std::lock_guard<std::mutex> lock(mu);
    cmd = c;
    count = n;
    ++seq;
    cv.notify_all();
  }
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int mib = 4, iters = 40, reps = 9, num_ep = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--mib")) mib = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--ep")) num_ep = std::max(1, std::atoi(argv[i + 1]));
  }
  CHECK(EP_Init());
  int wrank = 0, wsize = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  std::vector<EP_Comm> comms(static_cast<size_t>(num_ep));
  CHECK(EP_Comm_create_endpoints(MPI_COMM_WORLD, num_ep, MPI_INFO_NULL, comms.data()));
  EP_Comm comm = comms[0];
  EP_Team team;
  CHECK(EP_Team_create(2, MPI_INFO_NULL, &team));

  const int count = mib * (1 << 20) / static_cast<int>(sizeof(float));
  std::vector<float> in(count), out(count);
  for (int i = 0; i < count; ++i) in[i] = static_cast<float>((i % 97) + wrank);

  Channel ch;
  std::thread b([&] {
    int seen = 0;
    for (;;) {
      int cmd, n;
      {
        std::unique_lock<std::mutex> lock(ch.mu);
        ch.cv.wait(lock, [&] { return ch.seq != seen; });
        seen = ch.seq;
        cmd = ch.cmd;
        n = ch.count;
      }
      if (cmd == 2) return;
      for (int k = 0; k < n; ++k) {
        CHECK(EP_Team_join(2, team));
        CHECK(EP_Team_leave(team));
      }
    }
  });

  // Endpoints 1..num_ep-1: each runs `n` allreduces when told (their own buffers).
  struct Other {
    Channel ch;
    std::thread t;
  };
  std::vector<std::unique_ptr<Other>> others;
  for (int e = 1; e < num_ep; ++e) {
    others.push_back(std::make_unique<Other>());
    Other* o = others.back().get();
    EP_Comm c = comms[static_cast<size_t>(e)];
    o->t = std::thread([o, c, count, &in] {
      std::vector<float> mine(in), res(static_cast<size_t>(count));
      int seen = 0;
      for (;;) {
        int cmd, n;
        {
          std::unique_lock<std::mutex> lock(o->ch.mu);
          o->ch.cv.wait(lock, [&] { return o->ch.seq != seen; });
          seen = o->ch.seq;
          cmd = o->ch.cmd;
          n = o->ch.count;
        }
        if (cmd == 2) return;
        for (int k = 0; k < n; ++k) {
          CHECK(EP_Allreduce(mine.data(), res.data(), count, MPI_FLOAT, MPI_SUM, c));
        }
      }
    });
  }
  auto start_others = [&](int n) {
    for (auto& o : others) o->ch.send(1, n);
  };

  auto run_mpi = [&] {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_s();
    for (int k = 0; k < iters; ++k) {
      MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    return (now_s() - t0) / iters;
  };
  auto run_alone = [&] {
    MPI_Barrier(MPI_COMM_WORLD);
    start_others(iters);
    double t0 = now_s();
    for (int k = 0; k < iters; ++k) {
      CHECK(EP_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, comm));
    }
    return (now_s() - t0) / iters;
  };
  auto run_team = [&] {
    MPI_Barrier(MPI_COMM_WORLD);
    start_others(iters);
    ch.send(1, iters);
    double t0 = now_s();
    for (int k = 0; k < iters; ++k) {
      CHECK(EP_Team_join(2, team));
      CHECK(EP_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, comm));
      CHECK(EP_Team_leave(team));
    }
    return (now_s() - t0) / iters;
  };

  // Warm up every path (allocator, page tables, UCX).
  iters = std::max(iters, 1);
  const int saved = iters;
  iters = std::max(1, saved / 4);
  run_mpi();
  run_alone();
  run_team();
  iters = saved;

  std::vector<double> t_mpi, t_alone, t_team;
  for (int r = 0; r < reps; ++r) {
    t_mpi.push_back(run_mpi());
    t_alone.push_back(run_alone());
    t_team.push_back(run_team());
  }
  // Check the result once.
  for (int i = 0; i < count; i += 1009) {
    float want = 0;
    for (int p = 0; p < wsize; ++p) want += num_ep * static_cast<float>((i % 97) + p);
    if (out[i] != want) {
      std::fprintf(stderr, "team_bench: wrong result at %d: %g != %g\n", i, out[i], want);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  ch.send(2, 0);
  b.join();
  for (auto& o : others) {
    o->ch.send(2, 0);
    o->t.join();
  }

  if (wrank == 0) {
    const double bytes = static_cast<double>(count) * sizeof(float);
    const double m = median(t_mpi), a = median(t_alone), t = median(t_team);
    std::printf(
        "team_bench: %d process(es), %d endpoint(s) each, %d MiB float SUM allreduce, "
        "%d ops x %d reps (median)\n",
        wsize, num_ep, mib, iters, reps);
    std::printf("%-34s %10s %10s\n", "mode", "us/op", "GB/s");
    std::printf("%-34s %10.1f %10.2f\n", "MPI_Allreduce (plain MPI)", m * 1e6, bytes / m / 1e9);
    std::printf("%-34s %10.1f %10.2f\n", "EP_Allreduce, no team", a * 1e6, bytes / a / 1e9);
    std::printf("%-34s %10.1f %10.2f\n", "EP_Allreduce, team of 2 (+1 leave)", t * 1e6,
                bytes / t / 1e9);
    std::printf("speedup team vs no team: %.2fx\n", a / t);
  }
  CHECK(EP_Team_free(&team));
  for (EP_Comm& c : comms) CHECK(EP_Comm_free(&c));
  CHECK(EP_Finalize());
  MPI_Finalize();
  return 0;
}
