// The blocking barrier, bcast, reduce and allreduce on the fragment's tree
// (collectives/fast.h), on grouped / reversed / interleaved layouts with uneven
// endpoints per process (3, 1, 2) and on grouped / interleaved layouts of the wide world
// (5, 2, 4: deeper trees):
//  * predefined ops on several predefined types, at the exchange's size limit and one
//    element above it, in place, and MAXLOC on MPI_DOUBLE_INT;
//  * above the limit, the ring exchange: uneven blocks, 1 MiB, integer ops, in place,
//    the same bits at every endpoint;
//  * fast calls interleaved with nonblocking ones and with user ops (the engine's
//    path) on one communicator, results checked in call order;
//  * two communicators whose first operations (which make the process-level MPI
//    communicators) and later ones - small and ring-sized - run concurrently from
//    different endpoints of one process;
//  * dup / allreduce / free repeated more often than MPICH has context ids (2048): every
//    process-level communicator is freed with its fragment, and MPI has context ids
//    left for the application (on one node with the node transport on, the fragments
//    meet in the node segment instead and make none);
//  * more communicators alive than libep makes process-level communicators for
//    (kMaxProcessComms): the rest take the fallback exchange, consistently, small and
//    large;
//  * the tree: allreduce at sizes around the by-value limit, in shares, above oneTBB's
//    chunk, with SUM, MAX, a user op and the non-commutative matrix product, in place;
//    bcast (through a derived type) and reduce (root in place) from every root; many
//    operations of every kind back to back; blocking ones with nonblocking collectives
//    outstanding and point-to-point between them; erroneous endpoints at every rank and
//    a whole process of them; a node with cores to spare;
//  * process_cores, each process's share of its node's CPUs.
// Expected values are computed from world-endpoint numbers and the layout (coll_util.h).
#include <gtest/gtest.h>
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collectives/engine.h"
#include "runtime/runtime.h"
#include "runtime/wait.h"
#include "tests/coll/coll_util.h"
#include "tests/common/harness.h"

namespace {

using ep_coll_test::Ctx;
using ep_coll_test::Lay;
using ep_coll_test::mat_in;
using ep_coll_test::mat_product;
using ep_coll_test::MatOp;
using ep_coll_test::run_layout;

[[maybe_unused]] const bool kWatchdog = ep_coll_test::install_watchdog();

constexpr double kGap = -7.5;  // must stay untouched

double dval(int w, int i) { return (w + 1) * 10.0 + i; }

double dsum(const std::vector<int>& ws, int i) {
  double e = 0;
  for (int w : ws) e += dval(w, i);
  return e;
}

class Fast : public ::testing::TestWithParam<Lay> {};

// Predefined ops on several predefined types, at the size limit of the fast path and
// one element above it (the ring exchange), in place and not, and MAXLOC on a pair type.
TEST_P(Fast, PredefinedOpsTypesAndSizes) {
  run_layout(GetParam(), [&](const Ctx& c) {
    const int limit = static_cast<int>(4096 / sizeof(double));  // kFastBytes of doubles
    for (int n : {1, 7, limit, limit + 1}) {
      std::vector<double> in(static_cast<size_t>(n)), out(static_cast<size_t>(n) + 1, kGap);
      for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = dval(c.me, i);
      ASSERT_EQ(EP_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, c.comm), EP_SUCCESS);
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(out[static_cast<size_t>(i)], dsum(c.members, i)) << c.what << " n " << n;
      }
      EXPECT_EQ(out[static_cast<size_t>(n)], kGap) << c.what << " n " << n << ": overrun";
      ASSERT_EQ(EP_Allreduce(EP_IN_PLACE, in.data(), n, MPI_DOUBLE, MPI_MAX, c.comm), EP_SUCCESS);
      for (int i = 0; i < n; ++i) {
        double want = dval(c.members[0], i);
        for (int w : c.members) want = std::max(want, dval(w, i));
        ASSERT_EQ(in[static_cast<size_t>(i)], want) << c.what << " in place n " << n;
      }
    }
    // Integer ops: PROD, MIN, BOR, LAND on int, long long, unsigned char.
    int ip = c.rank % 3 + 1, ipr = 0;
    ASSERT_EQ(EP_Allreduce(&ip, &ipr, 1, MPI_INT, MPI_PROD, c.comm), EP_SUCCESS);
    long long ll = 1000 - c.me, llr = 0;
    ASSERT_EQ(EP_Allreduce(&ll, &llr, 1, MPI_LONG_LONG, MPI_MIN, c.comm), EP_SUCCESS);
    unsigned char bits = static_cast<unsigned char>(1u << (c.rank % 8)), bor = 0;
    ASSERT_EQ(EP_Allreduce(&bits, &bor, 1, MPI_UNSIGNED_CHAR, MPI_BOR, c.comm), EP_SUCCESS);
    int t = c.rank != 0, land = -1;
    ASSERT_EQ(EP_Allreduce(&t, &land, 1, MPI_INT, MPI_LAND, c.comm), EP_SUCCESS);
    int want_prod = 1;
    long long want_min = 1000;
    unsigned char want_bor = 0;
    for (int r = 0; r < c.size; ++r) {
      want_prod *= r % 3 + 1;
      want_min = std::min<long long>(want_min, 1000 - c.w(r));
      want_bor = static_cast<unsigned char>(want_bor | (1u << (r % 8)));
    }
    EXPECT_EQ(ipr, want_prod) << c.what;
    EXPECT_EQ(llr, want_min) << c.what;
    EXPECT_EQ(bor, want_bor) << c.what;
    EXPECT_EQ(land, 0) << c.what << ": rank 0 contributes false";
    // MAXLOC: the largest value wins; values are distinct.
    struct {
      double v;
      int loc;
    } mine{static_cast<double>(c.me % 5) * 1000 + c.rank, c.rank}, best{0, -1};
    ASSERT_EQ(EP_Allreduce(&mine, &best, 1, MPI_DOUBLE_INT, MPI_MAXLOC, c.comm), EP_SUCCESS);
    int want = 0;
    for (int r = 1; r < c.size; ++r) {
      if ((c.w(r) % 5) * 1000 + r > (c.w(want) % 5) * 1000 + want) want = r;
    }
    EXPECT_EQ(best.loc, want) << c.what;
    EXPECT_EQ(best.v, (c.w(want) % 5) * 1000.0 + want) << c.what;
  });
}

