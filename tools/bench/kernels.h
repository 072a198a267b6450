// kernels.h - the timed kernels that more than one benchmark program runs: a repetition's
// time budget, the ping-pong that measures a latency, and the windowed stream that
// measures a message rate (8-byte messages) or a bandwidth (larger ones).
//
// Every kernel runs for a time budget: the sender decides when to stop and tells its
// peer in-band, in the payload of the last message (0), so both sides always agree on
// the iteration count.  Header-only, with bench_util.h.  A kernel runs on the calling
// thread and moves data only through the callbacks it is given.
#ifndef EP_TOOLS_BENCH_KERNELS_H_
#define EP_TOOLS_BENCH_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

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

// One ping-pong repetition.  send(flag) sends one message whose first 8 bytes hold flag;
// recv() receives one and returns its first 8 bytes.  The initiator (`first`) sends and
// waits for the echo, over and over; its last message carries 0, which the peer echoes
// and stops on.  The initiator returns the one-way latency (round trip / 2), the mean
// over the timed round trips.
template <class Send, class Recv>
Measure pingpong(bool first, const Budget& b, Send send, Recv recv) {
  if (!first) {
    for (;;) {
      const int64_t flag = recv();
      send(flag);
      if (flag == 0) return {};
    }
  }
  double t0 = now_s();
  for (long i = 0;; ++i) {
    if (i == b.warm) t0 = now_s();
    const bool last = is_last(i, t0, b);
    send(last ? 0 : 1);
    recv();
    if (last) {
      const long timed = i - b.warm + 1;
      return {(now_s() - t0) / static_cast<double>(timed) / 2, timed};
    }
  }
}

// The stream's window and the tags of its control messages.
constexpr int kWindow = 64;
constexpr int kReadyTag = 8;
constexpr int kAckTag = 9;

// A stream's messages: `window` of them per window, each `words` 8-byte words long.
struct StreamShape {
  int window = kWindow;
  size_t words = 1;
};

// A stream receiver's window check that checks nothing.
struct NoWindowCheck {
  void operator()(const int64_t*) const {}
};

// Whether every message of a received window carries the same flag (its first word), as
// the sender wrote them.  buf: the window, shape.window messages of shape.words words.
inline bool uniform_window(const int64_t* buf, const StreamShape& shape) {
  for (int j = 0; j + 1 < shape.window; ++j) {
    if (buf[static_cast<size_t>(j) * shape.words] != buf[(shape.window - 1) * shape.words]) {
      return false;
    }
  }
  return true;
}

// One stream repetition: windows of shape.window messages, each window acknowledged by
// one 1-byte message; isend(m, r) / irecv(m, r) start one message at m (shape.words
// words, its flag in m[0]), waitall(r) completes the window's shape.window requests.
// The receiver hands every received window to on_window(buf).  The sender returns its
// elapsed time over the timed windows.
template <class Req, class Isend, class Irecv, class Waitall, class Send, class Recv,
          class OnWindow = NoWindowCheck>
Measure stream_shaped(bool sender, const Budget& b, const StreamShape& shape, Isend isend,
                      Irecv irecv, Waitall waitall, Send send, Recv recv, OnWindow on_window = {}) {
  std::vector<int64_t> buf(static_cast<size_t>(shape.window) * shape.words);
  std::vector<Req> req(static_cast<size_t>(shape.window));
  auto msg = [&](int j) { return &buf[static_cast<size_t>(j) * shape.words]; };
  char ack = 0;
  if (!sender) {
    send(&ack, kReadyTag);
    for (;;) {
      for (int j = 0; j < shape.window; ++j) irecv(msg(j), &req[j]);
      waitall(req.data());
      send(&ack, kAckTag);
      on_window(static_cast<const int64_t*>(buf.data()));
      if (*msg(shape.window - 1) == 0) return {};  // non-overtaking: the window's last
    }
  }
  recv(&ack, kReadyTag);
  double t0 = now_s();
  for (long w = 0;; ++w) {
    if (w == b.warm) t0 = now_s();
    const bool last = is_last(w, t0, b);
    for (int j = 0; j < shape.window; ++j) *msg(j) = last ? 0 : 1;
    for (int j = 0; j < shape.window; ++j) isend(msg(j), &req[j]);
    waitall(req.data());
    recv(&ack, kAckTag);
    if (last) return {now_s() - t0, w - b.warm + 1};
  }
}

// stream_shaped with 8-byte messages in windows of kWindow: a message rate.
template <class Req, class Isend, class Irecv, class Waitall, class Send, class Recv,
          class OnWindow = NoWindowCheck>
Measure stream(bool sender, const Budget& b, Isend isend, Irecv irecv, Waitall waitall, Send send,
               Recv recv, OnWindow on_window = {}) {
  return stream_shaped<Req>(sender, b, StreamShape{}, isend, irecv, waitall, send, recv, on_window);
}

}  // namespace ep_bench

#endif  // EP_TOOLS_BENCH_KERNELS_H_
