// sweep_bench.cc - libep against plain MPI over message sizes and endpoint counts: the
// data of tools/bench/report.sh's plots.
//
//   mpiexec -n 2 sweep_bench [--min-bytes N] [--max-bytes N] [--factor F] [--reps N]
//                            [--rep-seconds S] [--pairs LIST] [--phases pr] [--vector 0|1]
//
// p. Ping-pong over message sizes --min-bytes, x --factor, ... up to --max-bytes
//    (default 8 B to 4 MiB, powers of 2), three series measured in turn for every size
//    in every repetition:
//      ep_intra  2 endpoints of process 0, one thread each (process 1 sleeps);
//      ep_inter  endpoint 0 of each of the 2 processes (1 endpoint per process);
//      mpi       MPI_Send / MPI_Recv between MPI ranks 0 and 1 on a dup of
//                MPI_COMM_WORLD, after EP_Init with libep's progress threads idle.
//      ep_intra_vec  (--vector 1) ep_intra with a derived datatype: every message is
//                one MPI_Type_vector(BYTES/8, 1, 2, MPI_DOUBLE), every other double of
//                a buffer twice the size (BYTES is the data moved, as in ep_intra).
//    Plain MPI has no in-process counterpart of ep_intra that is safe here (two threads
//    of one process on MPI_COMM_SELF can hang Debian's MPICH), so `mpi` is the baseline
//    of both libep series: 2 MPI processes on one node.
//    Latency is one-way (round trip / 2), the mean of one repetition; bandwidth is
//    bytes / one-way latency (ping-pong bandwidth, one message in flight).
// r. Message rate against the number of stream pairs k in --pairs (default 1,2,4):
//      ep           k endpoints per process, endpoint i of process 0 streams 8-byte
//                   messages to endpoint i of process 1, one thread per endpoint;
//      mpi_threads  k threads per process under MPI_THREAD_MULTIPLE, thread i on its
//                   own dup of MPI_COMM_WORLD streaming to thread i of the other rank.
//    A stream sends windows of 64 (Isend x64 + Waitall; the receiver Irecv x64 +
//    Waitall, then a 1-byte ack).  The rate of one repetition is the sum of the k
//    streams' rates (they run concurrently).
//
// Each repetition runs for a time budget (--rep-seconds) after a warm-up; the side that
// times the kernel tells its peer in-band (first 8 bytes of the message 0 = last) when to
// stop.  Repetition 0 of every figure is a warm-up and is not recorded.  The receivers
// check the last message's payload; a wrong byte fails the run (checks_ok 0).
//
// Output of process 0, whitespace-separated, one figure per line (lines starting with
// '#' are comments):
//   pp SERIES BYTES MEDIAN_US MIN_US MAX_US MEDIAN_MIB_PER_S TIMED_ROUND_TRIPS
//   rate SERIES PAIRS MEDIAN_MSG_PER_S MIN MAX TIMED_WINDOWS
//   checks_ok 0|1
// Uses only the public API (ep/ep.h) and MPI.
#include <ep/ep.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tools/bench/bench_util.h"
#include "tools/bench/kernels.h"

