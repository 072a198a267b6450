// Randomized point-to-point stress: all send modes, all receive styles, within and
// across processes, uneven endpoint counts; exactly-once, intact, non-overtaking.
//
// Layout: process p has W = uneven(p) sender endpoints and W receiver endpoints (one
// thread each).  Senders only send and receivers only receive, so that blocking sends
// (EP_Send of a large message, EP_Ssend) can never deadlock against a blocked receiver:
// a receiver only ever blocks on EP_ANY_SOURCE/EP_ANY_TAG, and its nonblocking batches
// are completed by a Testsome loop that also takes unexpected messages with Improbe.
//
// The plan (per sender: how many messages, to whom, tag, size, mode) comes from a seed
// that rank 0 chooses (LIBEP_STRESS_SEED=<n> to reproduce) and broadcasts; receivers learn
// the counts from a count exchange on tag 100 and check them against the plan.
// Payload: a header {seq, src, dst, tag, size, checksum} then pattern bytes (messages
// shorter than the header carry a prefix of it).  Checked per receiver: every message
// exactly once (per source bitmap), intact (header, checksum, pattern, no overrun),
// status source/tag/count right, and non-overtaking: for messages m1 < m2 of one source
// where m1 matches the criteria of the receive that took m2, m1's receive was posted
// before m2's.  Rsend is used only where MPI allows it: a separate test where every
// receive is posted (and a barrier passed) before the ready send.
//
// A watchdog makes a lost message a failure with the seed and every endpoint's state
// instead of a hang.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/harness.h"

namespace {

using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;
using ep_test::world_size;

constexpr int kCountTag = 100;
constexpr int kTags = 8;                     // data tags 0..7
constexpr int kMaxSize = 1 << 20;            // 1 MiB
constexpr int64_t kSenderBudget = 48 << 20;  // planned bytes per sender at most

#if defined(EP_SANITIZER_THREAD) || defined(EP_SANITIZER_ADDRESS) || defined(EP_SANITIZER_UNDEFINED)
constexpr bool kSanitizer = true;
#else
constexpr bool kSanitizer = false;
#endif

// ---- Seed -------------------------------------------------------------------------------
uint64_t g_seed = 0;

uint64_t shared_seed() {
  static bool done = false;
  if (done) return g_seed;
  unsigned long long v = 0;
  if (world_rank() == 0) {
    const char* s = std::getenv("LIBEP_STRESS_SEED");
    if (s != nullptr && *s != '\0') {
      v = std::strtoull(s, nullptr, 0);
    } else {
      v = (static_cast<unsigned long long>(std::random_device{}()) << 20) ^
          static_cast<unsigned long long>(
              std::chrono::steady_clock::now().time_since_epoch().count());
      v &= (1ULL << 48) - 1;
    }
  }
  MPI_Bcast(&v, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  g_seed = v;
  done = true;
  if (world_rank() == 0) {
    std::printf("p2p_stress_test: seed %llu (rerun with LIBEP_STRESS_SEED=%llu), %d processes\n", v,
                v, world_size());
    std::fflush(stdout);
  }
  return g_seed;
}

std::string seed_note() {
  return " [p2p_stress_test SEED " + std::to_string(g_seed) +
         ": rerun with LIBEP_STRESS_SEED=" + std::to_string(g_seed) + "]";
}

// ---- Layout -------------------------------------------------------------------------------
struct Layout {
  std::vector<int> senders, receivers;            // global endpoint ranks
  std::vector<int> role;                          // rank -> 0 sender, 1 receiver
  std::vector<int> sender_index, receiver_index;  // rank -> index in the lists or -1
};

Layout make_layout() {
  Layout l;
  int base = 0;
  for (int q = 0; q < world_size(); ++q) {
    int w = uneven(q);
    for (int i = 0; i < 2 * w; ++i) {
      int r = base + i;
      l.role.push_back(i < w ? 0 : 1);
      l.sender_index.push_back(i < w ? static_cast<int>(l.senders.size()) : -1);
      l.receiver_index.push_back(i < w ? -1 : static_cast<int>(l.receivers.size()));
      (i < w ? l.senders : l.receivers).push_back(r);
    }
    base += 2 * w;
  }
  return l;
}

// ---- Plan ---------------------------------------------------------------------------------
enum Mode { kSend, kIsend, kSsend, kIssend, kBsend, kIbsend, kModes };
const char* const kModeName[] = {"Send", "Isend", "Ssend", "Issend", "Bsend", "Ibsend"};

struct Msg {
  int dest = 0, tag = 0, size = 0, mode = 0;
  uint32_t seq = 0;  // per (src, dest)
};

std::vector<Msg> make_plan(uint64_t seed, int src, const Layout& l) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(src) * 1000003 + 7);
  // Sanitizers: fewer messages (ep_test::scaled would leave 6..25; 20..60 still fit).
  const int lo = kSanitizer ? 20 : 50, hi = kSanitizer ? 60 : 200;
  const int n = lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
  std::vector<Msg> plan;
  std::vector<uint32_t> next(l.role.size(), 0);
  int64_t bytes = 0;
  for (int i = 0; i < n; ++i) {
    Msg m;
    m.dest = l.receivers[rng() % l.receivers.size()];
    m.tag = static_cast<int>(rng() % kTags);
    const unsigned bucket = rng() % 100;
    if (bucket < 3) {
      m.size = static_cast<int>(rng() % 4);  // shorter than the sequence number
    } else if (bucket < 70) {
      m.size = static_cast<int>(rng() % 1024);
    } else if (bucket < 90) {
      m.size = 1024 + static_cast<int>(rng() % (64 * 1024 - 1024));
    } else {
      m.size = 64 * 1024 + static_cast<int>(rng() % (kMaxSize - 64 * 1024 + 1));
    }
    if (bytes + m.size > kSenderBudget) m.size = static_cast<int>(rng() % 1024);
    bytes += m.size;
    m.mode = static_cast<int>(rng() % kModes);
    m.seq = next[m.dest]++;
    plan.push_back(m);
  }
  return plan;
}

