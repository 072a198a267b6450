// p2p_bench.cc - point-to-point benchmarks of libep against their baselines.
//
// Run as `mpiexec -n 2 p2p_bench [--reps N] [--rep-seconds S] [--phases abcdef]`.
// Process 0 prints one markdown table: every libep figure next to its baseline,
// measured in the same run (repetitions interleaved where the setup allows), the
// ratio of the medians and the target.
//
//   a. 8-byte ping-pong between 2 endpoints of ONE process (2 threads of process 0;
//      process 1 creates no endpoint and sleeps) vs 2 threads ping-ponging on one
//      std::atomic word (the hardware limit).                       target <= 3x
//   b. 8-byte ping-pong between 1 endpoint in each of the 2 processes vs
//      MPI_Send/MPI_Recv on a dup of MPI_COMM_WORLD, measured (b) after EP_Init with
//      the libep progress thread idle and (b') before EP_Init.      target <= 1.5x
//   c. message rate: 2 endpoints per process, endpoint i of process 0 streams 8-byte
//      messages to endpoint i of process 1 in windows of 64 (Isend x64 + Waitall;
//      receiver Irecv x64 + Waitall, then a 1-message ack), vs 2 threads per process
//      doing the same with MPI on their own dup of MPI_COMM_WORLD.  target >= 2x
//      --place-c pins the four stream threads (both halves alike; the progress
//      threads stay where they are): `process` puts each process's two on core
//      (rank), `crossed` thread i of process 0 on core i and of process 1 on core
//      1-i (a stream's two ends and a process's two threads on different cores),
//      `stream` thread i of both processes on core i (a stream's two ends share one).
//   d. 8-byte ping-pong across the processes on one endpoints communicator while 1000
//      more (EP_Comm_dup) are alive vs the same communicator alone (measured before
//      the dups exist); d'' repeats the baseline after the 1000 were freed.  Each
//      repetition measures all of them in turn, creating and freeing the 1000 in
//      between (about 40 ms), so that a host that changes speed during the phase
//      (README, "How to read") affects both sides of the ratio alike.
//                                                                   target <= 1.5x
//   e. 8-byte ping-pong across the processes on one endpoints communicator after
//      10,000 EP_Comm_dup/EP_Comm_free and 1,000 EP_Comm_split/EP_Comm_free on
//      another one, vs the same before that churn.                  target <= 1.5x
//   f. persistent requests against the nonpersistent calls they repeat, both libep:
//      f   8-byte ping-pong, 1 endpoint in each of the 2 processes, every message a
//          send and a receive request waited for in turn: EP_Start + EP_Wait on two
//          persistent requests (EP_Send_init/EP_Recv_init) vs EP_Isend/EP_Irecv +
//          EP_Wait;                                               target <= 1.05x
//      f'  the same between 2 endpoints of process 0;             target <= 1.05x
//      f'' c's message rate (2 streams, windows of 64) with every request persistent
//          (EP_Start of each + EP_Waitall) vs c's EP_Isend/EP_Irecv + EP_Waitall.
//                                                                   target >= 0.95x
//      (A started persistent send/receive must cost no more than EP_Isend/EP_Irecv;
//      the targets leave 5% to noise.)
//
// Each repetition runs for a time budget (--rep-seconds) after a warm-up; the peer
// learns in-band when to stop.  Latencies are one-way (round trip / 2), the mean of
// one repetition; the table shows the median over the repetitions, the detail table
// min / median / max.  Uses only the public API (ep/ep.h) and MPI.
#include <ep/ep.h>
#include <mpi.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tools/bench/bench_util.h"
#include "tools/bench/kernels.h"