namespace {

using ep_bench::median;
using ep_bench::now_s;
using ep_bench::Budget;
using ep_bench::kWindow;
using ep_bench::Measure;
using ep_bench::stream;

constexpr int kTag = 7;
constexpr unsigned char kPattern = 0x5a;  // every payload byte after the 8-byte flag

int g_rank = 0;
MPI_Comm g_ctl = MPI_COMM_NULL;  // control traffic only (lazy barriers, the final check)
// Cleared by any measuring thread that finds a wrong payload; read after the threads joined.
std::atomic<bool> g_checks_ok{true};

using ep_bench::sleep_us;

// bench_util.h's barrier on the control communicator.
void lazy_barrier() { ep_bench::lazy_barrier(g_ctl); }

// The flag in a payload's first 8 bytes: 0 marks the last message.
int64_t get_flag(const unsigned char* p) {
  int64_t f;
  std::memcpy(&f, p, sizeof f);
  return f;
}
void set_flag(unsigned char* p, int64_t f) { std::memcpy(p, &f, sizeof f); }

// Records a failed payload check (the last message must carry kPattern after the flag).
void check_payload(const std::vector<unsigned char>& buf) {
  for (size_t i = sizeof(int64_t); i < buf.size(); i += std::max<size_t>(1, buf.size() / 64)) {
    if (buf[i] != kPattern) g_checks_ok = false;
  }
  if (buf.size() > sizeof(int64_t) && buf.back() != kPattern) g_checks_ok = false;
}

// One ping-pong repetition (kernels.h) of `bytes`-byte messages; send(p) / recv(p) move
// the whole buffer at p.  Both sides check the last message's payload.
template <class Send, class Recv>
Measure pingpong_bytes(bool first, size_t bytes, const Budget& b, Send send, Recv recv) {
  std::vector<unsigned char> buf(bytes, first ? kPattern : 0);
  unsigned char* p = buf.data();
  const Measure m = ep_bench::pingpong(
      first, b,
      [&](int64_t flag) {
        set_flag(p, flag);
        send(p);
      },
      [&] {
        recv(p);
        return get_flag(p);
      });
  check_payload(buf);
  return m;
}

Measure ep_pingpong(EP_Comm comm, int peer, bool first, size_t bytes, const Budget& b) {
  const int n = static_cast<int>(bytes);
  return pingpong_bytes(
      first, bytes, b, [&](unsigned char* m) { CHECK(EP_Send(m, n, MPI_BYTE, peer, kTag, comm)); },
      [&](unsigned char* m) {
        CHECK(EP_Recv(m, n, MPI_BYTE, peer, kTag, comm, EP_STATUS_IGNORE));
      });
}

// ep_pingpong with one `vec` per message: the data is every other double of a buffer of
// 2 * bytes; the gaps are never sent, so the receiver's stay 0.
Measure ep_vec_pingpong(EP_Comm comm, int peer, bool first, size_t bytes, MPI_Datatype vec,
                        const Budget& b) {
  const size_t n = bytes / sizeof(double);
  std::vector<double> buf(2 * n, 0.0);
  double pattern;
  std::memset(&pattern, kPattern, sizeof pattern);
  if (first) {
    for (size_t i = 0; i < n; ++i) buf[2 * i] = pattern;
  }
  auto* p = reinterpret_cast<unsigned char*>(buf.data());
  auto check = [&] {
    for (size_t i = 1; i < n; ++i) {
      if (std::memcmp(&buf[2 * i], &pattern, sizeof pattern) != 0 || buf[2 * i - 1] != 0.0) {
        g_checks_ok = false;
      }
    }
  };
  auto send = [&] { CHECK(EP_Send(p, 1, vec, peer, kTag, comm)); };
  auto recv = [&] { CHECK(EP_Recv(p, 1, vec, peer, kTag, comm, EP_STATUS_IGNORE)); };
  if (!first) {
    for (;;) {
      recv();
      send();
      if (get_flag(p) == 0) {
        check();
        return {};
      }
    }
  }
  double t0 = now_s();
  for (long i = 0;; ++i) {
    if (i == b.warm) t0 = now_s();
    const bool last = is_last(i, t0, b);
    set_flag(p, last ? 0 : 1);
    send();
    recv();
    if (last) {
      check();
      const long timed = i - b.warm + 1;
      return {(now_s() - t0) / static_cast<double>(timed) / 2, timed};
    }
  }
}

Measure mpi_pingpong(MPI_Comm comm, int peer, bool first, size_t bytes, const Budget& b) {
  const int n = static_cast<int>(bytes);
  return pingpong_bytes(
      first, bytes, b, [&](unsigned char* m) { CHECK(MPI_Send(m, n, MPI_BYTE, peer, kTag, comm)); },
      [&](unsigned char* m) {
        CHECK(MPI_Recv(m, n, MPI_BYTE, peer, kTag, comm, MPI_STATUS_IGNORE));
      });
}

// Records a window whose messages differ (each window's messages carry one flag).
void check_window(const int64_t* buf) {
  if (!ep_bench::uniform_window(buf, ep_bench::StreamShape{})) g_checks_ok = false;
}

Measure ep_stream(EP_Comm comm, int peer, bool sender, const Budget& b) {
  return stream<EP_Request>(
      sender, b,
      [&](int64_t* m, EP_Request* r) { CHECK(EP_Isend(m, 8, MPI_BYTE, peer, kTag, comm, r)); },
      [&](int64_t* m, EP_Request* r) { CHECK(EP_Irecv(m, 8, MPI_BYTE, peer, kTag, comm, r)); },
      [&](EP_Request* r) { CHECK(EP_Waitall(kWindow, r, EP_STATUSES_IGNORE)); },
      [&](char* a, int tag) { CHECK(EP_Send(a, 1, MPI_CHAR, peer, tag, comm)); },
      [&](char* a, int tag) { CHECK(EP_Recv(a, 1, MPI_CHAR, peer, tag, comm, EP_STATUS_IGNORE)); },
      check_window);
}

Measure mpi_stream(MPI_Comm comm, int peer, bool sender, const Budget& b) {
  return stream<MPI_Request>(
      sender, b,
      [&](int64_t* m, MPI_Request* r) { CHECK(MPI_Isend(m, 8, MPI_BYTE, peer, kTag, comm, r)); },
      [&](int64_t* m, MPI_Request* r) { CHECK(MPI_Irecv(m, 8, MPI_BYTE, peer, kTag, comm, r)); },
      [&](MPI_Request* r) { CHECK(MPI_Waitall(kWindow, r, MPI_STATUSES_IGNORE)); },
      [&](char* a, int tag) { CHECK(MPI_Send(a, 1, MPI_CHAR, peer, tag, comm)); },
      [&](char* a, int tag) {
        CHECK(MPI_Recv(a, 1, MPI_CHAR, peer, tag, comm, MPI_STATUS_IGNORE));
      },
      check_window);
}

using ep_bench::on_threads;

// The values of one figure, one per recorded repetition.
struct Series {
  std::vector<double> v;
  long iters = 0;
  void add(const Measure& m, double value) {
    v.push_back(value);
    iters += m.iters;
  }
};

struct Options {
  long min_bytes = 8;
  long max_bytes = 4L << 20;
  long factor = 2;
  int reps = 5;
  double rep_seconds = 0.05;
  std::vector<int> pairs = {1, 2, 4};
  std::string phases = "pr";
  bool vector = false;  // the ep_intra_vec series
  bool has(char p) const { return phases.find(p) != std::string::npos; }
};

[[noreturn]] void usage(const char* argv0) {
  if (g_rank == 0) {
    std::fprintf(
        stderr,
        "usage: mpiexec -n 2 %s [--min-bytes N] [--max-bytes N] [--factor F] [--reps N]\n"
        "       [--rep-seconds S] [--pairs LIST] [--phases pr] [--vector 0|1]\n"
        "  --min-bytes N    smallest ping-pong message, >= 8 (default 8)\n"
        "  --max-bytes N    largest ping-pong message, < 2 GiB (default 4194304)\n"
        "  --factor F       size step, 2-1024 (default 2)\n"
        "  --reps N         recorded repetitions per figure (default 5; +1 warm-up)\n"
        "  --rep-seconds S  timed duration of one repetition (default 0.05)\n"
        "  --pairs LIST     stream pairs of the rate phase, e.g. 1,2,4 (default; each 1-16)\n"
        "  --phases P       p = ping-pong sweep, r = message rate (default pr)\n"
        "  --vector 0|1     1: also the ep_intra_vec series (sizes multiples of 8; default 0)\n",
        argv0);
  }
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage(argv[0]);
    const char* v = argv[++i];
    if (a == "--min-bytes") {
      o.min_bytes = std::atol(v);
    } else if (a == "--max-bytes") {
      o.max_bytes = std::atol(v);
    } else if (a == "--factor") {
      o.factor = std::atol(v);
    } else if (a == "--reps") {
      o.reps = std::atoi(v);
    } else if (a == "--rep-seconds") {
      o.rep_seconds = std::atof(v);
    } else if (a == "--pairs") {
      o.pairs.clear();
      for (const char* p = v; *p;) {
        char* end = nullptr;
        const long k = std::strtol(p, &end, 10);
        if (end == p || k < 1 || k > 16) usage(argv[0]);
        o.pairs.push_back(static_cast<int>(k));
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') usage(argv[0]);
      }
    } else if (a == "--phases") {
      o.phases = v;
      if (o.phases.empty() || o.phases.find_first_not_of("pr") != std::string::npos) {
        usage(argv[0]);
      }
    } else if (a == "--vector") {
      o.vector = std::atoi(v) != 0;
    } else {
      usage(argv[0]);
    }
  }
  if (o.min_bytes < 8 || o.max_bytes < o.min_bytes || o.max_bytes >= (1L << 31) || o.factor < 2 ||
      o.factor > 1024 || o.reps < 1 || !(o.rep_seconds > 0) || o.pairs.empty() ||
      (o.vector && (o.min_bytes % 8 != 0 || o.factor % 2 != 0))) {
    usage(argv[0]);
  }
  return o;
}

