// Creating and freeing communicators in loops: 10,000 EP_Comm_dup/EP_Comm_free,
// 1,000 EP_Comm_split/EP_Comm_free with colours (EP_UNDEFINED included) and keys that
// change every iteration, and a loop of EP_Intercomm_create/EP_Intercomm_merge/free.
// Each loop checks the results it creates (rank, size, occasional collectives), then:
//  * the process's heap in use (glibc mallinfo2, all arenas) after the loop is within a
//    small bound of its value after a warm-up loop - a per-communicator leak of a few
//    dozen bytes per endpoint shows (under sanitizers the heap is not glibc's and the
//    check is vacuous; LeakSanitizer covers that build);
//  * point-to-point and collectives on the parent still work.
// Iteration counts go through ep_test::scaled for sanitizer builds.
#include <gtest/gtest.h>
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/comm/comm_util.h"
#include "tests/common/harness.h"

namespace {

using ep_comm_test::check_intra_collectives;
using ep_comm_test::check_intra_p2p;
using ep_comm_test::expected_split;
using ep_comm_test::index_in;
using ep_comm_test::Layout;
using ep_comm_test::MatOp;
using ep_test::last_error;
using ep_test::run_endpoints;
using ep_test::scaled;
using ep_test::uneven;
using ep_test::world_rank;

long long heap_in_use() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 mi = mallinfo2();
  return static_cast<long long>(mi.uordblks) + static_cast<long long>(mi.hblkhd);
#else
  return 0;
#endif
}

constexpr long long kLeakBound = 1LL << 20;  // bytes

// Heap growth since `before`, waiting up to 2 s for deferred frees (the runtime may
// delete communicator objects on its progress thread).
long long settled_growth(long long before) {
  long long growth = heap_in_use() - before;
  for (int i = 0; i < 200 && growth >= kLeakBound; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    growth = heap_in_use() - before;
  }
  return growth;
}

int my_world_rank(EP_Comm world) {
  int r = -1;
  EP_Comm_rank(world, &r);
  return r;
}