// ---- Payload ------------------------------------------------------------------------------
struct Header {
  uint32_t seq, src, dst, tag;
  int64_t size;
  uint64_t checksum;
};
static_assert(sizeof(Header) == 32, "header layout");

inline uint8_t pattern_byte(int src, int dst, uint32_t seq, size_t i) {
  return static_cast<uint8_t>(src * 131 + dst * 71 + seq * 29 + i * 7 + (i >> 8) * 13 + 5);
}

uint64_t checksum(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

Header make_header(int src, const Msg& m) {
  Header h;
  h.seq = m.seq;
  h.src = static_cast<uint32_t>(src);
  h.dst = static_cast<uint32_t>(m.dest);
  h.tag = static_cast<uint32_t>(m.tag);
  h.size = m.size;
  h.checksum = 0;
  return h;
}

std::vector<uint8_t> make_payload(int src, const Msg& m) {
  std::vector<uint8_t> v(static_cast<size_t>(m.size));
  for (size_t i = sizeof(Header); i < v.size(); ++i) v[i] = pattern_byte(src, m.dest, m.seq, i);
  Header h = make_header(src, m);
  if (v.size() > sizeof(Header))
    h.checksum = checksum(v.data() + sizeof(Header), v.size() - sizeof(Header));
  if (!v.empty()) std::memcpy(v.data(), &h, std::min(v.size(), sizeof(Header)));
  return v;
}

// ---- Progress, for the watchdog -------------------------------------------------------------
struct EpState {
  std::atomic<int> rank{-1}, role{-1}, done_ops{0}, total_ops{0}, phase{0};
};
constexpr int kMaxLocal = 16;
EpState g_state[kMaxLocal];

class Watchdog {
 public:
  Watchdog(const char* what, int seconds) : what_(what) {
    thread_ = std::thread([this, seconds] {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) return;
      std::ostringstream os;
      os << "\n*** p2p_stress_test WATCHDOG: " << what_ << " did not finish in " << seconds
         << " s on process " << world_rank() << " (lost or stuck messages?)" << seed_note() << "\n";
      for (auto& s : g_state) {
        if (s.rank.load() < 0) continue;
        os << "***   endpoint " << s.rank.load() << " ("
           << (s.role.load() == 0   ? "sender"
               : s.role.load() == 1 ? "receiver"
                                    : "ready-send")
           << "): phase " << s.phase.load() << ", " << s.done_ops.load() << " of "
           << s.total_ops.load() << (s.role.load() == 2 ? " rounds" : " messages") << " done\n";
      }
      std::string text = os.str();
      std::fwrite(text.data(), 1, text.size(), stderr);
      std::fflush(stderr);
      std::this_thread::sleep_for(std::chrono::seconds(2));  // let the other ranks report
      MPI_Abort(MPI_COMM_WORLD, 3);
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
  const char* what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

int watchdog_seconds() { return kSanitizer ? 170 : 50; }

void reset_states() {
  for (auto& s : g_state) {
    s.rank = -1;
    s.role = -1;
    s.done_ops = 0;
    s.total_ops = 0;
    s.phase = 0;
  }
}

class Pause {
 public:
  void operator()() {
    if (++n_ < 16) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(n_ < 512 ? 20 : 200));
    }
  }
  void reset() { n_ = 0; }

 private:
  int n_ = 0;
};

// ---- Sender -------------------------------------------------------------------------------
void run_sender(EP_Comm comm, int me, const Layout& l, const std::vector<Msg>& plan, EpState& st) {
  st.total_ops = static_cast<int>(plan.size());
  // Count exchange first: one message to every receiver, on tag 100.
  std::vector<int> counts(l.role.size(), 0);
  for (const Msg& m : plan) ++counts[m.dest];
  std::vector<EP_Request> creq(l.receivers.size());
  for (size_t i = 0; i < l.receivers.size(); ++i) {
    ASSERT_EQ(
        EP_Isend(&counts[l.receivers[i]], 1, MPI_INT, l.receivers[i], kCountTag, comm, &creq[i]),
        EP_SUCCESS)
        << seed_note();
  }
  ASSERT_EQ(EP_Waitall(static_cast<int>(creq.size()), creq.data(), EP_STATUSES_IGNORE), EP_SUCCESS)
      << seed_note();
  st.phase = 1;

  struct Pending {
    EP_Request req;
    std::vector<uint8_t> buf;
  };
  std::vector<Pending> pending;
  std::mt19937_64 rng(g_seed + static_cast<uint64_t>(me) * 31);
  auto reap = [&](bool all) {
    if (pending.empty()) return;
    std::vector<EP_Request> reqs;
    for (auto& p : pending) reqs.push_back(p.req);
    if (all) {
      ASSERT_EQ(EP_Waitall(static_cast<int>(reqs.size()), reqs.data(), EP_STATUSES_IGNORE),
                EP_SUCCESS)
          << seed_note();
      pending.clear();
      return;
    }
    int outcount = 0;
    std::vector<int> idx(reqs.size());
    ASSERT_EQ(EP_Testsome(static_cast<int>(reqs.size()), reqs.data(), &outcount, idx.data(),
                          EP_STATUSES_IGNORE),
              EP_SUCCESS)
        << seed_note();
    if (outcount == EP_UNDEFINED || outcount == 0) return;
    std::vector<bool> done(reqs.size(), false);
    for (int i = 0; i < outcount; ++i) done[idx[i]] = true;
    std::vector<Pending> keep;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (!done[i]) keep.push_back(std::move(pending[i]));
    }
    pending.swap(keep);
  };
  for (const Msg& m : plan) {
    std::vector<uint8_t> buf = make_payload(me, m);
    const void* p = buf.data();
    EP_Request r = EP_REQUEST_NULL;
    int err = EP_SUCCESS;
    switch (m.mode) {
      case kSend:
        err = EP_Send(p, m.size, MPI_BYTE, m.dest, m.tag, comm);
        break;
      case kSsend:
        err = EP_Ssend(p, m.size, MPI_BYTE, m.dest, m.tag, comm);
        break;
      case kBsend:
        err = EP_Bsend(p, m.size, MPI_BYTE, m.dest, m.tag, comm);
        break;
      case kIsend:
        err = EP_Isend(p, m.size, MPI_BYTE, m.dest, m.tag, comm, &r);
        break;
      case kIssend:
        err = EP_Issend(p, m.size, MPI_BYTE, m.dest, m.tag, comm, &r);
        break;
      case kIbsend:
        err = EP_Ibsend(p, m.size, MPI_BYTE, m.dest, m.tag, comm, &r);
        break;
    }
    ASSERT_EQ(err, EP_SUCCESS) << "EP_" << kModeName[m.mode] << " of " << m.size << " bytes to "
                               << m.dest << " tag " << m.tag << ": " << ep_test::last_error(err)
                               << seed_note();
    if (r != EP_REQUEST_NULL) {
      if (m.mode == kIbsend && rng() % 2 == 0) {
        // The data was copied: the buffer may go at once (request completes at once).
        ASSERT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS) << seed_note();
      } else {
        pending.push_back({r, std::move(buf)});
      }
    }
    st.done_ops.fetch_add(1, std::memory_order_relaxed);
    if (pending.size() > 32 || rng() % 8 == 0) reap(false);
    if (rng() % 16 == 0) std::this_thread::yield();
  }
  reap(true);
  st.phase = 2;
}

