// Stress test of the matcher's delivery on its line (matching.h, "Delivered on the
// line"), the Matcher alone (no MPI, no Runtime).
//
// P producer threads send N small messages each (8 or 4 bytes; the payload is the
// message's id) the ways the runtime does: on the stack matched in place, else
// materialized and queued (the local eager path of p2p), heap envelopes queued, or
// runs under one hold() (a bundle's records).  Every source's messages carry one tag
// (source % 2).  One consumer thread receives them as an endpoint thread does:
//   - blocking receives (line_wait): it waits by polling its request's state and
//     collect() on the matcher's line; at a random moment it may withdraw from the
//     line (as a waiter does before it sleeps) and then waits for either;
//   - nonblocking receives (no line_wait) kept outstanding under the blocking ones, so
//     that a blocking receive is often not the only one posted; some are cancelled;
//   - buffers that a message may not fit on the line: 4 bytes (an 8-byte message
//     truncates), or elements of 8 bytes (a 4-byte message is no whole element).
//
// Checked: every message received exactly once, by the path it is entitled to (on
// the line only into a line-waiting receive whose buffer takes it whole), with the
// right source, tag and payload; a cancelled receive gets nothing; and MPI's
// non-overtaking rule: with one tag per source, the receives that took messages from
// one source, in post order, took them in send order (a violation either way - a
// later message matched first, or a later receive served first - breaks this).
//
// Seeded: LIBEP_STRESS_SEED=<n> reproduces a run (the seed is printed at start and in
// every failure message).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/matching.h"
#include "runtime/request.h"
#include "tests/common/harness.h"
#include "tests/runtime/matcher_util.h"

namespace {

using ep::runtime::Envelope;
using ep::runtime::Matcher;
using ep::runtime::MatchOp;
using ep::runtime::RecvTarget;
using ep::runtime::Request;
using ep_test::materialize_fn;
using ep_test::Pause;
using ep_test::scaled;

uint64_t stress_seed() { return ep_test::stress_seed("line_delivery_stress_test"); }

constexpr int kTags = 2;
int tag_of(int src) { return src % kTags; }

// One message: its payload (the id, as int64 or int32) lives here for the whole run,
// so envelopes may point at it from anywhere.
struct Message {
  int src = 0;
  int64_t seq = 0;
  int size = 8;
  alignas(8) char payload[8] = {};
};

int64_t decode(const char* data, int64_t bytes) {
  if (bytes == 8) {
    int64_t v;
    std::memcpy(&v, data, 8);
    return v;
  }
  if (bytes == 4) {
    int32_t v;
    std::memcpy(&v, data, 4);
    return v;
  }
  return -1;
}

// What happened, for the checks.  Receive ids travel in Request::count.
struct Record {
  std::mutex mu;
  std::vector<Message>* msgs = nullptr;
  std::vector<int64_t> msg_recv;    // message id -> receive id or -1
  std::vector<int64_t> recv_msg;    // receive id -> message id or -1
  std::vector<std::string> errors;  // first few problems
  // Per source, messages received: each producer stays at most a window ahead of its
  // own (a global window deadlocks: a receive waiting for one source's next message
  // while the window is full of other sources' unexpected ones).
  std::unique_ptr<std::atomic<int64_t>[]> delivered_from;
  int producers = 0;
  void count_from(int src) {  // relaxed: a count for throttling
    if (src >= 0 && src < producers) delivered_from[src].fetch_add(1, std::memory_order_relaxed);
  }
  int64_t on_line = 0, by_deliver = 0;

