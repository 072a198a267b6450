// comm_alive.cc - memory and creation time with N endpoints communicators alive.
//
// Run as `mpiexec -n 2 comm_alive [N]` (default 10000): each process makes 2 endpoints,
// each endpoint thread dups its communicator N times (all kept alive), checks a
// point-to-point exchange on the newest, frees them all; process 0 prints the growth of
// its resident set per communicator and the creation time.
#include <ep/ep.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
static long rss_kb() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long a, b;
  std::fscanf(f, "%ld %ld", &a, &b);
  std::fclose(f);
  return b * 4;
}
int main(int argc, char** argv) {
  int p;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &p);
  int wr;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  EP_Init();
  const int N = argc > 1 ? std::atoi(argv[1]) : 10000;
  EP_Comm c[2];
  EP_Comm_create_endpoints(MPI_COMM_WORLD, 2, MPI_INFO_NULL, c);
  long before = rss_kb();
  double t0 = MPI_Wtime();
  std::vector<EP_Comm> d[2];
  std::thread th[2];
  for (int i = 0; i < 2; ++i)
    th[i] = std::thread([&, i] {
      d[i].resize(N);
      for (int k = 0; k < N; ++k)
        if (EP_Comm_dup(c[i], &d[i][k])) std::abort();
    });
  for (auto& t : th) t.join();
  double t1 = MPI_Wtime();
  long after = rss_kb();
  // p2p on the newest
  for (int i = 0; i < 2; ++i)
    th[i] = std::thread([&, i] {
      int r, s;
      EP_Comm_rank(d[i][N - 1], &r);
      EP_Comm_size(d[i][N - 1], &s);
      int v = r, got;
      EP_Sendrecv(&v, 1, MPI_INT, (r + 1) % s, 1, &got, 1, MPI_INT, (r + s - 1) % s, 1, d[i][N - 1],
                  EP_STATUS_IGNORE);
      if (got != (r + s - 1) % s) std::abort();
      for (auto& x : d[i]) EP_Comm_free(&x);
    });
  for (auto& t : th) t.join();
  if (wr == 0)
    std::printf(
        "%d comms alive (2 endpoints/process): RSS +%ld KiB (%.2f KiB per comm per process), "
        "creation %.2f s\n",
        N, after - before, double(after - before) / N, t1 - t0);
  EP_Comm_free(&c[0]);
  EP_Comm_free(&c[1]);
  EP_Finalize();
  MPI_Finalize();
}
