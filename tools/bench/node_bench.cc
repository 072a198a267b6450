// node_bench.cc - how libep scales with endpoints per process, against MPI everywhere (one
// MPI process per endpoint) and against MPI_THREAD_MULTIPLE (threads of two processes).
// One mode per run: tools/bench/node_report.sh runs the modes in turn on the same node and
// puts their figures side by side.
//
//   mpiexec -n P node_bench --mode libep|mpi|mt [--threads T] [--rows LIST]
//                           [--seconds S] [--reps N]
//
// A unit is what communicates: an endpoint (libep), an MPI process (mpi) or a thread (mt).
// Two layouts:
//   in-process rows (names ending _1p), T units:
//     libep  mpiexec -n 1 node_bench --mode libep --threads T: T endpoints of one process
//            (EP_Comm_create_endpoints on MPI_COMM_WORLD), one thread each;
//     mpi    mpiexec -n T node_bench --mode mpi: plain MPI on MPI_COMM_WORLD, one unit per
//            process, MPI_THREAD_SINGLE.
//   two-process rows (names ending _2p), 2T units, T on each side:
//     libep  mpiexec -n 2 ... --mode libep --threads T: T endpoints per process;
//     mpi    mpiexec -n 2T ... --mode mpi;
//     mt     mpiexec -n 2 ... --mode mt --threads T: T threads per process under
//            MPI_THREAD_MULTIPLE, thread i on its own dup of MPI_COMM_WORLD (the rate and
//            bandwidth rows only).
// Unit u is endpoint or rank u (libep, mpi), or thread u % T of process u / T (mt).
//
// Rows (us: lower is better; M msg/s, MiB/s: higher is better):
//   rt64_1p        64 B round trip (64 MPI_BYTE), unit 2k with 2k+1, the T/2 pairs at once;
//                  us per round trip, the median over the pairs
//   rtvec_1p       the same with one MPI_Type_vector(8, 1, 2, MPI_DOUBLE): a 64-byte
//                  payload spread over 128 bytes
//   rate8_1p       8 B message rate over the same pairs (kernels.h's stream: windows of 64);
//                  M msg/s, the sum over the pairs (per_pair: divided by the pairs)
//   allreduce8_1p  MPI_SUM allreduce of one double over the T units; us
//   barrier_1p     barrier over the T units; us
//   rate8_2p       8 B message rate, unit i streams to unit T+i (T pairs); M msg/s, summed
//   bw64k_2p       the same pairs streaming 64 KiB messages in windows of 16; MiB/s, summed
//   barrier_2p, allreduce8_2p, allreduce1m_2p (1 MiB of doubles, MPI_SUM), bcast8_2p,
//   bcast1m_2p (MPI_BYTE from unit 0), alltoall64_2p (64 B per pair of units): us
//   dup_2p         dup of the units' communicator (libep: the endpoints communicator; mpi:
//                  MPI_COMM_WORLD) + its first 8 B allreduce + free; us
// The point-to-point rows run for a time budget (--seconds) per repetition, the sender
// telling its peer in-band when to stop.  A collective row's warm-up finds n, the calls
// that take about --seconds, agreed on by all units; every repetition then times n calls
// and one barrier after them (the time until every unit is done: a bcast's root returns
// early), and its figure is the slowest unit's time per call.  Repetition 0 is a warm-up, not
// recorded; the figure is the median of the recorded ones.
//
// Output of rank 0, one line per row, space-separated key=value fields:
//   row=NAME mode=MODE procs=P threads=TH T=T value=MEDIAN unit=UNIT min=MIN max=MAX
//     better=lower|higher reps=N values=V1,V2,...[ per_pair=X]
// (T: the units of the in-process layout or of one side of the two-process one), then
// `checks_ok=1` (0: some payload arrived wrong; the exit status is then 1).  Lines starting
// with '#' are comments.  Uses only the public API (ep/ep.h) and MPI.
#include <ep/ep.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tools/bench/bench_util.h"
#include "tools/bench/kernels.h"