namespace {

using ep_bench::median;
using ep_bench::now_s;
using ep_bench::Budget;
using ep_bench::is_last;
using ep_bench::kAckTag;
using ep_bench::kReadyTag;
using ep_bench::kWindow;
using ep_bench::Measure;
using ep_bench::stream;

#define CHECK_EP(call)                                                                           \
  do {                                                                                           \
    int rc_ = (call);                                                                            \
    if (rc_ != EP_SUCCESS) {                                                                     \
      char s_[EP_MAX_ERROR_STRING];                                                              \
      int n_ = 0;                                                                                \
      EP_Error_string(rc_, s_, &n_);                                                             \
      std::fprintf(stderr, "p2p_bench: %s failed: %s (%s:%d)\n", #call, s_, __FILE__, __LINE__); \
      std::fflush(stderr);                                                                       \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                              \
    }                                                                                            \
  } while (0)

#define CHECK_MPI(call)                                                                    \
  do {                                                                                     \
    int rc_ = (call);                                                                      \
    if (rc_ != MPI_SUCCESS) {                                                              \
      std::fprintf(stderr, "p2p_bench: %s failed with %d (%s:%d)\n", #call, rc_, __FILE__, \
                   __LINE__);                                                              \
      std::fflush(stderr);                                                                 \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                        \
    }                                                                                      \
  } while (0)

constexpr int kTag = 7;
constexpr int kExtraComms = 1000;
constexpr int kChurnDups = 10000, kChurnSplits = 1000;

int g_rank = 0;
MPI_Comm g_ctl = MPI_COMM_NULL;  // control traffic only (lazy barriers, results)

using ep_bench::sleep_us;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// bench_util.h's barrier on the control communicator.
void lazy_barrier(long poll_us = 200) { ep_bench::lazy_barrier(g_ctl, poll_us); }

std::string loadavg() {
  char s[128] = {};
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (!std::fgets(s, sizeof s, f)) s[0] = 0;
    std::fclose(f);
  }
  std::string r(s);
  size_t cut = 0;  // the three averages only
  for (int k = 0; k < 3 && cut != std::string::npos; ++k) cut = r.find(' ', cut + 1);
  return r.substr(0, cut);
}

// A fixed set of worker threads; run(fn) executes fn(i) on worker i and waits.
class Team {
 public:
  explicit Team(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this, i] { loop(i); });
  }
  ~Team() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
      ++gen_;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void run(const std::function<void(int)>& fn) {
    std::unique_lock<std::mutex> l(mu_);
    fn_ = &fn;
    pending_ = static_cast<int>(threads_.size());
    ++gen_;
    cv_.notify_all();
    done_cv_.wait(l, [&] { return pending_ == 0; });
    fn_ = nullptr;
  }

 private:
  void loop(int i) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)>* fn;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return gen_ != seen; });
        seen = gen_;
        if (stop_) return;
        fn = fn_;
      }
      (*fn)(i);
      std::lock_guard<std::mutex> l(mu_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int)>* fn_ = nullptr;
  uint64_t gen_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// ---- kernels -------------------------------------------------------------------------------
//
// Every kernel runs for a time budget: the initiator (ping-pong) or sender (stream)
// decides when to stop and tells its peer in-band, in the payload of the last
// message, so both sides always agree on the iteration count.

// One ping-pong repetition (kernels.h) of one 8-byte message: send(m) / recv(m) move the
// message at m.
template <class Send, class Recv>
Measure pingpong8(bool first, const Budget& b, Send send, Recv recv) {
  int64_t msg = 1;
  return ep_bench::pingpong(
      first, b,
      [&](int64_t flag) {
        msg = flag;
        send(&msg);
      },
      [&] {
        recv(&msg);
        return msg;
      });
}

Measure ep_pingpong(EP_Comm comm, int peer, bool first, const Budget& b) {
  return pingpong8(
      first, b, [&](int64_t* m) { CHECK_EP(EP_Send(m, 8, MPI_BYTE, peer, kTag, comm)); },
      [&](int64_t* m) { CHECK_EP(EP_Recv(m, 8, MPI_BYTE, peer, kTag, comm, EP_STATUS_IGNORE)); });
}

Measure mpi_pingpong(MPI_Comm comm, int peer, bool first, const Budget& b) {
  return pingpong8(
      first, b, [&](int64_t* m) { CHECK_MPI(MPI_Send(m, 8, MPI_BYTE, peer, kTag, comm)); },
      [&](int64_t* m) {
        CHECK_MPI(MPI_Recv(m, 8, MPI_BYTE, peer, kTag, comm, MPI_STATUS_IGNORE));
      });
}

// Row a's host speed check: one thread passes 8-byte messages between its two
// endpoints (EP_Irecv on one, EP_Send from the other, EP_Wait), so no cache line moves
// between cores.  Its time is all instructions: when the host runs this machine's
// virtual CPUs slower, it rises, and row a's ratio with it - the atomic flag of a's
// baseline is one cache line's transfer and barely slows.  Returns seconds per message.
Measure self_loop(EP_Comm to, EP_Comm from) {
  constexpr long kIters = 20000;
  int64_t in = 0, out = 1;
  double t0 = now_s();
  for (long i = 0; i < kIters; ++i) {
    EP_Request r;
    CHECK_EP(EP_Irecv(&in, 8, MPI_BYTE, 1, kTag, to, &r));
    CHECK_EP(EP_Send(&out, 8, MPI_BYTE, 0, kTag, from));
    CHECK_EP(EP_Wait(&r, EP_STATUS_IGNORE));
  }
  return {(now_s() - t0) / static_cast<double>(kIters), kIters};
}

struct alignas(64) PaddedAtomic {
  std::atomic<uint64_t> v{0};
  std::atomic<bool> stop{false};
};

