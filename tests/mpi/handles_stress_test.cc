// Stress test of mpi::Table (mpi/handles.h): with 4 threads making and releasing
// handles at random (and some threads exiting, which hands their cached indexes back),
// no index is ever held by two handles at once, every lookup of a live handle finds its
// own object, and the indexes are reused (the table does not grow with the number of
// handles made).  Also the handle encoding against MPICH's predefined handles.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "mpi/handles.h"

namespace {

using ep::mpi::Kind;
using ep::mpi::Table;

int rounds() {
#if defined(EP_SANITIZER_THREAD) || defined(EP_SANITIZER_ADDRESS)
  return 20000;
#else
  return 400000;
#endif
}

TEST(HandleEncoding, NoMpichHandleLooksLikeLibeps) {
  const int mpich[] = {MPI_COMM_NULL,
                       MPI_COMM_WORLD,
                       MPI_COMM_SELF,
                       MPI_GROUP_NULL,
                       MPI_GROUP_EMPTY,
                       MPI_REQUEST_NULL,
                       MPI_MESSAGE_NULL,
                       MPI_MESSAGE_NO_PROC,
                       MPI_WIN_NULL,
                       MPI_ERRHANDLER_NULL,
                       MPI_ERRORS_RETURN,
                       MPI_INFO_NULL,
                       MPI_DATATYPE_NULL,
                       MPI_OP_NULL,
                       MPI_SESSION_NULL,
                       MPI_INT,
                       MPI_SUM,
                       MPI_ERRORS_ARE_FATAL,
                       0,
                       -1};
  for (int h : mpich) EXPECT_FALSE(ep::mpi::is_ep(h)) << std::hex << h;
  const int c = ep::mpi::encode(Kind::kComm, 5);
  const int r = ep::mpi::encode(Kind::kRequest, ep::mpi::kMaxIndex);
  EXPECT_TRUE(ep::mpi::is_kind<Kind::kComm>(c));
  EXPECT_FALSE(ep::mpi::is_kind<Kind::kRequest>(c));
  EXPECT_TRUE(ep::mpi::is_kind<Kind::kRequest>(r));
  EXPECT_FALSE(ep::mpi::is_kind<Kind::kComm>(r));
  EXPECT_EQ(ep::mpi::index_of(r), ep::mpi::kMaxIndex);
  EXPECT_EQ(static_cast<uint32_t>(c) >> 30, 0u);  // MPICH's "invalid" kind
}

TEST(HandleTable, ConcurrentMakeAndReleaseHandOutEachIndexOnce) {
  constexpr int kThreads = 4;
  constexpr int kLiveMax = 200;  // handles a thread holds at most
  const int n = rounds();
  const unsigned seed = std::getenv("LIBEP_STRESS_SEED")
                            ? static_cast<unsigned>(std::atoi(std::getenv("LIBEP_STRESS_SEED")))
                            : std::random_device{}();
  std::printf("HandleTable stress seed %u\n", seed);
  Table& t = ep::mpi::table(Kind::kMessage);
  // owner[i]: the thread that holds index i + 1 (0: none).
  constexpr int kTrack = 1 << 16;
  std::unique_ptr<std::atomic<int>[]> owner(new std::atomic<int>[kTrack]);
  for (int i = 0; i < kTrack; ++i) owner[i].store(0);
  std::atomic<long> failures{0}, max_index{0};

  auto work = [&](int id, int iters, unsigned s) {
    std::mt19937 rng(s);
    std::vector<std::pair<int, std::unique_ptr<int>>> live;
    for (int i = 0; i < iters; ++i) {
      const bool make = live.empty() || (live.size() < kLiveMax && rng() % 2 == 0);
      if (make) {
        auto obj = std::make_unique<int>(id * 1000000 + i);
        const int h = t.make(obj.get(), id);
        const uint32_t idx = ep::mpi::index_of(h);
        if (h == 0 || idx == 0 || idx >= kTrack || !ep::mpi::is_kind<Kind::kMessage>(h)) {
          failures.fetch_add(1);
          continue;
        }
        long m = max_index.load();
        while (static_cast<long>(idx) > m && !max_index.compare_exchange_weak(m, idx)) {
        }
        if (owner[idx].exchange(id) != 0) failures.fetch_add(1);  // held twice
        live.emplace_back(h, std::move(obj));
      } else {
        const size_t k = rng() % live.size();
        const int h = live[k].first;
        if (t.get(h) != live[k].second.get()) failures.fetch_add(1);
        if (t.slot(ep::mpi::index_of(h))->owner.load() != id) failures.fetch_add(1);
        if (owner[ep::mpi::index_of(h)].exchange(0) != id) failures.fetch_add(1);
        t.release(h);
        live[k] = std::move(live.back());
        live.pop_back();
      }
    }
    for (auto& [h, obj] : live) {
      if (owner[ep::mpi::index_of(h)].exchange(0) != id) failures.fetch_add(1);
      t.release(h);
    }
  };

  // Two generations of threads: the first exits, its cached indexes go back to the stack
  // and the second reuses them.
  for (int gen = 0; gen < 2; ++gen) {
    std::vector<std::thread> threads;
    for (int id = 1; id <= kThreads; ++id) {
      threads.emplace_back(work, id, n, seed + gen * kThreads + id);
    }
    for (auto& th : threads) th.join();
  }
  EXPECT_EQ(failures.load(), 0);
  // Each thread holds at most kLiveMax handles plus its cache and what it fetched in one
  // batch: the table must not have grown past that.
  EXPECT_LE(max_index.load(),
            kThreads * (kLiveMax + ep::mpi::kCacheMax + ep::mpi::kCacheBatch) * 2);
}

}  // namespace