// ---- Receiver -----------------------------------------------------------------------------
struct Expected {
  std::vector<Msg> msgs;  // by seq
  std::vector<uint8_t> got;
  std::vector<int64_t> post;  // post index of the receive that took seq
  std::vector<int> crit_tag;  // tag criteria of that receive
  int received = 0;
};

struct RecvBuf {
  std::vector<uint8_t> data;
  explicit RecvBuf(size_t n) : data(n + 64, 0xEE) {}
};

class Receiver {
 public:
  Receiver(EP_Comm comm, int me, const Layout& l, EpState& st)
      : comm_(comm), me_(me), l_(l), st_(st), rng_(g_seed ^ (static_cast<uint64_t>(me) << 32)) {}

  void run() {
    // Expected messages, from every sender's plan.
    exp_.resize(l_.role.size());
    rem_tag_.assign(l_.role.size(), std::vector<int>(kTags, 0));
    for (int s : l_.senders) {
      for (const Msg& m : make_plan(g_seed, s, l_)) {
        if (m.dest != me_) continue;
        exp_[s].msgs.push_back(m);
        ++rem_tag_[s][m.tag];
      }
      exp_[s].got.assign(exp_[s].msgs.size(), 0);
      exp_[s].post.assign(exp_[s].msgs.size(), -1);
      exp_[s].crit_tag.assign(exp_[s].msgs.size(), EP_ANY_TAG);
      total_ += static_cast<int>(exp_[s].msgs.size());
    }
    st_.total_ops = total_;
    // Count exchange: specific source, tag 100, before any wildcard receive.
    for (int s : l_.senders) {
      int c = -1;
      EP_Status status;
      ASSERT_EQ(EP_Recv(&c, 1, MPI_INT, s, kCountTag, comm_, &status), EP_SUCCESS) << seed_note();
      ASSERT_EQ(status.EP_SOURCE, s);
      ASSERT_EQ(status.EP_TAG, kCountTag);
      ASSERT_EQ(c, static_cast<int>(exp_[s].msgs.size()))
          << "count from sender " << s << " to " << me_ << seed_note();
    }
    st_.phase = 1;
    while (received_ < total_ && !::testing::Test::HasFatalFailure()) {
      const unsigned what = rng_() % 100;
      if (what < 20) {
        recv_any_blocking();
      } else if (what < 45) {
        probe_first();
      } else if (what < 55) {
        mprobe_any();
      } else {
        batch();
      }
    }
    st_.phase = 2;
    check_order();
  }

 private:
  int remaining_from(int s) const {
    return static_cast<int>(exp_[s].msgs.size()) - exp_[s].received;
  }

  // Validates one received message; `crit_tag` is the tag criteria of its receive.
  void accept(const uint8_t* buf, const EP_Status& status, int64_t post, int crit_src,
              int crit_tag) {
    const int s = status.EP_SOURCE;
    const int tag = status.EP_TAG;
    int n = -1;
    EP_Get_count(&status, MPI_BYTE, &n);
    std::ostringstream where;
    where << " (receiver " << me_ << ", criteria source " << crit_src << " tag " << crit_tag
          << ", got source " << s << " tag " << tag << " " << n << " bytes)" << seed_note();
    ASSERT_TRUE(s >= 0 && s < static_cast<int>(l_.role.size()) && l_.role[s] == 0)
        << "bad source" << where.str();
    ASSERT_TRUE(tag >= 0 && tag < kTags) << "bad tag" << where.str();
    ASSERT_TRUE(crit_src == EP_ANY_SOURCE || crit_src == s) << "source mismatch" << where.str();
    ASSERT_TRUE(crit_tag == EP_ANY_TAG || crit_tag == tag) << "tag mismatch" << where.str();
    ASSERT_TRUE(n >= 0 && n <= kMaxSize) << "bad count" << where.str();
    Expected& e = exp_[s];
    uint32_t seq = 0;
    if (n >= 4) {
      std::memcpy(&seq, buf, 4);
    } else {
      // Too short to carry its number: the first such one not yet received.
      bool found = false;
      for (size_t i = 0; i < e.msgs.size(); ++i) {
        if (!e.got[i] && e.msgs[i].size == n && e.msgs[i].tag == tag) {
          seq = static_cast<uint32_t>(i);
          found = true;
          break;
        }
      }
      ASSERT_TRUE(found) << "unexpected short message" << where.str();
    }
    ASSERT_LT(seq, e.msgs.size()) << "sequence number out of range" << where.str();
    ASSERT_FALSE(e.got[seq]) << "DUPLICATE: message seq " << seq << " received twice"
                             << where.str();
    const Msg& m = e.msgs[seq];
    ASSERT_EQ(m.tag, tag) << "seq " << seq << ": wrong tag" << where.str();
    ASSERT_EQ(m.size, n) << "seq " << seq << ": wrong size" << where.str();
    std::vector<uint8_t> want = make_payload(s, m);
    if (!std::equal(want.begin(), want.end(), buf)) {
      size_t i = 0;
      while (i < want.size() && want[i] == buf[i]) ++i;
      ADD_FAILURE() << "CORRUPT: seq " << seq << " differs at byte " << i << " of " << n
                    << where.str();
    }
    e.got[seq] = 1;
    e.post[seq] = post;
    e.crit_tag[seq] = crit_tag;
    ++e.received;
    --rem_tag_[s][tag];
    ++received_;
    st_.done_ops.fetch_add(1, std::memory_order_relaxed);
  }