// FNV-1a of a buffer's bytes: tells whether two endpoints got the same bits.
uint64_t fnv(const void* p, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i)
    h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  return h;
}

// Blocking allreduce above kFastBytes with a contiguous type: the ring exchange among
// the processes (collectives/engine.h, "The blocking fast path", large).  Vectors that do not
// divide into even blocks, 1 MiB, integer ops, in place, and a sum whose rounding
// depends on the order of its terms, which every endpoint must get with the same bits
// (each block's total is computed once and passed on).
TEST_P(Fast, LargeAllreduceRing) {
  run_layout(GetParam(), [&](const Ctx& c) {
    const int limit = static_cast<int>(4096 / sizeof(double));  // kFastBytes of doubles
    for (int n : {limit + 1, 3 * limit + 2, 1 << 17}) {
      const size_t un = static_cast<size_t>(n);
      std::vector<double> in(un), out(un + 1, kGap);
      for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = dval(c.me, i);
      ASSERT_EQ(EP_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, c.comm), EP_SUCCESS);
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(out[static_cast<size_t>(i)], dsum(c.members, i)) << c.what << " n " << n;
      }
      EXPECT_EQ(out[un], kGap) << c.what << " n " << n << ": overrun";
      ASSERT_EQ(EP_Allreduce(EP_IN_PLACE, in.data(), n, MPI_DOUBLE, MPI_MAX, c.comm), EP_SUCCESS);
      for (int i = 0; i < n; ++i) {
        double want = dval(c.members[0], i);
        for (int w : c.members) want = std::max(want, dval(w, i));
        ASSERT_EQ(in[static_cast<size_t>(i)], want) << c.what << " in place n " << n;
      }
    }
    // Integer ops.
    const int ni = 10007;
    std::vector<int> xi(ni), bx(ni, -1), mn(ni, -1);
    for (int i = 0; i < ni; ++i) xi[static_cast<size_t>(i)] = c.me * 7919 + i * 31;
    ASSERT_EQ(EP_Allreduce(xi.data(), bx.data(), ni, MPI_INT, MPI_BXOR, c.comm), EP_SUCCESS);
    ASSERT_EQ(EP_Allreduce(xi.data(), mn.data(), ni, MPI_INT, MPI_MIN, c.comm), EP_SUCCESS);
    for (int i = 0; i < ni; ++i) {
      int want_x = 0, want_m = c.members[0] * 7919 + i * 31;
      for (int w : c.members) {
        want_x ^= w * 7919 + i * 31;
        want_m = std::min(want_m, w * 7919 + i * 31);
      }
      ASSERT_EQ(bx[static_cast<size_t>(i)], want_x) << c.what << " BXOR element " << i;
      ASSERT_EQ(mn[static_cast<size_t>(i)], want_m) << c.what << " MIN element " << i;
    }
    // Order-dependent rounding: close to the exact sum, and the same bits everywhere.
    const int nr = 3 * limit + 2;
    std::vector<double> rin(static_cast<size_t>(nr)), rout(static_cast<size_t>(nr));
    for (int i = 0; i < nr; ++i) rin[static_cast<size_t>(i)] = 0.1 * (c.me + 1) + 1e-9 * i / 3;
    ASSERT_EQ(EP_Allreduce(rin.data(), rout.data(), nr, MPI_DOUBLE, MPI_SUM, c.comm), EP_SUCCESS);
    for (int i = 0; i < nr; ++i) {
      double want = 0;
      for (int w : c.members) want += 0.1 * (w + 1) + 1e-9 * i / 3;
      ASSERT_NEAR(rout[static_cast<size_t>(i)], want, 1e-12 * c.size) << c.what << " " << i;
    }
    uint64_t h = fnv(rout.data(), rout.size() * sizeof(double)), hmin = 0, hmax = 0;
    ASSERT_EQ(EP_Allreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, c.comm), EP_SUCCESS);
    ASSERT_EQ(EP_Allreduce(&h, &hmax, 1, MPI_UINT64_T, MPI_MAX, c.comm), EP_SUCCESS);
    EXPECT_EQ(hmin, hmax) << c.what << ": endpoints got different bits";
  });
}

