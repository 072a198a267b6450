// blocked_bench - does a blocked endpoint slow the others?  An 8-byte ping-pong between
// two endpoints while every other endpoint of both processes is blocked in EP_Recv
// (EP_ANY_SOURCE on a communicator of two processes, so its wait involves MPI), against
// the same ping-pong while the others are parked outside libep and MPI (on a futex in
// shared memory).  The two kinds of segments alternate, so that a change of the host's
// speed hits both.
//
// mpiexec -n 2 blocked_bench [--segments N] [--round-trips M]
//   Each process has 3 endpoints.  Two rows: the pair inside process 0 (endpoints 0 and
//   1), and the pair across processes (endpoint 0 of each).  Ratio: median one-way
//   latency with the others blocked / with them parked; target <= 1.3x.
#include <mpi.h>

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "ep/ep.h"
#include "tools/bench/bench_util.h"

namespace {

constexpr int kPerProc = 3;
constexpr int kPing = 1, kRelease = 2;

int g_rank = 0;
int g_segments = 20, g_round_trips = 2000;

// Parked endpoints wait here, outside libep and MPI: a futex word in memory shared by
// the processes of the node (the benchmark runs on one), advanced by the measuring
// endpoint at the end of every segment.
struct Gate {
  std::atomic<uint32_t>* gen = nullptr;
  void wait_past(uint32_t seen) {
    while (gen->load() == seen) {
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(gen), FUTEX_WAIT, seen, nullptr, nullptr, 0);
    }
  }
  void advance() {
    gen->fetch_add(1);
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(gen), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
  }
};

Gate shared_gate() {
  char name[64];
  std::snprintf(name, sizeof name, "/ep_blocked_bench_%d", static_cast<int>(getppid()));
  const int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, 4096) != 0) {
    std::perror("shm_open");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  MPI_Barrier(MPI_COMM_WORLD);  // both mapped it
  if (g_rank == 0) shm_unlink(name);
  Gate g;
  g.gen = static_cast<std::atomic<uint32_t>*>(p);
  return g;
}

// One row: the pair (`a`, `b`: communicator ranks) ping-pongs; every other endpoint of
// both processes is, in alternate segments, blocked in EP_Recv(EP_ANY_SOURCE) - its
// wait involves MPI, the communicator spanning two processes - or parked on the gate.
double ratio_row(const char* what, int a, int b, Gate gate) {
  std::vector<EP_Comm> comms(kPerProc);
  CHECK(EP_Comm_create_endpoints(MPI_COMM_WORLD, kPerProc, MPI_INFO_NULL, comms.data()));
  const int size = 2 * kPerProc;
  std::vector<double> blocked, parked;
  std::vector<std::thread> threads;
  for (int i = 0; i < kPerProc; ++i) {
    threads.emplace_back([&, i] {
      EP_Comm c = comms[static_cast<size_t>(i)];
      const int me = g_rank * kPerProc + i;
      uint32_t seen = gate.gen->load();
      for (int s = 0; s < 2 * g_segments; ++s) {
        const bool with_blocked = s % 2 == 1;
        CHECK(EP_Barrier(c));  // every endpoint is in its place for this segment
        if (me == a || me == b) {
          int8_t v[8] = {};
          const int peer = me == a ? b : a;
          const double t0 = ep_bench::now_s();
          for (int k = 0; k < g_round_trips; ++k) {
            if (me == a) {
              CHECK(EP_Send(v, 8, MPI_BYTE, peer, kPing, c));
              CHECK(EP_Recv(v, 8, MPI_BYTE, peer, kPing, c, EP_STATUS_IGNORE));
            } else {
              CHECK(EP_Recv(v, 8, MPI_BYTE, peer, kPing, c, EP_STATUS_IGNORE));
              CHECK(EP_Send(v, 8, MPI_BYTE, peer, kPing, c));
            }
          }
          if (me == a) {
            const double us = (ep_bench::now_s() - t0) / (2.0 * g_round_trips) * 1e6;
            (with_blocked ? blocked : parked).push_back(us);
            if (with_blocked) {
              for (int o = 0; o < size; ++o) {
                if (o != a && o != b) CHECK(EP_Send(v, 0, MPI_BYTE, o, kRelease, c));
              }
            }
            gate.advance();
          }
        } else if (with_blocked) {
          char ch;
          CHECK(EP_Recv(&ch, 0, MPI_BYTE, EP_ANY_SOURCE, kRelease, c, EP_STATUS_IGNORE));
        }
        gate.wait_past(seen);
        ++seen;
      }
      CHECK(EP_Comm_free(&c));
    });
  }
  for (auto& t : threads) t.join();
  double r = 0;
  if (g_rank == 0) {
    const double mb = ep_bench::median(blocked), mp = ep_bench::median(parked);
    r = mb / mp;
    std::printf("| %s | %.3f us | %.3f us | %.2fx | %s |\n", what, mb, mp, r,
                r <= 1.3 ? "yes" : "NO");
    std::fflush(stdout);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--segments") == 0) g_segments = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--round-trips") == 0) g_round_trips = std::atoi(argv[i + 1]);
  }
  CHECK(EP_Init());
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  if (g_rank == 0) {
    std::printf("# blocked_bench: 8 B ping-pong, %d endpoints per process, %d alternating segment "
                "pairs of %d round trips\n\n",
                kPerProc, g_segments, g_round_trips);
    std::printf("| pair | one way, others blocked in EP_Recv | one way, others parked outside "
                "libep | ratio | <= 1.3x |\n|---|---:|---:|---:|---|\n");
  }
  Gate gate = shared_gate();
  ratio_row("two endpoints of one process", 0, 1, gate);
  ratio_row("endpoints of two processes", 0, kPerProc, gate);
  CHECK(EP_Finalize());
  MPI_Finalize();
  return 0;
}