namespace {

using ep_bench::Budget;
using ep_bench::median;
using ep_bench::now_s;
using ep_bench::StreamShape;

constexpr int kTag = 7;
constexpr double kNone = std::numeric_limits<double>::quiet_NaN();  // a unit without a figure
constexpr long kMinCalls = 3, kMaxCalls = 1000000;                  // collective calls per rep

int g_rank = 0;
MPI_Comm g_ctl = MPI_COMM_NULL;  // control traffic only (barriers between reps, results)
// Cleared by any unit that finds a wrong payload; read after the threads joined.
std::atomic<bool> g_checks_ok{true};

enum class Mode { kLibep, kMpi, kMt };
enum class Layout { kOneProcess, kTwoProcesses };
enum class Kind {
  kRoundTrip,
  kRoundTripVector,
  kRate,
  kBandwidth,
  kBarrier,
  kAllreduce,
  kBcast,
  kAlltoall,
  kDup
};

struct RowSpec {
  const char* name;
  Layout layout;
  Kind kind;
  int bytes;  // message / buffer size per unit (alltoall: per pair of units)
  const char* unit;
};

constexpr Layout k1 = Layout::kOneProcess, k2 = Layout::kTwoProcesses;
const RowSpec kRows[] = {
    {"rt64_1p", k1, Kind::kRoundTrip, 64, "us"},
    {"rtvec_1p", k1, Kind::kRoundTripVector, 64, "us"},
    {"rate8_1p", k1, Kind::kRate, 8, "Mmsg/s"},
    {"allreduce8_1p", k1, Kind::kAllreduce, 8, "us"},
    {"barrier_1p", k1, Kind::kBarrier, 0, "us"},
    {"rate8_2p", k2, Kind::kRate, 8, "Mmsg/s"},
    {"bw64k_2p", k2, Kind::kBandwidth, 64 << 10, "MiB/s"},
    {"barrier_2p", k2, Kind::kBarrier, 0, "us"},
    {"allreduce8_2p", k2, Kind::kAllreduce, 8, "us"},
    {"allreduce1m_2p", k2, Kind::kAllreduce, 1 << 20, "us"},
    {"bcast8_2p", k2, Kind::kBcast, 8, "us"},
    {"bcast1m_2p", k2, Kind::kBcast, 1 << 20, "us"},
    {"alltoall64_2p", k2, Kind::kAlltoall, 64, "us"},
    {"dup_2p", k2, Kind::kDup, 8, "us"},
};

bool is_p2p(Kind k) {
  return k == Kind::kRoundTrip || k == Kind::kRoundTripVector || k == Kind::kRate ||
         k == Kind::kBandwidth;
}
bool higher_better(Kind k) { return k == Kind::kRate || k == Kind::kBandwidth; }
const char* mode_name(Mode m) {
  return m == Mode::kLibep ? "libep" : m == Mode::kMpi ? "mpi" : "mt";
}

// ---- point-to-point: one unit's end of a pair ----------------------------------------------

struct EpLink {
  using Req = EP_Request;
  EP_Comm comm;
  int peer;
  void send(const void* b, int n, MPI_Datatype t, int tag) const {
    CHECK(EP_Send(b, n, t, peer, tag, comm));
  }
  void recv(void* b, int n, MPI_Datatype t, int tag) const {
    CHECK(EP_Recv(b, n, t, peer, tag, comm, EP_STATUS_IGNORE));
  }
  void isend(const void* b, int n, MPI_Datatype t, Req* r) const {
    CHECK(EP_Isend(b, n, t, peer, kTag, comm, r));
  }
  void irecv(void* b, int n, MPI_Datatype t, Req* r) const {
    CHECK(EP_Irecv(b, n, t, peer, kTag, comm, r));
  }
  void waitall(int n, Req* r) const { CHECK(EP_Waitall(n, r, EP_STATUSES_IGNORE)); }
};

struct MpiLink {
  using Req = MPI_Request;
  MPI_Comm comm;
  int peer;
  void send(const void* b, int n, MPI_Datatype t, int tag) const {
    CHECK(MPI_Send(b, n, t, peer, tag, comm));
  }
  void recv(void* b, int n, MPI_Datatype t, int tag) const {
    CHECK(MPI_Recv(b, n, t, peer, tag, comm, MPI_STATUS_IGNORE));
  }
  void isend(const void* b, int n, MPI_Datatype t, Req* r) const {
    CHECK(MPI_Isend(b, n, t, peer, kTag, comm, r));
  }
  void irecv(void* b, int n, MPI_Datatype t, Req* r) const {
    CHECK(MPI_Irecv(b, n, t, peer, kTag, comm, r));
  }
  void waitall(int n, Req* r) const { CHECK(MPI_Waitall(n, r, MPI_STATUSES_IGNORE)); }
};

// One round-trip repetition of 64 bytes of payload: 8 doubles sent as 64 MPI_BYTE, or the
// even ones of 16 doubles sent as one `vec` (every other double).  The flag travels in
// double 0.  Both sides check the last payload, and that the gaps were left alone.  Returns
// the initiator's us per round trip (kNone on the other side).
template <class Link>
double round_trip(const Link& l, bool first, const Budget& b, MPI_Datatype vec) {
  double buf[16] = {};
  const int stride = vec == MPI_DATATYPE_NULL ? 1 : 2;
  auto pattern = [](int k) { return 0.5 + k; };
  if (first) {
    for (int k = 1; k < 8; ++k) buf[k * stride] = pattern(k);
  }
  auto move = [&](bool out) {
    if (stride == 2) {
      out ? l.send(buf, 1, vec, kTag) : l.recv(buf, 1, vec, kTag);
    } else {
      out ? l.send(buf, 64, MPI_BYTE, kTag) : l.recv(buf, 64, MPI_BYTE, kTag);
    }
  };
  const ep_bench::Measure m = ep_bench::pingpong(
      first, b,
      [&](int64_t flag) {
        buf[0] = static_cast<double>(flag);
        move(true);
      },
      [&] {
        move(false);
        return static_cast<int64_t>(buf[0]);
      });
  for (int k = 1; k < 8; ++k) {
    if (buf[k * stride] != pattern(k)) g_checks_ok = false;
    if (stride == 2 && buf[2 * k - 1] != 0) g_checks_ok = false;
  }
  return first ? 2 * m.value * 1e6 : kNone;
}

// One stream repetition (kernels.h) of shape's messages.  Returns the sender's messages
// per second (kNone on the receiving side).
template <class Link>
double stream_rate(const Link& l, bool sender, const Budget& b, const StreamShape& shape) {
  using Req = typename Link::Req;
  const int bytes = static_cast<int>(shape.words * sizeof(int64_t));
  const ep_bench::Measure m = ep_bench::stream_shaped<Req>(
      sender, b, shape, [&](int64_t* msg, Req* r) { l.isend(msg, bytes, MPI_BYTE, r); },
      [&](int64_t* msg, Req* r) { l.irecv(msg, bytes, MPI_BYTE, r); },
      [&](Req* r) { l.waitall(shape.window, r); },
      [&](char* a, int tag) { l.send(a, 1, MPI_CHAR, tag); },
      [&](char* a, int tag) { l.recv(a, 1, MPI_CHAR, tag); },
      [&](const int64_t* buf) {
        if (!ep_bench::uniform_window(buf, shape)) g_checks_ok = false;
      });
  if (!sender) return kNone;
  return static_cast<double>(m.iters) * shape.window / m.value;
}

// ---- collectives: one unit's calls ---------------------------------------------------------

struct EpColl {
  EP_Comm comm;
  void barrier() const { CHECK(EP_Barrier(comm)); }
  void allreduce(const double* in, double* out, int n, MPI_Op op) const {
    CHECK(EP_Allreduce(in, out, n, MPI_DOUBLE, op, comm));
  }
  void bcast(unsigned char* b, int n) const { CHECK(EP_Bcast(b, n, MPI_BYTE, 0, comm)); }
  void alltoall(const unsigned char* in, unsigned char* out, int n) const {
    CHECK(EP_Alltoall(in, n, MPI_BYTE, out, n, MPI_BYTE, comm));
  }
  void dup_allreduce_free(const double* in, double* out) const {
    EP_Comm d;
    CHECK(EP_Comm_dup(comm, &d));
    CHECK(EP_Allreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, d));
    CHECK(EP_Comm_free(&d));
  }
};