TEST_P(Fast, InterleavedWithNonblockingAndUserOps) {
  MatOp mop;
  run_layout(GetParam(), [&](const Ctx& c) {
    for (int round = 0; round < 20; ++round) {
      double nb_in = dval(c.me, round), nb_out = kGap;
      EP_Request rq = EP_REQUEST_NULL;
      ASSERT_EQ(EP_Iallreduce(&nb_in, &nb_out, 1, MPI_DOUBLE, MPI_SUM, c.comm, &rq), EP_SUCCESS);
      double b_in = dval(c.me, round + 1), b_out = kGap;
      ASSERT_EQ(EP_Allreduce(&b_in, &b_out, 1, MPI_DOUBLE, MPI_SUM, c.comm), EP_SUCCESS);
      ASSERT_EQ(EP_Barrier(c.comm), EP_SUCCESS);
      ep_coll_test::Mat m = mat_in(c.me, round), mr{};
      ASSERT_EQ(EP_Allreduce(&m, &mr, 1, mop.type, mop.op, c.comm), EP_SUCCESS);
      double b2 = dval(c.me, round + 2);
      ASSERT_EQ(EP_Allreduce(EP_IN_PLACE, &b2, 1, MPI_DOUBLE, MPI_SUM, c.comm), EP_SUCCESS);
      ASSERT_EQ(EP_Wait(&rq, EP_STATUS_IGNORE), EP_SUCCESS);
      EXPECT_EQ(nb_out, dsum(c.members, round)) << c.what << " round " << round;
      EXPECT_EQ(b_out, dsum(c.members, round + 1)) << c.what << " round " << round;
      EXPECT_EQ(mr, mat_product(c.members, round)) << c.what << " round " << round;
      EXPECT_EQ(b2, dsum(c.members, round + 2)) << c.what << " round " << round;
    }
  });
}

TEST_P(Fast, TwoCommunicatorsConcurrently) {
  run_layout(GetParam(), [&](const Ctx& c) {
    // Colour by rank parity: each process holds endpoints of both halves (when it has
    // two or more), whose operations - first ones included - then run concurrently.
    EP_Comm half = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(c.comm, c.rank % 2, c.rank, &half), EP_SUCCESS);
    std::vector<int> members;  // world endpoints of my half, rank order
    for (int r = c.rank % 2; r < c.size; r += 2) members.push_back(c.w(r));
    const int iters = ep_test::scaled(300);
    for (int i = 0; i < iters; ++i) {
      long v = c.me * 1000L + i, sum = -1;
      ASSERT_EQ(EP_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, half), EP_SUCCESS);
      long want = 0;
      for (int w : members) want += w * 1000L + i;
      ASSERT_EQ(sum, want) << c.what << " half " << c.rank % 2 << " iteration " << i;
      if (i % 10 == 0) {
        ASSERT_EQ(EP_Barrier(half), EP_SUCCESS);
      }
      if (i % 25 == 0) {  // the ring (above kFastBytes), both halves at once
        const int n = 20000 + i;
        std::vector<long> in(static_cast<size_t>(n)), out(static_cast<size_t>(n), -1);
        for (int k = 0; k < n; ++k) in[static_cast<size_t>(k)] = c.me * 100000L + k + i;
        ASSERT_EQ(EP_Allreduce(in.data(), out.data(), n, MPI_LONG, MPI_SUM, half), EP_SUCCESS);
        for (int k = 0; k < n; ++k) {
          long w = 0;
          for (int m : members) w += m * 100000L + k + i;
          ASSERT_EQ(out[static_cast<size_t>(k)], w) << c.what << " iteration " << i << " " << k;
        }
      }
    }
    EXPECT_EQ(EP_Comm_free(&half), EP_SUCCESS);
  });
}

