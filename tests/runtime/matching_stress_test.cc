// Stress test of ep::runtime::Matcher alone (no MPI, no Runtime).
//
// P producer threads push envelopes (src_rank = producer id, tag in [0,3], the
// producer's sequence number in `bytes`) through their own ProducerTokens, or match
// them in place with try_deliver_direct (heap envelopes, or stack envelopes that the
// matcher materializes if they must wait), or in runs of up to 8 under one hold()
// (as a bundle's records are delivered; the queues are then handled at release()).
// One consumer thread posts receives with random (source, tag) criteria, probes, and
// cancels; at the end it cancels what is still posted and drains the rest with
// ANY_SOURCE/ANY_TAG receives.
//
// Checked: every message delivered exactly once, every receive gets at most one
// message (and a cancelled one none), probes report a message that is still
// unexpected and that an immediately following receive with the same criteria gets,
// and MPI's non-overtaking rule on both sides, against the global order in which the
// matcher called deliver:
//   sender side:   if receive R took m2 from source s, every m1 from s sent before m2
//                  that also matches R's criteria was matched before m2;
//   receiver side: if receive R2 took m, no receive R1 posted before R2 whose criteria
//                  match m was still pending when m was matched.
//
// Seeded: LIBEP_STRESS_SEED=<n> reproduces a run (the seed is printed at start and in
// every failure message).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <sstream>
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
using ep::runtime::Request;

using ep_test::materialize_fn;
using ep_test::Pause;
using ep_test::scaled;

uint64_t stress_seed() { return ep_test::stress_seed("matching_stress_test"); }

std::string seed_msg() { return " [LIBEP_STRESS_SEED=" + std::to_string(stress_seed()) + "]"; }

constexpr int kTags = 4;  // tags 0..3

// ---- The shared state the callbacks record into ---------------------------------------
// Receive ids travel in Request::count; message ids are src * per_producer + seq.
struct Record {
  std::mutex mu;
  int per_producer = 0;
  std::vector<int64_t> recv_msg;      // receive id -> message id or -1
  std::vector<int64_t> msg_recv;      // message id -> receive id or -1
  std::vector<int64_t> msg_idx;       // message id -> global match index or -1
  std::vector<std::string> errors;    // first few problems seen inside callbacks
  int64_t matches = 0;                // guarded by mu
  std::atomic<int64_t> delivered{0};  // for throttling only
};

Record* g_rec = nullptr;

Envelope* new_envelope(int src, int tag, int64_t seq) {
  void* mem = std::malloc(sizeof(Envelope));
  Envelope* e = new (mem) Envelope;
  e->kind = Envelope::kEager;
  e->owned = true;
  e->block = mem;
  e->src_rank = src;
  e->tag = tag;
  e->bytes = seq;
  return e;
}

// The same on the caller's stack (owned == false), as the local eager path of p2p and a
// bundle's records arrive: the matcher materializes it if it has to wait.
Envelope stack_envelope(int src, int tag, int64_t seq) {
  Envelope e;
  e.kind = Envelope::kEager;
  e.owned = false;
  e.src_rank = src;
  e.tag = tag;
  e.bytes = seq;
  return e;
}

// Every receive gets a target of its own (set_target), so a delivery through the
// matcher's copy of the first posted receive (Matcher::Head) that named another
// receive's target, or a stale one, is caught.
void set_target(Request* r, int64_t rid) {
  r->op.target.dst = reinterpret_cast<char*>(static_cast<uintptr_t>(0x10000 + rid * 8));
  r->op.target.cap = rid;
  r->op.target.elem = static_cast<uint32_t>(rid % 7);
}