struct MpiColl {
  MPI_Comm comm;
  void barrier() const { CHECK(MPI_Barrier(comm)); }
  void allreduce(const double* in, double* out, int n, MPI_Op op) const {
    CHECK(MPI_Allreduce(in, out, n, MPI_DOUBLE, op, comm));
  }
  void bcast(unsigned char* b, int n) const { CHECK(MPI_Bcast(b, n, MPI_BYTE, 0, comm)); }
  void alltoall(const unsigned char* in, unsigned char* out, int n) const {
    CHECK(MPI_Alltoall(in, n, MPI_BYTE, out, n, MPI_BYTE, comm));
  }
  void dup_allreduce_free(const double* in, double* out) const {
    MPI_Comm d;
    CHECK(MPI_Comm_dup(comm, &d));
    CHECK(MPI_Allreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, d));
    CHECK(MPI_Comm_free(&d));
  }
};

// One collective repetition of unit `u` of `units`.  At the warm-up (*calls == 0) it finds
// the calls that take about `seconds` (the slowest unit's time decides, so every unit
// finds the same count), stores it in *calls and returns kNone; afterwards it times *calls
// calls and a barrier after them, and returns us per call.  The last call's result is
// checked.
template <class Coll>
double collective(const Coll& c, Kind kind, int bytes, int u, int units, double seconds,
                  long* calls) {
  const size_t doubles = static_cast<size_t>(std::max(bytes, 8)) / sizeof(double);
  std::vector<double> din(doubles, 1.0), dout(doubles, 0.0);
  const size_t block = static_cast<size_t>(std::max(bytes, 1));
  // bcast: one block; alltoall: one per unit, in and out.
  std::vector<unsigned char> bin(kind == Kind::kAlltoall ? block * static_cast<size_t>(units)
                                 : kind == Kind::kBcast  ? block
                                                         : 0),
      bout(kind == Kind::kAlltoall ? bin.size() : 0);
  auto tag_of = [](int unit) { return static_cast<unsigned char>(1 + unit % 251); };
  if (kind == Kind::kAlltoall) std::fill(bin.begin(), bin.end(), tag_of(u));
  if (kind == Kind::kBcast && u == 0) std::fill(bin.begin(), bin.begin() + bytes, tag_of(0));
  auto call = [&] {
    switch (kind) {
      case Kind::kBarrier:
        c.barrier();
        break;
      case Kind::kAllreduce:
        c.allreduce(din.data(), dout.data(), static_cast<int>(doubles), MPI_SUM);
        break;
      case Kind::kBcast:
        c.bcast(bin.data(), bytes);
        break;
      case Kind::kAlltoall:
        c.alltoall(bin.data(), bout.data(), bytes);
        break;
      case Kind::kDup:
        c.dup_allreduce_free(din.data(), dout.data());
        break;
      default:
        break;
    }
  };
  // Between two barriers, so that no unit's clock runs while others still work on its
  // calls (a root of a bcast returns before the others have its data).
  auto timed = [&](long n) {
    c.barrier();
    const double t0 = now_s();
    for (long i = 0; i < n; ++i) call();
    c.barrier();
    return now_s() - t0;
  };
  double result = kNone;
  if (*calls == 0) {
    for (long k = 1;; k *= 4) {
      const double t = timed(k);
      double slowest = 0;
      c.allreduce(&t, &slowest, 1, MPI_MAX);
      if (slowest >= seconds / 4 || k >= kMaxCalls) {
        const double n = static_cast<double>(k) * seconds / std::max(slowest, 1e-9);
        *calls = static_cast<long>(
            std::clamp(n, static_cast<double>(kMinCalls), static_cast<double>(kMaxCalls)));
        break;
      }
    }
  } else {
    result = timed(*calls) / static_cast<double>(*calls) * 1e6;
  }
  const bool ok = [&] {
    switch (kind) {
      case Kind::kAllreduce:
      case Kind::kDup:
        return dout[0] == units && dout[doubles - 1] == units;
      case Kind::kBcast:
        return bin[0] == tag_of(0) && bin[static_cast<size_t>(bytes) - 1] == tag_of(0);
      case Kind::kAlltoall:
        for (int j = 0; j < units; ++j) {
          if (bout[block * static_cast<size_t>(j)] != tag_of(j)) return false;
        }
        return true;
      default:
        return true;
    }
  }();
  if (!ok) g_checks_ok = false;
  return result;
}

