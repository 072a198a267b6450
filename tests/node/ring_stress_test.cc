// Stress test of node::Ring (stress: runs under TSAN): producer threads push records of
// random sizes - a small ring, so records wrap around behind pads and producers find it
// full and back off - while two consumer threads hand the drain lock between them.  Every
// record is consumed exactly once, each producer's in push order, its payload intact,
// and nothing is rejected.  LIBEP_STRESS_SEED=<n> replays a run.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "node/ring.h"
#include "tests/node/ring_util.h"

namespace {

using ep::node::Consumer;
using ep::node::Owner;
using ep::node::Ring;

int per_producer() {
#if defined(EP_SANITIZER_THREAD) || defined(EP_SANITIZER_ADDRESS)
  return 4000;
#else
  return 60000;
#endif
}

unsigned stress_seed() {
  static const unsigned seed = [] {
    const char* s = std::getenv("LIBEP_STRESS_SEED");
    const unsigned v = s != nullptr ? static_cast<unsigned>(std::strtoul(s, nullptr, 0))
                                    : std::random_device{}();
    std::printf("ring stress seed %u (rerun with LIBEP_STRESS_SEED=%u)\n", v, v);
    return v;
  }();
  return seed;
}

// A record's body: who, which, and `n` payload bytes derived from both.
struct Body {
  uint32_t producer;
  uint32_t seq;
  uint32_t n;
  uint32_t pad;
};
uint8_t payload_byte(uint32_t producer, uint32_t seq, uint32_t i) {
  return static_cast<uint8_t>(producer * 131 + seq * 7 + i * 13 + 1);
}

void run(uint32_t capacity, int producers, uint32_t max_payload) {
  const unsigned seed = stress_seed();
  const int n = per_producer();
  const Owner me{42, 3, 7};
  ep_test::TestRing tr(capacity, me);
  Ring& ring = tr.ring();
  std::atomic<bool> failed{false};  // a producer gave up: the consumers stop too
  std::vector<std::thread> threads;
  // Each producer thread keeps its own head hint (as each process does per ring).
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      std::mt19937 rng(seed + static_cast<unsigned>(p));
      std::atomic<uint64_t> hint{0};
      for (int s = 0; s < n; ++s) {
        const uint32_t len = rng() % (max_payload + 1);
        const uint64_t body = sizeof(Body) + len;
        const auto fill = [&](char* at) {
          const Body b{static_cast<uint32_t>(p), static_cast<uint32_t>(s), len, 0};
          std::memcpy(at, &b, sizeof b);
          for (uint32_t i = 0; i < len; ++i) {
            at[sizeof b + i] = static_cast<char>(payload_byte(b.producer, b.seq, i));
          }
        };
        for (;;) {
          const Ring::Push r = ring.push(2 + static_cast<uint8_t>(s % 5), me, len, body, fill, hint);
          if (r == Ring::Push::kTooBig) {
            ADD_FAILURE() << "a record of " << body << " body bytes was refused";
            failed.store(true);
            return;
          }
          if (r == Ring::Push::kOk) break;
          std::this_thread::yield();  // full: the consumers make room
        }
      }
    });
  }
  // The consumers: whoever takes the drain lock drains; the other tries later.
  std::atomic<bool> drain_lock{false};
  Consumer c;
  std::vector<uint32_t> next(static_cast<size_t>(producers), 0);
  std::atomic<int64_t> got{0};
  std::atomic<int> bad{0};
  const int64_t total = static_cast<int64_t>(n) * producers;
  auto consume = [&](int who) {
    std::mt19937 rng(seed ^ (0x9e37u + static_cast<unsigned>(who)));
    while (got.load() < total && !failed.load()) {
      if (drain_lock.exchange(true, std::memory_order_acquire)) {
        std::this_thread::yield();
        continue;
      }
      ring.drain(c, me, [&](uint8_t kind, uint32_t aux, const char* body, uint32_t body_len) {
        Body b;
        std::memcpy(&b, body, sizeof b);
        bool ok = b.producer < static_cast<uint32_t>(producers) && aux == b.n &&
                  body_len >= sizeof b + b.n && kind == 2 + b.seq % 5 &&
                  b.seq == next[b.producer];
        for (uint32_t i = 0; ok && i < b.n; ++i) {
          ok = static_cast<uint8_t>(body[sizeof b + i]) == payload_byte(b.producer, b.seq, i);
        }
        if (!ok) {
          bad.fetch_add(1);
        } else {
          ++next[b.producer];
        }
        got.fetch_add(1);
        return true;
      }, 1 + static_cast<int>(rng() % 64));
      drain_lock.store(false, std::memory_order_release);
      if (rng() % 4 == 0) std::this_thread::yield();
    }
  };
  std::thread c1(consume, 1), c2(consume, 2);
  for (auto& t : threads) t.join();
  c1.join();
  c2.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(got.load(), total);
  for (int p = 0; p < producers; ++p) EXPECT_EQ(next[static_cast<size_t>(p)], static_cast<uint32_t>(n));
  EXPECT_EQ(c.rejected, 0u);
  // Everything consumed: head caught up with tail, and every byte is zero again.
  EXPECT_EQ(ring.header()->head.load(), ring.header()->tail.load());
  EXPECT_EQ(ring.header()->committed.load(), ring.header()->tail.load());
  for (uint32_t i = 0; i < capacity; ++i) ASSERT_EQ(tr.data()[i], 0) << "byte " << i;
}

TEST(Ring, ProducersAndHandedOverConsumersExactlyOnceInOrder) {
  run(/*capacity=*/4096, /*producers=*/3, /*max_payload=*/1500);
}

TEST(Ring, SmallRecordsManyProducers) { run(/*capacity=*/4096, /*producers=*/4, /*max_payload=*/40); }

// Records of the largest size the ring takes, alone and mixed: every one behind a pad.
TEST(Ring, LargestRecordsAlwaysFitEventually) {
  run(/*capacity=*/4096, /*producers=*/2, /*max_payload=*/2048 - 24 - 16);
}

}  // namespace