// One layout is enough for the churn.
TEST(FastChurn, DupAllreduceFreeMoreTimesThanMpiHasContextIds) {
  MPI_Comm base = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &base), MPI_SUCCESS);
  MPI_Comm_set_errhandler(base, MPI_ERRORS_RETURN);
  run_layout(Lay::kGrouped, [&](const Ctx& c) {
    const int iters = ep_test::scaled(2100);
    int with_pcomm = 0;  // iterations whose allreduce made d's process-level communicator
    for (int i = 0; i < iters; ++i) {
      EP_Comm d = EP_COMM_NULL;
      ASSERT_EQ(EP_Comm_dup(c.comm, &d), EP_SUCCESS);
      int one = 1, n = 0;
      ASSERT_EQ(EP_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, d), EP_SUCCESS);
      ASSERT_EQ(n, c.size) << "iteration " << i;
      // Not every time: while another process still holds all kMaxProcessComms of
      // fragments freed but not yet retired, the vote gives d none (the engine's way).
      if (ep::collectives::process_comms_alive() >= 1) ++with_pcomm;
      ASSERT_EQ(EP_Comm_free(&d), EP_SUCCESS);
    }
    // On one node with the node transport on, the processes meet in the node segment
    // (runtime/node_coll.h) - but a communicator made while a process's rings are all
    // taken by fragments not yet retired falls back to the process-level one, so either
    // may happen; otherwise some allreduce must make one.
    if (ep_test::world_size() > 1 && !ep::runtime::runtime()->node.on()) {
      EXPECT_GT(with_pcomm, 0) << "no allreduce made a process-level communicator";
    }
  });
  // Freed fragments retire on the progress thread, soon after EP_Comm_free: every
  // process-level communicator must go with them.
  const double deadline = MPI_Wtime() + 30;
  while (ep::collectives::process_comms_alive() > 0 && MPI_Wtime() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(ep::collectives::process_comms_alive(), 0);
  // And MPI still has context ids for the application.
  MPI_Comm probe = MPI_COMM_NULL;
  EXPECT_EQ(MPI_Comm_dup(base, &probe), MPI_SUCCESS) << "MPI ran out of communicators";
  if (probe != MPI_COMM_NULL) MPI_Comm_free(&probe);
  MPI_Comm_free(&base);
}

// One layout is enough.
TEST(FastChurn, MoreCommunicatorsAliveThanProcessLevelOnes) {
  run_layout(Lay::kInterleaved, [&](const Ctx& c) {
    const int n = ep::collectives::kMaxProcessComms + 16;
    std::vector<EP_Comm> dups(static_cast<size_t>(n), EP_COMM_NULL);
    for (EP_Comm& d : dups) ASSERT_EQ(EP_Comm_dup(c.comm, &d), EP_SUCCESS);
    for (int pass = 0; pass < 2; ++pass) {
      for (int k = 0; k < n; ++k) {
        const int i = pass == 0 ? k : n - 1 - k;  // creation order, then reversed
        long v = c.me + i, sum = -1;
        ASSERT_EQ(EP_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, dups[static_cast<size_t>(i)]),
                  EP_SUCCESS);
        long want = 0;
        for (int w : c.members) want += w + i;
        ASSERT_EQ(sum, want) << c.what << " communicator " << i << " pass " << pass;
        ASSERT_EQ(EP_Barrier(dups[static_cast<size_t>(i)]), EP_SUCCESS);
        if (i % 8 == 0) {  // above kFastBytes: the ring, or the fallback beyond the limit
          const int len = 5000 + i;
          std::vector<long> in(static_cast<size_t>(len)), out(static_cast<size_t>(len), -1);
          for (int k = 0; k < len; ++k) in[static_cast<size_t>(k)] = c.me * 7L + k;
          ASSERT_EQ(EP_Allreduce(in.data(), out.data(), len, MPI_LONG, MPI_SUM,
                                 dups[static_cast<size_t>(i)]),
                    EP_SUCCESS);
          for (int k = 0; k < len; ++k) {
            long w = 0;
            for (int m : c.members) w += m * 7L + k;
            ASSERT_EQ(out[static_cast<size_t>(k)], w)
                << c.what << " communicator " << i << " " << k;
          }
        }
      }
    }
    EXPECT_LE(ep::collectives::process_comms_alive(), ep::collectives::kMaxProcessComms);
    for (EP_Comm& d : dups) ASSERT_EQ(EP_Comm_free(&d), EP_SUCCESS);
  });
}