// Two threads alternate on one word: thread 0 writes odd values, thread 1 even ones.
// Call with a fresh word (v == 0, stop == false) each repetition.
Measure atomic_pingpong(PaddedAtomic& w, int who, const Budget& b) {
  if (who == 1) {
    for (uint64_t ping = 1;; ping += 2) {
      while (w.v.load(std::memory_order_acquire) != ping) cpu_relax();
      // relaxed: ordered after the acquire above, written before the release of ping.
      const bool stop = w.stop.load(std::memory_order_relaxed);
      w.v.store(ping + 1, std::memory_order_release);
      if (stop) return {};
    }
  }
  double t0 = now_s();
  for (long i = 0;; ++i) {
    if (i == b.warm) t0 = now_s();
    const bool last = is_last(i, t0, b);
    const uint64_t ping = 2 * static_cast<uint64_t>(i) + 1;
    if (last) w.stop.store(true, std::memory_order_relaxed);  // published by the release
    w.v.store(ping, std::memory_order_release);
    while (w.v.load(std::memory_order_acquire) != ping + 1) cpu_relax();
    if (last) {
      long timed = i - b.warm + 1;
      return {(now_s() - t0) / static_cast<double>(timed) / 2, timed};
    }
  }
}

Measure ep_stream(EP_Comm comm, int peer, bool sender, const Budget& b) {
  return stream<EP_Request>(
      sender, b,
      [&](int64_t* m, EP_Request* r) { CHECK_EP(EP_Isend(m, 8, MPI_BYTE, peer, kTag, comm, r)); },
      [&](int64_t* m, EP_Request* r) { CHECK_EP(EP_Irecv(m, 8, MPI_BYTE, peer, kTag, comm, r)); },
      [&](EP_Request* r) { CHECK_EP(EP_Waitall(kWindow, r, EP_STATUSES_IGNORE)); },
      [&](char* a, int tag) { CHECK_EP(EP_Send(a, 1, MPI_CHAR, peer, tag, comm)); },
      [&](char* a, int tag) {
        CHECK_EP(EP_Recv(a, 1, MPI_CHAR, peer, tag, comm, EP_STATUS_IGNORE));
      });
}

// Row f's kernels: the ping-pong with every message a send request and a receive request
// waited for in turn - two persistent requests, created at the first message (bound to
// the kernel's buffer) and started again for every message, or new ones from
// EP_Isend/EP_Irecv.
Measure ep_request_pingpong(EP_Comm comm, int peer, bool first, const Budget& b, bool persistent) {
  EP_Request s = EP_REQUEST_NULL, r = EP_REQUEST_NULL;
  if (persistent) {
    const Measure m = pingpong8(
        first, b,
        [&](int64_t* msg) {
          if (s == EP_REQUEST_NULL) CHECK_EP(EP_Send_init(msg, 8, MPI_BYTE, peer, kTag, comm, &s));
          CHECK_EP(EP_Start(&s));
          CHECK_EP(EP_Wait(&s, EP_STATUS_IGNORE));
        },
        [&](int64_t* msg) {
          if (r == EP_REQUEST_NULL) CHECK_EP(EP_Recv_init(msg, 8, MPI_BYTE, peer, kTag, comm, &r));
          CHECK_EP(EP_Start(&r));
          CHECK_EP(EP_Wait(&r, EP_STATUS_IGNORE));
        });
    CHECK_EP(EP_Request_free(&s));
    CHECK_EP(EP_Request_free(&r));
    return m;
  }
  return pingpong8(
      first, b,
      [&](int64_t* msg) {
        CHECK_EP(EP_Isend(msg, 8, MPI_BYTE, peer, kTag, comm, &s));
        CHECK_EP(EP_Wait(&s, EP_STATUS_IGNORE));
      },
      [&](int64_t* msg) {
        CHECK_EP(EP_Irecv(msg, 8, MPI_BYTE, peer, kTag, comm, &r));
        CHECK_EP(EP_Wait(&r, EP_STATUS_IGNORE));
      });
}

// Row f'''s kernel: ep_stream with persistent requests - each of a window's requests is
// created at the first window (bound to its slot of the window's buffer) and started
// again at every window (EP_Start of each, then EP_Waitall).
Measure ep_stream_persistent(EP_Comm comm, int peer, bool sender, const Budget& b) {
  std::vector<EP_Request> made;  // every request created, freed at the end
  made.reserve(kWindow);
  auto start = [&](int64_t* m, EP_Request* r, bool send) {
    if (static_cast<int>(made.size()) < kWindow) {
      if (send) {
        CHECK_EP(EP_Send_init(m, 8, MPI_BYTE, peer, kTag, comm, r));
      } else {
        CHECK_EP(EP_Recv_init(m, 8, MPI_BYTE, peer, kTag, comm, r));
      }
      made.push_back(*r);
    }
    CHECK_EP(EP_Start(r));
  };
  const Measure m = stream<EP_Request>(
      sender, b, [&](int64_t* msg, EP_Request* r) { start(msg, r, true); },
      [&](int64_t* msg, EP_Request* r) { start(msg, r, false); },
      [&](EP_Request* r) { CHECK_EP(EP_Waitall(kWindow, r, EP_STATUSES_IGNORE)); },
      [&](char* a, int tag) { CHECK_EP(EP_Send(a, 1, MPI_CHAR, peer, tag, comm)); },
      [&](char* a, int tag) {
        CHECK_EP(EP_Recv(a, 1, MPI_CHAR, peer, tag, comm, EP_STATUS_IGNORE));
      });
  for (EP_Request& r : made) CHECK_EP(EP_Request_free(&r));
  return m;
}

