// openmp_halo - a 2-D Jacobi solver for Laplace's equation, one tile per OpenMP thread,
// each thread with its own endpoint; and the same solver in MPI-everywhere form.
//
//   mpiexec -n P openmp_halo [--mpi] [tile_nx tile_ny max_iterations tolerance]
//
// Default (libep): every process creates omp_get_max_threads() endpoints
// (EP_Comm_create_endpoints) and runs one OpenMP thread per endpoint; endpoint r owns tile
// r. With --mpi every MPI process owns one tile and uses plain MPI calls on
// MPI_COMM_WORLD. Either way the tiles (tile_nx x tile_ny interior points plus a halo of
// one) lie on a 2-D grid of all tiles (MPI_Dims_create), the global boundary is fixed
// (1 on the top edge, 0 elsewhere), and each iteration
//   1. exchanges halos with the up to 4 neighbouring tiles (rows contiguous, columns a
//      vector datatype), wherever those tiles live;
//   2. updates every interior point to the mean of its 4 neighbours;
//   3. reduces the largest change |new - old| over all tiles (Allreduce, MPI_MAX).
// It stops when that change is below `tolerance` or after max_iterations, and prints
//   openmp_halo MODE: TXxTY tiles of NXxNY, I iterations, residual R, checksum C, time T s
// The residual (a maximum) and the checksum (per-tile sums, added in tile order) do not
// depend on the reduction order: both modes print the same values for the same tile grid.
#include <ep/ep.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct Params {
  int nx = 64;  // interior points per tile, x
  int ny = 64;  // interior points per tile, y
  int max_iterations = 1000;
  double tolerance = 1e-4;
};