  // Overrun guard: the bytes after the message must still be 0xEE; restore for reuse.
  void check_guard(RecvBuf& b, int n, size_t cap) {
    size_t end = std::min(static_cast<size_t>(n) + 64, cap + 64);
    for (size_t i = static_cast<size_t>(n); i < end; ++i) {
      if (b.data[i] != 0xEE) {
        ADD_FAILURE() << "OVERRUN: byte " << i << " after a " << n << "-byte message (receiver "
                      << me_ << ")" << seed_note();
        break;
      }
    }
    std::memset(b.data.data(), 0xEE, end);
  }

  int count_of(const EP_Status& s) {
    int n = -1;
    EP_Get_count(&s, MPI_BYTE, &n);
    return n;
  }

  void recv_any_blocking() {
    EP_Status status;
    const int64_t post = post_++;
    ASSERT_EQ(
        EP_Recv(big_.data.data(), kMaxSize, MPI_BYTE, EP_ANY_SOURCE, EP_ANY_TAG, comm_, &status),
        EP_SUCCESS)
        << seed_note();
    accept(big_.data.data(), status, post, EP_ANY_SOURCE, EP_ANY_TAG);
    check_guard(big_, count_of(status), kMaxSize);
  }

  // Iprobe/Improbe with random criteria over what is still expected; on a miss, a
  // blocking Probe(ANY, ANY) followed by a Recv of exactly the probed message.
  void probe_first() {
    std::vector<int> srcs;
    for (int s : l_.senders) {
      if (remaining_from(s) > 0) srcs.push_back(s);
    }
    int src = srcs[rng_() % srcs.size()];
    int tag = EP_ANY_TAG;
    if (rng_() % 2 == 0) {
      std::vector<int> tags;
      for (int t = 0; t < kTags; ++t) {
        if (rem_tag_[src][t] > 0) tags.push_back(t);
      }
      tag = tags[rng_() % tags.size()];
    }
    if (rng_() % 3 == 0) src = EP_ANY_SOURCE;
    EP_Status status;
    int flag = 0;
    if (rng_() % 2 == 0) {
      ASSERT_EQ(EP_Iprobe(src, tag, comm_, &flag, &status), EP_SUCCESS) << seed_note();
      if (flag) {
        ASSERT_TRUE(src == EP_ANY_SOURCE || status.EP_SOURCE == src) << seed_note();
        ASSERT_TRUE(tag == EP_ANY_TAG || status.EP_TAG == tag) << seed_note();
        // The receive with the probe's criteria gets the probed message (MPI).
        const int n = count_of(status);
        RecvBuf b(static_cast<size_t>(n));
        EP_Status rs;
        const int64_t post = post_++;
        ASSERT_EQ(EP_Recv(b.data.data(), n, MPI_BYTE, src, tag, comm_, &rs), EP_SUCCESS)
            << "Recv of " << n << " bytes after Iprobe" << seed_note();
        ASSERT_EQ(rs.EP_SOURCE, status.EP_SOURCE)
            << "Recv after Iprobe got another message" << seed_note();
        ASSERT_EQ(rs.EP_TAG, status.EP_TAG) << seed_note();
        accept(b.data.data(), rs, post, src, tag);
        check_guard(b, count_of(rs), static_cast<size_t>(n));
        return;
      }
    } else {
      EP_Message msg = EP_MESSAGE_NULL;
      const int64_t post = post_;
      ASSERT_EQ(EP_Improbe(src, tag, comm_, &flag, &msg, &status), EP_SUCCESS) << seed_note();
      if (flag) {
        ++post_;
        const int n = count_of(status);
        RecvBuf b(static_cast<size_t>(n));
        EP_Status rs;
        if (rng_() % 2 == 0) {
          ASSERT_EQ(EP_Mrecv(b.data.data(), n, MPI_BYTE, &msg, &rs), EP_SUCCESS) << seed_note();
        } else {
          EP_Request r;
          ASSERT_EQ(EP_Imrecv(b.data.data(), n, MPI_BYTE, &msg, &r), EP_SUCCESS) << seed_note();
          ASSERT_EQ(EP_Wait(&r, &rs), EP_SUCCESS) << seed_note();
        }
        EXPECT_EQ(msg, EP_MESSAGE_NULL);
        ASSERT_EQ(rs.EP_SOURCE, status.EP_SOURCE) << seed_note();
        ASSERT_EQ(rs.EP_TAG, status.EP_TAG) << seed_note();
        accept(b.data.data(), rs, post, src, tag);
        check_guard(b, count_of(rs), static_cast<size_t>(n));
        return;
      }
    }
    // Miss: blocking probe of anything, then receive exactly that (source, tag).
    ASSERT_EQ(EP_Probe(EP_ANY_SOURCE, EP_ANY_TAG, comm_, &status), EP_SUCCESS) << seed_note();
    const int n = count_of(status);
    RecvBuf b(static_cast<size_t>(n));
    EP_Status rs;
    const int64_t post = post_++;
    ASSERT_EQ(EP_Recv(b.data.data(), n, MPI_BYTE, status.EP_SOURCE, status.EP_TAG, comm_, &rs),
              EP_SUCCESS)
        << "Recv of " << n << " bytes after Probe" << seed_note();
    ASSERT_EQ(count_of(rs), n) << "Recv after Probe got another message" << seed_note();
    accept(b.data.data(), rs, post, status.EP_SOURCE, status.EP_TAG);
    check_guard(b, count_of(rs), static_cast<size_t>(n));
  }