// ---- the run -------------------------------------------------------------------------------

struct Setup {
  Mode mode = Mode::kLibep;
  Layout layout = Layout::kOneProcess;
  int procs = 1;
  int threads = 1;  // units of this process
  int side = 1;     // T: all units (in-process layout) or one side's (two-process layout)
  int units = 1;
  int first_unit = 0;                    // this process's first unit
  std::vector<EP_Comm> ep;               // libep: this process's endpoints
  std::vector<MPI_Comm> mt;              // mt: one dup of MPI_COMM_WORLD per thread
  std::vector<long> calls;               // collectives: each unit's calls per repetition
  MPI_Datatype vec = MPI_DATATYPE_NULL;  // rtvec_1p's type
};

struct Options {
  Mode mode = Mode::kLibep;
  int threads = 0;  // 0: the mode's default (2; mpi: 1)
  std::vector<const RowSpec*> rows;
  double seconds = 0.1;
  int reps = 5;
};

// Unit i of this process in one repetition of `row`: its figure, or kNone.
double unit_rep(const RowSpec& row, Setup& s, int i, double seconds) {
  const int u = s.first_unit + i;
  if (is_p2p(row.kind)) {
    int peer;
    bool first;
    if (s.layout == Layout::kOneProcess) {
      peer = u ^ 1;
      first = u % 2 == 0;
      if (peer >= s.units) return kNone;  // an odd unit count: the last one sits out
    } else {
      peer = (u + s.side) % s.units;
      first = u < s.side;
    }
    auto run = [&](const auto& link) {
      Budget b;
      b.seconds = seconds;
      switch (row.kind) {
        case Kind::kRoundTrip:
          return round_trip(link, first, b, MPI_DATATYPE_NULL);
        case Kind::kRoundTripVector:
          return round_trip(link, first, b, s.vec);
        case Kind::kRate:
          b.min_iters = 5;
          b.warm = 5;
          return stream_rate(link, first, b, StreamShape{});
        default: {  // kBandwidth
          b.min_iters = 3;
          b.warm = 2;
          const StreamShape shape{16, static_cast<size_t>(row.bytes) / sizeof(int64_t)};
          return stream_rate(link, first, b, shape) * row.bytes;
        }
      }
    };
    switch (s.mode) {
      case Mode::kLibep:
        return run(EpLink{s.ep[static_cast<size_t>(i)], peer});
      case Mode::kMpi:
        return run(MpiLink{MPI_COMM_WORLD, peer});
      default:  // mt: the peer thread's process, on this thread's communicator
        return run(MpiLink{s.mt[static_cast<size_t>(i)], peer / s.threads});
    }
  }
  long* calls = &s.calls[static_cast<size_t>(i)];
  if (s.mode == Mode::kLibep) {
    return collective(EpColl{s.ep[static_cast<size_t>(i)]}, row.kind, row.bytes, u, s.units,
                      seconds, calls);
  }
  return collective(MpiColl{MPI_COMM_WORLD}, row.kind, row.bytes, u, s.units, seconds, calls);
}