// ---- The tree (collectives/fast.h): barrier, bcast, reduce, allreduce ----------------------

// Sizes in doubles around the tree's by-value limit (kTreeInline: 256 bytes = 32
// doubles), above it (shares), and above the chunk of oneTBB's and the team's steps
// (kParallelBytes: 256 KiB).
const int kTreeCounts[] = {1, 31, 32, 33, 1000, 40000};

// A commutative user op: the sum of ints modulo the prime.
void modsum_fn(void* in, void* io, int* len, MPI_Datatype*) {
  const int* a = static_cast<const int*>(in);
  int* b = static_cast<int*>(io);
  for (int i = 0; i < *len; ++i) b[i] = (a[i] + b[i]) % ep_coll_test::kPrime;
}

int ival(int w, int i) { return (w * 37 + i * 11) % 1000; }

// Allreduce by value and in shares: SUM, MAX in place, a commutative user op in place,
// the non-commutative matrix product (in rank order), at every size; nothing is written
// beyond the count.
TEST_P(Fast, TreeAllreduceOpsAndSizes) {
  MatOp mop;
  MPI_Op modsum = MPI_OP_NULL;
  MPI_Op_create(&modsum_fn, 1, &modsum);
  run_layout(GetParam(), [&](const Ctx& c) {
    for (int n : kTreeCounts) {
      const size_t un = static_cast<size_t>(n);
      std::vector<double> in(un), out(un + 1, kGap);
      for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = dval(c.me, i);
      ASSERT_EQ(EP_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, c.comm), EP_SUCCESS);
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(out[static_cast<size_t>(i)], dsum(c.members, i)) << c.what << " n " << n;
      }
      EXPECT_EQ(out[un], kGap) << c.what << " n " << n << ": overrun";
      std::vector<int> x(un + 1, -1), u(un + 1, -1);
      for (int i = 0; i < n; ++i) {
        x[static_cast<size_t>(i)] = u[static_cast<size_t>(i)] = ival(c.me, i);
      }
      ASSERT_EQ(EP_Allreduce(EP_IN_PLACE, x.data(), n, MPI_INT, MPI_MAX, c.comm), EP_SUCCESS);
      ASSERT_EQ(EP_Allreduce(EP_IN_PLACE, u.data(), n, MPI_INT, modsum, c.comm), EP_SUCCESS);
      for (int i = 0; i < n; ++i) {
        int mx = -1, ms = 0;
        for (int w : c.members) {
          mx = std::max(mx, ival(w, i));
          ms = (ms + ival(w, i)) % ep_coll_test::kPrime;
        }
        ASSERT_EQ(x[static_cast<size_t>(i)], mx) << c.what << " MAX in place n " << n;
        ASSERT_EQ(u[static_cast<size_t>(i)], ms) << c.what << " user op in place n " << n;
      }
      EXPECT_EQ(x[un], -1) << c.what << " n " << n << ": overrun";
      // The matrix product: 16 bytes an element, by value up to 16 elements.
      const int nm = std::max(1, n / 4);
      std::vector<ep_coll_test::Mat> ms(static_cast<size_t>(nm)), mr(static_cast<size_t>(nm) + 1);
      for (int k = 0; k < nm; ++k) ms[static_cast<size_t>(k)] = mat_in(c.me, k, n);
      mr[static_cast<size_t>(nm)] = {-3, -3, -3, -3};
      ASSERT_EQ(EP_Allreduce(ms.data(), mr.data(), nm, mop.type, mop.op, c.comm), EP_SUCCESS);
      for (int k = 0; k < nm; ++k) {
        ASSERT_EQ(mr[static_cast<size_t>(k)], mat_product(c.members, k, n))
            << c.what << " matrix product, " << nm << " elements, element " << k;
      }
      EXPECT_EQ(mr[static_cast<size_t>(nm)], (ep_coll_test::Mat{-3, -3, -3, -3})) << c.what;
    }
  });
  MPI_Op_free(&modsum);
}

