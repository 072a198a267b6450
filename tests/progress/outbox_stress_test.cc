// Stress test of progress::Outbox: each of 3 appending threads owns an outbox and
// appends numbered packets of random sizes for 3 random peers; a taker thread plays
// the engine and runs the flush commands the appenders submit (through an MpscQueue,
// as Engine::submit does).  Checks: every packet is taken exactly once, intact, and
// each (outbox, peer) stream in append order; a flush is requested only when none is
// pending and none is missing (after the last flush nothing is left behind); the
// outboxes are freed by the last reference, possibly the taker's.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "progress/mpsc_queue.h"
#include "progress/outbox.h"

namespace {

using ep::progress::kRecordHeader;
using ep::progress::MpscNode;
using ep::progress::MpscQueue;
using ep::progress::Outbox;
using ep::progress::record_size;

constexpr int kAppenders = 3, kPeers = 3;

int64_t per_appender() {
#if defined(EP_SANITIZER_THREAD) || defined(EP_SANITIZER_ADDRESS)
  return 20000;
#else
  return 300000;
#endif
}

struct Flush : MpscNode {
  Outbox* outbox;
  int who;
};

// A packet: [int32 appender][int32 peer][int64 seq][filler bytes = (seq * 7 + k) & 255].
size_t packet_len(std::mt19937& rng) { return 16 + rng() % 200; }

TEST(Outbox, AppendersAndTakerExactlyOnceInOrder) {
  const int64_t n = per_appender();
  unsigned seed = std::getenv("LIBEP_STRESS_SEED") ? std::atoi(std::getenv("LIBEP_STRESS_SEED"))
                                                   : std::random_device{}();
  std::printf("Outbox stress seed %u\n", seed);
  MpscQueue flushes;
  std::atomic<int> appenders_done{0};
  std::vector<Outbox*> boxes(kAppenders);
  for (auto& b : boxes) b = new Outbox;

  // next[a][p]: the next sequence number expected from appender a for peer p.
  std::vector<std::vector<int64_t>> next(kAppenders, std::vector<int64_t>(kPeers, 0));
  std::vector<std::vector<int64_t>> sent(kAppenders, std::vector<int64_t>(kPeers, 0));
  std::atomic<int64_t> flushes_requested{0};
  int64_t taken = 0, flushes_run = 0, failures = 0;

  auto check_batch = [&](const Outbox::Batch& b) {
    size_t pos = 0;
    while (pos < b.len) {
      uint32_t len = 0;
      std::memcpy(&len, b.buf + pos, 4);
      const char* p = b.buf + pos + kRecordHeader;
      int32_t a = 0, peer = 0;
      int64_t seq = 0;
      std::memcpy(&a, p, 4);
      std::memcpy(&peer, p + 4, 4);
      std::memcpy(&seq, p + 8, 8);
      bool ok = a >= 0 && a < kAppenders && peer == b.peer && seq == next[a][peer];
      for (size_t k = 16; ok && k < len; ++k) {
        ok = static_cast<unsigned char>(p[k]) == ((seq * 7 + static_cast<int64_t>(k)) & 255);
      }
      if (!ok && ++failures < 10) {
        ADD_FAILURE() << "bad packet: appender " << a << " peer " << peer << " (batch peer "
                      << b.peer << ") seq " << seq;
      }
      if (ok) ++next[a][peer];
      ++taken;
      pos += record_size(len);
    }
    EXPECT_EQ(pos, b.len);
    std::free(b.buf);
  };

  std::thread taker([&] {
    std::vector<Outbox::Batch> batches;
    for (;;) {
      const bool done = appenders_done.load(std::memory_order_acquire) == kAppenders;
      MpscNode* m = flushes.pop();
      if (m == nullptr) {
        if (done) break;  // every flush pushed before `done` was popped
        std::this_thread::yield();
        continue;
      }
      Flush* f = static_cast<Flush*>(m);
      batches.clear();
      f->outbox->take(&batches);
      f->outbox->unref();
      for (const auto& b : batches) check_batch(b);
      ++flushes_run;
      delete f;
    }
  });

  std::vector<std::thread> appenders;
  for (int a = 0; a < kAppenders; ++a) {
    appenders.emplace_back([&, a] {
      std::mt19937 rng(seed + a);
      Outbox* box = boxes[a];
      for (int64_t i = 0; i < n; ++i) {
        int peer = static_cast<int>(rng() % kPeers);
        // Runs of one peer, as a stream would have.
        if (rng() % 4 != 0 && i > 0) peer = static_cast<int>((seed + a + i / 64) % kPeers);
        const int64_t seq = sent[a][peer]++;
        const size_t len = packet_len(rng);
        bool flush = box->append(peer, len, [&](char* p) {
          int32_t a32 = a, p32 = peer;
          std::memcpy(p, &a32, 4);
          std::memcpy(p + 4, &p32, 4);
          std::memcpy(p + 8, &seq, 8);
          for (size_t k = 16; k < len; ++k) p[k] = static_cast<char>((seq * 7 + k) & 255);
        });
        if (flush) {
          flushes_requested.fetch_add(1, std::memory_order_relaxed);
          Flush* f = new Flush;
          f->outbox = box;
          f->who = a;
          flushes.push(f);
        }
        if (rng() % 512 == 0) std::this_thread::yield();
      }
      box->unref();  // the endpoint goes away; pending flushes keep the outbox alive
      appenders_done.fetch_add(1, std::memory_order_release);  // pairs: the taker's acquire
    });
  }
  for (auto& t : appenders) t.join();
  taker.join();

  EXPECT_EQ(failures, 0);
  EXPECT_EQ(taken, kAppenders * n);
  EXPECT_EQ(flushes_run, flushes_requested.load());
  for (int a = 0; a < kAppenders; ++a) {
    for (int p = 0; p < kPeers; ++p) EXPECT_EQ(next[a][p], sent[a][p]) << a << " " << p;
  }
  // Batching happened: far fewer flushes than packets (the taker is slower than a
  // memcpy per packet), yet at least one per appender.
  EXPECT_GE(flushes_run, kAppenders);
  EXPECT_LT(flushes_run, kAppenders * n);
  std::printf("%lld packets in %lld flushes\n", static_cast<long long>(taken),
              static_cast<long long>(flushes_run));
}

TEST(Outbox, OversizedPacketsAreNotBatched) {
  EXPECT_TRUE(Outbox::fits(100));
  EXPECT_TRUE(Outbox::fits(Outbox::kBatchBytes / 4 - kRecordHeader));
  EXPECT_FALSE(Outbox::fits(Outbox::kBatchBytes / 4));
}

TEST(Outbox, PeerChangeAndFullBufferCloseBatchesInOrder) {
  Outbox* box = new Outbox;
  int flushes = 0;
  const size_t big = Outbox::kBatchBytes / 4 - kRecordHeader;  // 4 fill a batch
  int seq = 0;
  auto put = [&](int peer, size_t len) {
    int s = seq++;
    flushes += box->append(peer, len, [&](char* p) { std::memcpy(p, &s, 4); }) ? 1 : 0;
  };
  put(1, 8);
  put(1, big);
  put(1, big);
  put(1, big);
  put(1, big);  // does not fit: closes the first batch
  put(2, 8);    // another peer: closes the second
  put(1, 8);
  EXPECT_EQ(flushes, 1);  // one flush pending covers them all
  std::vector<Outbox::Batch> got;
  box->take(&got);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].peer, 1);
  EXPECT_EQ(got[1].peer, 1);
  EXPECT_EQ(got[2].peer, 2);
  EXPECT_EQ(got[3].peer, 1);
  int expect = 0;
  for (const auto& b : got) {
    for (size_t pos = 0; pos < b.len;) {
      uint32_t len = 0;
      int s = -1;
      std::memcpy(&len, b.buf + pos, 4);
      std::memcpy(&s, b.buf + pos + kRecordHeader, 4);
      EXPECT_EQ(s, expect++);
      pos += record_size(len);
    }
    std::free(b.buf);
  }
  EXPECT_EQ(expect, seq);
  box->unref();  // the flush command's reference
  // Nothing pending: the next append asks for a flush again.
  int s = 0;
  EXPECT_TRUE(box->append(3, 8, [&](char* p) { std::memcpy(p, &s, 4); }));
  got.clear();
  box->take(&got);
  for (const auto& b : got) std::free(b.buf);
  box->unref();  // that flush's reference
  box->unref();  // the owner's: frees it (LeakSanitizer checks under ASAN)
}