std::vector<int> iota_vec(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

void dup_free_loop(EP_Comm world, int iterations, int me, int total) {
  for (int i = 0; i < iterations; ++i) {
    EP_Comm d = EP_COMM_NULL;
    int rc = EP_Comm_dup(world, &d);
    ASSERT_EQ(rc, EP_SUCCESS) << "iteration " << i << ": " << last_error(rc);
    if (i % 1000 == 0) {
      int rank = -1, size = -1;
      EXPECT_EQ(EP_Comm_rank(d, &rank), EP_SUCCESS);
      EXPECT_EQ(EP_Comm_size(d, &size), EP_SUCCESS);
      EXPECT_EQ(rank, me);
      EXPECT_EQ(size, total);
      // A message around the ring on the dup.
      int to = (me + 1) % total, from = (me + total - 1) % total, got = -1;
      ASSERT_EQ(EP_Sendrecv(&me, 1, MPI_INT, to, 3, &got, 1, MPI_INT, from, 3, d, EP_STATUS_IGNORE),
                EP_SUCCESS);
      EXPECT_EQ(got, from);
      ASSERT_EQ(EP_Barrier(d), EP_SUCCESS);
    }
    ASSERT_EQ(EP_Comm_free(&d), EP_SUCCESS) << "iteration " << i;
    ASSERT_EQ(d, EP_COMM_NULL);
  }
}

TEST(CommLoop, TenThousandDupFreeLeakNothingAndP2pStillWorks) {
  const Layout lay = ep_comm_test::uneven_layout();
  const int here = uneven(world_rank());
  MatOp mop;
  // Warm-up, with the checks that follow the loop: their one-time allocations (MPI's
  // process-level communicator of the fast allreduce on `world`, about 1 MB in MPICH;
  // UCX's pools) are not per-iteration growth.
  run_endpoints(here, [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    dup_free_loop(world, 300, me, lay.total);
    check_intra_p2p(world, iota_vec(lay.total), me, "world before the loop");
    check_intra_collectives(world, iota_vec(lay.total), me, mop, "world before the loop");
  });
  MPI_Barrier(MPI_COMM_WORLD);
  const long long before = heap_in_use();
  run_endpoints(here, [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    dup_free_loop(world, scaled(10000), me, lay.total);
    check_intra_p2p(world, iota_vec(lay.total), me, "world after 10000 dup/free");
    check_intra_collectives(world, iota_vec(lay.total), me, mop, "world after 10000 dup/free");
    ASSERT_EQ(EP_Barrier(world), EP_SUCCESS);
  });
  MPI_Barrier(MPI_COMM_WORLD);
  const long long growth = settled_growth(before);
  std::printf("heap in use %lld -> growth %lld bytes\n", before, growth);
  EXPECT_LT(growth, kLeakBound) << "heap grew by " << growth << " bytes over " << scaled(10000)
                                << " dup/free of " << here << " endpoints";
}

void split_free_loop(EP_Comm world, int iterations, int me, const Layout& lay, int offset) {
  for (int it = 0; it < iterations; ++it) {
    const int i = it + offset;
    auto colour = [i](int r) { return (r + i) % 5 == 0 ? EP_UNDEFINED : (r * (i + 1)) % 3; };
    auto key = [i](int r) { return ((r * 7 + i) % 4) - 2; };
    EP_Comm c = reinterpret_cast<EP_Comm>(0x1);
    int rc = EP_Comm_split(world, colour(me), key(me), &c);
    ASSERT_EQ(rc, EP_SUCCESS) << "iteration " << i << ": " << last_error(rc);
    if (colour(me) == EP_UNDEFINED) {
      ASSERT_EQ(c, EP_COMM_NULL) << "iteration " << i;
      continue;
    }
    ASSERT_NE(c, EP_COMM_NULL);
    const std::vector<int> members = expected_split(lay.total, colour, key, colour(me));
    int rank = -1, size = -1;
    EXPECT_EQ(EP_Comm_rank(c, &rank), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_size(c, &size), EP_SUCCESS);
    EXPECT_EQ(rank, index_in(members, me)) << "iteration " << i;
    EXPECT_EQ(size, static_cast<int>(members.size())) << "iteration " << i;
    if (it % 100 == 0) {
      int s = me, r = -1, e = 0;
      for (int m : members) e += m;
      ASSERT_EQ(EP_Allreduce(&s, &r, 1, MPI_INT, MPI_SUM, c), EP_SUCCESS);
      EXPECT_EQ(r, e) << "iteration " << i;
    }
    ASSERT_EQ(EP_Comm_free(&c), EP_SUCCESS) << "iteration " << i;
    ASSERT_EQ(c, EP_COMM_NULL);
  }
}

TEST(CommLoop, ThousandSplitFreeLeakNothingAndP2pStillWorks) {
  const Layout lay = ep_comm_test::uneven_layout();
  const int here = uneven(world_rank());
  run_endpoints(here, [&](EP_Comm world, int) {
    split_free_loop(world, 60, my_world_rank(world), lay, 0);  // warm-up
  });
  MPI_Barrier(MPI_COMM_WORLD);
  const long long before = heap_in_use();
  MatOp mop;
  run_endpoints(here, [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    split_free_loop(world, scaled(1000), me, lay, 60);
    check_intra_p2p(world, iota_vec(lay.total), me, "world after 1000 split/free");
    check_intra_collectives(world, iota_vec(lay.total), me, mop, "world after 1000 split/free");
    ASSERT_EQ(EP_Barrier(world), EP_SUCCESS);
  });
  MPI_Barrier(MPI_COMM_WORLD);
  const long long growth = settled_growth(before);
  std::printf("heap in use %lld -> growth %lld bytes\n", before, growth);
  EXPECT_LT(growth, kLeakBound) << "heap grew by " << growth << " bytes over " << scaled(1000)
                                << " split/free";
}

void intercomm_loop(EP_Comm world, int iterations, int me, const Layout& lay, int tag0) {
  // A: even world endpoints ascending, B: odd ones descending.
  auto colour = [](int r) { return r % 2; };
  auto key = [](int r) { return r % 2 == 0 ? r : -r; };
  const std::vector<int> a = expected_split(lay.total, colour, key, 0);
  const std::vector<int> b = expected_split(lay.total, colour, key, 1);
  const bool in_a = colour(me) == 0;
  const std::vector<int>& local = in_a ? a : b;
  const std::vector<int>& remote = in_a ? b : a;
  EP_Comm lc = EP_COMM_NULL;
  ASSERT_EQ(EP_Comm_split(world, colour(me), key(me), &lc), EP_SUCCESS);
  for (int i = 0; i < iterations; ++i) {
    // The leaders move around the groups.
    const int la = i % static_cast<int>(a.size()), lb = (i / 2) % static_cast<int>(b.size());
    EP_Comm ic = EP_COMM_NULL;
    int rc =
        in_a ? EP_Intercomm_create(lc, la, world, b[static_cast<size_t>(lb)], tag0 + i % 1000, &ic)
             : EP_Intercomm_create(lc, lb, world, a[static_cast<size_t>(la)], tag0 + i % 1000, &ic);
    ASSERT_EQ(rc, EP_SUCCESS) << "iteration " << i << ": " << last_error(rc);
    int rsize = -1, rank = -1;
    EXPECT_EQ(EP_Comm_remote_size(ic, &rsize), EP_SUCCESS);
    EXPECT_EQ(rsize, static_cast<int>(remote.size()));
    EXPECT_EQ(EP_Comm_rank(ic, &rank), EP_SUCCESS);
    EXPECT_EQ(rank, index_in(local, me));
    EP_Comm m = EP_COMM_NULL;
    ASSERT_EQ(EP_Intercomm_merge(ic, in_a ? 0 : 1, &m), EP_SUCCESS) << "iteration " << i;
    int mrank = -1;
    EXPECT_EQ(EP_Comm_rank(m, &mrank), EP_SUCCESS);
    EXPECT_EQ(mrank, in_a ? index_in(a, me) : static_cast<int>(a.size()) + index_in(b, me));
    if (i % 50 == 0) {
      int s = me, r = -1, e = 0;
      for (int x : remote) e += x;
      ASSERT_EQ(EP_Allreduce(&s, &r, 1, MPI_INT, MPI_SUM, ic), EP_SUCCESS);
      EXPECT_EQ(r, e) << "iteration " << i;
      ASSERT_EQ(EP_Allreduce(&s, &r, 1, MPI_INT, MPI_SUM, m), EP_SUCCESS);
      EXPECT_EQ(r, lay.total * (lay.total - 1) / 2) << "iteration " << i;
    }
    ASSERT_EQ(EP_Comm_free(&m), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_free(&ic), EP_SUCCESS);
  }
  ASSERT_EQ(EP_Barrier(lc), EP_SUCCESS);
  ASSERT_EQ(EP_Comm_free(&lc), EP_SUCCESS);
}

TEST(CommLoop, IntercommCreateMergeFreeLoopLeaksNothing) {
  const Layout lay = ep_comm_test::uneven_layout();
  const int here = uneven(world_rank());
  run_endpoints(here, [&](EP_Comm world, int) {
    intercomm_loop(world, 30, my_world_rank(world), lay, 1000);  // warm-up
  });
  MPI_Barrier(MPI_COMM_WORLD);
  const long long before = heap_in_use();
  MatOp mop;
  run_endpoints(here, [&](EP_Comm world, int) {
    const int me = my_world_rank(world);
    intercomm_loop(world, scaled(500), me, lay, 3000);
    check_intra_p2p(world, iota_vec(lay.total), me, "world after the intercomm loop");
    check_intra_collectives(world, iota_vec(lay.total), me, mop, "world after the intercomm loop");
    ASSERT_EQ(EP_Barrier(world), EP_SUCCESS);
  });
  MPI_Barrier(MPI_COMM_WORLD);
  const long long growth = settled_growth(before);
  std::printf("heap in use %lld -> growth %lld bytes\n", before, growth);
  EXPECT_LT(growth, kLeakBound) << "heap grew by " << growth << " bytes over " << scaled(500)
                                << " intercomm create/merge/free";
}

// Thousands of communicators alive at once (each takes two context ids, its own and its
// shadow's, so this crosses several chunks of the context table), then point-to-point
// and a collective on the newest and the oldest, then free them all.
TEST(Loops, ThousandsOfCommunicatorsAlive) {
  const int kAlive = 2500;  // not scaled: the point is crossing the 1024-id chunks
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    std::vector<EP_Comm> alive(kAlive, EP_COMM_NULL);
    for (EP_Comm& c : alive) ASSERT_EQ(EP_Comm_dup(world, &c), EP_SUCCESS);
    int rank = 0, size = 0;
    EP_Comm_rank(world, &rank);
    EP_Comm_size(world, &size);
    for (EP_Comm c : {alive.back(), alive.front()}) {
      int got = -1;
      ASSERT_EQ(EP_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 3, &got, 1, MPI_INT,
                            (rank + size - 1) % size, 3, c, EP_STATUS_IGNORE),
                EP_SUCCESS);
      EXPECT_EQ(got, (rank + size - 1) % size);
      int sum = 0;
      ASSERT_EQ(EP_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c), EP_SUCCESS);
      EXPECT_EQ(sum, size * (size - 1) / 2);
    }
    for (EP_Comm& c : alive) ASSERT_EQ(EP_Comm_free(&c), EP_SUCCESS);
  });
}

}  // namespace