// Bcast and reduce from every root at every size: bcast received through a derived type
// at odd ranks (pairs of ints: the root's signature, another layout), reduce's SUM with
// the root in place at every other size, the matrix product in rank order.
TEST_P(Fast, TreeBcastAndReduceFromEveryRoot) {
  MatOp mop;
  MPI_Datatype pair = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  run_layout(GetParam(), [&](const Ctx& c) {
    for (int root = 0; root < c.size; ++root) {
      for (int n : kTreeCounts) {
        if (c.size > 6 && n == 40000 && root % 3 != 0) continue;  // keeps np3 short
        const size_t un = static_cast<size_t>(n);
        const bool as_pairs = c.rank != root && c.rank % 2 == 1 && n % 2 == 0;
        std::vector<int> b(un + 1, -5);
        if (c.rank == root) {
          for (int i = 0; i < n; ++i) b[static_cast<size_t>(i)] = ival(c.me, i);
        }
        ASSERT_EQ(EP_Bcast(b.data(), as_pairs ? n / 2 : n, as_pairs ? pair : MPI_INT, root, c.comm),
                  EP_SUCCESS);
        for (int i = 0; i < n; ++i) {
          ASSERT_EQ(b[static_cast<size_t>(i)], ival(c.w(root), i))
              << c.what << " bcast root " << root << " n " << n;
        }
        EXPECT_EQ(b[un], -5) << c.what << " bcast overrun";
        std::vector<double> in(un), out(un + 1, kGap);
        for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = dval(c.me, i);
        const bool in_place = c.rank == root && n % 2 == 1;
        if (in_place) std::copy(in.begin(), in.end(), out.begin());
        ASSERT_EQ(EP_Reduce(in_place ? EP_IN_PLACE : in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM,
                            root, c.comm),
                  EP_SUCCESS);
        if (c.rank == root) {
          for (int i = 0; i < n; ++i) {
            ASSERT_EQ(out[static_cast<size_t>(i)], dsum(c.members, i))
                << c.what << " reduce root " << root << " n " << n << (in_place ? " in place" : "");
          }
        } else {
          EXPECT_EQ(out[0], kGap) << c.what << ": reduce wrote at a non-root";
        }
        EXPECT_EQ(out[un], kGap) << c.what << " reduce overrun";
      }
      ep_coll_test::Mat m = mat_in(c.me, 0, root), mr = {-2, -2, -2, -2};
      ASSERT_EQ(EP_Reduce(&m, &mr, 1, mop.type, mop.op, root, c.comm), EP_SUCCESS);
      if (c.rank == root) {
        EXPECT_EQ(mr, mat_product(c.members, 0, root)) << c.what << " root " << root;
      } else {
        EXPECT_EQ(mr, (ep_coll_test::Mat{-2, -2, -2, -2})) << c.what;
      }
    }
  });
  MPI_Type_free(&pair);
}

