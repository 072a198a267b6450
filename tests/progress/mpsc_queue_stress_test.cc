// Stress test of progress::MpscQueue: exactly-once delivery and per-producer order
// with 4 producers and one consumer, plus a handed-over producer role (order across
// threads that pass the right to push along a happens-before chain).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "progress/mpsc_queue.h"

namespace {

using ep::progress::MpscNode;
using ep::progress::MpscQueue;

struct Item : MpscNode {
  int producer = 0;
  int64_t seq = 0;
};

int64_t per_producer() {
#if defined(EP_SANITIZER_THREAD) || defined(EP_SANITIZER_ADDRESS)
  return 20000;
#else
  return 400000;
#endif
}

TEST(MpscQueue, ConcurrentProducersExactlyOnceInPerProducerOrder) {
  const int kProducers = 4;
  const int64_t n = per_producer();
  unsigned seed = std::getenv("LIBEP_STRESS_SEED") ? std::atoi(std::getenv("LIBEP_STRESS_SEED"))
                                                   : std::random_device{}();
  std::printf("MpscQueue stress seed %u\n", seed);
  MpscQueue q;
  std::vector<std::unique_ptr<Item[]>> items;
  for (int p = 0; p < kProducers; ++p) items.emplace_back(new Item[n]);
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      std::mt19937 rng(seed + p);
      for (int64_t i = 0; i < n; ++i) {
        items[p][i].producer = p;
        items[p][i].seq = i;
        q.push(&items[p][i]);
        if (rng() % 1024 == 0) std::this_thread::yield();
      }
    });
  }
  std::vector<int64_t> next(kProducers, 0);
  int64_t got = 0;
  while (got < kProducers * n) {
    MpscNode* m = q.pop();
    if (m == nullptr) {
      std::this_thread::yield();
      continue;
    }
    auto* it = static_cast<Item*>(m);
    ASSERT_EQ(it->seq, next[it->producer]) << "producer " << it->producer << " seed " << seed;
    ++next[it->producer];
    ++got;
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(q.pop(), nullptr);
  for (int p = 0; p < kProducers; ++p) EXPECT_EQ(next[p], n);
}

TEST(MpscQueue, OrderHoldsWhenTheProducerRoleMovesBetweenThreads) {
  // Like an endpoint handle used by successive threads: thread k pushes a batch, then
  // hands over (release/acquire on `turn`) to thread k+1.
  const int kThreads = 3, kBatches = 300, kBatch = 50;
  MpscQueue q;
  std::unique_ptr<Item[]> items(new Item[kBatches * kBatch]);
  std::atomic<int> turn{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = t; b < kBatches; b += kThreads) {
        while (turn.load(std::memory_order_acquire) != b) std::this_thread::yield();
        for (int i = 0; i < kBatch; ++i) {
          items[b * kBatch + i].seq = b * kBatch + i;
          q.push(&items[b * kBatch + i]);
        }
        turn.store(b + 1, std::memory_order_release);
      }
    });
  }
  int64_t expect = 0;
  while (expect < kBatches * kBatch) {
    MpscNode* m = q.pop();
    if (m == nullptr) {
      std::this_thread::yield();
      continue;
    }
    ASSERT_EQ(static_cast<Item*>(m)->seq, expect);
    ++expect;
  }
  for (auto& t : threads) t.join();
}

}  // namespace
