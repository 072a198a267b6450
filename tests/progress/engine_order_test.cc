// The engine's posted receives (progress/engine.h, "The posted receives"): every
// packet reaches the sink exactly once, intact, and in send order per source, while
// waiters return as soon as a packet arrived - leaving its receive unposted, so that
// consecutive waits use up the ring and a pass must post before it tests - and the
// progress thread and other passes refill it.
//
// Each process submits a seeded random mix of packets to every other process: small
// ones (handed over in place), bundles of them (drain_commands joins back-to-back
// small ones), larger ones up to 100 KiB (a block of their own; above MPI's eager
// size here, so a large one can still be arriving when the small ones behind it
// have been matched to newer receives).  Each packet carries its source, its sequence
// number and its length, and a pattern derived from them.  The receiving thread
// waits like an endpoint thread: try_progress with a watched word that the sink sets
// for every packet, clearing it after each return; now and then a full pass instead.
// Every other process (by rank, from a seed-chosen start, so that between two
// processes one direction is each kind) sends only small packets, each like a lone blocking send
// (Engine::try_send_alone, which also posts again a receive that a waiter's packet
// left free): those posts interleave with the waits that use the receives up.
// Prints its seed; rerun with LIBEP_STRESS_SEED.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "progress/engine.h"

namespace {

using ep::progress::Command;
using ep::progress::Engine;
using ep::progress::PacketSink;

struct PacketHead {
  uint32_t src;
  uint32_t seq;
  uint32_t len;
  uint32_t pad;
};
constexpr size_t kHead = sizeof(PacketHead);

char pattern(uint32_t src, uint32_t seq, size_t i) {
  return static_cast<char>(src * 131 + seq * 7 + i * 13);
}

// Checks each packet against its source's next sequence number.  Runs on the baton
// holder (one thread at a time; the baton orders them), so its plain fields need no
// atomics; `received` and the watched word are read by the waiting thread.
class CheckingSink final : public PacketSink {
 public:
  explicit CheckingSink(int nprocs) : next_(nprocs, 0) {}
  void on_packet(int src_proc, char* block, size_t len) override {
    check(src_proc, block + Engine::kHeadroom, len);
    std::free(block);
  }
  void on_record(int src_proc, const char* packet, size_t len) override {
    check(src_proc, packet, len);
  }

  std::atomic<uint32_t> word{0};
  std::atomic<int64_t> received{0};
  std::vector<uint32_t> next_;  // per source: the next sequence number expected
  std::string first_error;      // read after Engine::stop()
  int errors = 0;

 private:
  void fail(const std::string& what) {
    if (errors++ == 0) first_error = what;
  }
  void check(int src_proc, const char* p, size_t len) {
    PacketHead h{};
    if (len < kHead) {
      fail("a packet of " + std::to_string(len) + " bytes, shorter than its header");
    } else {
      std::memcpy(&h, p, kHead);
      if (static_cast<int>(h.src) != src_proc || h.len != len) {
        fail("packet from " + std::to_string(src_proc) + " says source " + std::to_string(h.src) +
             ", length " + std::to_string(h.len) + " (received " + std::to_string(len) + ")");
      } else if (h.seq != next_[src_proc]) {
        fail("from " + std::to_string(src_proc) + ": packet " + std::to_string(h.seq) +
             " arrived where " + std::to_string(next_[src_proc]) + " was next");
      } else {
        for (size_t i = kHead; i < len; ++i) {
          if (p[i] != pattern(h.src, h.seq, i)) {
            fail("from " + std::to_string(src_proc) + ": packet " + std::to_string(h.seq) +
                 " corrupted at byte " + std::to_string(i));
            break;
          }
        }
      }
      next_[src_proc] = h.seq + 1;
    }
    // release: pairs with the waiter's acquire load of `received` (it reads nothing
    // else of ours before stop()).
    received.fetch_add(1, std::memory_order_release);
    word.store(1, std::memory_order_relaxed);  // relaxed: only ends the waiter's pass
  }
};

uint64_t shared_seed(int rank) {
  unsigned long long v = 0;
  if (rank == 0) {
    const char* s = std::getenv("LIBEP_STRESS_SEED");
    v = (s != nullptr && *s != '\0')
            ? std::strtoull(s, nullptr, 0)
            : static_cast<unsigned long long>(
                  std::chrono::steady_clock::now().time_since_epoch().count()) &
                  ((1ULL << 48) - 1);
  }
  MPI_Bcast(&v, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  return v;
}

size_t random_small_len(std::mt19937_64& rng) {
  return kHead + rng() % (Engine::kSmallPacketBytes - kHead + 1);
}

size_t random_len(std::mt19937_64& rng) {
  const int cls = static_cast<int>(rng() % 16);
  if (cls < 10) return random_small_len(rng);  // in place
  if (cls < 14) return kHead + rng() % 4096;
  return kHead + rng() % (100 * 1024);
}

TEST(EngineOrder, ExactlyOnceInOrderWhileWaitersUseUpThePostedReceives) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const uint64_t seed = shared_seed(rank);
  if (rank == 0) {
    std::printf("engine_order_test: seed %llu (rerun with LIBEP_STRESS_SEED=%llu), %d processes\n",
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed), size);
    std::fflush(stdout);
  }
  constexpr int kPerPeer = 3000;
  CheckingSink sink(size);
  Engine engine;
  engine.start(ep::progress::Options{}, &sink);