// Many operations back to back, each kind after each, every result depending on the
// iteration (a stale or doubled release gives a wrong value); no wait needed its safety
// timeout (a release nobody was woken for).
TEST_P(Fast, TreeManyOperationsBackToBack) {
  const uint64_t lost_before = ep::runtime::lost_wakeups();
  run_layout(GetParam(), [&](const Ctx& c) {
    const int iters = ep_test::scaled(1200);
    std::vector<double> big(40), bigr(40);
    for (int it = 0; it < iters; ++it) {
      const int root = it % c.size;
      switch (it % 5) {
        case 0: {
          long long v = c.me * 1000LL + it, sum = -1, want = 0;
          ASSERT_EQ(EP_Allreduce(&v, &sum, 1, MPI_LONG_LONG, MPI_SUM, c.comm), EP_SUCCESS);
          for (int w : c.members) want += w * 1000LL + it;
          ASSERT_EQ(sum, want) << c.what << " iteration " << it;
          break;
        }
        case 1: {
          int v = c.rank == root ? it * 7 + c.me : -1;
          ASSERT_EQ(EP_Bcast(&v, 1, MPI_INT, root, c.comm), EP_SUCCESS);
          ASSERT_EQ(v, it * 7 + c.w(root)) << c.what << " iteration " << it;
          break;
        }
        case 2: {
          int v = c.me + it, r = -1, want = 0;
          ASSERT_EQ(EP_Reduce(&v, &r, 1, MPI_INT, MPI_MAX, root, c.comm), EP_SUCCESS);
          for (int w : c.members) want = std::max(want, w + it);
          if (c.rank == root) {
            ASSERT_EQ(r, want) << c.what << " iteration " << it;
          }
          break;
        }
        case 3:
          ASSERT_EQ(EP_Barrier(c.comm), EP_SUCCESS);
          break;
        default: {  // shares
          for (int i = 0; i < 40; ++i) big[static_cast<size_t>(i)] = dval(c.me, i + it);
          ASSERT_EQ(EP_Allreduce(big.data(), bigr.data(), 40, MPI_DOUBLE, MPI_SUM, c.comm),
                    EP_SUCCESS);
          for (int i = 0; i < 40; ++i) {
            ASSERT_EQ(bigr[static_cast<size_t>(i)], dsum(c.members, i + it))
                << c.what << " iteration " << it;
          }
        }
      }
    }
  });
  EXPECT_EQ(ep::runtime::lost_wakeups(), lost_before) << "a wait slept to its safety timeout";
}

// Blocking collectives on the tree while nonblocking ones (on the engine) are
// outstanding on the same communicator, and point-to-point in between.
TEST_P(Fast, TreeMixedWithNonblockingAndPointToPoint) {
  run_layout(GetParam(), [&](const Ctx& c) {
    const int iters = ep_test::scaled(120);
    for (int it = 0; it < iters; ++it) {
      const int root = (it * 3) % c.size;
      double nb = dval(c.me, it), nbr = kGap;
      int nbb = c.rank == root ? it + 5 : -1;
      EP_Request rq[2] = {EP_REQUEST_NULL, EP_REQUEST_NULL};
      ASSERT_EQ(EP_Iallreduce(&nb, &nbr, 1, MPI_DOUBLE, MPI_SUM, c.comm, &rq[0]), EP_SUCCESS);
      ASSERT_EQ(EP_Ibcast(&nbb, 1, MPI_INT, root, c.comm, &rq[1]), EP_SUCCESS);
      double b = dval(c.me, it + 1), br = kGap;
      ASSERT_EQ(EP_Allreduce(&b, &br, 1, MPI_DOUBLE, MPI_SUM, c.comm), EP_SUCCESS);
      ASSERT_EQ(br, dsum(c.members, it + 1)) << c.what << " iteration " << it;
      int token = c.me * 100 + it, got = -1;
      ASSERT_EQ(EP_Sendrecv(&token, 1, MPI_INT, (c.rank + 1) % c.size, it, &got, 1, MPI_INT,
                            (c.rank + c.size - 1) % c.size, it, c.comm, EP_STATUS_IGNORE),
                EP_SUCCESS);
      ASSERT_EQ(got, c.w((c.rank + c.size - 1) % c.size) * 100 + it) << c.what;
      int bv = c.rank == (root + 1) % c.size ? it * 3 : -1;
      ASSERT_EQ(EP_Bcast(&bv, 1, MPI_INT, (root + 1) % c.size, c.comm), EP_SUCCESS);
      ASSERT_EQ(bv, it * 3) << c.what << " iteration " << it;
      ASSERT_EQ(EP_Barrier(c.comm), EP_SUCCESS);
      ASSERT_EQ(EP_Waitall(2, rq, EP_STATUSES_IGNORE), EP_SUCCESS);
      ASSERT_EQ(nbr, dsum(c.members, it)) << c.what << " iteration " << it;
      ASSERT_EQ(nbb, it + 5) << c.what << " iteration " << it;
    }
  });
}