void deliver_fn(Request* r, const ep::runtime::RecvTarget& t, Envelope* e) {
  Record& rec = *g_rec;
  const int64_t rid = r->count;
  const ep::runtime::RecvTarget& own = r->op.target;
  const bool target_ok = t.dst == own.dst && t.cap == own.cap && t.elem == own.elem && t.cap == rid;
  const int src = e->src_rank, tag = e->tag;
  const int64_t seq = e->bytes;
  const bool owned = e->owned;
  void* block = e->block;
  {
    std::lock_guard<std::mutex> lock(rec.mu);
    auto err = [&](const std::string& what) {
      if (rec.errors.size() < 20) rec.errors.push_back(what);
    };
    if (src < 0 || seq < 0 || seq >= rec.per_producer || tag < 0 || tag >= kTags) {
      err("deliver: bad envelope src=" + std::to_string(src) + " seq=" + std::to_string(seq) +
          " tag=" + std::to_string(tag));
    } else if (rid < 0 || rid >= static_cast<int64_t>(rec.recv_msg.size())) {
      err("deliver: bad receive id " + std::to_string(rid));
    } else {
      const int64_t mid = static_cast<int64_t>(src) * rec.per_producer + seq;
      if (!ep::runtime::envelope_matches(r->op.source, r->op.tag, *e)) {
        err("deliver: receive " + std::to_string(rid) + " (source " + std::to_string(r->op.source) +
            ", tag " + std::to_string(r->op.tag) + ") got a non-matching message src=" +
            std::to_string(src) + " tag=" + std::to_string(tag));
      }
      if (!target_ok) {
        err("deliver: receive " + std::to_string(rid) + " got the target of receive " +
            std::to_string(t.cap));
      }
      if (rec.recv_msg[rid] != -1) {
        err("deliver: receive " + std::to_string(rid) + " got a second message");
      }
      if (rec.msg_recv[mid] != -1) {
        err("deliver: message src=" + std::to_string(src) + " seq=" + std::to_string(seq) +
            " delivered twice (receives " + std::to_string(rec.msg_recv[mid]) + " and " +
            std::to_string(rid) + ")");
      }
      rec.recv_msg[rid] = mid;
      rec.msg_recv[mid] = rid;
      rec.msg_idx[mid] = rec.matches;
    }
    ++rec.matches;
  }
  rec.delivered.fetch_add(1, std::memory_order_relaxed);
  // Consume the envelope: a heap one is freed right here (ASAN catches later use).
  if (owned) std::free(block);
}

void wait_done(const MatchOp& op) {
  Pause pause;
  // acquire: pairs with the matcher's release store of done.
  while (!op.done.is_set()) pause();
}

int64_t matches_now(Record& rec) {
  std::lock_guard<std::mutex> lock(rec.mu);
  return rec.matches;
}

int64_t recv_msg_now(Record& rec, int64_t rid) {
  std::lock_guard<std::mutex> lock(rec.mu);
  return rec.recv_msg[rid];
}

// One receive as posted by the consumer.
struct PostedRecv {
  Request* req = nullptr;
  int source = EP_ANY_SOURCE;
  int tag = EP_ANY_TAG;
  int64_t post = 0;  // position in the consumer's post order
  // Pending-until bound for the receiver-side check: for a cancelled receive, the
  // number of matches that had happened before the cancel was posted.
  int64_t cancel_lower = -1;
  bool cancelled = false;
};

struct Message {
  int src = 0, tag = 0;
  int64_t seq = 0;
};

struct RunParams {
  int producers = 4;
  int per_producer = 1000;
  uint64_t seed = 0;
  // 0: as fast as both sides go; 1: slow consumer (arrivals wait unexpected);
  // 2: slow producers (receives wait posted).
  int pace = 0;
};