  std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(rank));
  std::vector<uint32_t> sent(size, 0);
  // Whether this process sends only lone sends: every packet to a peer then leaves from
  // this thread, in order (a packet submitted before could still be queued).
  std::vector<bool> alone(size);
  for (int p = 0; p < size; ++p) alone[p] = (seed + static_cast<uint64_t>(rank)) % 2 == 0;
  // Nothing waits in it, so try_send_alone may send (reference counted: unref()).
  auto* idle_outbox = new ep::progress::Outbox;
  std::vector<int> open_peers;  // peers still owed packets
  for (int p = 0; p < size; ++p) {
    if (p != rank) open_peers.push_back(p);
  }
  const int64_t expected = static_cast<int64_t>(kPerPeer) * (size - 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  uint64_t step = 0;
  int64_t lone_sends = 0;
  while (sink.received.load(std::memory_order_acquire) < expected || !open_peers.empty()) {
    const bool late = std::chrono::steady_clock::now() > deadline;
    ASSERT_FALSE(late) << "received " << sink.received.load() << " of " << expected
                       << " packets; seed " << seed;
    // Send a run of packets to one peer now and then (back to back: bundles).
    if (!open_peers.empty() && rng() % 4 == 0) {
      const size_t pick = rng() % open_peers.size();
      const int peer = open_peers[pick];
      const int run = 1 + static_cast<int>(rng() % 8);
      for (int k = 0; k < run && sent[peer] < kPerPeer; ++k) {
        const size_t len = alone[peer] ? random_small_len(rng) : random_len(rng);
        char* buf = static_cast<char*>(std::malloc(len));
        PacketHead h{static_cast<uint32_t>(rank), sent[peer]++, static_cast<uint32_t>(len), 0};
        std::memcpy(buf, &h, kHead);
        for (size_t i = kHead; i < len; ++i) buf[i] = pattern(h.src, h.seq, i);
        if (alone[peer]) {
          // Another thread's pass may hold the baton for a moment: try again.
          int mpi_error = MPI_SUCCESS;
          while (!engine.try_send_alone(*idle_outbox, peer, buf, len, &mpi_error)) {
            std::this_thread::yield();
          }
          ASSERT_EQ(mpi_error, MPI_SUCCESS);
          std::free(buf);
          ++lone_sends;
          continue;
        }
        Command c;
        c.kind = Command::kSendPacket;
        c.peer = peer;
        c.buf = buf;
        c.len = len;
        engine.submit(c);  // done == nullptr: the engine frees buf once sent
      }
      if (sent[peer] == kPerPeer) open_peers.erase(open_peers.begin() + static_cast<long>(pick));
    }
    // Wait like an endpoint thread: a pass that returns once a packet arrived.
    if (++step % 16 == 0) {
      engine.try_progress();
    } else if (engine.try_progress(&sink.word, 1)) {
      sink.word.store(0, std::memory_order_relaxed);  // relaxed: our own flag
    } else {
      std::this_thread::yield();
    }
  }
  // Nobody sends more once every process received all: then stop (stop() completes the
  // sends still in flight).
  MPI_Barrier(MPI_COMM_WORLD);
  engine.stop();
  idle_outbox->unref();
  EXPECT_EQ(sink.errors, 0) << sink.first_error << " (seed " << seed << ")";
  int64_t lone_total = 0;
  MPI_Allreduce(&lone_sends, &lone_total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_GT(lone_total, 0) << "no process sent alone (seed " << seed << ")";
  EXPECT_EQ(sink.received.load(), expected) << "seed " << seed;
  for (int p = 0; p < size; ++p) {
    if (p != rank) {
      EXPECT_EQ(sink.next_[p], static_cast<uint32_t>(kPerPeer)) << "from " << p;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