// Erroneous endpoints (holes) at every rank, in turn, and a process's endpoints all at
// once: the others complete (a valid root's bcast reaches them), and the communicator
// works afterwards.
TEST_P(Fast, TreeHolesAtEveryRank) {
  run_layout(GetParam(), [&](const Ctx& c) {
    auto check_works = [&](const std::string& what) {
      long v = c.me + 1, sum = -1, want = 0;
      ASSERT_EQ(EP_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, c.comm), EP_SUCCESS) << what;
      for (int w : c.members) want += w + 1;
      ASSERT_EQ(sum, want) << what << ": the next allreduce is wrong";
    };
    const int proc = c.wd->proc_of(c.me);
    for (int e = -1; e < c.size; ++e) {
      // e >= 0: rank e errs; e == -1: every endpoint of process (e + 1 + pass) % np.
      for (int pass = 0; pass < (e < 0 ? static_cast<int>(c.wd->counts.size()) : 1); ++pass) {
        const bool bad = e >= 0 ? c.rank == e : proc == pass;
        const std::string what = c.what + (e >= 0 ? " erroneous rank " + std::to_string(e)
                                                  : " erroneous process " + std::to_string(pass));
        for (int n : {4, 40000}) {  // by value, shares
          std::vector<double> in(static_cast<size_t>(n), 1.0), out(static_cast<size_t>(n));
          int rc =
              EP_Allreduce(bad ? nullptr : in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, c.comm);
          ASSERT_EQ(rc, bad ? EP_ERR_BUFFER : EP_SUCCESS) << what << " allreduce n " << n;
          const int root = e >= 0 ? e : 0;
          for (int r : {root, (root + 1) % c.size}) {
            rc =
                EP_Reduce(bad ? nullptr : in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, r, c.comm);
            ASSERT_EQ(rc, bad ? EP_ERR_BUFFER : EP_SUCCESS) << what << " reduce root " << r;
            std::vector<int> b(static_cast<size_t>(n), c.rank == r ? 77 : -1);
            rc = EP_Bcast(bad ? nullptr : b.data(), n, MPI_INT, r, c.comm);
            ASSERT_EQ(rc, bad ? EP_ERR_BUFFER : EP_SUCCESS) << what << " bcast root " << r;
            const bool root_ok = e >= 0 ? r != e : c.wd->proc_of(c.w(r)) != pass;
            if (!bad && root_ok) {
              ASSERT_EQ(b[0], 77) << what << " bcast root " << r;
              ASSERT_EQ(b[static_cast<size_t>(n - 1)], 77) << what << " bcast root " << r;
            }
          }
        }
        check_works(what);
      }
    }
  });
}

// On a node with cores to spare (process_cores overridden): shares combine in oneTBB's
// chunks (where not under TSAN); the results are the same.
TEST_P(Fast, TreeWithCoresToSpare) {
  ep::collectives::override_process_cores(64);
  run_layout(GetParam(), [&](const Ctx& c) {
    for (int n : {1, 33, 40000}) {
      std::vector<double> in(static_cast<size_t>(n)), out(static_cast<size_t>(n), kGap);
      for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = dval(c.me, i);
      for (int rep = 0; rep < 20; ++rep) {
        ASSERT_EQ(EP_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, c.comm), EP_SUCCESS);
        ASSERT_EQ(out[static_cast<size_t>(n - 1)], dsum(c.members, n - 1)) << c.what << " " << n;
        ASSERT_EQ(EP_Barrier(c.comm), EP_SUCCESS);
      }
    }
  });
  ep::collectives::override_process_cores(0);
}

// process_cores (collectives/engine.h): each process's share of its node's CPUs, which
// decides whether reductions split over threads.  Between 1 and the process's own CPU
// count; all of them if it is alone on its node; and the node's processes together
// claim no more CPUs than their masks hold (each counts 1 at least).
TEST(ProcessCores, AShareOfTheNodesCpus) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  const int own = CPU_COUNT(&mine), cores = ep::collectives::process_cores();
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, own);
  MPI_Comm node = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
            MPI_SUCCESS);
  int n = 0;
  MPI_Comm_size(node, &n);
  if (n == 1) {
    EXPECT_EQ(cores, own) << "alone on the node";
  }
  cpu_set_t all;
  CPU_ZERO(&all);
  MPI_Allreduce(&mine, &all, static_cast<int>(sizeof(cpu_set_t)), MPI_BYTE, MPI_BOR, node);
  int claimed = 0;
  MPI_Allreduce(&cores, &claimed, 1, MPI_INT, MPI_SUM, node);
  EXPECT_LE(claimed, std::max(CPU_COUNT(&all), n)) << n << " processes on the node";
  MPI_Comm_free(&node);
}

INSTANTIATE_TEST_SUITE_P(Layouts, Fast,
                         ::testing::Values(Lay::kGrouped, Lay::kReversed, Lay::kInterleaved,
                                           Lay::kWideGrouped, Lay::kWideInterleaved),
                         [](const ::testing::TestParamInfo<Lay>& info) {
                           return std::string(ep_coll_test::lay_name(info.param));
                         });

}  // namespace