  void mprobe_any() {
    EP_Message msg = EP_MESSAGE_NULL;
    EP_Status status;
    const int64_t post = post_++;
    ASSERT_EQ(EP_Mprobe(EP_ANY_SOURCE, EP_ANY_TAG, comm_, &msg, &status), EP_SUCCESS)
        << seed_note();
    const int n = count_of(status);
    RecvBuf b(static_cast<size_t>(n));
    EP_Status rs;
    ASSERT_EQ(EP_Mrecv(b.data.data(), n, MPI_BYTE, &msg, &rs), EP_SUCCESS) << seed_note();
    accept(b.data.data(), rs, post, EP_ANY_SOURCE, EP_ANY_TAG);
    check_guard(b, count_of(rs), static_cast<size_t>(n));
  }

  // A batch of Irecvs: (source, tag) ones, then (source, ANY_TAG), then (ANY, ANY), in
  // numbers that what is still expected can satisfy; completed by Wait*/Test* calls.
  void batch() {
    struct Item {
      int src, tag;
    };
    std::vector<Item> items;
    const int left = total_ - received_;
    const int b = 1 + static_cast<int>(rng_() % static_cast<uint64_t>(std::min(8, left)));
    std::vector<int> used(l_.role.size(), 0);
    std::vector<std::vector<int>> used_tag(l_.role.size(), std::vector<int>(kTags, 0));
    bool only_any = true;
    // (s, t) receives
    for (int k = 0; k < b && rng_() % 2 == 0; ++k) {
      int s = l_.senders[rng_() % l_.senders.size()];
      int t = static_cast<int>(rng_() % kTags);
      if (used_tag[s][t] < rem_tag_[s][t]) {
        ++used_tag[s][t];
        ++used[s];
        items.push_back({s, t});
        only_any = false;
      }
    }
    // (s, ANY) receives
    for (int k = static_cast<int>(items.size()); k < b && rng_() % 2 == 0; ++k) {
      int s = l_.senders[rng_() % l_.senders.size()];
      if (used[s] < remaining_from(s)) {
        ++used[s];
        items.push_back({s, EP_ANY_TAG});
        only_any = false;
      }
    }
    while (static_cast<int>(items.size()) < b) items.push_back({EP_ANY_SOURCE, EP_ANY_TAG});

    const size_t nb = items.size();
    // Buffers from a pool: check_guard restores every byte a message could touch.
    while (pool_.size() < nb) pool_.push_back(std::make_unique<RecvBuf>(kMaxSize));
    auto& bufs = pool_;
    std::vector<EP_Request> reqs(nb);
    std::vector<int64_t> posts(nb);
    for (size_t i = 0; i < nb; ++i) {
      posts[i] = post_++;
      ASSERT_EQ(EP_Irecv(bufs[i]->data.data(), kMaxSize, MPI_BYTE, items[i].src, items[i].tag,
                         comm_, &reqs[i]),
                EP_SUCCESS)
          << seed_note();
    }
    std::vector<bool> done(nb, false);
    size_t ndone = 0;
    auto finish = [&](size_t i, const EP_Status& s) {
      ASSERT_FALSE(done[i]) << "request completed twice" << seed_note();
      done[i] = true;
      ++ndone;
      EXPECT_EQ(reqs[i], EP_REQUEST_NULL) << "completed request not freed" << seed_note();
      accept(bufs[i]->data.data(), s, posts[i], items[i].src, items[i].tag);
      check_guard(*bufs[i], count_of(s), kMaxSize);
    };
    const unsigned how = only_any ? static_cast<unsigned>(rng_() % 4) : 3;
    if (how == 0) {  // Waitall
      std::vector<EP_Status> sts(nb);
      ASSERT_EQ(EP_Waitall(static_cast<int>(nb), reqs.data(), sts.data()), EP_SUCCESS)
          << seed_note();
      for (size_t i = 0; i < nb; ++i) finish(i, sts[i]);
    } else if (how == 1) {  // Waitany
      while (ndone < nb && !::testing::Test::HasFatalFailure()) {
        int idx = -1;
        EP_Status s;
        ASSERT_EQ(EP_Waitany(static_cast<int>(nb), reqs.data(), &idx, &s), EP_SUCCESS)
            << seed_note();
        ASSERT_TRUE(idx >= 0 && idx < static_cast<int>(nb))
            << "Waitany index " << idx << seed_note();
        finish(static_cast<size_t>(idx), s);
      }
    } else if (how == 2) {  // Waitsome
      std::vector<int> idx(nb);
      std::vector<EP_Status> sts(nb);
      while (ndone < nb && !::testing::Test::HasFatalFailure()) {
        int out = 0;
        ASSERT_EQ(EP_Waitsome(static_cast<int>(nb), reqs.data(), &out, idx.data(), sts.data()),
                  EP_SUCCESS)
            << seed_note();
        ASSERT_TRUE(out >= 1 && out != EP_UNDEFINED) << "Waitsome outcount " << out << seed_note();
        for (int k = 0; k < out; ++k) finish(static_cast<size_t>(idx[k]), sts[k]);
      }
    } else {  // Testsome/Testany/Test polling; unexpected messages go via Improbe
      Pause pause;
      std::vector<int> idx(nb);
      std::vector<EP_Status> sts(nb);
      while (ndone < nb && !::testing::Test::HasFatalFailure()) {
        int out = 0;
        const unsigned t = rng_() % 3;
        if (t == 0) {
          ASSERT_EQ(EP_Testsome(static_cast<int>(nb), reqs.data(), &out, idx.data(), sts.data()),
                    EP_SUCCESS)
              << seed_note();
          if (out == EP_UNDEFINED) out = 0;
          for (int k = 0; k < out; ++k) finish(static_cast<size_t>(idx[k]), sts[k]);
        } else if (t == 1) {
          int i = -1, flag = 0;
          EP_Status s;
          ASSERT_EQ(EP_Testany(static_cast<int>(nb), reqs.data(), &i, &flag, &s), EP_SUCCESS)
              << seed_note();
          if (flag && i != EP_UNDEFINED) {
            finish(static_cast<size_t>(i), s);
            out = 1;
          }
        } else {
          for (size_t i = 0; i < nb; ++i) {
            if (done[i]) continue;
            int flag = 0;
            EP_Status s;
            ASSERT_EQ(EP_Test(&reqs[i], &flag, &s), EP_SUCCESS) << seed_note();
            if (flag) {
              finish(i, s);
              ++out;
            }
          }
        }
        if (out > 0) {
          pause.reset();
          continue;
        }
        // Nothing completed: anything unexpected now matches no pending receive of the
        // batch (else it would have been matched); take it so its sender moves on.
        int flag = 0;
        EP_Message msg = EP_MESSAGE_NULL;
        EP_Status s;
        const int64_t post = post_;
        ASSERT_EQ(EP_Improbe(EP_ANY_SOURCE, EP_ANY_TAG, comm_, &flag, &msg, &s), EP_SUCCESS)
            << seed_note();
        if (flag) {
          ++post_;
          const int n = count_of(s);
          RecvBuf rb(static_cast<size_t>(n));
          EP_Status rs;
          ASSERT_EQ(EP_Mrecv(rb.data.data(), n, MPI_BYTE, &msg, &rs), EP_SUCCESS) << seed_note();
          for (size_t i = 0; i < nb; ++i) {
            if (done[i] || !(items[i].src == EP_ANY_SOURCE || items[i].src == rs.EP_SOURCE) ||
                !(items[i].tag == EP_ANY_TAG || items[i].tag == rs.EP_TAG)) {
              continue;
            }
            // We had not seen it complete.  It must have matched another message before
            // this one arrived (else it would have taken this one); a matched receive
            // completes without us (a rendezvous payload may still be in flight).
            int f = 0;
            EP_Status s2;
            const auto give_up =
                std::chrono::steady_clock::now() + std::chrono::seconds(kSanitizer ? 30 : 10);
            Pause p2;
            while (!f && std::chrono::steady_clock::now() < give_up) {
              ASSERT_EQ(EP_Test(&reqs[i], &f, &s2), EP_SUCCESS) << seed_note();
              if (!f) p2();
            }
            EXPECT_TRUE(f) << "Improbe returned a message (source " << rs.EP_SOURCE << ", tag "
                           << rs.EP_TAG << ") that the pending receive (source " << items[i].src
                           << ", tag " << items[i].tag
                           << ") should have taken (the receive did not complete either)"
                           << seed_note();
            if (f) finish(i, s2);
          }
          accept(rb.data.data(), rs, post, EP_ANY_SOURCE, EP_ANY_TAG);
          check_guard(rb, count_of(rs), static_cast<size_t>(n));
        } else {
          pause();
        }
      }
    }
  }

