// io_server - an XIOS-like I/O server on endpoints: client endpoints compute a 2-D field
// and stream it, timestep by timestep, to server endpoints that aggregate it with
// one-sided operations.
//
//   mpiexec -n P io_server [endpoints_per_process servers timesteps nx ny]
//   (defaults: 3 3 4 32 24)
//
// Every process creates endpoints_per_process endpoints, one thread each. The last
// `servers` endpoints of the world endpoints communicator are servers, the others clients
// (EP_Comm_split); EP_Intercomm_create joins the two groups.
//   Client c owns the rows [c*ny/C, (c+1)*ny/C) of the ny x nx field
//     f(t, y, x) = 1 + t/2 + y/4 + x/8
//   and, for t = 0 .. timesteps-1, sends its slab for t to server c mod S (EP_Isend over
//   the intercommunicator, tag t) and computes its slab for t+1 while the send is in
//   flight (libep's progress thread moves it), then waits for it.
//   Server s owns the rows [s*ny/S, (s+1)*ny/S) of the aggregate (the sum over t of f):
//   its buffer is attached to a dynamic window over the servers (EP_Win_create_dynamic,
//   EP_Win_attach; the servers exchange the buffers' addresses with EP_Allgather). Inside
//   one EP_Win_lock_all epoch a server receives its clients' slabs and adds every row
//   into its owner's buffer with EP_Accumulate(MPI_SUM), flushing after each timestep
//   (EP_Win_flush_all: the receive buffer may then be reused).
// After EP_Win_unlock_all and a barrier each server checks its rows against the formula
// and computes sum over its (y, x) of (1 + (y*nx + x) mod 7) * aggregate(y, x); server 0
// prints the total and the number of wrong elements:
//   io_server: T timesteps of NYxNX from C clients to S servers: checksum X, mismatches M
// Every value is a multiple of 1/8 far below 2^53: the sums are exact in any order.
#include <ep/ep.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

struct Params {
  int endpoints = 3;  // per process
  int servers = 3;
  int timesteps = 4;
  int nx = 32;
  int ny = 24;
};

Params g_params;