// Runs every repetition of `row`; rank 0 prints its line.
void run_row(const RowSpec& row, Setup& s, const Options& o) {
  std::fill(s.calls.begin(), s.calls.end(), 0);
  std::vector<double> values;  // one per recorded repetition (rank 0)
  std::vector<double> mine(static_cast<size_t>(s.threads)), all(static_cast<size_t>(s.units));
  int pairs = s.layout == Layout::kOneProcess ? s.units / 2 : s.side;
  for (int r = 0; r <= o.reps; ++r) {
    ep_bench::lazy_barrier(g_ctl);
    std::fill(mine.begin(), mine.end(), kNone);
    auto fn = [&](int i) { mine[static_cast<size_t>(i)] = unit_rep(row, s, i, o.seconds); };
    if (s.threads == 1) {
      fn(0);
    } else {
      ep_bench::on_threads(s.threads, fn);
    }
    CHECK(MPI_Gather(mine.data(), s.threads, MPI_DOUBLE, all.data(), s.threads, MPI_DOUBLE, 0,
                     g_ctl));
    if (r == 0 || g_rank != 0) continue;
    std::vector<double> got;
    for (double v : all) {
      if (!std::isnan(v)) got.push_back(v);
    }
    if (got.empty()) continue;
    double v;
    switch (row.kind) {
      case Kind::kRoundTrip:
      case Kind::kRoundTripVector:
        v = median(got);
        break;
      case Kind::kRate:       // messages/s -> M msg/s
      case Kind::kBandwidth:  // bytes/s -> MiB/s
        v = 0;
        for (double x : got) v += x;
        v /= row.kind == Kind::kRate ? 1e6 : 1024.0 * 1024.0;
        break;
      default:  // collectives: the slowest unit
        v = *std::max_element(got.begin(), got.end());
    }
    values.push_back(v);
  }
  if (g_rank != 0 || values.empty()) return;
  const double med = median(values);
  const auto mm = std::minmax_element(values.begin(), values.end());
  std::string list;
  for (double v : values) {
    char x[32];
    std::snprintf(x, sizeof x, "%s%.6g", list.empty() ? "" : ",", v);
    list += x;
  }
  std::printf(
      "row=%s mode=%s procs=%d threads=%d T=%d value=%.6g unit=%s min=%.6g max=%.6g "
      "better=%s reps=%zu values=%s",
      row.name, mode_name(s.mode), s.procs, s.threads, s.side, med, row.unit, *mm.first, *mm.second,
      higher_better(row.kind) ? "higher" : "lower", values.size(), list.c_str());
  if (row.kind == Kind::kRate) std::printf(" per_pair=%.6g", med / pairs);
  std::printf("\n");
  std::fflush(stdout);
}