  // Non-overtaking per source: for m1 < m2 (sequence) where m1 matches the tag criteria
  // of m2's receive, m1's receive must have been posted before m2's.
  void check_order() {
    int reported = 0;
    for (int s : l_.senders) {
      Expected& e = exp_[s];
      const size_t n = e.msgs.size();
      for (size_t i = 0; i < n; ++i) {
        if (!e.got[i]) {
          if (++reported <= 5) {
            ADD_FAILURE() << "LOST: message seq " << i << " from " << s << " to " << me_
                          << seed_note();
          }
        }
      }
      if (reported) continue;
      // prefix max of post index, overall and per tag, in sequence order
      std::vector<int64_t> max_any(n + 1, -1);
      std::vector<std::vector<int64_t>> max_tag(kTags, std::vector<int64_t>(n + 1, -1));
      for (size_t i = 0; i < n; ++i) {
        max_any[i + 1] = std::max(max_any[i], e.post[i]);
        for (int t = 0; t < kTags; ++t) {
          max_tag[t][i + 1] = std::max(max_tag[t][i], e.msgs[i].tag == t ? e.post[i] : int64_t{-1});
        }
      }
      for (size_t i = 0; i < n; ++i) {
        const int ct = e.crit_tag[i];
        const int64_t before = ct == EP_ANY_TAG ? max_any[i] : max_tag[ct][i];
        if (before > e.post[i]) {
          size_t j = 0;
          while (j < i && !(e.post[j] > e.post[i] && (ct == EP_ANY_TAG || e.msgs[j].tag == ct))) {
            ++j;
          }
          if (++reported <= 5) {
            ADD_FAILURE() << "OVERTAKING at receiver " << me_ << ": from sender " << s << ", seq "
                          << i << " (tag " << e.msgs[i].tag << ", " << kModeName[e.msgs[i].mode]
                          << ", " << e.msgs[i].size << " bytes) went to receive #" << e.post[i]
                          << " (tag criteria " << ct << ") but the earlier seq " << j << " (tag "
                          << e.msgs[j].tag << ", " << kModeName[e.msgs[j].mode] << ", "
                          << e.msgs[j].size << " bytes) that matches it went to the later receive #"
                          << e.post[j] << seed_note();
          }
        }
      }
    }
  }