Measure mpi_stream(MPI_Comm comm, int peer, bool sender, const Budget& b) {
  return stream<MPI_Request>(
      sender, b,
      [&](int64_t* m, MPI_Request* r) {
        CHECK_MPI(MPI_Isend(m, 8, MPI_BYTE, peer, kTag, comm, r));
      },
      [&](int64_t* m, MPI_Request* r) {
        CHECK_MPI(MPI_Irecv(m, 8, MPI_BYTE, peer, kTag, comm, r));
      },
      [&](MPI_Request* r) { CHECK_MPI(MPI_Waitall(kWindow, r, MPI_STATUSES_IGNORE)); },
      [&](char* a, int tag) { CHECK_MPI(MPI_Send(a, 1, MPI_CHAR, peer, tag, comm)); },
      [&](char* a, int tag) {
        CHECK_MPI(MPI_Recv(a, 1, MPI_CHAR, peer, tag, comm, MPI_STATUS_IGNORE));
      });
}

// ---- results -------------------------------------------------------------------------------

struct Series {
  Series(std::string n, bool r) : name(std::move(n)), rate(r) {}
  std::string name;
  bool rate;              // messages/s (higher is better), else seconds of latency
  std::vector<double> v;  // one value per repetition
  long iters = 0;         // timed round trips / windows, summed over the repetitions
  void add(double x, long n) {
    v.push_back(x);
    iters += n;
  }
};

struct Row {
  std::string id, what;
  const Series* ep;
  const Series* base;
  double target;  // latency: ep/base <= target; rate: ep/base >= target
};

std::string fmt_value(double x, bool rate) {
  char s[64];
  if (rate) {
    std::snprintf(s, sizeof s, "%.3f M msg/s", x / 1e6);
  } else {
    std::snprintf(s, sizeof s, "%.3f us", x * 1e6);
  }
  return s;
}

struct Options {
  int reps = 7;
  double rep_seconds = 0.3;
  std::string phases = "abcdef";
  bool libep_only = false;       // skip the baselines (for profiling libep alone)
  std::string place_c = "none";  // none, process, crossed, stream (see c above)
  bool has(char p) const { return phases.find(p) != std::string::npos; }
};