void print_series(const char* kind, const char* name, long x, const Series& s, double scale) {
  const auto mm = std::minmax_element(s.v.begin(), s.v.end());
  std::printf("%s %s %ld %.6g %.6g %.6g", kind, name, x, median(s.v) * scale, *mm.first * scale,
              *mm.second * scale);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided != MPI_THREAD_MULTIPLE || size != 2) {
    if (g_rank == 0) {
      std::fprintf(stderr, "sweep_bench: needs MPI_THREAD_MULTIPLE and exactly 2 processes\n");
    }
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const Options opt = parse(argc, argv);
  const bool p0 = g_rank == 0;
  const int peer = 1 - g_rank;
  const int reps = opt.reps + 1;  // repetition 0 is a warm-up, not recorded
  CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &g_ctl));
  CHECK(EP_Init());

  std::vector<std::string> steal;  // "phase x%" for the comment lines
  ep_bench::CpuTicks phase_start = ep_bench::cpu_ticks();
  const double t_start = now_s();

  std::vector<long> sizes;
  for (long s = opt.min_bytes; s <= opt.max_bytes; s *= opt.factor) sizes.push_back(s);
  std::vector<Series> ep_intra(sizes.size()), ep_inter(sizes.size()), mpi(sizes.size()),
      ep_intra_vec(sizes.size());
  if (opt.has('p')) {
    EP_Comm intra[2] = {EP_COMM_NULL, EP_COMM_NULL};  // process 0's ranks 0 and 1
    CHECK(EP_Comm_create_endpoints(MPI_COMM_WORLD, p0 ? 2 : 0, MPI_INFO_NULL, intra));
    EP_Comm inter;  // rank = MPI rank
    CHECK(EP_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, &inter));
    MPI_Comm pp_comm;
    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &pp_comm));
    for (int r = 0; r < reps; ++r) {
      for (size_t k = 0; k < sizes.size(); ++k) {
        const size_t bytes = static_cast<size_t>(sizes[k]);
        Budget b;
        b.seconds = opt.rep_seconds;
        b.min_iters = 5;
        b.warm = bytes <= (64 << 10) ? 20 : 2;
        lazy_barrier();
        sleep_us(20000);  // the progress threads back off into their idle sleep
        Measure m = mpi_pingpong(pp_comm, peer, p0, bytes, b);
        if (r > 0 && p0) mpi[k].add(m, m.value);
        lazy_barrier();
        m = ep_pingpong(inter, peer, p0, bytes, b);
        if (r > 0 && p0) ep_inter[k].add(m, m.value);
        if (p0) {
          Measure mi[2];
          on_threads(2, [&](int i) { mi[i] = ep_pingpong(intra[i], 1 - i, i == 0, bytes, b); });
          if (r > 0) ep_intra[k].add(mi[0], mi[0].value);
          if (opt.vector) {
            MPI_Datatype vec;
            CHECK(MPI_Type_vector(static_cast<int>(bytes / 8), 1, 2, MPI_DOUBLE, &vec));
            CHECK(MPI_Type_commit(&vec));
            on_threads(2, [&](int i) {
              mi[i] = ep_vec_pingpong(intra[i], 1 - i, i == 0, bytes, vec, b);
            });
            CHECK(MPI_Type_free(&vec));
            if (r > 0) ep_intra_vec[k].add(mi[0], mi[0].value);
          }
        }
      }
    }
    lazy_barrier();
    CHECK(MPI_Comm_free(&pp_comm));
    CHECK(EP_Comm_free(&inter));
    if (p0) {
      CHECK(EP_Comm_free(&intra[0]));
      CHECK(EP_Comm_free(&intra[1]));
    }
    const ep_bench::CpuTicks now = ep_bench::cpu_ticks();
    steal.push_back("ping-pong " + ep_bench::steal_percent(phase_start, now));
    phase_start = now;
  }

  std::vector<Series> ep_rate(opt.pairs.size()), mpi_rate(opt.pairs.size());
  if (opt.has('r')) {
    Budget b;
    b.seconds = opt.rep_seconds;
    b.min_iters = 5;
    b.warm = 5;
    for (size_t q = 0; q < opt.pairs.size(); ++q) {
      const int k = opt.pairs[q];
      std::vector<EP_Comm> comms(static_cast<size_t>(k));  // process 0: 0..k-1, 1: k..2k-1
      CHECK(EP_Comm_create_endpoints(MPI_COMM_WORLD, k, MPI_INFO_NULL, comms.data()));
      std::vector<MPI_Comm> mcomms(static_cast<size_t>(k));
      for (MPI_Comm& c : mcomms) CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
      std::vector<Measure> m(static_cast<size_t>(k));
      // The sum of the concurrent streams' rates (messages per second).
      auto agg = [&] {
        double x = 0;
        long n = 0;
        for (const Measure& s : m) {
          x += static_cast<double>(s.iters) * kWindow / s.value;
          n += s.iters;
        }
        return Measure{x, n};
      };
      for (int r = 0; r < reps; ++r) {
        lazy_barrier();
        on_threads(k, [&](int i) { m[i] = ep_stream(comms[i], p0 ? k + i : i, p0, b); });
        if (r > 0 && p0) {
          const Measure a = agg();
          ep_rate[q].add(a, a.value);
        }
        lazy_barrier();
        sleep_us(20000);  // the progress threads back off into their idle sleep
        on_threads(k, [&](int i) { m[i] = mpi_stream(mcomms[i], peer, p0, b); });
        if (r > 0 && p0) {
          const Measure a = agg();
          mpi_rate[q].add(a, a.value);
        }
      }
      lazy_barrier();
      for (MPI_Comm& c : mcomms) CHECK(MPI_Comm_free(&c));
      for (EP_Comm& c : comms) CHECK(EP_Comm_free(&c));
    }
    const ep_bench::CpuTicks now = ep_bench::cpu_ticks();
    steal.push_back("rate " + ep_bench::steal_percent(phase_start, now));
  }
  const double total_s = now_s() - t_start;

  int ok = g_checks_ok ? 1 : 0, all_ok = 0;
  CHECK(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, g_ctl));
  CHECK(EP_Finalize());
  if (p0) {
    std::printf(
        "# sweep_bench: %d recorded repetitions of ~%.3f s per figure (+1 warm-up), %.1f s\n",
        opt.reps, opt.rep_seconds, total_s);
    std::string st;
    for (const std::string& s : steal) st += (st.empty() ? "" : ", ") + s;
    std::printf("# host steal time per phase: %s\n", st.empty() ? "n/a" : st.c_str());
    std::printf("# pp SERIES BYTES MEDIAN_US MIN_US MAX_US MEDIAN_MIB_PER_S TIMED_ROUND_TRIPS\n");
    for (size_t k = 0; k < sizes.size() && opt.has('p'); ++k) {
      const struct {
        const char* name;
        const Series& s;
      } rows[] = {{"ep_intra", ep_intra[k]},
                  {"ep_inter", ep_inter[k]},
                  {"mpi", mpi[k]},
                  {"ep_intra_vec", ep_intra_vec[k]}};
      for (const auto& row : rows) {
        if (row.s.v.empty()) continue;
        print_series("pp", row.name, sizes[k], row.s, 1e6);
        std::printf(" %.6g %ld\n",
                    static_cast<double>(sizes[k]) / median(row.s.v) / (1024.0 * 1024.0),
                    row.s.iters);
      }
    }
    std::printf("# rate SERIES PAIRS MEDIAN_MSG_PER_S MIN MAX TIMED_WINDOWS\n");
    for (size_t q = 0; q < opt.pairs.size() && opt.has('r'); ++q) {
      print_series("rate", "ep", opt.pairs[q], ep_rate[q], 1);
      std::printf(" %ld\n", ep_rate[q].iters);
      print_series("rate", "mpi_threads", opt.pairs[q], mpi_rate[q], 1);
      std::printf(" %ld\n", mpi_rate[q].iters);
    }
    std::printf("checks_ok %d\n", all_ok);
    std::fflush(stdout);
  }
  CHECK(MPI_Comm_free(&g_ctl));
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