TEST(Outbox, FillingOnlyWhileABurstFillsTheOpenBatch) {
  Outbox* box = new Outbox;
  int s = 0;
  auto fill = [&](char* p) { std::memcpy(p, &s, 4); };
  EXPECT_FALSE(box->filling());
  EXPECT_TRUE(box->append(1, 8, fill, /*burst=*/true));
  EXPECT_TRUE(box->filling());
  EXPECT_EQ(box->appender(), ep::progress::this_thread_mark());
  EXPECT_FALSE(box->append(1, 8, fill, /*burst=*/true));
  EXPECT_TRUE(box->filling());
  box->append(1, 8, fill, /*burst=*/false);  // a blocking send: flush at once
  EXPECT_FALSE(box->filling());
  box->append(1, 8, fill, /*burst=*/true);
  EXPECT_TRUE(box->filling());
  box->append(2, 8, fill, /*burst=*/true);  // another peer: a batch is ready to go
  EXPECT_FALSE(box->filling());
  std::vector<Outbox::Batch> got;
  box->take(&got);
  box->append(2, 8, fill, /*burst=*/true);  // nothing ready: filling again
  EXPECT_TRUE(box->filling());
  box->append_alone(2, static_cast<char*>(std::malloc(8)), 8);  // a packet alone
  EXPECT_FALSE(box->filling());
  // Another thread appending takes the outbox over.
  std::thread([&] {
    box->append(2, 8, fill, /*burst=*/true);
    EXPECT_NE(box->appender(), nullptr);
  }).join();
  EXPECT_NE(box->appender(), ep::progress::this_thread_mark());
  box->take(&got);
  for (const auto& b : got) std::free(b.buf);
  box->unref();  // the first flush's reference
  box->unref();  // the second's
  box->unref();  // the owner's
}

}  // namespace