  void error(const std::string& what) {
    if (errors.size() < 20) errors.push_back(what);
  }
  // Under mu: message `mid` went to receive `rid`.
  void take(int64_t rid, int64_t mid, const char* how) {
    if (mid < 0 || mid >= static_cast<int64_t>(msg_recv.size())) {
      error(std::string(how) + ": receive " + std::to_string(rid) + " got a bad payload " +
            std::to_string(mid));
      return;
    }
    if (msg_recv[mid] != -1) {
      error(std::string(how) + ": message " + std::to_string(mid) + " delivered twice (receives " +
            std::to_string(msg_recv[mid]) + " and " + std::to_string(rid) + ")");
    }
    if (recv_msg[rid] != -1) {
      error(std::string(how) + ": receive " + std::to_string(rid) + " got a second message");
    }
    msg_recv[mid] = rid;
    recv_msg[rid] = mid;
  }
};
Record* g_rec = nullptr;

// The matcher's ordinary delivery: record, then complete the request (release: the
// consumer's acquire load of state sees the record's writes... and ours).
void deliver_fn(Request* r, const RecvTarget& t, Envelope* e) {
  Record& rec = *g_rec;
  const int64_t rid = r->count;
  const int64_t mid = decode(e->data, e->bytes);
  {
    std::lock_guard<std::mutex> lock(rec.mu);
    if (t.dst != r->op.target.dst || t.cap != r->op.target.cap || t.elem != r->op.target.elem) {
      rec.error("deliver: receive " + std::to_string(rid) + " got another receive's target");
    }
    if (mid >= 0 && mid < static_cast<int64_t>(rec.msgs->size())) {
      const Message& m = (*rec.msgs)[static_cast<size_t>(mid)];
      if (e->src_rank != m.src || e->tag != tag_of(m.src) || e->bytes != m.size) {
        rec.error("deliver: envelope of message " + std::to_string(mid) + " altered");
      }
      if (!ep::runtime::envelope_matches(r->op.source, r->op.tag, *e)) {
        rec.error("deliver: receive " + std::to_string(rid) + " got a non-matching message");
      }
    }
    rec.take(rid, mid, "deliver");
    ++rec.by_deliver;
  }
  rec.count_from(e->src_rank);
  if (e->owned) std::free(e->block);
  // release: pairs with the consumer's acquire load of state.
  r->state.store(Request::kComplete, std::memory_order_release);
}

Envelope stack_envelope(const Message& m) {
  Envelope e;
  e.kind = Envelope::kEager;
  e.src_rank = m.src;
  e.tag = tag_of(m.src);
  e.bytes = m.size;
  e.data = m.payload;
  return e;
}

Envelope* heap_envelope(const Message& m) {
  Envelope s = stack_envelope(m);
  return materialize_fn(&s);
}

struct RunParams {
  int producers = 3;
  int per_producer = 4000;
  uint64_t seed = 0;
  int pace = 0;  // 0: both sides flat out; 1: slow producers (receives wait posted)
};

struct Posted {
  Request* req = nullptr;
  int source = EP_ANY_SOURCE;
  int tag = EP_ANY_TAG;
  bool line_wait = false;
  bool cancelled = false;
  char buf[8] = {};
};

struct Counts {
  int64_t on_line = 0, by_deliver = 0, withdrawals = 0;
};

Counts run_scenario(const RunParams& p) {
  const std::string where = " (round seed " + std::to_string(p.seed) +
                            ") [LIBEP_STRESS_SEED=" + std::to_string(stress_seed()) + "]";
  const int P = p.producers, N = p.per_producer;
  const int64_t M = static_cast<int64_t>(P) * N;
  std::vector<Message> msgs(static_cast<size_t>(M));
  {
    std::mt19937_64 rng(p.seed);
    for (int s = 0; s < P; ++s) {
      for (int i = 0; i < N; ++i) {
        const int64_t mid = static_cast<int64_t>(s) * N + i;
        Message& m = msgs[static_cast<size_t>(mid)];
        m.src = s;
        m.seq = i;
        m.size = rng() % 4 == 0 ? 4 : 8;
        if (m.size == 8) {
          std::memcpy(m.payload, &mid, 8);
        } else {
          const int32_t v = static_cast<int32_t>(mid);
          std::memcpy(m.payload, &v, 4);
        }
      }
    }
  }
  Record rec;
  rec.msgs = &msgs;
  rec.msg_recv.assign(static_cast<size_t>(M), -1);
  const int64_t max_recvs = 2 * M + 64;
  rec.recv_msg.assign(static_cast<size_t>(max_recvs), -1);
  rec.producers = P;
  rec.delivered_from.reset(new std::atomic<int64_t>[static_cast<size_t>(P)]);
  for (int s = 0; s < P; ++s) rec.delivered_from[s].store(0, std::memory_order_relaxed);
  g_rec = &rec;

  auto matcher = std::make_unique<Matcher>(deliver_fn, materialize_fn);
  std::atomic<bool> go{false};
  std::vector<std::thread> producers;
  for (int s = 0; s < P; ++s) {
    producers.emplace_back([&, s] {
      std::mt19937_64 rng(p.seed * 1000003 + static_cast<uint64_t>(s) + 1);
      moodycamel::ProducerToken token(matcher->inbox());
      Pause start;
      while (!go.load(std::memory_order_acquire)) start();
      for (int i = 0; i < N; ++i) {
        const Message& m = msgs[static_cast<size_t>(s) * N + i];
        Pause pause;  // keep the unexpected list short (matching is linear in it)
        while (i - rec.delivered_from[s].load(std::memory_order_relaxed) > 128) {
          pause();
        }
        const unsigned how = rng() % 8;
        if (how < 5) {  // the local eager path of p2p
          Envelope e = stack_envelope(m);
          if (!matcher->try_deliver_direct(&e)) matcher->push(token, materialize_fn(&e));
        } else if (how < 7) {
          matcher->push(token, heap_envelope(m));
        } else if (matcher->hold()) {  // a bundle's run of records
          const int run = std::min(1 + static_cast<int>(rng() % 4), N - i);
          for (int k = 0; k < run; ++k) {
            Envelope e = stack_envelope(msgs[static_cast<size_t>(s) * N + i + k]);
            matcher->deliver_held(&e);
          }
          matcher->release();
          i += run - 1;
        } else {
          matcher->push(token, heap_envelope(m));
        }
        if (p.pace == 1 && rng() % 8 != 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        } else if (rng() % 64 == 0) {
          std::this_thread::yield();
        }
      }
    });
  }

  // ---- The consumer ----
  std::mt19937_64 rng(p.seed ^ 0x9e3779b97f4a7c15ULL);
  std::vector<std::unique_ptr<Posted>> recvs;
  std::vector<int64_t> taken(static_cast<size_t>(P), 0);     // per source, by completed receives
  std::vector<int64_t> reserved(static_cast<size_t>(P), 0);  // by outstanding nonblocking ones
  std::vector<int64_t> outstanding;                          // nonblocking receive ids
  int64_t done_msgs = 0, withdrawals = 0, cancels_found = 0;

  auto post = [&](int source, int tag, bool line_wait) -> int64_t {
    const int64_t rid = static_cast<int64_t>(recvs.size());
    auto pr = std::make_unique<Posted>();
    Request* r = new Request;
    r->count = static_cast<int>(rid);
    r->op.kind = MatchOp::kRecv;
    r->op.source = source;
    r->op.tag = tag;
    r->op.req = r;
    // Buffers: 8 bytes of 1-, 4- or 8-byte elements, or 4 bytes of 4-byte elements.
    const unsigned shape = rng() % 8;
    r->op.target.dst = pr->buf;
    r->op.target.cap = shape == 0 ? 4 : 8;
    r->op.target.elem = shape == 0 ? 4 : shape < 3 ? 8 : shape < 5 ? 4 : 1;
    r->op.line_wait = line_wait;
    pr->req = r;
    pr->source = source;
    pr->tag = tag;
    pr->line_wait = line_wait;
    recvs.push_back(std::move(pr));
    matcher->post(&r->op);
    return rid;
  };
  // The source a completed receive took from (its message's), and bookkeeping.
  auto account = [&](int64_t rid) {
    int64_t mid;
    {
      std::lock_guard<std::mutex> lock(rec.mu);
      mid = rec.recv_msg[rid];
    }
    if (mid >= 0 && mid < M) ++taken[static_cast<size_t>(msgs[static_cast<size_t>(mid)].src)];
    ++done_msgs;
  };
  // A blocking receive's wait, as request_wait does it (see matching.h).
  auto wait_blocking = [&](int64_t rid) {
    Posted& pr = *recvs[static_cast<size_t>(rid)];
    Request* r = pr.req;
    bool line = pr.line_wait;
    const int withdraw_at = rng() % 4 == 0 ? static_cast<int>(rng() % 200) : -1;
    Pause pause;
    for (int polls = 0;; ++polls) {
      if ((r->state.load(std::memory_order_acquire) & Request::kComplete) != 0) return;
      Matcher::LineResult res;
      bool got = line && matcher->collect(r, &res);
      if (!got && line && polls == withdraw_at) {
        Pause busy;
        while (!matcher->withdraw_line(r)) busy();
        ++withdrawals;
        got = matcher->collect(r, &res);  // delivered before we withdrew
        line = false;
      }
      if (got) {
        const int64_t mid = decode(res.data, res.bytes);
        std::lock_guard<std::mutex> lock(rec.mu);
        ++rec.on_line;
        if (mid >= 0 && mid < M) {
          const Message& m = msgs[static_cast<size_t>(mid)];
          if (res.source != m.src || res.tag != tag_of(m.src) || res.bytes != m.size) {
            rec.error("line: message " + std::to_string(mid) + " reported as source " +
                      std::to_string(res.source) + " tag " + std::to_string(res.tag) + ", " +
                      std::to_string(res.bytes) + " bytes");
          }
          if ((pr.source != EP_ANY_SOURCE && pr.source != m.src) ||
              (pr.tag != EP_ANY_TAG && pr.tag != tag_of(m.src))) {
            rec.error("line: receive " + std::to_string(rid) + " got a non-matching message");
          }
          if (m.size > r->op.target.cap || m.size % r->op.target.elem != 0) {
            rec.error("line: message of " + std::to_string(m.size) +
                      " bytes delivered on the line "
                      "into a buffer of " +
                      std::to_string(r->op.target.cap) + " bytes of " +
                      std::to_string(r->op.target.elem) + "-byte elements");
          }
        }
        rec.take(rid, mid, "line");
        rec.count_from(res.source);
        return;
      }
      if (polls % 16 == 15) pause();
    }
  };
  // Remaining messages that a new receive may count on: not taken, not reserved.
  auto free_of = [&](int s) {
    return N - taken[static_cast<size_t>(s)] - reserved[static_cast<size_t>(s)];
  };

  go.store(true, std::memory_order_release);
  while (done_msgs < M) {
    const unsigned what = rng() % 16;
    if (what < 1 && outstanding.size() < 2) {
      // A nonblocking receive for one source with free messages: it stays posted
      // while blocking receives follow.
      std::vector<int> srcs;
      for (int s = 0; s < P; ++s)
        if (free_of(s) > 0) srcs.push_back(s);
      if (srcs.empty()) continue;
      const int s = srcs[rng() % srcs.size()];
      const int64_t rid = post(s, rng() % 2 == 0 ? EP_ANY_TAG : tag_of(s), false);
      ++reserved[static_cast<size_t>(s)];
      outstanding.push_back(rid);
      continue;
    }
    if (what < 3 && !outstanding.empty()) {
      // Finish one: cancel it (half the time), else wait for its message.
      const size_t k = rng() % outstanding.size();
      const int64_t rid = outstanding[k];
      Posted& pr = *recvs[static_cast<size_t>(rid)];
      outstanding.erase(outstanding.begin() + static_cast<std::ptrdiff_t>(k));
      --reserved[static_cast<size_t>(pr.source)];
      if (rng() % 2 == 0) {
        MatchOp op;
        op.kind = MatchOp::kCancel;
        op.req = pr.req;
        matcher->post(&op);
        Pause pause;
        while (!op.done.is_set()) pause();  // acquire: pairs with the matcher's set()
        if (op.found) {
          pr.cancelled = true;
          ++cancels_found;
          continue;
        }
      }
      Pause pause;
      while ((pr.req->state.load(std::memory_order_acquire) & Request::kComplete) == 0) pause();
      account(rid);
      continue;
    }
    // A blocking receive: any source, one source, or one tag, with a free message.
    int64_t free_total = 0;
    for (int s = 0; s < P; ++s) free_total += free_of(s);
    if (free_total <= 0) {             // everything left is reserved: finish an outstanding one
      if (outstanding.empty()) break;  // (cannot happen: reported below)
      const int64_t rid = outstanding.back();
      outstanding.pop_back();
      Posted& pr = *recvs[static_cast<size_t>(rid)];
      --reserved[static_cast<size_t>(pr.source)];
      Pause pause;
      while ((pr.req->state.load(std::memory_order_acquire) & Request::kComplete) == 0) pause();
      account(rid);
      continue;
    }
    int source = EP_ANY_SOURCE, tag = EP_ANY_TAG;
    const unsigned crit = rng() % 4;
    if (crit == 1 || crit == 2) {
      std::vector<int> srcs;
      for (int s = 0; s < P; ++s)
        if (free_of(s) > 0) srcs.push_back(s);
      source = srcs[rng() % srcs.size()];
      if (crit == 2) tag = tag_of(source);
    } else if (crit == 3) {
      const int t = static_cast<int>(rng() % kTags);
      int64_t free_t = 0;
      for (int s = 0; s < P; ++s)
        if (tag_of(s) == t) free_t += free_of(s);
      if (free_t > 0) tag = t;
    }
    const int64_t rid = post(source, tag, true);
    wait_blocking(rid);
    account(rid);
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(done_msgs, M) << "the consumer stopped early" << where;
  EXPECT_FALSE(matcher->busy()) << where;
  // Nothing may be left: an ANY/ANY probe finds no unexpected message.
  {
    MatchOp op;
    op.kind = MatchOp::kProbe;
    op.source = EP_ANY_SOURCE;
    op.tag = EP_ANY_TAG;
    matcher->post(&op);
    EXPECT_TRUE(op.done.is_set()) << where;  // idle matcher: in place
    EXPECT_FALSE(op.found) << "a message is left unexpected" << where;
  }
  matcher.reset();

  // ---- Checks ----
  for (const std::string& e : rec.errors) ADD_FAILURE() << e << where;
  int64_t lost = 0;
  for (int64_t mid = 0; mid < M; ++mid) {
    if (rec.msg_recv[static_cast<size_t>(mid)] == -1 && ++lost <= 5) {
      ADD_FAILURE() << "message " << mid << " was never received" << where;
    }
  }
  EXPECT_EQ(lost, 0) << where;
  for (size_t rid = 0; rid < recvs.size(); ++rid) {
    if (recvs[rid]->cancelled) {
      EXPECT_EQ(rec.recv_msg[rid], -1) << "cancelled receive " << rid << " got a message" << where;
    }
  }
  // Non-overtaking: per source, along post order, increasing sequence numbers.
  std::vector<int64_t> last(static_cast<size_t>(P), -1);
  int64_t order_errors = 0;
  for (size_t rid = 0; rid < recvs.size(); ++rid) {
    const int64_t mid = rec.recv_msg[rid];
    if (mid < 0) continue;
    const Message& m = msgs[static_cast<size_t>(mid)];
    if (m.seq <= last[static_cast<size_t>(m.src)] && ++order_errors <= 5) {
      ADD_FAILURE() << "receive " << rid << " took message " << m.seq << " of source " << m.src
                    << " after an earlier-posted receive took message "
                    << last[static_cast<size_t>(m.src)] << where;
    }
    last[static_cast<size_t>(m.src)] = m.seq;
  }
  EXPECT_EQ(order_errors, 0) << where;
  std::printf("  pace %d, %d producers: %" PRId64 " messages, %" PRId64 " on the line, %" PRId64
              " by delivery, %" PRId64 " withdrawals, %" PRId64 " receives cancelled\n",
              p.pace, P, M, rec.on_line, rec.by_deliver, withdrawals, cancels_found);
  for (auto& pr : recvs) delete pr->req;
  g_rec = nullptr;
  return Counts{rec.on_line, rec.by_deliver, withdrawals};
}

TEST(LineDelivery, ExactlyOnceInOrderWithWithdrawalsCancelsAndMisfits) {
  std::mt19937_64 seeds(stress_seed());
  // (pace, producers): flat out; slow producers; one producer, slow or flat out (a ping-pong's
  // pattern: nearly every receive waits posted, alone).
  Counts total;
  const int rounds[][2] = {{0, 3}, {1, 3}, {1, 1}, {0, 1}, {0, 2}, {1, 1}, {0, 1}};
  for (const auto& rp : rounds) {
    RunParams p;
    p.seed = seeds();
    p.pace = rp[0];
    p.producers = rp[1];
    p.per_producer = scaled(p.pace == 1 ? 1500 : 6000);
    const Counts c = run_scenario(p);
    if (HasFailure()) return;
    total.on_line += c.on_line;
    total.by_deliver += c.by_deliver;
    total.withdrawals += c.withdrawals;
  }
  // Every path was taken (the slow rounds deliver hundreds on the line, and their
  // waits are long enough to withdraw).
  EXPECT_GT(total.on_line, 0);
  EXPECT_GT(total.by_deliver, 0);
  EXPECT_GT(total.withdrawals, 0);
}

}  // namespace