[[noreturn]] void usage(const char* argv0) {
  if (g_rank == 0) {
    std::fprintf(
        stderr,
        "usage: mpiexec -n 2 %s [--reps N] [--rep-seconds S] [--phases abcdef] [--libep-only]\n"
        "       [--place-c none|process|crossed|stream]\n"
        "  --reps N         timed repetitions per figure (default 7; +1 warm-up)\n"
        "  --rep-seconds S  timed duration of one repetition (default 0.3)\n"
        "  --phases P       subset of abcdef to run (default abcdef)\n"
        "  --libep-only     skip the baseline kernels of a, b and c (for profiling)\n"
        "  --place-c P      where row c's stream threads run (default none: the OS\n"
        "                   decides; see the head of p2p_bench.cc)\n",
        argv0);
  }
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided != MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "p2p_bench: MPI does not provide MPI_THREAD_MULTIPLE\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (g_rank == 0) std::fprintf(stderr, "p2p_bench: run with exactly 2 processes\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  Options opt;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      opt.reps = std::atoi(argv[++i]);
      if (opt.reps < 1) usage(argv[0]);
    } else if (!std::strcmp(argv[i], "--rep-seconds") && i + 1 < argc) {
      opt.rep_seconds = std::atof(argv[++i]);
      if (!(opt.rep_seconds > 0)) usage(argv[0]);
    } else if (!std::strcmp(argv[i], "--phases") && i + 1 < argc) {
      opt.phases = argv[++i];
      if (opt.phases.find_first_not_of("abcdef") != std::string::npos) usage(argv[0]);
    } else if (!std::strcmp(argv[i], "--libep-only")) {
      opt.libep_only = true;
    } else if (!std::strcmp(argv[i], "--place-c") && i + 1 < argc) {
      opt.place_c = argv[++i];
      if (opt.place_c != "none" && opt.place_c != "process" && opt.place_c != "crossed" &&
          opt.place_c != "stream") {
        usage(argv[0]);
      }
    } else {
      usage(argv[0]);
    }
  }
  const bool p0 = g_rank == 0;
  const int peer = 1 - g_rank;
  const double t_start = now_s();
  const std::string load_start = loadavg();
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &g_ctl));
  MPI_Comm pp_comm;  // the plain-MPI ping-pong communicator
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &pp_comm));

  Budget lat;  // latency repetitions
  lat.seconds = opt.rep_seconds;
  Budget atom = lat;  // the atomic ping-pong is far faster: more warm-up
  atom.warm = 10000;
  Budget rate = lat;  // windows
  rate.min_iters = 5;
  rate.warm = 5;

  Series a_ep("libep, 2 endpoints of 1 process", false),
      a_base("std::atomic, 2 threads of 1 process", false),
      a_self("host speed check: 1 thread, Irecv + Send + Wait on its 2 endpoints", false);
  Series b_ep("libep, 1 endpoint per process", false),
      b_base("MPI_Send/Recv after EP_Init, progress thread idle", false),
      b_pre("MPI_Send/Recv before EP_Init", false);
  Series c_ep("libep, 2 endpoints per process", true),
      c_base("MPI_THREAD_MULTIPLE, 2 threads per process", true);
  Series d_ep("libep, base comm + 1000 dups alive", false),
      d_ep_last("libep, newest of 1001 comms", false),
      d_base("libep, 1 comm alive (before the dups)", false),
      d_after("libep, 1 comm alive (after the dups were freed)", false);
  double d_create_s = 0, d_free_s = 0;
  Series e_before("libep, before the churn", false), e_after("libep, after the churn", false);
  double e_dup_s = 0, e_split_s = 0;
  Series f_pers("libep, persistent: EP_Start + EP_Wait", false),
      f_plain("EP_Isend/EP_Irecv + EP_Wait", false),
      f_pers_local("libep, persistent: EP_Start + EP_Wait, 2 endpoints of 1 process", false),
      f_plain_local("EP_Isend/EP_Irecv + EP_Wait, 2 endpoints of 1 process", false),
      f_rate_pers("libep, persistent: EP_Start + EP_Waitall", true),
      f_rate_plain("EP_Isend/EP_Irecv + EP_Waitall, 2 endpoints per process", true);
  const int reps = opt.reps + 1;  // repetition 0 is a warm-up and is not recorded
  // The host's steal time during each phase (bench_util.h): where it is high, the
  // virtual CPUs stood still for part of the phase and its figures are distorted.
  std::vector<std::pair<std::string, std::string>> steal;
  ep_bench::CpuTicks phase_start = ep_bench::cpu_ticks();
  auto phase_end = [&](const char* name) {
    ep_bench::CpuTicks now = ep_bench::cpu_ticks();
    steal.emplace_back(name, ep_bench::steal_percent(phase_start, now));
    phase_start = now;
  };

  // ---- b': plain MPI before EP_Init -------------------------------------------------------
  if (opt.has('b') && !opt.libep_only) {
    for (int r = 0; r < reps; ++r) {
      lazy_barrier();
      Measure m = mpi_pingpong(pp_comm, peer, p0, lat);
      if (r > 0) b_pre.add(m.value, m.iters);
    }
    phase_end("b'");
  }

  CHECK_EP(EP_Init());
  phase_start = ep_bench::cpu_ticks();

  // ---- a: 2 endpoints of process 0; process 1 sleeps ---------------------------------------
  if (opt.has('a')) {
    EP_Comm comms[2] = {EP_COMM_NULL, EP_COMM_NULL};
    CHECK_EP(EP_Comm_create_endpoints(MPI_COMM_WORLD, p0 ? 2 : 0, MPI_INFO_NULL, comms));
    if (p0) {
      Team team(2);
      Measure m[2];
      for (int r = 0; r < reps; ++r) {
        PaddedAtomic word;
        if (!opt.libep_only) {
          team.run([&](int i) { m[i] = atomic_pingpong(word, i, atom); });
          if (r > 0) a_base.add(m[0].value, m[0].iters);
        }
        team.run([&](int i) { m[i] = ep_pingpong(comms[i], 1 - i, i == 0, lat); });
        if (r > 0) a_ep.add(m[0].value, m[0].iters);
        team.run([&](int i) {
          if (i == 0) m[0] = self_loop(comms[0], comms[1]);
        });
        if (r > 0) a_self.add(m[0].value, m[0].iters);
      }
      CHECK_EP(EP_Comm_free(&comms[0]));
      CHECK_EP(EP_Comm_free(&comms[1]));
    }
    phase_end("a");
    lazy_barrier(1000);
  }

  // ---- b: 1 endpoint per process vs plain MPI after EP_Init --------------------------------
  if (opt.has('b')) {
    EP_Comm comm;
    CHECK_EP(EP_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, &comm));
    for (int r = 0; r < reps; ++r) {
      sleep_us(20000);  // let the progress thread back off into its idle sleep
      Measure m;
      if (!opt.libep_only) {
        lazy_barrier();
        m = mpi_pingpong(pp_comm, peer, p0, lat);
        if (r > 0) b_base.add(m.value, m.iters);
      }
      lazy_barrier();
      m = ep_pingpong(comm, peer, p0, lat);
      if (r > 0) b_ep.add(m.value, m.iters);
    }
    CHECK_EP(EP_Comm_free(&comm));
    phase_end("b");
  }

  // ---- c: message rate, 2 streams -----------------------------------------------------------
  if (opt.has('c')) {
    EP_Comm comms[2];
    CHECK_EP(EP_Comm_create_endpoints(MPI_COMM_WORLD, 2, MPI_INFO_NULL, comms));
    MPI_Comm mcomm[2];
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &mcomm[0]));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &mcomm[1]));
    Team team(2);
    Measure m[2];
    // Aggregated rate: the sum of the two streams' rates (they run concurrently).
    auto agg = [&] {
      double x = 0;
      for (const Measure& s : m) x += static_cast<double>(s.iters) * kWindow / s.value;
      return x;
    };
    // --place-c: stream thread i of this process goes to one core, for both halves.
    const int ncpu = static_cast<int>(std::thread::hardware_concurrency());
    auto place = [&](int i) {
      if (opt.place_c == "none" || ncpu < 2) return;
      int core = i;                                       // stream
      if (opt.place_c == "process") core = g_rank;        // a process's two share one
      if (opt.place_c == "crossed" && !p0) core = 1 - i;  // a stream's ends apart
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(core % ncpu, &set);
      if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        std::fprintf(stderr, "p2p_bench: cannot pin a thread to CPU %d\n", core % ncpu);
      }
    };
    team.run(place);
    for (int r = 0; r < reps; ++r) {
      // Endpoint ranks: process 0 has 0 and 1, process 1 has 2 and 3.
      lazy_barrier();
      team.run([&](int i) { m[i] = ep_stream(comms[i], p0 ? 2 + i : i, p0, rate); });
      if (r > 0 && p0) c_ep.add(agg(), m[0].iters + m[1].iters);
      if (opt.libep_only) continue;
      lazy_barrier();
      team.run([&](int i) { m[i] = mpi_stream(mcomm[i], peer, p0, rate); });
      if (r > 0 && p0) c_base.add(agg(), m[0].iters + m[1].iters);
    }
    CHECK_MPI(MPI_Comm_free(&mcomm[0]));
    CHECK_MPI(MPI_Comm_free(&mcomm[1]));
    CHECK_EP(EP_Comm_free(&comms[0]));
    CHECK_EP(EP_Comm_free(&comms[1]));
    phase_end("c");
  }

  // ---- d: ping-pong with 1000 other communicators alive -------------------------------------
  if (opt.has('d')) {
    EP_Comm comm;
    CHECK_EP(EP_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, &comm));
    std::vector<EP_Comm> extra(kExtraComms);
    std::vector<double> create_s, free_s;
    for (int r = 0; r < reps; ++r) {
      lazy_barrier();
      Measure m = ep_pingpong(comm, peer, p0, lat);
      if (r > 0) d_base.add(m.value, m.iters);
      lazy_barrier();
      double t0 = now_s();
      for (auto& c : extra) CHECK_EP(EP_Comm_dup(comm, &c));
      create_s.push_back(now_s() - t0);
      lazy_barrier();
      m = ep_pingpong(comm, peer, p0, lat);
      if (r > 0) d_ep.add(m.value, m.iters);
      lazy_barrier();
      m = ep_pingpong(extra.back(), peer, p0, lat);
      if (r > 0) d_ep_last.add(m.value, m.iters);
      lazy_barrier();
      t0 = now_s();
      for (auto& c : extra) CHECK_EP(EP_Comm_free(&c));
      free_s.push_back(now_s() - t0);
      sleep_us(20000);  // the progress thread retires the freed communicators
      lazy_barrier();
      m = ep_pingpong(comm, peer, p0, lat);
      if (r > 0) d_after.add(m.value, m.iters);
    }
    d_create_s = median(create_s);
    d_free_s = median(free_s);
    CHECK_EP(EP_Comm_free(&comm));
    phase_end("d");
  }

  // ---- e: ping-pong before and after creating and freeing many communicators --------------
  if (opt.has('e')) {
    EP_Comm comm, other;
    CHECK_EP(EP_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, &comm));
    CHECK_EP(EP_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, &other));
    for (int r = 0; r < reps; ++r) {
      lazy_barrier();
      Measure m = ep_pingpong(comm, peer, p0, lat);
      if (r > 0) e_before.add(m.value, m.iters);
    }
    lazy_barrier();
    double t0 = now_s();
    for (int i = 0; i < kChurnDups; ++i) {
      EP_Comm d;
      CHECK_EP(EP_Comm_dup(other, &d));
      CHECK_EP(EP_Comm_free(&d));
    }
    e_dup_s = now_s() - t0;
    t0 = now_s();
    for (int i = 0; i < kChurnSplits; ++i) {
      EP_Comm d;
      CHECK_EP(EP_Comm_split(other, i % 2 == 0 ? 0 : g_rank % 2, -g_rank, &d));
      CHECK_EP(EP_Comm_free(&d));
    }
    e_split_s = now_s() - t0;
    sleep_us(20000);  // the progress thread retires the freed communicators
    for (int r = 0; r < reps; ++r) {
      lazy_barrier();
      Measure m = ep_pingpong(comm, peer, p0, lat);
      if (r > 0) e_after.add(m.value, m.iters);
    }
    CHECK_EP(EP_Comm_free(&other));
    CHECK_EP(EP_Comm_free(&comm));
    phase_end("e");
  }

  // ---- f: persistent requests vs EP_Isend/EP_Irecv ------------------------------------------
  if (opt.has('f')) {
    EP_Comm one;
    CHECK_EP(EP_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, &one));
    // Each repetition measures both kinds, in turn first (no side gains from the order).
    for (int r = 0; r < reps; ++r) {
      for (int k = 0; k < 2; ++k) {
        const bool persistent = (k + r) % 2 == 1;
        lazy_barrier();
        const Measure m = ep_request_pingpong(one, peer, p0, lat, persistent);
        if (r > 0) (persistent ? f_pers : f_plain).add(m.value, m.iters);
      }
    }
    CHECK_EP(EP_Comm_free(&one));
    EP_Comm two[2];  // endpoint ranks: process 0 has 0 and 1, process 1 has 2 and 3
    CHECK_EP(EP_Comm_create_endpoints(MPI_COMM_WORLD, 2, MPI_INFO_NULL, two));
    Team team(2);
    Measure m[2];
    auto agg = [&] {
      double x = 0;
      for (const Measure& s : m) x += static_cast<double>(s.iters) * kWindow / s.value;
      return x;
    };
    for (int r = 0; r < reps; ++r) {
      for (int k = 0; k < 2; ++k) {
        const bool persistent = (k + r) % 2 == 1;
        lazy_barrier();
        team.run([&](int i) {
          m[i] = persistent ? ep_stream_persistent(two[i], p0 ? 2 + i : i, p0, rate)
                            : ep_stream(two[i], p0 ? 2 + i : i, p0, rate);
        });
        if (r > 0 && p0) {
          (persistent ? f_rate_pers : f_rate_plain).add(agg(), m[0].iters + m[1].iters);
        }
      }
    }
    CHECK_EP(EP_Comm_free(&two[0]));
    CHECK_EP(EP_Comm_free(&two[1]));
    lazy_barrier();
    EP_Comm local[2] = {EP_COMM_NULL, EP_COMM_NULL};  // f': 2 endpoints of process 0
    CHECK_EP(EP_Comm_create_endpoints(MPI_COMM_WORLD, p0 ? 2 : 0, MPI_INFO_NULL, local));
    if (p0) {
      for (int r = 0; r < reps; ++r) {
        for (int k = 0; k < 2; ++k) {
          const bool persistent = (k + r) % 2 == 1;
          team.run(
              [&](int i) { m[i] = ep_request_pingpong(local[i], 1 - i, i == 0, lat, persistent); });
          if (r > 0) (persistent ? f_pers_local : f_plain_local).add(m[0].value, m[0].iters);
        }
      }
      CHECK_EP(EP_Comm_free(&local[0]));
      CHECK_EP(EP_Comm_free(&local[1]));
    }
    phase_end("f");
    lazy_barrier(1000);
  }

  const double total_s = now_s() - t_start;
  CHECK_EP(EP_Finalize());

  if (p0) {
    char date[64];
    time_t tt = time(nullptr);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime(&tt));
    cpu_set_t cs;
    CPU_ZERO(&cs);
    sched_getaffinity(0, sizeof cs, &cs);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int liblen = 0;
    MPI_Get_library_version(lib, &liblen);
    std::string libline(lib, static_cast<size_t>(liblen));
    libline = libline.substr(0, libline.find('\n'));
    for (char& ch : libline) {
      if (ch == '\t') ch = ' ';
    }
    std::string cmd;
    for (int i = 0; i < argc; ++i) cmd += (i ? " " : "") + std::string(argv[i]);
    auto env = [](const char* n) {
      const char* v = std::getenv(n);
      return std::string(n) + "=" + (v ? v : "(unset)");
    };
    std::printf("# libep p2p_bench\n\n");
    std::printf("- command: `mpiexec -n %d %s`\n", size, cmd.c_str());
    std::printf("- date: %s\n", date);
    std::printf("- nproc: %d (online CPUs: %ld)\n", CPU_COUNT(&cs), sysconf(_SC_NPROCESSORS_ONLN));
    std::printf("- MPI: %s\n", libline.c_str());
    std::printf("- env: %s %s %s\n", env("EP_PROGRESS_POLICY").c_str(),
                env("EP_PROGRESS_CPUS").c_str(), env("EP_EAGER_LIMIT").c_str());
    std::printf(
        "- load average at start: %s, at end: %s (other load on the machine distorts "
        "the figures)\n",
        load_start.c_str(), loadavg().c_str());
    std::printf(
        "- %d timed repetitions per figure (+1 warm-up), each ~%.2f s; medians over "
        "the repetitions; latencies are one-way (round trip / 2)\n",
        opt.reps, opt.rep_seconds);
    if (opt.has('d')) {
      std::printf(
          "- d: %d x EP_Comm_dup took %.3f s, freeing them %.3f s (medians over the "
          "repetitions)\n",
          kExtraComms, d_create_s, d_free_s);
    }
    if (opt.has('e')) {
      std::printf(
          "- e: %d x (EP_Comm_dup + EP_Comm_free) took %.3f s, %d x (EP_Comm_split + "
          "EP_Comm_free) %.3f s\n",
          kChurnDups, e_dup_s, kChurnSplits, e_split_s);
    }
    std::printf("- total time: %.1f s\n", total_s);
    std::string st;
    for (const auto& [name, pct] : steal) st += (st.empty() ? "" : ", ") + name + " " + pct;
    std::printf(
        "- host steal time (/proc/stat, the whole machine) per phase: %s (the virtual CPUs "
        "stood still for that share of the phase)\n\n",
        st.empty() ? "n/a" : st.c_str());

    std::vector<Row> rows;
    if (opt.has('a'))
      rows.push_back({"a", "8 B ping-pong, 2 endpoints of one process", &a_ep, &a_base, 3.0});
    if (opt.has('b')) {
      rows.push_back(
          {"b", "8 B ping-pong, 1 endpoint in each of 2 processes", &b_ep, &b_base, 1.5});
      rows.push_back({"b'", "same, baseline measured before EP_Init", &b_ep, &b_pre, 1.5});
    }
    if (opt.has('c'))
      rows.push_back(
          {"c",
           "8 B message rate, 2 streams, windows of 64" +
               (opt.place_c == "none" ? std::string() : ", threads placed: " + opt.place_c),
           &c_ep, &c_base, 2.0});
    if (opt.has('d')) {
      rows.push_back({"d", "8 B ping-pong, 1000 other comms alive", &d_ep, &d_base, 1.5});
      rows.push_back({"d'", "same, on the newest of the 1001 comms", &d_ep_last, &d_base, 1.5});
      rows.push_back({"d''", "1 comm alive again, after freeing the 1000", &d_after, &d_base, 1.5});
    }
    if (opt.has('e')) {
      rows.push_back({"e", "8 B ping-pong after 10,000 dup/free + 1,000 split/free", &e_after,
                      &e_before, 1.5});
    }
    if (opt.has('f')) {
      rows.push_back({"f", "8 B ping-pong on requests, 1 endpoint in each of 2 processes", &f_pers,
                      &f_plain, 1.05});
      rows.push_back(
          {"f'", "same, 2 endpoints of one process", &f_pers_local, &f_plain_local, 1.05});
      rows.push_back({"f''", "8 B message rate on requests, 2 streams, windows of 64", &f_rate_pers,
                      &f_rate_plain, 0.95});
    }
    std::printf("| | measurement | libep | baseline | ratio | target | met |\n");
    std::printf("|---|---|---:|---|---:|---|---|\n");
    for (const Row& r : rows) {
      if (r.ep->v.empty() || r.base->v.empty()) continue;  // --libep-only
      const bool higher_better = r.ep->rate;
      double e = median(r.ep->v), b = median(r.base->v);
      double ratio = b > 0 ? e / b : 0;
      bool met = higher_better ? ratio >= r.target : ratio <= r.target;
      // (a target in tenths prints with one decimal, 1.05 with two)
      const int decimals = std::abs(r.target * 10 - std::round(r.target * 10)) < 1e-9 ? 1 : 2;
      std::printf("| %s | %s | %s | %s: %s | %.2fx | %s %.*fx | %s |\n", r.id.c_str(),
                  r.what.c_str(), fmt_value(e, higher_better).c_str(), r.base->name.c_str(),
                  fmt_value(b, higher_better).c_str(), ratio, higher_better ? ">=" : "<=", decimals,
                  r.target, met ? "yes" : "NO");
    }
    if (!a_self.v.empty()) {
      std::printf(
          "\nRow a's host speed check (see self_loop): %s per message, one thread alone; "
          "it is all instructions, so where it is well above its usual value the host ran "
          "the virtual CPUs slower and row a's ratio rose with it.\n",
          fmt_value(median(a_self.v), false).c_str());
    }
    std::printf("\nDetail (over the timed repetitions):\n\n");
    std::printf("| series | min | median | max | timed round trips / windows |\n");
    std::printf("|---|---:|---:|---:|---:|\n");
    const Series* all[] = {&a_ep,    &a_base,       &a_self,        &b_ep,        &b_base,
                           &b_pre,   &c_ep,         &c_base,        &d_ep,        &d_ep_last,
                           &d_base,  &d_after,      &e_before,      &e_after,     &f_pers,
                           &f_plain, &f_pers_local, &f_plain_local, &f_rate_pers, &f_rate_plain};
    for (const Series* s : all) {
      if (s->v.empty()) continue;
      auto mm = std::minmax_element(s->v.begin(), s->v.end());
      std::printf("| %s | %s | %s | %s | %ld |\n", s->name.c_str(),
                  fmt_value(*mm.first, s->rate).c_str(), fmt_value(median(s->v), s->rate).c_str(),
                  fmt_value(*mm.second, s->rate).c_str(), s->iters);
    }
    std::fflush(stdout);
  }
  CHECK_MPI(MPI_Comm_free(&pp_comm));
  CHECK_MPI(MPI_Comm_free(&g_ctl));
  MPI_Finalize();
  return 0;
}