// Communication through libep endpoints: one EP_Comm per thread.
struct EpComm {
  using Request = EP_Request;
  EP_Comm comm;
  int rank() const {
    int r;
    EP_Comm_rank(comm, &r);
    return r;
  }
  int size() const {
    int s;
    EP_Comm_size(comm, &s);
    return s;
  }
  void isend(const void* buf, MPI_Datatype type, int dest, Request* req) const {
    check(EP_Isend(buf, 1, type, dest, 0, comm, req), "EP_Isend");
  }
  void irecv(void* buf, MPI_Datatype type, int source, Request* req) const {
    check(EP_Irecv(buf, 1, type, source, 0, comm, req), "EP_Irecv");
  }
  void waitall(int n, Request* reqs) const {
    check(EP_Waitall(n, reqs, EP_STATUSES_IGNORE), "EP_Waitall");
  }
  void allreduce(const double* in, double* out, int n, MPI_Op op) const {
    check(EP_Allreduce(in, out, n, MPI_DOUBLE, op, comm), "EP_Allreduce");
  }
  void barrier() const { check(EP_Barrier(comm), "EP_Barrier"); }
  static void check(int rc, const char* call) {
    if (rc != EP_SUCCESS) {
      std::fprintf(stderr, "openmp_halo: %s failed with %d\n", call, rc);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
};

// The same operations in MPI-everywhere form: one process per tile.
struct MpiComm {
  using Request = MPI_Request;
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank() const {
    int r;
    MPI_Comm_rank(comm, &r);
    return r;
  }
  int size() const {
    int s;
    MPI_Comm_size(comm, &s);
    return s;
  }
  void isend(const void* buf, MPI_Datatype type, int dest, Request* req) const {
    MPI_Isend(buf, 1, type, dest, 0, comm, req);
  }
  void irecv(void* buf, MPI_Datatype type, int source, Request* req) const {
    MPI_Irecv(buf, 1, type, source, 0, comm, req);
  }
  void waitall(int n, Request* reqs) const { MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE); }
  void allreduce(const double* in, double* out, int n, MPI_Op op) const {
    MPI_Allreduce(in, out, n, MPI_DOUBLE, op, comm);
  }
  void barrier() const { MPI_Barrier(comm); }
};

struct Result {
  int tiles_x = 0, tiles_y = 0;
  int iterations = 0;
  double residual = 0.0;
  double checksum = 0.0;
  double seconds = 0.0;
};

// Solves on the tile owned by `comm`'s rank; every caller returns the same Result
// (seconds: this caller's wall time of the solve, between two barriers).
template <typename Comm>
Result solve(const Comm& comm, const Params& p) {
  const int rank = comm.rank(), size = comm.size();
  int dims[2] = {0, 0};
  MPI_Dims_create(size, 2, dims);
  const int tx = dims[0], ty = dims[1];
  const int cx = rank % tx, cy = rank / tx;  // this tile's position; row 0 on top
  const int w = p.nx + 2;                    // row length with the halo
  auto at = [w](std::vector<double>& g, int i, int j) -> double& { return g[j * w + i]; };

  std::vector<double> u((p.ny + 2) * w, 0.0), v;
  if (cy == 0) {  // fixed boundary: 1 on the global top edge (halo row 0 of the top tiles)
    for (int i = 1; i <= p.nx; ++i) at(u, i, 0) = 1.0;
  }
  v = u;

  MPI_Datatype column;  // one interior column: ny doubles, stride one row
  MPI_Type_vector(p.ny, 1, w, MPI_DOUBLE, &column);
  MPI_Type_commit(&column);
  MPI_Datatype row;  // one interior row: nx contiguous doubles
  MPI_Type_contiguous(p.nx, MPI_DOUBLE, &row);
  MPI_Type_commit(&row);

  // Neighbours: up, down, left, right (-1: the global boundary).
  const int nbr[4] = {cy > 0 ? rank - tx : -1, cy < ty - 1 ? rank + tx : -1, cx > 0 ? rank - 1 : -1,
                      cx < tx - 1 ? rank + 1 : -1};

  Result r;
  r.tiles_x = tx;
  r.tiles_y = ty;
  comm.barrier();
  const double start = MPI_Wtime();
  double change = 0.0;
  int it = 0;
  while (it < p.max_iterations) {
    typename Comm::Request reqs[8];
    int n = 0;
    // Receive into the halo; send the outermost interior rows and columns.
    const struct {
      int recv_i, recv_j, send_i, send_j;
      MPI_Datatype type;
    } side[4] = {
        {1, 0, 1, 1, row},               // up
        {1, p.ny + 1, 1, p.ny, row},     // down
        {0, 1, 1, 1, column},            // left
        {p.nx + 1, 1, p.nx, 1, column},  // right
    };
    for (int s = 0; s < 4; ++s) {
      if (nbr[s] < 0) continue;
      comm.irecv(&at(u, side[s].recv_i, side[s].recv_j), side[s].type, nbr[s], &reqs[n++]);
      comm.isend(&at(u, side[s].send_i, side[s].send_j), side[s].type, nbr[s], &reqs[n++]);
    }
    comm.waitall(n, reqs);

    double local = 0.0;
    for (int j = 1; j <= p.ny; ++j) {
      for (int i = 1; i <= p.nx; ++i) {
        const double x =
            0.25 * (at(u, i - 1, j) + at(u, i + 1, j) + at(u, i, j - 1) + at(u, i, j + 1));
        local = std::fmax(local, std::fabs(x - at(u, i, j)));
        at(v, i, j) = x;
      }
    }
    u.swap(v);
    ++it;
    comm.allreduce(&local, &change, 1, MPI_MAX);
    if (change < p.tolerance) break;
  }
  comm.barrier();
  r.seconds = MPI_Wtime() - start;
  r.iterations = it;
  r.residual = change;

  // Checksum: each tile's interior sum in its own slot (every other slot adds exact
  // zeros), then added in tile order: the same bits whatever order Allreduce adds in.
  std::vector<double> mine(size, 0.0), sums(size, 0.0);
  for (int j = 1; j <= p.ny; ++j) {
    for (int i = 1; i <= p.nx; ++i) mine[rank] += at(u, i, j);
  }
  comm.allreduce(mine.data(), sums.data(), size, MPI_SUM);
  for (int t = 0; t < size; ++t) r.checksum += sums[t];

  MPI_Type_free(&column);
  MPI_Type_free(&row);
  return r;
}

void print(const char* mode, const Params& p, const Result& r) {
  std::printf(
      "openmp_halo %s: %dx%d tiles of %dx%d, %d iterations, residual %.17g, checksum %.17g, "
      "time %.6f s\n",
      mode, r.tiles_x, r.tiles_y, p.nx, p.ny, r.iterations, r.residual, r.checksum, r.seconds);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  bool mpi_mode = false;
  int arg = 1;
  if (arg < argc && std::strcmp(argv[arg], "--mpi") == 0) {
    mpi_mode = true;
    ++arg;
  }
  Params p;
  if (argc - arg == 4) {
    p.nx = std::atoi(argv[arg]);
    p.ny = std::atoi(argv[arg + 1]);
    p.max_iterations = std::atoi(argv[arg + 2]);
    p.tolerance = std::atof(argv[arg + 3]);
  } else if (argc - arg != 0) {
    std::fprintf(stderr, "usage: %s [--mpi] [tile_nx tile_ny max_iterations tolerance]\n", argv[0]);
    return 2;
  }
  if (p.nx < 1 || p.ny < 1 || p.max_iterations < 1) {
    std::fprintf(stderr, "openmp_halo: tile sizes and max_iterations must be positive\n");
    return 2;
  }

  int provided = 0;
  MPI_Init_thread(&argc, &argv, mpi_mode ? MPI_THREAD_SINGLE : MPI_THREAD_MULTIPLE, &provided);
  int process = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &process);
  if (mpi_mode) {
    Result r = solve(MpiComm{}, p);
    if (process == 0) print("mpi", p, r);
  } else {
    EpComm::check(EP_Init(), "EP_Init");
    const int threads = omp_get_max_threads();
    std::vector<EP_Comm> comms(threads);
    EpComm::check(EP_Comm_create_endpoints(MPI_COMM_WORLD, threads, MPI_INFO_NULL, comms.data()),
                  "EP_Comm_create_endpoints");
#pragma omp parallel num_threads(threads)
    {
      EpComm comm{comms[omp_get_thread_num()]};
      Result r = solve(comm, p);
      if (comm.rank() == 0) print("libep", p, r);
      EpComm::check(EP_Comm_free(&comm.comm), "EP_Comm_free");
    }
    EpComm::check(EP_Finalize(), "EP_Finalize");
  }
  MPI_Finalize();
  return 0;
}