  EP_Comm comm_;
  int me_;
  const Layout& l_;
  EpState& st_;
  std::mt19937_64 rng_;
  std::vector<Expected> exp_;
  std::vector<std::vector<int>> rem_tag_;
  int total_ = 0, received_ = 0;
  int64_t post_ = 0;
  RecvBuf big_{kMaxSize};
  std::vector<std::unique_ptr<RecvBuf>> pool_;
};

// A failed endpoint leaves its peers waiting: end the job now, with the seed.
void abort_if_failed(int rank) {
  if (!::testing::Test::HasFatalFailure()) return;
  std::fprintf(stderr, "\n*** p2p_stress_test: fatal failure on endpoint %d, aborting the job%s\n",
               rank, seed_note().c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

void run_round(uint64_t round_seed) {
  const uint64_t saved = g_seed;
  g_seed = round_seed;
  const Layout l = make_layout();
  const int me_proc = world_rank();
  const int w = uneven(me_proc);
  ASSERT_LE(2 * w, kMaxLocal);
  // Buffered sends of this process: all may be outstanding at once.
  int64_t bsend_bytes = 4096;
  int first_local = 0;
  for (int q = 0; q < me_proc; ++q) first_local += 2 * uneven(q);
  for (int i = 0; i < w; ++i) {
    for (const Msg& m : make_plan(g_seed, first_local + i, l)) {
      if (m.mode == kBsend || m.mode == kIbsend) bsend_bytes += m.size + EP_BSEND_OVERHEAD + 16;
    }
  }
  ASSERT_LT(bsend_bytes, int64_t{1} << 30);
  std::vector<char> bsend_buf(static_cast<size_t>(bsend_bytes));
  ASSERT_EQ(EP_Buffer_attach(bsend_buf.data(), static_cast<int>(bsend_bytes)), EP_SUCCESS);
  reset_states();
  {
    Watchdog dog("the randomized exchange", watchdog_seconds());
    run_endpoints(2 * w, [&](EP_Comm comm, int idx) {
      int rank = -1, size = 0;
      EP_Comm_rank(comm, &rank);
      EP_Comm_size(comm, &size);
      ASSERT_EQ(size, static_cast<int>(l.role.size()));
      ASSERT_EQ(rank, first_local + idx);
      EpState& st = g_state[idx];
      st.rank = rank;
      st.role = l.role[rank];
      if (l.role[rank] == 0) {
        run_sender(comm, rank, l, make_plan(g_seed, rank, l), st);
      } else {
        Receiver r(comm, rank, l, st);
        r.run();
      }
      abort_if_failed(rank);
    });
  }
  void* old = nullptr;
  int old_size = 0;
  ASSERT_EQ(EP_Buffer_detach(&old, &old_size), EP_SUCCESS);
  EXPECT_EQ(old, bsend_buf.data());
  EXPECT_EQ(old_size, static_cast<int>(bsend_bytes));
  g_seed = saved;
  if (::testing::Test::HasFailure()) {
    std::fprintf(stderr, "*** p2p_stress_test FAILED on process %d, round seed %llu%s\n", me_proc,
                 static_cast<unsigned long long>(round_seed), seed_note().c_str());
  }
}

TEST(P2PStress, RandomModesSizesAndReceiveStyles) {
  const uint64_t seed = shared_seed();
  const int rounds = 2;
  for (int round = 0; round < rounds; ++round) {
    const uint64_t rs = seed + static_cast<uint64_t>(round) * 104729;
    if (world_rank() == 0) {
      std::printf("p2p_stress_test: round %d (round seed %llu)\n", round,
                  static_cast<unsigned long long>(rs));
      std::fflush(stdout);
    }
    run_round(rs);
    int bad = ::testing::Test::HasFailure() ? 1 : 0, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
      if (world_rank() == 0) {
        std::fprintf(stderr,
                     "\n*** p2p_stress_test FAILED with seed %llu (round %d): rerun with "
                     "LIBEP_STRESS_SEED=%llu\n",
                     static_cast<unsigned long long>(seed), round,
                     static_cast<unsigned long long>(seed));
      }
      break;
    }
  }
}

// Requests released while their operation may still be running (runtime/request.h,
// "Lifetime"): every eager receive is freed right after EP_Irecv and half of the sends
// (eager and rendezvous) right after EP_Isend, while the peer's sends and this
// process's progress complete them - the user's kReleased and the completion's
// kComplete race on one word, and exactly one side must recycle the request (TSAN sees
// a race, ASAN a use after free, if not).  Sizes come from the seed.  Checked: every
// freed receive took its own message in order and its bytes arrived - non-overtaking
// makes the final token the last match, and the matcher that delivered the freed
// messages hands over to the one that delivers the token (acq_rel on its work word),
// so the token's completion orders those writes before our reads.  A rendezvous
// payload of a freed receive would land later with nothing to order it before a read,
// so rendezvous receives are waited for.
TEST(P2PStress, RequestsFreedWhileTheirOperationsRun) {
  constexpr size_t kEagerBytes = 4096;  // below EP_EAGER_LIMIT's default (16 KiB)
  const uint64_t seed = shared_seed();
  if (world_rank() == 0) {
    std::printf("p2p_stress_test: freed requests (seed %llu)\n",
                static_cast<unsigned long long>(seed));
    std::fflush(stdout);
  }
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank, size;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    const int n = ep_test::scaled(300) < 20 ? 20 : ep_test::scaled(300);
    std::mt19937_64 rng(seed + 4242);  // same sequence everywhere: all know all sizes
    std::vector<int> ints(n);
    for (int& c : ints)
      c = rng() % 16 == 0 ? 20000 + static_cast<int>(rng() % 20000)
                          : 1 + static_cast<int>(rng() % 1024);
    std::vector<std::vector<int>> in(n), out(n);
    std::vector<EP_Request> kept;  // rendezvous receives
    for (int i = 0; i < n; ++i) {
      in[i].assign(ints[i], -1);
      EP_Request r;
      ASSERT_EQ(EP_Irecv(in[i].data(), ints[i], MPI_INT, from, 5, comm, &r), EP_SUCCESS);
      if (ints[i] * sizeof(int) > kEagerBytes) {
        kept.push_back(r);
        continue;
      }
      ASSERT_EQ(EP_Request_free(&r), EP_SUCCESS);
      ASSERT_EQ(r, EP_REQUEST_NULL);
    }
    for (int i = 0; i < n; ++i) {
      out[i].assign(ints[i], rank * 100000 + i);
      EP_Request s;
      ASSERT_EQ(EP_Isend(out[i].data(), ints[i], MPI_INT, to, 5, comm, &s), EP_SUCCESS);
      if (i % 2 == 0) {
        ASSERT_EQ(EP_Request_free(&s), EP_SUCCESS);
      } else {
        ASSERT_EQ(EP_Wait(&s, EP_STATUS_IGNORE), EP_SUCCESS);
      }
    }
    // Non-overtaking: the token is the n+1-th message from `from` on this tag, so the n
    // freed receives took the n messages before it, in order.
    int token = -1, mine = -7;
    EP_Status st;
    ASSERT_EQ(EP_Sendrecv(&mine, 1, MPI_INT, to, 5, &token, 1, MPI_INT, from, 5, comm, &st),
              EP_SUCCESS);
    EXPECT_EQ(token, -7);
    ASSERT_EQ(EP_Waitall(static_cast<int>(kept.size()), kept.data(), EP_STATUSES_IGNORE),
              EP_SUCCESS);
    for (int i = 0; i < n; ++i) {
      const int want = from * 100000 + i;
      EXPECT_EQ(in[i][0], want) << "message " << i << " of " << n << seed_note();
      EXPECT_EQ(in[i][ints[i] - 1], want) << "message " << i << " of " << n << seed_note();
    }
    // Every receiver has its data: the freed sends' buffers may go now.
    ep_test::ep_barrier(comm);
  });
}

