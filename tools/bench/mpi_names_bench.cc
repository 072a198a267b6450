// mpi_names_bench.cc - libep's point-to-point through MPI names (libep_mpi) against the same
// through EP_ names, in one run.
//
// Run as `mpiexec -n 2 mpi_names_bench [--reps N] [--rep-seconds S] [--phases abcf]`,
// linked with libep_mpi ahead of MPICH (pkg-config ep-mpi; tools/bench/mpi_names_run.sh
// builds and runs it).  Both sides run on libep: the EP_ side on endpoints from
// EP_Comm_create_endpoints, the MPI side on endpoints from MPI_Comm_create_endpoints,
// with the same kernels (tools/bench/kernels.h); every repetition measures both, in turn
// first.  Process 0 prints one markdown table: the MPI figure, the EP_ figure, their
// ratio and the target (the wrappers' cost: target <= 1.05x for a latency, >= 0.95x for
// a rate).
//
//   a. 8-byte ping-pong between 2 endpoints of one process (2 threads of process 0;
//      process 1 creates no endpoint).                         target MPI/EP <= 1.05
//   b. 8-byte ping-pong, 1 endpoint in each of the 2 processes.  target <= 1.05
//   c. message rate: 2 endpoints per process, endpoint i of process 0 streams 8-byte
//      messages to endpoint i of process 1 in windows of 64 (Isend x64 + Waitall;
//      receiver Irecv x64 + Waitall, then a 1-message ack).    target MPI/EP >= 0.95
//   f. 8-byte ping-pong on two persistent requests (Send_init/Recv_init, Start + Wait
//      per message), 1 endpoint in each process.               target <= 1.05
#include <ep/ep.h>
#include <ep/mpi_endpoints.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "tools/bench/bench_util.h"
#include "tools/bench/kernels.h"