// One full scenario; returns the number of failures found (reported with ADD_FAILURE).
void run_scenario(const RunParams& p) {
  const std::string where = " (round seed " + std::to_string(p.seed) + ")" + seed_msg();
  const int P = p.producers;
  const int N = p.per_producer;
  const int64_t M = static_cast<int64_t>(P) * N;

  Record rec;
  rec.per_producer = N;
  rec.msg_recv.assign(static_cast<size_t>(M), -1);
  rec.msg_idx.assign(static_cast<size_t>(M), -1);
  // Receive ids: at most M receives that take messages, plus unmatched cancelled ones;
  // reserve generously and never grow while the producers run.
  const int64_t max_recvs = 8 * M + 256;
  rec.recv_msg.assign(static_cast<size_t>(max_recvs), -1);
  g_rec = &rec;

  // Message tags are fixed up front (so that the checks know them).
  std::vector<Message> msgs(static_cast<size_t>(M));
  {
    std::mt19937_64 rng(p.seed);
    for (int s = 0; s < P; ++s) {
      for (int i = 0; i < N; ++i) {
        Message& m = msgs[static_cast<size_t>(s) * N + i];
        m.src = s;
        m.seq = i;
        m.tag = static_cast<int>(rng() % kTags);
      }
    }
  }

  auto matcher = std::make_unique<Matcher>(deliver_fn, materialize_fn);
  std::atomic<int> producers_done{0};
  std::atomic<bool> go{false};

  std::vector<std::thread> producers;
  for (int s = 0; s < P; ++s) {
    producers.emplace_back([&, s] {
      std::mt19937_64 rng(p.seed * 1000003 + static_cast<uint64_t>(s) + 1);
      moodycamel::ProducerToken token(matcher->inbox());
      Pause start_pause;
      while (!go.load(std::memory_order_acquire)) start_pause();
      for (int i = 0; i < N; ++i) {
        const Message& m = msgs[static_cast<size_t>(s) * N + i];
        // Throttle so that the unexpected list stays short (the matcher is O(length)).
        Pause pause;
        while (static_cast<int64_t>(i) * P - rec.delivered.load(std::memory_order_relaxed) > 512) {
          pause();
        }
        const unsigned how = rng() % 8;
        if (how < 4) {
          matcher->push(token, new_envelope(s, m.tag, m.seq));
        } else if (how < 6) {
          Envelope* e = new_envelope(s, m.tag, m.seq);
          if (!matcher->try_deliver_direct(e)) matcher->push(token, e);
        } else if (how == 7 && matcher->hold()) {
          // A held run, as the records of one bundle are delivered: up to 8 messages
          // in a row under one hold, on the stack (materialized if they must wait).
          const int run = std::min(1 + static_cast<int>(rng() % 8), N - i);
          for (int k = 0; k < run; ++k) {
            const Message& mk = msgs[static_cast<size_t>(s) * N + i + k];
            Envelope e = stack_envelope(s, mk.tag, mk.seq);
            matcher->deliver_held(&e);
          }
          matcher->release();
          i += run - 1;
        } else {
          Envelope e = stack_envelope(s, m.tag, m.seq);  // as the local eager path does
          if (!matcher->try_deliver_direct(&e)) matcher->push(token, materialize_fn(&e));
        }
        if (rng() % 64 == 0) {
          if (p.pace == 2) {
            std::this_thread::sleep_for(std::chrono::microseconds(50));
          } else {
            std::this_thread::yield();
          }
        }
      }
      producers_done.fetch_add(1, std::memory_order_release);
    });
  }

  // ---- The consumer (this thread) ----
  std::vector<PostedRecv> recvs;
  recvs.reserve(static_cast<size_t>(max_recvs));
  std::vector<int64_t> outstanding;  // receive ids possibly still posted
  int64_t post_counter = 0;
  int64_t probes = 0, probes_found = 0, cancels = 0, cancels_found = 0;
  std::mt19937_64 rng(p.seed ^ 0x9e3779b97f4a7c15ULL);

  auto new_recv = [&](int source, int tag) -> int64_t {
    const int64_t rid = static_cast<int64_t>(recvs.size());
    if (rid >= max_recvs) return -1;
    Request* r = new Request;
    r->count = static_cast<int>(rid);
    set_target(r, rid);
    r->op.kind = MatchOp::kRecv;
    r->op.source = source;
    r->op.tag = tag;
    r->op.req = r;
    PostedRecv pr;
    pr.req = r;
    pr.source = source;
    pr.tag = tag;
    pr.post = post_counter++;
    recvs.push_back(pr);
    matcher->post(&r->op);
    return rid;
  };
  auto cancel = [&](int64_t rid) -> bool {
    MatchOp op;
    op.kind = MatchOp::kCancel;
    op.req = recvs[rid].req;
    const int64_t before = matches_now(rec);
    matcher->post(&op);
    wait_done(op);
    ++cancels;
    const int64_t got = recv_msg_now(rec, rid);
    if (op.found) {
      ++cancels_found;
      recvs[rid].cancelled = true;
      recvs[rid].cancel_lower = before;
      EXPECT_EQ(got, -1) << "cancel of receive " << rid << " found it posted, but it had a message"
                         << where;
    } else {
      EXPECT_NE(got, -1) << "cancel of receive " << rid << " did not find it, yet it has no message"
                         << where;
    }
    return op.found;
  };
  auto random_criteria = [&](int* source, int* tag) {
    *source = rng() % 3 == 0 ? EP_ANY_SOURCE : static_cast<int>(rng() % P);
    *tag = rng() % 3 == 0 ? EP_ANY_TAG : static_cast<int>(rng() % kTags);
  };
  auto message_matches = [](int source, int tag, const Message& m) {
    return (source == EP_ANY_SOURCE || source == m.src) && (tag == EP_ANY_TAG || tag == m.tag);
  };

  go.store(true, std::memory_order_release);
  while (producers_done.load(std::memory_order_acquire) < P) {
    // Receive ids are budgeted: once the budget gets tight, post only ANY/ANY receives
    // (each one is bound to take a message) and never cancel, so the run always ends.
    const bool tight = static_cast<int64_t>(recvs.size()) + M + 128 >= max_recvs;
    // Keep the posted list short: retire receives that already got a message, and
    // cancel old ones (or, when tight, wait) while too many are outstanding.
    if (outstanding.size() > 48) {
      std::vector<int64_t> keep;
      for (int64_t rid : outstanding) {
        if (recv_msg_now(rec, rid) == -1) keep.push_back(rid);
      }
      outstanding.swap(keep);
      if (tight && outstanding.size() > 32) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        continue;
      }
      while (outstanding.size() > 32) {
        size_t k = rng() % outstanding.size();
        cancel(outstanding[k]);
        outstanding.erase(outstanding.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    if (tight) {
      int64_t rid = new_recv(EP_ANY_SOURCE, EP_ANY_TAG);
      ASSERT_GE(rid, 0) << "receive budget exhausted" << where;
      outstanding.push_back(rid);
      continue;
    }
    const unsigned what = rng() % 16;
    if (what < 10) {
      int source, tag;
      random_criteria(&source, &tag);
      int64_t rid = new_recv(source, tag);
      ASSERT_GE(rid, 0) << "receive budget exhausted" << where;
      outstanding.push_back(rid);
    } else if (what < 14) {
      MatchOp op;
      op.kind = MatchOp::kProbe;
      random_criteria(&op.source, &op.tag);
      const int64_t before = matches_now(rec);
      matcher->post(&op);
      wait_done(op);
      ++probes;
      if (op.found) {
        ++probes_found;
        const int src = op.status.EP_SOURCE, tag = op.status.EP_TAG;
        const int64_t seq = op.status.ep_bytes_;
        if (src < 0 || src >= P || seq < 0 || seq >= N || tag < 0 || tag >= kTags) {
          ADD_FAILURE() << "probe reported an impossible message src=" << src << " tag=" << tag
                        << " seq=" << seq << where;
          continue;
        }
        const int64_t mid = static_cast<int64_t>(src) * N + seq;
        EXPECT_EQ(msgs[mid].tag, tag) << "probe reported a wrong tag" << where;
        EXPECT_TRUE(message_matches(op.source, op.tag, msgs[mid]))
            << "probe (source " << op.source << ", tag " << op.tag
            << ") reported a non-matching message src=" << src << " tag=" << tag << where;
        int64_t idx;
        {
          std::lock_guard<std::mutex> lock(rec.mu);
          idx = rec.msg_idx[mid];
        }
        EXPECT_TRUE(idx == -1 || idx >= before)
            << "probe reported message src=" << src << " seq=" << seq
            << " as unexpected, but it had been matched (index " << idx << ") before the probe"
            << where;
        if (rng() % 2 == 0) {
          // MPI: a receive with the probe's criteria, posted next by the same thread,
          // gets the probed message.
          int64_t rid = new_recv(op.source, op.tag);
          ASSERT_GE(rid, 0) << "receive budget exhausted" << where;
          int64_t got;
          Pause pause;
          for (;;) {
            got = recv_msg_now(rec, rid);
            if (got != -1) break;
            pause();
          }
          EXPECT_EQ(got, mid) << "receive after probe (source " << op.source << ", tag " << op.tag
                              << ") got src=" << msgs[got].src << " seq=" << msgs[got].seq
                              << ", probe had reported src=" << src << " seq=" << seq << where;
        }
      }
    } else if (!outstanding.empty()) {
      size_t k = rng() % outstanding.size();
      cancel(outstanding[k]);
      outstanding.erase(outstanding.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (rng() % 32 == 0) {
      if (p.pace == 1) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      } else {
        std::this_thread::yield();
      }
    }
  }
  for (auto& t : producers) t.join();

  // Quiescent now (the producers' last kicks finished before join).  No pending
  // receive may match a message that is still unexpected.
  EXPECT_FALSE(matcher->busy()) << where;
  for (int64_t rid : outstanding) {
    if (recv_msg_now(rec, rid) != -1) continue;
    MatchOp op;
    op.kind = MatchOp::kProbe;
    op.source = recvs[rid].source;
    op.tag = recvs[rid].tag;
    matcher->post(&op);
    wait_done(op);
    EXPECT_FALSE(op.found) << "receive " << rid << " (source " << recvs[rid].source << ", tag "
                           << recvs[rid].tag
                           << ") is still posted although message src=" << op.status.EP_SOURCE
                           << " seq=" << op.status.ep_bytes_ << " matches it and waits unexpected"
                           << where;
  }
  for (int64_t rid : outstanding) {
    if (recv_msg_now(rec, rid) == -1) {
      EXPECT_TRUE(cancel(rid)) << "receive " << rid << " has no message but cannot be cancelled"
                               << where;
    }
  }
  // Drain: ANY_SOURCE/ANY_TAG receives for whatever is left.
  int64_t left = M - matches_now(rec);
  for (int64_t i = 0; i < left; ++i) {
    int64_t rid = new_recv(EP_ANY_SOURCE, EP_ANY_TAG);
    ASSERT_GE(rid, 0) << "too many receives" << where;
    EXPECT_NE(recv_msg_now(rec, rid), -1)
        << "drain receive " << rid << " got nothing from an idle matcher" << where;
  }
  {
    MatchOp op;
    op.kind = MatchOp::kProbe;
    op.source = EP_ANY_SOURCE;
    op.tag = EP_ANY_TAG;
    matcher->post(&op);
    wait_done(op);
    EXPECT_FALSE(op.found) << "a message is left unexpected after the drain" << where;
  }
  matcher.reset();

  // ---- Checks on the record ----
  for (const std::string& e : rec.errors) ADD_FAILURE() << e << where;
  EXPECT_EQ(rec.matches, M) << where;
  int64_t lost = 0;
  for (int64_t mid = 0; mid < M; ++mid) {
    if (rec.msg_recv[mid] == -1) {
      if (++lost <= 5) {
        ADD_FAILURE() << "message src=" << msgs[mid].src << " seq=" << msgs[mid].seq
                      << " was never delivered" << where;
      }
    }
  }
  EXPECT_EQ(lost, 0) << where;
  for (size_t rid = 0; rid < recvs.size(); ++rid) {
    if (recvs[rid].cancelled) {
      EXPECT_EQ(rec.recv_msg[rid], -1) << "cancelled receive got a message" << where;
    }
  }
  if (lost != 0 || !rec.errors.empty()) {
    for (auto& r : recvs) delete r.req;
    return;
  }

  // Sender-side non-overtaking.  For source s and tag class c (ANY = kTags), the
  // prefix maximum of match indices over s's messages in sequence order.
  int64_t violations = 0;
  auto report = [&](const std::string& what) {
    if (++violations <= 10) ADD_FAILURE() << what << where;
  };
  {
    // prefix[s][c][i] = max match index over messages seq < i of s (with tag c).
    std::vector<std::vector<std::vector<int64_t>>> prefix(
        P, std::vector<std::vector<int64_t>>(kTags + 1, std::vector<int64_t>(N + 1, -1)));
    for (int s = 0; s < P; ++s) {
      for (int c = 0; c <= kTags; ++c) {
        auto& pre = prefix[s][c];
        for (int i = 0; i < N; ++i) {
          const int64_t mid = static_cast<int64_t>(s) * N + i;
          int64_t v = pre[i];
          if (c == kTags || msgs[mid].tag == c) v = std::max(v, rec.msg_idx[mid]);
          pre[i + 1] = v;
        }
      }
    }
    for (int64_t mid = 0; mid < M; ++mid) {
      const PostedRecv& r = recvs[rec.msg_recv[mid]];
      const Message& m = msgs[mid];
      const int c = r.tag == EP_ANY_TAG ? kTags : r.tag;
      const int64_t earlier_max = prefix[m.src][c][m.seq];
      if (earlier_max > rec.msg_idx[mid]) {
        // Find the culprit for the message.
        int64_t culprit = -1;
        for (int i = 0; i < m.seq; ++i) {
          const int64_t m1 = static_cast<int64_t>(m.src) * N + i;
          if (message_matches(r.source, r.tag, msgs[m1]) && rec.msg_idx[m1] > rec.msg_idx[mid]) {
            culprit = i;
            break;
          }
        }
        std::ostringstream os;
        os << "overtaking: receive " << rec.msg_recv[mid] << " (source " << r.source << ", tag "
           << r.tag << ") took src=" << m.src << " seq=" << m.seq << " tag=" << m.tag
           << " at match " << rec.msg_idx[mid] << " while the earlier seq=" << culprit << " (tag "
           << (culprit >= 0 ? msgs[m.src * N + culprit].tag : -1)
           << ") that also matches was matched only later";
        report(os.str());
      }
    }
  }
  // Receiver-side: receives grouped by criteria class; prefix maximum (in post order)
  // of "pending until": match index if matched, the cancel's lower bound if cancelled,
  // infinity if never matched nor cancelled (cannot happen after the drain).
  {
    const int kSrcClasses = P + 1, kTagClasses = kTags + 1;
    auto cls = [&](int source, int tag) {
      const int sc = source == EP_ANY_SOURCE ? P : source;
      const int tc = tag == EP_ANY_TAG ? kTags : tag;
      return sc * kTagClasses + tc;
    };
    std::vector<std::vector<std::pair<int64_t, int64_t>>> by_class(kSrcClasses * kTagClasses);
    for (size_t rid = 0; rid < recvs.size(); ++rid) {
      const PostedRecv& r = recvs[rid];
      int64_t until;
      if (rec.recv_msg[rid] != -1) {
        until = rec.msg_idx[rec.recv_msg[rid]];
      } else if (r.cancelled) {
        until = r.cancel_lower;
      } else {
        until = INT64_MAX;
      }
      by_class[cls(r.source, r.tag)].push_back({r.post, until});
    }
    // prefix max of `until` in post order (already sorted by post).
    std::vector<std::vector<int64_t>> pre(by_class.size());
    for (size_t c = 0; c < by_class.size(); ++c) {
      pre[c].resize(by_class[c].size() + 1, -1);
      for (size_t i = 0; i < by_class[c].size(); ++i) {
        pre[c][i + 1] = std::max(pre[c][i], by_class[c][i].second);
      }
    }
    for (int64_t mid = 0; mid < M; ++mid) {
      const int64_t rid = rec.msg_recv[mid];
      const PostedRecv& r2 = recvs[rid];
      const Message& m = msgs[mid];
      const int srcs[2] = {m.src, EP_ANY_SOURCE};
      const int tags[2] = {m.tag, EP_ANY_TAG};
      for (int a = 0; a < 2; ++a) {
        for (int b = 0; b < 2; ++b) {
          const int c = cls(srcs[a], tags[b]);
          const auto& list = by_class[c];
          // receives of class c posted before r2
          size_t n = std::lower_bound(list.begin(), list.end(),
                                      std::make_pair(r2.post, int64_t{INT64_MIN})) -
                     list.begin();
          if (pre[c][n] > rec.msg_idx[mid]) {
            std::ostringstream os;
            os << "receive order: message src=" << m.src << " seq=" << m.seq << " tag=" << m.tag
               << " went to receive " << rid << " (source " << r2.source << ", tag " << r2.tag
               << ", post " << r2.post << ") at match " << rec.msg_idx[mid]
               << " although an earlier-posted receive (source " << srcs[a] << ", tag " << tags[b]
               << ") that matches it was still pending";
            report(os.str());
          }
        }
      }
    }
  }
  EXPECT_EQ(violations, 0) << where;
  std::printf("  round seed %" PRIu64 " pace %d: %" PRId64 " messages, %zu receives, %" PRId64
              " probes (%" PRId64 " found), %" PRId64 " cancels (%" PRId64 " found)\n",
              p.seed, p.pace, M, recvs.size(), probes, probes_found, cancels, cancels_found);
  std::fflush(stdout);
  for (auto& r : recvs) delete r.req;
}

// Turns a hang (a lost kick, a receive never matched) into a failure with the seed.
class Watchdog {
 public:
  explicit Watchdog(int seconds) {
    thread_ = std::thread([this, seconds] {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) return;
      std::fprintf(stderr,
                   "\n*** matching_stress_test WATCHDOG: no end after %d s (lost kick or "
                   "stuck receive?)%s\n",
                   seconds, seed_msg().c_str());
      std::fflush(stdout);
      std::fflush(stderr);
      std::abort();
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

int watchdog_seconds() { return scaled(8) == 8 ? 50 : 170; }

TEST(Matching, ConcurrentProducersOneConsumerExactlyOnceInOrder) {
  const uint64_t seed = stress_seed();
  Watchdog dog(watchdog_seconds());
  const int rounds = 12;
  for (int round = 0; round < rounds; ++round) {
    RunParams p;
    p.producers = 4;
    p.per_producer = scaled(3000) * (scaled(8) == 8 ? 1 : 4);  // sanitizers: 1/2
    p.seed = seed + static_cast<uint64_t>(round) * 7919;
    p.pace = round % 3;
    run_scenario(p);
    if (HasFailure()) break;
  }
}

TEST(Matching, CancelRemovesOnlyUnmatchedReceives) {
  const std::string where = seed_msg();
  Watchdog dog(watchdog_seconds());
  Record rec;
  rec.per_producer = 1 << 20;
  rec.recv_msg.assign(1 << 18, -1);
  rec.msg_recv.assign(static_cast<size_t>(2) << 20, -1);
  rec.msg_idx.assign(static_cast<size_t>(2) << 20, -1);
  g_rec = &rec;
  Matcher matcher(deliver_fn, materialize_fn);
  moodycamel::ProducerToken token(matcher.inbox());
  std::vector<Request*> reqs;
  auto post = [&](int source, int tag) {
    Request* r = new Request;
    r->count = static_cast<int>(reqs.size());
    set_target(r, r->count);
    r->op.kind = MatchOp::kRecv;
    r->op.source = source;
    r->op.tag = tag;
    r->op.req = r;
    reqs.push_back(r);
    matcher.post(&r->op);
    return r;
  };
  auto cancel = [&](Request* r) {
    MatchOp op;
    op.kind = MatchOp::kCancel;
    op.req = r;
    matcher.post(&op);
    wait_done(op);
    return op.found;
  };
  auto got = [&](Request* r) { return recv_msg_now(rec, r->count); };

  // Deterministic: R0 (0, 1), R1 (ANY, 2), R2 (ANY, ANY).
  Request* r0 = post(0, 1);
  Request* r1 = post(EP_ANY_SOURCE, 2);
  Request* r2 = post(EP_ANY_SOURCE, EP_ANY_TAG);
  matcher.push(token, new_envelope(0, 2, 0));  // -> R1 (first posted that matches)
  EXPECT_EQ(got(r1), 0);
  EXPECT_FALSE(cancel(r1)) << "a matched receive must not be cancellable";
  EXPECT_TRUE(cancel(r0)) << "a pending receive must be cancellable";
  EXPECT_FALSE(cancel(r0)) << "a receive is cancelled only once";
  matcher.push(token, new_envelope(0, 1, 1));  // R0 is gone -> R2
  EXPECT_EQ(got(r0), -1);
  EXPECT_EQ(got(r2), 1);
  EXPECT_FALSE(cancel(r2));
  Request stranger;  // never posted
  stranger.op.req = &stranger;
  EXPECT_FALSE(cancel(&stranger)) << "cancel of an unknown receive found something";
  // A cancelled receive leaves later ones in place and in order.
  Request* a = post(1, 3);
  Request* b = post(1, 3);
  Request* c = post(1, 3);
  EXPECT_TRUE(cancel(b));
  matcher.push(token, new_envelope(1, 3, 0));
  matcher.push(token, new_envelope(1, 3, 1));
  EXPECT_EQ(got(a), static_cast<int64_t>(1) * rec.per_producer + 0);
  EXPECT_EQ(got(c), static_cast<int64_t>(1) * rec.per_producer + 1);
  EXPECT_EQ(got(b), -1);

  // Concurrent: one producer streams messages (src 1, seq from 2) while this thread
  // posts receives and cancels random pending ones; each receive ends up either with a
  // message or cancelled, never both; a failed cancel means the message is visible.
  const int n = scaled(20000);
  std::atomic<bool> stop{false};
  std::mt19937_64 rng(stress_seed() + 17);
  std::thread producer([&] {
    moodycamel::ProducerToken tok(matcher.inbox());
    std::mt19937_64 prng(stress_seed() + 18);
    for (int i = 0; i < n; ++i) {
      Pause pause;
      while (i - rec.delivered.load(std::memory_order_relaxed) > 256 &&
             !stop.load(std::memory_order_relaxed)) {
        pause();
      }
      Envelope* e = new_envelope(1, static_cast<int>(prng() % kTags), 2 + i);
      if (prng() % 2 == 0 || !matcher.try_deliver_direct(e)) matcher.push(tok, e);
    }
  });
  std::vector<Request*> pending;
  std::vector<Request*> cancelled;
  int64_t found = 0, not_found = 0;
  const size_t first_concurrent = reqs.size();
  // Receive ids are budgeted; keep room for the drain below (at most n more).
  while (rec.delivered.load(std::memory_order_relaxed) < n + 4 &&
         reqs.size() + static_cast<size_t>(n) + 64 < rec.recv_msg.size()) {
    if (pending.size() < 16) {
      int tag = rng() % 4 == 0 ? EP_ANY_TAG : static_cast<int>(rng() % kTags);
      pending.push_back(post(rng() % 2 == 0 ? 1 : EP_ANY_SOURCE, tag));
    } else {
      size_t k = rng() % pending.size();
      Request* r = pending[k];
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(k));
      if (cancel(r)) {
        ++found;
        cancelled.push_back(r);
        EXPECT_EQ(got(r), -1) << "cancelled receive had a message" << where;
      } else {
        ++not_found;
        EXPECT_NE(got(r), -1) << "uncancellable receive has no message" << where;
      }
    }
  }
  stop.store(true);
  producer.join();
  // Whatever is pending: cancel; everything must be consistent now.
  for (Request* r : pending) {
    if (got(r) == -1) {
      EXPECT_TRUE(cancel(r)) << where;
      cancelled.push_back(r);
    } else {
      EXPECT_FALSE(cancel(r)) << where;
    }
  }
  for (Request* r : cancelled)
    EXPECT_EQ(got(r), -1) << "a cancelled receive got a message later" << where;
  // Drain what is left and check none was lost.
  int64_t left = n + 4 - rec.delivered.load();
  for (int64_t i = 0; i < left; ++i) {
    Request* r = post(EP_ANY_SOURCE, EP_ANY_TAG);
    EXPECT_NE(got(r), -1) << where;
  }
  EXPECT_EQ(rec.delivered.load(), n + 4) << where;
  for (int i = 0; i < n; ++i) {
    EXPECT_NE(rec.msg_recv[static_cast<size_t>(1) * rec.per_producer + 2 + i], -1)
        << "message seq " << 2 + i << " lost" << where;
    if (HasFailure()) break;
  }
  for (const std::string& e : rec.errors) ADD_FAILURE() << e << where;
  std::printf("  concurrent cancels: %zu receives, %" PRId64 " cancelled, %" PRId64 " too late\n",
              reqs.size() - first_concurrent, found, not_found);
  for (Request* r : reqs) delete r;
}

}  // namespace