void check(int rc, const char* call) {
  if (rc != EP_SUCCESS) {
    std::fprintf(stderr, "io_server: %s failed with %d\n", call, rc);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

double field(int t, int y, int x) { return 1.0 + 0.5 * t + 0.25 * y + 0.125 * x; }

// The rows [*begin, *end) of part `part` of `parts`.
void rows_of(int part, int parts, int ny, int* begin, int* end) {
  *begin = static_cast<int>(static_cast<long>(part) * ny / parts);
  *end = static_cast<int>(static_cast<long>(part + 1) * ny / parts);
}

// Fills `slab` with rows [begin, end) of f(t, ., .): the clients' "computation".
void compute_slab(int t, int begin, int end, std::vector<double>* slab) {
  const Params& p = g_params;
  for (int y = begin; y < end; ++y) {
    for (int x = 0; x < p.nx; ++x) (*slab)[(y - begin) * p.nx + x] = field(t, y, x);
  }
}

void run_client(EP_Comm inter, int client, int clients) {
  const Params& p = g_params;
  int begin, end;
  rows_of(client, clients, p.ny, &begin, &end);
  const int count = (end - begin) * p.nx;
  const int server = client % p.servers;
  std::vector<double> slab[2] = {std::vector<double>(count), std::vector<double>(count)};
  compute_slab(0, begin, end, &slab[0]);
  for (int t = 0; t < p.timesteps; ++t) {
    EP_Request req;
    check(EP_Isend(slab[t % 2].data(), count, MPI_DOUBLE, server, t, inter, &req), "EP_Isend");
    // The next timestep is computed while this one travels.
    if (t + 1 < p.timesteps) compute_slab(t + 1, begin, end, &slab[(t + 1) % 2]);
    check(EP_Wait(&req, EP_STATUS_IGNORE), "EP_Wait");
  }
}

void run_server(EP_Comm inter, EP_Comm servers_comm, int server, int clients) {
  const Params& p = g_params;
  const int nservers = p.servers;
  int own_begin, own_end;
  rows_of(server, nservers, p.ny, &own_begin, &own_end);
  std::vector<double> aggregate((own_end - own_begin) * p.nx, 0.0);

  EP_Win win;
  check(EP_Win_create_dynamic(MPI_INFO_NULL, servers_comm, &win), "EP_Win_create_dynamic");
  check(EP_Win_attach(win, aggregate.data(),
                      static_cast<MPI_Aint>(aggregate.size() * sizeof(double))),
        "EP_Win_attach");
  MPI_Aint mine;
  MPI_Get_address(aggregate.data(), &mine);
  std::vector<MPI_Aint> base(nservers);
  // Also orders every attach before any access: a server learns an address only after
  // its owner attached.
  check(EP_Allgather(&mine, 1, MPI_AINT, base.data(), 1, MPI_AINT, servers_comm), "EP_Allgather");

  // This server's clients: c with c mod S == server, their slabs in client order.
  std::vector<int> mine_clients, slab_begin, slab_end;
  for (int c = server; c < clients; c += nservers) {
    int b, e;
    rows_of(c, clients, p.ny, &b, &e);
    mine_clients.push_back(c);
    slab_begin.push_back(b);
    slab_end.push_back(e);
  }
  std::vector<std::vector<double>> slabs(mine_clients.size());
  for (size_t i = 0; i < slabs.size(); ++i) slabs[i].resize((slab_end[i] - slab_begin[i]) * p.nx);

  check(EP_Win_lock_all(0, win), "EP_Win_lock_all");
  for (int t = 0; t < p.timesteps; ++t) {
    std::vector<EP_Request> reqs(mine_clients.size());
    for (size_t i = 0; i < mine_clients.size(); ++i) {
      check(EP_Irecv(slabs[i].data(), static_cast<int>(slabs[i].size()), MPI_DOUBLE,
                     mine_clients[i], t, inter, &reqs[i]),
            "EP_Irecv");
    }
    check(EP_Waitall(static_cast<int>(reqs.size()), reqs.data(), EP_STATUSES_IGNORE), "EP_Waitall");
    // Each run of rows with one owner is contiguous in the owner's buffer: one accumulate.
    for (size_t i = 0; i < mine_clients.size(); ++i) {
      int y = slab_begin[i];
      while (y < slab_end[i]) {
        int owner = 0, ob = 0, oe = 0;
        for (owner = 0; owner < nservers; ++owner) {
          rows_of(owner, nservers, p.ny, &ob, &oe);
          if (y >= ob && y < oe) break;
        }
        const int last = oe < slab_end[i] ? oe : slab_end[i];
        const int count = (last - y) * p.nx;
        const MPI_Aint disp = base[owner] + static_cast<MPI_Aint>((y - ob) * p.nx * sizeof(double));
        check(EP_Accumulate(&slabs[i][(y - slab_begin[i]) * p.nx], count, MPI_DOUBLE, owner, disp,
                            count, MPI_DOUBLE, MPI_SUM, win),
              "EP_Accumulate");
        y = last;
      }
    }
    check(EP_Win_flush_all(win), "EP_Win_flush_all");  // the slabs may be received into again
  }
  check(EP_Win_unlock_all(win), "EP_Win_unlock_all");
  check(EP_Barrier(servers_comm), "EP_Barrier");  // every server's accumulates completed

  double checksum = 0.0, total = 0.0;
  int mismatches = 0, total_mismatches = 0;
  for (int y = own_begin; y < own_end; ++y) {
    for (int x = 0; x < p.nx; ++x) {
      double want = 0.0;
      for (int t = 0; t < p.timesteps; ++t) want += field(t, y, x);
      const double got = aggregate[(y - own_begin) * p.nx + x];
      if (got != want) ++mismatches;
      checksum += (1 + (y * p.nx + x) % 7) * got;
    }
  }
  check(EP_Reduce(&checksum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, servers_comm), "EP_Reduce");
  check(EP_Reduce(&mismatches, &total_mismatches, 1, MPI_INT, MPI_SUM, 0, servers_comm),
        "EP_Reduce");
  if (server == 0) {
    std::printf(
        "io_server: %d timesteps of %dx%d from %d clients to %d servers: checksum %.17g, "
        "mismatches %d\n",
        p.timesteps, p.ny, p.nx, clients, nservers, total, total_mismatches);
    std::fflush(stdout);
  }
  check(EP_Win_detach(win, aggregate.data()), "EP_Win_detach");
  check(EP_Win_free(&win), "EP_Win_free");
}

void run_endpoint(EP_Comm world) {
  int rank, size;
  check(EP_Comm_rank(world, &rank), "EP_Comm_rank");
  check(EP_Comm_size(world, &size), "EP_Comm_size");
  const int clients = size - g_params.servers;
  const bool is_server = rank >= clients;
  EP_Comm local, inter;
  check(EP_Comm_split(world, is_server ? 1 : 0, rank, &local), "EP_Comm_split");
  // Local leaders: endpoint 0 of each group; in world, clients start at 0, servers at C.
  check(EP_Intercomm_create(local, 0, world, is_server ? 0 : clients, 99, &inter),
        "EP_Intercomm_create");
  if (is_server) {
    run_server(inter, local, rank - clients, clients);
  } else {
    run_client(inter, rank, clients);
  }
  check(EP_Comm_free(&inter), "EP_Comm_free");
  check(EP_Comm_free(&local), "EP_Comm_free");
  check(EP_Comm_free(&world), "EP_Comm_free");
}

}  // namespace

int main(int argc, char** argv) {
  Params& p = g_params;
  if (argc == 6) {
    p.endpoints = std::atoi(argv[1]);
    p.servers = std::atoi(argv[2]);
    p.timesteps = std::atoi(argv[3]);
    p.nx = std::atoi(argv[4]);
    p.ny = std::atoi(argv[5]);
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [endpoints_per_process servers timesteps nx ny]\n", argv[0]);
    return 2;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int nprocs = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  const int total = nprocs * p.endpoints;
  if (p.endpoints < 1 || p.servers < 1 || p.servers >= total || p.timesteps < 1 || p.nx < 1 ||
      p.ny < total - p.servers || p.ny < p.servers) {
    std::fprintf(stderr,
                 "io_server: need endpoints >= 1, 1 <= servers < all endpoints, timesteps >= 1, "
                 "nx >= 1 and ny >= the number of clients and of servers\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  check(EP_Init(), "EP_Init");
  std::vector<EP_Comm> comms(p.endpoints);
  check(EP_Comm_create_endpoints(MPI_COMM_WORLD, p.endpoints, MPI_INFO_NULL, comms.data()),
        "EP_Comm_create_endpoints");
  std::vector<std::thread> threads;
  for (EP_Comm c : comms) threads.emplace_back(run_endpoint, c);
  for (std::thread& t : threads) t.join();
  check(EP_Finalize(), "EP_Finalize");
  MPI_Finalize();
  return 0;
}