// Ready mode where MPI allows it: every receive is posted, then a barrier, then the
// ready sends (blocking and nonblocking, small and large), within and across processes.
TEST(P2PStress, ReadySendsToPostedReceives) {
  const uint64_t seed = shared_seed();
  reset_states();
  Watchdog dog("the ready-send test", watchdog_seconds());
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int idx) {
    int rank, size;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    EpState& state = g_state[idx];
    state.rank = rank;
    state.role = 2;
    const int rounds = ep_test::scaled(40) < 5 ? 5 : ep_test::scaled(40);
    state.total_ops = rounds;
    std::mt19937_64 rng(seed + 77);  // same sequence everywhere: all know all sizes
    for (int round = 0; round < rounds; ++round) {
      const int shift = 1 + static_cast<int>(rng() % static_cast<uint64_t>(size));
      const int to = (rank + shift) % size, from = (rank - shift % size + size) % size;
      const int k = 1 + static_cast<int>(rng() % 4);
      std::vector<int> sizes(k);
      for (int& s : sizes)
        s = rng() % 4 == 0 ? 16384 + static_cast<int>(rng() % 300000)
                           : static_cast<int>(rng() % 2048);
      std::vector<std::vector<uint8_t>> in(k), out(k);
      std::vector<EP_Request> rreq(k);
      for (int i = 0; i < k; ++i) {
        in[i].assign(sizes[i] + 1, 0xEE);
        ASSERT_EQ(EP_Irecv(in[i].data(), sizes[i], MPI_BYTE, from, i, comm, &rreq[i]), EP_SUCCESS);
      }
      ep_test::ep_barrier(comm);  // every receive of this round is posted
      std::vector<EP_Request> sreq;
      for (int i = 0; i < k; ++i) {
        Msg m;
        m.dest = to;
        m.tag = i;
        m.size = sizes[i];
        m.seq = static_cast<uint32_t>(round);
        out[i] = make_payload(rank, m);
        if ((round + i) % 2 == 0) {
          ASSERT_EQ(EP_Rsend(out[i].data(), sizes[i], MPI_BYTE, to, i, comm), EP_SUCCESS)
              << seed_note();
        } else {
          EP_Request r;
          ASSERT_EQ(EP_Irsend(out[i].data(), sizes[i], MPI_BYTE, to, i, comm, &r), EP_SUCCESS)
              << seed_note();
          sreq.push_back(r);
        }
      }
      std::vector<EP_Status> st(k);
      ASSERT_EQ(EP_Waitall(k, rreq.data(), st.data()), EP_SUCCESS) << seed_note();
      ASSERT_EQ(EP_Waitall(static_cast<int>(sreq.size()), sreq.data(), EP_STATUSES_IGNORE),
                EP_SUCCESS)
          << seed_note();
      for (int i = 0; i < k; ++i) {
        Msg m;
        m.dest = rank;
        m.tag = i;
        m.size = sizes[i];
        m.seq = static_cast<uint32_t>(round);
        auto want = make_payload(from, m);
        EXPECT_TRUE(std::equal(want.begin(), want.end(), in[i].begin()))
            << "round " << round << " message " << i << " from " << from << seed_note();
        EXPECT_EQ(in[i][sizes[i]], 0xEE) << "overrun" << seed_note();
        EXPECT_EQ(st[i].EP_SOURCE, from);
        EXPECT_EQ(st[i].EP_TAG, i);
      }
      ep_test::ep_barrier(comm);  // nobody's next-round sends reach unposted receives
      state.done_ops = round + 1;
    }
  });
}

}  // namespace