namespace {

using ep_bench::Budget;
using ep_bench::Measure;
using ep_bench::median;

constexpr int kTag = 7;
int g_rank = 0;
MPI_Comm g_ctl = MPI_COMM_NULL;

#define CHECK_RC(call)                                                                       \
  do {                                                                                       \
    const int rc_ = (call);                                                                  \
    if (rc_ != 0) {                                                                          \
      std::fprintf(stderr, "mpi_names_bench: %s failed: %d (%s:%d)\n", #call, rc_, __FILE__, \
                   __LINE__);                                                                \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
    }                                                                                        \
  } while (0)

// The two sets of names, behind one interface for the kernels.
struct EpNames {
  using Comm = EP_Comm;
  using Req = EP_Request;
  static constexpr const char* kName = "EP_";
  static void create(int n, Comm* c) {
    CHECK_RC(EP_Comm_create_endpoints(MPI_COMM_WORLD, n, MPI_INFO_NULL, c));
  }
  static void free(Comm* c) { CHECK_RC(EP_Comm_free(c)); }
  static void send(const void* b, int n, MPI_Datatype t, int p, int tag, Comm c) {
    CHECK_RC(EP_Send(b, n, t, p, tag, c));
  }
  static void recv(void* b, int n, MPI_Datatype t, int p, int tag, Comm c) {
    CHECK_RC(EP_Recv(b, n, t, p, tag, c, EP_STATUS_IGNORE));
  }
  static void isend(const void* b, int p, Comm c, Req* r) {
    CHECK_RC(EP_Isend(b, 8, MPI_BYTE, p, kTag, c, r));
  }
  static void irecv(void* b, int p, Comm c, Req* r) {
    CHECK_RC(EP_Irecv(b, 8, MPI_BYTE, p, kTag, c, r));
  }
  static void send_init(const void* b, int p, Comm c, Req* r) {
    CHECK_RC(EP_Send_init(b, 8, MPI_BYTE, p, kTag, c, r));
  }
  static void recv_init(void* b, int p, Comm c, Req* r) {
    CHECK_RC(EP_Recv_init(b, 8, MPI_BYTE, p, kTag, c, r));
  }
  static void start(Req* r) { CHECK_RC(EP_Start(r)); }
  static void wait(Req* r) { CHECK_RC(EP_Wait(r, EP_STATUS_IGNORE)); }
  static void waitall(int n, Req* r) { CHECK_RC(EP_Waitall(n, r, EP_STATUSES_IGNORE)); }
  static void request_free(Req* r) { CHECK_RC(EP_Request_free(r)); }
};

struct MpiNames {
  using Comm = MPI_Comm;
  using Req = MPI_Request;
  static constexpr const char* kName = "MPI_";
  static void create(int n, Comm* c) {
    CHECK_RC(MPI_Comm_create_endpoints(MPI_COMM_WORLD, n, MPI_INFO_NULL, c));
  }
  static void free(Comm* c) { CHECK_RC(MPI_Comm_free(c)); }
  static void send(const void* b, int n, MPI_Datatype t, int p, int tag, Comm c) {
    CHECK_RC(MPI_Send(b, n, t, p, tag, c));
  }
  static void recv(void* b, int n, MPI_Datatype t, int p, int tag, Comm c) {
    CHECK_RC(MPI_Recv(b, n, t, p, tag, c, MPI_STATUS_IGNORE));
  }
  static void isend(const void* b, int p, Comm c, Req* r) {
    CHECK_RC(MPI_Isend(b, 8, MPI_BYTE, p, kTag, c, r));
  }
  static void irecv(void* b, int p, Comm c, Req* r) {
    CHECK_RC(MPI_Irecv(b, 8, MPI_BYTE, p, kTag, c, r));
  }
  static void send_init(const void* b, int p, Comm c, Req* r) {
    CHECK_RC(MPI_Send_init(b, 8, MPI_BYTE, p, kTag, c, r));
  }
  static void recv_init(void* b, int p, Comm c, Req* r) {
    CHECK_RC(MPI_Recv_init(b, 8, MPI_BYTE, p, kTag, c, r));
  }
  static void start(Req* r) { CHECK_RC(MPI_Start(r)); }
  static void wait(Req* r) { CHECK_RC(MPI_Wait(r, MPI_STATUS_IGNORE)); }
  static void waitall(int n, Req* r) { CHECK_RC(MPI_Waitall(n, r, MPI_STATUSES_IGNORE)); }
  static void request_free(Req* r) { CHECK_RC(MPI_Request_free(r)); }
};

template <class N>
Measure pingpong(typename N::Comm c, int peer, bool first, const Budget& b) {
  int64_t msg = 1;
  return ep_bench::pingpong(
      first, b,
      [&](int64_t flag) {
        msg = flag;
        N::send(&msg, 8, MPI_BYTE, peer, kTag, c);
      },
      [&] {
        N::recv(&msg, 8, MPI_BYTE, peer, kTag, c);
        return msg;
      });
}

template <class N>
Measure persistent_pingpong(typename N::Comm c, int peer, bool first, const Budget& b) {
  int64_t out = 1, in = 0;
  typename N::Req s, r;
  N::send_init(&out, peer, c, &s);
  N::recv_init(&in, peer, c, &r);
  const Measure m = ep_bench::pingpong(
      first, b,
      [&](int64_t flag) {
        out = flag;
        N::start(&s);
        N::wait(&s);
      },
      [&] {
        N::start(&r);
        N::wait(&r);
        return in;
      });
  N::request_free(&s);
  N::request_free(&r);
  return m;
}

template <class N>
Measure stream(typename N::Comm c, int peer, bool sender, const Budget& b) {
  using Req = typename N::Req;
  return ep_bench::stream<Req>(
      sender, b, [&](int64_t* m, Req* r) { N::isend(m, peer, c, r); },
      [&](int64_t* m, Req* r) { N::irecv(m, peer, c, r); },
      [&](Req* r) { N::waitall(ep_bench::kWindow, r); },
      [&](char* a, int tag) { N::send(a, 1, MPI_CHAR, peer, tag, c); },
      [&](char* a, int tag) { N::recv(a, 1, MPI_CHAR, peer, tag, c); });
}

struct Series {
  std::vector<double> v;
  long iters = 0;
  void add(const Measure& m, double value) {
    v.push_back(value);
    iters += m.iters;
  }
};

struct Row {
  std::string id, what;
  bool rate;
  Series mpi, ep;
  double target;
};

std::string fmt(double x, bool rate) {
  char s[64];
  if (rate) {
    std::snprintf(s, sizeof s, "%.3f M msg/s", x / 1e6);
  } else {
    std::snprintf(s, sizeof s, "%.3f us", x * 1e6);
  }
  return s;
}

void lazy_barrier() { ep_bench::lazy_barrier(g_ctl); }

// One row's repetitions: measure(names, first) runs the kernel of one side on this
// process and returns the value process 0 keeps (a latency, or a rate).
template <class Fn>
void repeat(Row& row, int reps, Fn measure) {
  for (int r = 0; r <= reps; ++r) {  // repetition 0 warms up
    for (int k = 0; k < 2; ++k) {
      const bool mpi_side = (r + k) % 2 == 0;  // in turn first
      lazy_barrier();
      Measure m;
      double value = 0;
      if (mpi_side) {
        value = measure(MpiNames{}, &m);
        if (r > 0) row.mpi.add(m, value);
      } else {
        value = measure(EpNames{}, &m);
        if (r > 0) row.ep.add(m, value);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2 || provided != MPI_THREAD_MULTIPLE) {
    if (g_rank == 0) std::fprintf(stderr, "mpi_names_bench: 2 processes, MPI_THREAD_MULTIPLE\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int reps = 7;
  double rep_seconds = 0.3;
  std::string phases = "abcf";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--rep-seconds") && i + 1 < argc) {
      rep_seconds = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--phases") && i + 1 < argc) {
      phases = argv[++i];
    } else {
      if (g_rank == 0) {
        std::fprintf(stderr,
                     "usage: mpiexec -n 2 %s [--reps N] [--rep-seconds S] [--phases abcf]\n",
                     argv[0]);
      }
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  // A program written against ep.h calls EP_Init; with libep_mpi, MPI_Init_thread has
  // started libep already and EP_Init is a no-op.
  CHECK_RC(EP_Init());
  CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &g_ctl));
  const bool p0 = g_rank == 0;
  const int peer = 1 - g_rank;
  auto has = [&](char p) { return phases.find(p) != std::string::npos; };
  Budget lat;
  lat.seconds = rep_seconds;
  Budget rate = lat;
  rate.min_iters = 5;
  rate.warm = 5;
  std::vector<Row> rows;

  if (has('a')) {
    Row row{"a", "8 B ping-pong, 2 endpoints of one process", false, {}, {}, 1.05};
    EP_Comm ec[2] = {EP_COMM_NULL, EP_COMM_NULL};
    MPI_Comm mc[2] = {MPI_COMM_NULL, MPI_COMM_NULL};
    EpNames::create(p0 ? 2 : 0, ec);
    MpiNames::create(p0 ? 2 : 0, mc);
    repeat(row, reps, [&](auto names, Measure* out) {
      using N = decltype(names);
      if (!p0) return 0.0;
      Measure m[2];
      ep_bench::on_threads(2, [&](int i) {
        typename N::Comm c;
        if constexpr (std::is_same_v<N, EpNames>)
          c = ec[i];
        else
          c = mc[i];
        m[i] = pingpong<N>(c, 1 - i, i == 0, lat);
      });
      *out = m[0];
      return m[0].value;
    });
    if (p0) {
      for (auto& c : ec) EpNames::free(&c);
      for (auto& c : mc) MpiNames::free(&c);
    }
    rows.push_back(row);
  }

  if (has('b') || has('f')) {
    EP_Comm ec;
    MPI_Comm mc;
    EpNames::create(1, &ec);
    MpiNames::create(1, &mc);
    if (has('b')) {
      Row row{"b", "8 B ping-pong, 1 endpoint in each of 2 processes", false, {}, {}, 1.05};
      repeat(row, reps, [&](auto names, Measure* out) {
        using N = decltype(names);
        if constexpr (std::is_same_v<N, EpNames>)
          *out = pingpong<N>(ec, peer, p0, lat);
        else
          *out = pingpong<N>(mc, peer, p0, lat);
        return out->value;
      });
      rows.push_back(row);
    }
    if (has('f')) {
      Row row{"f", "8 B ping-pong on persistent requests, 1 endpoint per process", false, {}, {},
              1.05};
      repeat(row, reps, [&](auto names, Measure* out) {
        using N = decltype(names);
        if constexpr (std::is_same_v<N, EpNames>)
          *out = persistent_pingpong<N>(ec, peer, p0, lat);
        else
          *out = persistent_pingpong<N>(mc, peer, p0, lat);
        return out->value;
      });
      rows.push_back(row);
    }
    EpNames::free(&ec);
    MpiNames::free(&mc);
  }

  if (has('c')) {
    Row row{"c", "8 B message rate, 2 streams, windows of 64", true, {}, {}, 0.95};
    EP_Comm ec[2];
    MPI_Comm mc[2];
    EpNames::create(2, ec);
    MpiNames::create(2, mc);
    repeat(row, reps, [&](auto names, Measure* out) {
      using N = decltype(names);
      Measure m[2];
      // Endpoint ranks: process 0 has 0 and 1, process 1 has 2 and 3.
      ep_bench::on_threads(2, [&](int i) {
        typename N::Comm c;
        if constexpr (std::is_same_v<N, EpNames>)
          c = ec[i];
        else
          c = mc[i];
        m[i] = stream<N>(c, p0 ? 2 + i : i, p0, rate);
      });
      *out = {0, m[0].iters + m[1].iters};
      double x = 0;  // the two streams' rates added
      for (const Measure& s : m) {
        if (s.value > 0) x += static_cast<double>(s.iters) * ep_bench::kWindow / s.value;
      }
      return x;
    });
    for (auto& c : ec) EpNames::free(&c);
    for (auto& c : mc) MpiNames::free(&c);
    rows.push_back(row);
  }

  if (p0) {
    std::printf("# libep mpi_names_bench: libep through MPI_ names (libep_mpi) and EP_ names\n\n");
    std::printf(
        "- %d timed repetitions per figure (+1 warm-up), each ~%.2f s, both names in "
        "every repetition, in turn first; medians; latencies one-way\n\n",
        reps, rep_seconds);
    std::printf("| | measurement | MPI_ names | EP_ names | ratio | target | met |\n");
    std::printf("|---|---|---:|---:|---:|---|---|\n");
    for (const Row& r : rows) {
      const double m = median(r.mpi.v), e = median(r.ep.v);
      const double ratio = e > 0 ? m / e : 0;
      const bool met = r.rate ? ratio >= r.target : ratio <= r.target;
      std::printf("| %s | %s | %s | %s | %.3fx | %s %.2fx | %s |\n", r.id.c_str(), r.what.c_str(),
                  fmt(m, r.rate).c_str(), fmt(e, r.rate).c_str(), ratio,
                  r.rate ? ">=" : "<=", r.target, met ? "yes" : "NO");
    }
    std::fflush(stdout);
  }
  CHECK_RC(MPI_Comm_free(&g_ctl));
  CHECK_RC(EP_Finalize());
  MPI_Finalize();
  return 0;
}
