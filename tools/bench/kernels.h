// kernels.h - the timed kernels that more than one benchmark program runs: a repetition's
// time budget, and the windowed stream of 8-byte messages that measures a message rate.
//
// Every kernel runs for a time budget: the sender decides when to stop and tells its
// peer in-band, in the payload of the last message (0), so both sides always agree on
// the iteration count.  Header-only, with bench_util.h.
#ifndef EP_TOOLS_BENCH_KERNELS_H_
#define EP_TOOLS_BENCH_KERNELS_H_

#include <cstdint>

#include "tools/bench/bench_util.h"

namespace ep_bench {

struct Budget {
  double seconds = 0.3;  // timed part of one repetition
  long min_iters = 20;   // timed round trips / windows, at least
  long max_iters = 1000000;
  long warm = 50;  // untimed round trips / windows first
};

struct Measure {
  double value = 0;  // one-way latency (s) or elapsed time (s); 0 on the passive side
  long iters = 0;    // timed round trips or windows
};

// Decides, before round trip / window i (warm-up included), whether it is the last one.
inline bool is_last(long i, double t0, const Budget& b) {
  if (i < b.warm + b.min_iters - 1) return false;
  return i + 1 >= b.warm + b.max_iters || now_s() - t0 >= b.seconds;
}

// The stream's window and the tags of its control messages.
constexpr int kWindow = 64;
constexpr int kReadyTag = 8;
constexpr int kAckTag = 9;

// A stream receiver's window check that checks nothing.
struct NoWindowCheck {
  void operator()(const int64_t*) const {}
};

// One stream repetition: windows of kWindow 8-byte messages, each window acknowledged by
// one 1-byte message; the receiver hands every received window to on_window(buf).  The
// sender returns its elapsed time over the timed windows.
template <class Req, class Isend, class Irecv, class Waitall, class Send, class Recv,
          class OnWindow = NoWindowCheck>
Measure stream(bool sender, const Budget& b, Isend isend, Irecv irecv, Waitall waitall, Send send,
               Recv recv, OnWindow on_window = {}) {
  int64_t buf[kWindow];
  Req req[kWindow];
  char ack = 0;
  if (!sender) {
    send(&ack, kReadyTag);
    for (;;) {
      for (int j = 0; j < kWindow; ++j) irecv(&buf[j], &req[j]);
      waitall(req);
      send(&ack, kAckTag);
      on_window(static_cast<const int64_t*>(buf));
      if (buf[kWindow - 1] == 0) return {};  // non-overtaking: the window's last message
    }
  }
  recv(&ack, kReadyTag);
  double t0 = now_s();
  for (long w = 0;; ++w) {
    if (w == b.warm) t0 = now_s();
    const bool last = is_last(w, t0, b);
    for (int j = 0; j < kWindow; ++j) buf[j] = last ? 0 : 1;
    for (int j = 0; j < kWindow; ++j) isend(&buf[j], &req[j]);
    waitall(req);
    recv(&ack, kAckTag);
    if (last) return {now_s() - t0, w - b.warm + 1};
  }
}

}  // namespace ep_bench

#endif  // EP_TOOLS_BENCH_KERNELS_H_