[[noreturn]] void usage(const char* argv0, const char* why) {
  if (g_rank == 0) {
    std::fprintf(
        stderr,
        "node_bench: %s\n"
        "usage: mpiexec -n P %s --mode libep|mpi|mt [--threads T] [--rows LIST] [--seconds S]\n"
        "       [--reps N]\n"
        "  --mode M      libep: T endpoints per process; mpi: plain MPI, one unit per process;\n"
        "                mt: T threads per process under MPI_THREAD_MULTIPLE (2 processes)\n"
        "  --threads T   units per process (libep, mt; default 2); mpi: 1\n"
        "  --rows LIST   comma-separated rows, all of one layout; 1p / 2p: every row of that\n"
        "                layout the mode runs (default 1p)\n"
        "  --seconds S   timed part of one repetition (default 0.1)\n"
        "  --reps N      recorded repetitions per row (default 5; +1 warm-up)\n"
        "  P: in-process rows (_1p): libep 1, mpi T; two-process rows (_2p): libep and mt 2,\n"
        "     mpi 2T\n",
        why, argv0);
  }
  MPI_Finalize();
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  std::string rows = "1p";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage(argv[0], ("no value after " + a).c_str());
    const char* v = argv[++i];
    if (a == "--mode") {
      const std::string m = v;
      if (m == "libep") {
        o.mode = Mode::kLibep;
      } else if (m == "mpi") {
        o.mode = Mode::kMpi;
      } else if (m == "mt") {
        o.mode = Mode::kMt;
      } else {
        usage(argv[0], "--mode must be libep, mpi or mt");
      }
    } else if (a == "--threads") {
      o.threads = std::atoi(v);
      if (o.threads < 1 || o.threads > 1024) usage(argv[0], "--threads must be 1-1024");
    } else if (a == "--rows") {
      rows = v;
    } else if (a == "--seconds") {
      o.seconds = std::atof(v);
      if (!(o.seconds > 0)) usage(argv[0], "--seconds must be positive");
    } else if (a == "--reps") {
      o.reps = std::atoi(v);
      if (o.reps < 1) usage(argv[0], "--reps must be at least 1");
    } else {
      usage(argv[0], ("unknown option " + a).c_str());
    }
  }
  if (o.threads == 0) o.threads = o.mode == Mode::kMpi ? 1 : 2;
  if (o.mode == Mode::kMpi && o.threads != 1) usage(argv[0], "--mode mpi runs --threads 1");
  for (size_t at = 0; at <= rows.size();) {
    size_t end = rows.find(',', at);
    if (end == std::string::npos) end = rows.size();
    const std::string name = rows.substr(at, end - at);
    at = end + 1;
    bool found = false;
    for (const RowSpec& r : kRows) {
      const bool group = (name == "1p" && r.layout == k1) || (name == "2p" && r.layout == k2);
      // mt is the baseline of the two-process point-to-point rows only.
      if (group && o.mode == Mode::kMt && !(r.layout == k2 && is_p2p(r.kind))) continue;
      if (group || name == r.name) {
        o.rows.push_back(&r);
        found = true;
      }
    }
    if (!found) usage(argv[0], ("unknown row " + name).c_str());
  }
  for (const RowSpec* r : o.rows) {
    if (r->layout != o.rows[0]->layout) usage(argv[0], "--rows mixes _1p and _2p rows");
    if (o.mode == Mode::kMt && !(r->layout == k2 && is_p2p(r->kind))) {
      usage(argv[0], ("--mode mt does not run " + std::string(r->name)).c_str());
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // The MPI everywhere baseline is what such programs run: MPI_THREAD_SINGLE.
  bool multiple = true;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--mode") && !std::strcmp(argv[i + 1], "mpi")) multiple = false;
  }
  int provided = 0;
  CHECK(
      MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided));
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (multiple && provided != MPI_THREAD_MULTIPLE) usage(argv[0], "no MPI_THREAD_MULTIPLE");
  const Options o = parse(argc, argv);

  Setup s;
  s.mode = o.mode;
  s.layout = o.rows[0]->layout;
  s.procs = size;
  s.threads = o.threads;
  s.units = size * o.threads;
  s.first_unit = g_rank * o.threads;
  s.side = s.layout == k1 ? s.units : s.units / 2;
  s.calls.assign(static_cast<size_t>(s.threads), 0);
  if (s.layout == k1 && ((o.mode == Mode::kLibep && size != 1) || s.units < 2)) {
    usage(argv[0], "in-process rows: libep runs on 1 process (--threads >= 2), mpi on >= 2");
  }
  if (s.layout == k2 && (o.mode == Mode::kMpi ? size % 2 != 0 : size != 2)) {
    usage(argv[0], "two-process rows: libep and mt run on 2 processes, mpi on an even count");
  }
  CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &g_ctl));
  CHECK(MPI_Type_vector(8, 1, 2, MPI_DOUBLE, &s.vec));
  CHECK(MPI_Type_commit(&s.vec));
  if (o.mode == Mode::kLibep) {
    CHECK(EP_Init());
    s.ep.resize(static_cast<size_t>(s.threads));
    CHECK(EP_Comm_create_endpoints(MPI_COMM_WORLD, s.threads, MPI_INFO_NULL, s.ep.data()));
  } else if (o.mode == Mode::kMt) {
    s.mt.resize(static_cast<size_t>(s.threads));
    for (MPI_Comm& c : s.mt) CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
  }
  if (g_rank == 0) {
    std::printf("# node_bench mode=%s procs=%d threads=%d T=%d seconds=%g reps=%d\n",
                mode_name(o.mode), s.procs, s.threads, s.side, o.seconds, o.reps);
    std::fflush(stdout);
  }
  const double t0 = now_s();
  for (const RowSpec* r : o.rows) run_row(*r, s, o);

  for (EP_Comm& c : s.ep) CHECK(EP_Comm_free(&c));
  if (o.mode == Mode::kLibep) CHECK(EP_Finalize());
  for (MPI_Comm& c : s.mt) CHECK(MPI_Comm_free(&c));
  int ok = g_checks_ok ? 1 : 0, all_ok = 0;
  CHECK(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, g_ctl));
  if (g_rank == 0) {
    std::printf("# %.1f s\nchecks_ok=%d\n", now_s() - t0, all_ok);
    std::fflush(stdout);
  }
  CHECK(MPI_Type_free(&s.vec));
  CHECK(MPI_Comm_free(&g_ctl));
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
