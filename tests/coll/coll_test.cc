// Blocking collectives on every rank layout, with uneven endpoints per process
// (3, 1, 2) and 1, 2 or 3 processes:
//  * layouts: grouped (split key = world rank), reversed (key = -rank), interleaved
//    (consecutive ranks alternate between processes); every test runs on all three;
//  * every blocking collective: Barrier (nobody leaves before the last one entered),
//    Bcast, Reduce, Allreduce, Gather(v), Scatter(v), Allgather(v), Alltoall(v),
//    Reduce_scatter, Reduce_scatter_block, Scan, Exscan; rooted ones from every root;
//  * predefined ops on several types (SUM, PROD, MIN, MAX, bitwise/logical, MAXLOC,
//    MINLOC), a commutative user op, and the non-commutative 2x2 matrix product modulo a
//    prime (must be applied in rank order);
//  * EP_IN_PLACE for every collective where MPI allows it;
//  * count 0 (buffers must stay untouched) and zero entries in v-variant counts;
//  * derived datatypes: strided MPI_Type_vector (gaps must stay untouched), a struct type
//    (with a user op on it), a resized type, mismatched-but-matching send/receive types;
//  * large payloads (above the eager limit and the parallel-reduction threshold).
// Expected values are computed here from world-endpoint numbers and the layout derived
// from uneven(p) and MPI's split rule (coll_util.h); libep is never asked.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "tests/coll/coll_util.h"
#include "tests/common/harness.h"

namespace {

using ep_coll_test::Ctx;
using ep_coll_test::Lay;
using ep_coll_test::Mat;
using ep_coll_test::mat_in;
using ep_coll_test::mat_product;
using ep_coll_test::MatOp;
using ep_coll_test::prefix;
using ep_coll_test::run_layout;
using ep_test::last_error;

constexpr int kSent = -7;  // sentinel for "must not be written"
const Mat kMatSent = {-1, -1, -1, -1};

// The value world endpoint w contributes / owns at position i.
int val(int w, int i) { return (w + 1) * 100 + i; }
// Per-rank count used by the v-variants (0 for some ranks).
int vcount(int w) { return (w * 2 + 1) % 4; }

[[maybe_unused]] const bool kWatchdog = ep_coll_test::install_watchdog();

class Coll : public ::testing::TestWithParam<Lay> {};

// ---- Barrier ---------------------------------------------------------------------------------

TEST_P(Coll, BarrierWaitsForTheLastEndpoint) {
  run_layout(GetParam(), [](const Ctx& c) {
    for (int late : {c.size - 1, 0, c.size / 2}) {
      if (c.rank == late) ep_coll_test::sleep_ms(150);
      const double entered = ep_coll_test::now_s();
      EXPECT_EQ(EP_Barrier(c.comm), EP_SUCCESS) << c.what;
      const double left = ep_coll_test::now_s();
      double last = 0;
      EXPECT_EQ(EP_Allreduce(&entered, &last, 1, MPI_DOUBLE, MPI_MAX, c.comm), EP_SUCCESS);
      EXPECT_GE(left, last) << c.what << ": rank " << c.rank << " left the barrier before rank "
                            << late << " entered";
    }
    for (int i = 0; i < 50; ++i) EXPECT_EQ(EP_Barrier(c.comm), EP_SUCCESS) << c.what;
  });
}

// ---- Bcast -------------------------------------------------------------------------------------

TEST_P(Coll, BcastFromEveryRoot) {
  run_layout(GetParam(), [](const Ctx& c) {
    for (int root = 0; root < c.size; ++root) {
      int buf[5];
      double d[3];
      for (int i = 0; i < 5; ++i) buf[i] = c.rank == root ? val(c.me, i) : kSent;
      for (int i = 0; i < 3; ++i) d[i] = c.rank == root ? c.me * 0.5 + i : -1.0;
      EXPECT_EQ(EP_Bcast(buf, 5, MPI_INT, root, c.comm), EP_SUCCESS) << c.what;
      EXPECT_EQ(EP_Bcast(d, 3, MPI_DOUBLE, root, c.comm), EP_SUCCESS) << c.what;
      for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(buf[i], val(c.w(root), i)) << c.what << " root " << root << " i " << i;
      }
      for (int i = 0; i < 3; ++i) EXPECT_EQ(d[i], c.w(root) * 0.5 + i) << c.what;
    }
  });
}

// ---- Allreduce -----------------------------------------------------------------------------------

// Sums and products wrap (two's complement), as MPI's and libep's do: computed unsigned,
// since signed overflow is undefined (UBSAN reports it).
long long fold(MPI_Op op, long long a, long long b) {
  using U = unsigned long long;
  if (op == MPI_SUM) return static_cast<long long>(static_cast<U>(a) + static_cast<U>(b));
  if (op == MPI_PROD) return static_cast<long long>(static_cast<U>(a) * static_cast<U>(b));
  if (op == MPI_MIN) return std::min(a, b);
  if (op == MPI_MAX) return std::max(a, b);
  if (op == MPI_BAND) return a & b;
  if (op == MPI_BOR) return a | b;
  if (op == MPI_BXOR) return a ^ b;
  if (op == MPI_LAND) return (a && b) ? 1 : 0;
  if (op == MPI_LOR) return (a || b) ? 1 : 0;
  ADD_FAILURE() << "unknown op";
  return 0;
}

// A commutative user op: sum modulo the prime.
void modsum_fn(void* in, void* io, int* len, MPI_Datatype*) {
  int* a = static_cast<int*>(in);
  int* b = static_cast<int*>(io);
  for (int i = 0; i < *len; ++i) b[i] = (a[i] + b[i]) % ep_coll_test::kPrime;
}

TEST_P(Coll, AllreducePredefinedAndUserOps) {
  MatOp mop;
  MPI_Op modsum = MPI_OP_NULL;
  MPI_Op_create(&modsum_fn, 1, &modsum);
  run_layout(GetParam(), [&](const Ctx& c) {
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND,
                          MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR};
    const char* names[] = {"SUM", "PROD", "MIN", "MAX", "BAND", "BOR", "BXOR", "LAND", "LOR"};
    for (int k = 0; k < 9; ++k) {
      auto in = [&](int w, int i) {
        return ops[k] == MPI_PROD ? (w + i) % 3 + 1 : (w * 5 + i * 3 + k) % 7;
      };
      int s[3], r[3] = {kSent, kSent, kSent};
      long long ls[3], lr[3] = {-1, -1, -1};
      for (int i = 0; i < 3; ++i) {
        s[i] = in(c.me, i);
        ls[i] = in(c.me, i) + (1LL << 40);
      }
      EXPECT_EQ(EP_Allreduce(s, r, 3, MPI_INT, ops[k], c.comm), EP_SUCCESS) << names[k];
      const bool ll_ok = ops[k] != MPI_PROD;  // 2^40 products would overflow
      if (ll_ok) {
        EXPECT_EQ(EP_Allreduce(ls, lr, 3, MPI_LONG_LONG, ops[k], c.comm), EP_SUCCESS) << names[k];
      }
      for (int i = 0; i < 3; ++i) {
        long long e = in(c.w(0), i), le = in(c.w(0), i) + (1LL << 40);
        for (int r2 = 1; r2 < c.size; ++r2) {
          e = fold(ops[k], e, in(c.w(r2), i));
          le = fold(ops[k], le, in(c.w(r2), i) + (1LL << 40));
        }
        EXPECT_EQ(r[i], e) << c.what << " MPI_" << names[k] << " int, i " << i;
        if (ll_ok) {
          EXPECT_EQ(lr[i], le) << c.what << " MPI_" << names[k] << " long long, i " << i;
        }
      }
    }
    {  // double, float, unsigned char
      double ds[2] = {c.me * 0.25, -c.me * 1.5}, dr[2] = {0, 0};
      EXPECT_EQ(EP_Allreduce(ds, dr, 2, MPI_DOUBLE, MPI_SUM, c.comm), EP_SUCCESS);
      float fs = c.me + 0.5f, fr = 0;
      EXPECT_EQ(EP_Allreduce(&fs, &fr, 1, MPI_FLOAT, MPI_MIN, c.comm), EP_SUCCESS);
      unsigned char us = static_cast<unsigned char>(1u << (c.me % 8)), ur = 0;
      EXPECT_EQ(EP_Allreduce(&us, &ur, 1, MPI_UNSIGNED_CHAR, MPI_BOR, c.comm), EP_SUCCESS);
      double e0 = 0, e1 = 0;
      float fe = 1e9f;
      unsigned ue = 0;
      for (int w : c.members) {
        e0 += w * 0.25;
        e1 += -w * 1.5;
        fe = std::min(fe, w + 0.5f);
        ue |= 1u << (w % 8);
      }
      EXPECT_EQ(dr[0], e0) << c.what;
      EXPECT_EQ(dr[1], e1) << c.what;
      EXPECT_EQ(fr, fe) << c.what;
      EXPECT_EQ(ur, ue) << c.what;
    }
    {  // MAXLOC / MINLOC on MPI_2INT (ties: smallest index) and MPI_DOUBLE_INT
      struct {
        int v, i;
      } s{(c.me * 7) % 3, c.rank}, rmax{-1, -1}, rmin{-1, -1};
      EXPECT_EQ(EP_Allreduce(&s, &rmax, 1, MPI_2INT, MPI_MAXLOC, c.comm), EP_SUCCESS);
      EXPECT_EQ(EP_Allreduce(&s, &rmin, 1, MPI_2INT, MPI_MINLOC, c.comm), EP_SUCCESS);
      int emax = -1, emaxi = -1, emin = 1 << 30, emini = -1;
      for (int r2 = 0; r2 < c.size; ++r2) {
        const int v = (c.w(r2) * 7) % 3;
        if (v > emax) emax = v, emaxi = r2;
        if (v < emin) emin = v, emini = r2;
      }
      EXPECT_EQ(rmax.v, emax) << c.what;
      EXPECT_EQ(rmax.i, emaxi) << c.what;
      EXPECT_EQ(rmin.v, emin) << c.what;
      EXPECT_EQ(rmin.i, emini) << c.what;
      struct {
        double v;
        int i;
      } ds{c.me * 1.5, c.rank}, dr{-1, -1};
      EXPECT_EQ(EP_Allreduce(&ds, &dr, 1, MPI_DOUBLE_INT, MPI_MAXLOC, c.comm), EP_SUCCESS);
      int wmax = 0;
      for (int r2 = 0; r2 < c.size; ++r2) {
        if (c.w(r2) > c.w(wmax)) wmax = r2;
      }
      EXPECT_EQ(dr.v, c.w(wmax) * 1.5) << c.what;
      EXPECT_EQ(dr.i, wmax) << c.what;
    }
    {  // commutative user op
      int s[2] = {c.me * 4000 + 17, c.me * 9000 + 3}, r[2] = {kSent, kSent};
      EXPECT_EQ(EP_Allreduce(s, r, 2, MPI_INT, modsum, c.comm), EP_SUCCESS);
      int e0 = 0, e1 = 0;
      for (int w : c.members) {
        e0 = (e0 + w * 4000 + 17) % ep_coll_test::kPrime;
        e1 = (e1 + w * 9000 + 3) % ep_coll_test::kPrime;
      }
      EXPECT_EQ(r[0], e0) << c.what;
      EXPECT_EQ(r[1], e1) << c.what;
    }
    {  // non-commutative user op, count 3
      Mat s[3] = {mat_in(c.me, 0), mat_in(c.me, 1), mat_in(c.me, 2)};
      Mat r[3] = {kMatSent, kMatSent, kMatSent};
      EXPECT_EQ(EP_Allreduce(s, r, 3, mop.type, mop.op, c.comm), EP_SUCCESS);
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(r[k], mat_product(c.members, k)) << c.what << ": not in rank order, k " << k;
      }
    }
    {  // in place: int SUM and the matrix op
      int b[2] = {val(c.me, 0), val(c.me, 1)};
      EXPECT_EQ(EP_Allreduce(EP_IN_PLACE, b, 2, MPI_INT, MPI_SUM, c.comm), EP_SUCCESS);
      int e0 = 0, e1 = 0;
      for (int w : c.members) e0 += val(w, 0), e1 += val(w, 1);
      EXPECT_EQ(b[0], e0) << c.what << " in place";
      EXPECT_EQ(b[1], e1) << c.what << " in place";
      Mat m[2] = {mat_in(c.me, 3), mat_in(c.me, 4)};
      EXPECT_EQ(EP_Allreduce(EP_IN_PLACE, m, 2, mop.type, mop.op, c.comm), EP_SUCCESS);
      EXPECT_EQ(m[0], mat_product(c.members, 3)) << c.what << " in place";
      EXPECT_EQ(m[1], mat_product(c.members, 4)) << c.what << " in place";
    }
  });
  MPI_Op_free(&modsum);
}

// ---- Gather / Gatherv ------------------------------------------------------------------------

// Displacements placing rank blocks in REVERSE rank order with a one-element gap after each.
std::vector<int> reverse_displs(const std::vector<int>& counts, int* total) {
  const int n = static_cast<int>(counts.size());
  std::vector<int> d(static_cast<size_t>(n));
  int off = 0;
  for (int r = n - 1; r >= 0; --r) {
    d[static_cast<size_t>(r)] = off;
    off += counts[static_cast<size_t>(r)] + 1;
  }
  *total = off;
  return d;
}

TEST_P(Coll, GatherAndGathervToEveryRoot) {
  run_layout(GetParam(), [](const Ctx& c) {
    const int n = c.size;
    for (int root = 0; root < n; ++root) {
      const bool is_root = c.rank == root;
      for (int in_place = 0; in_place < 2; ++in_place) {
        // Gather, 3 ints each.
        int s[3] = {val(c.me, 0), val(c.me, 1), val(c.me, 2)};
        std::vector<int> r(static_cast<size_t>(3 * n), kSent);
        const void* sb = s;
        if (in_place && is_root) {
          for (int i = 0; i < 3; ++i) r[static_cast<size_t>(3 * root + i)] = s[i];
          sb = EP_IN_PLACE;
        }
        EXPECT_EQ(EP_Gather(sb, 3, MPI_INT, is_root ? r.data() : nullptr, 3, MPI_INT, root, c.comm),
                  EP_SUCCESS);
        if (is_root) {
          for (int q = 0; q < n; ++q) {
            for (int i = 0; i < 3; ++i) {
              EXPECT_EQ(r[static_cast<size_t>(3 * q + i)], val(c.w(q), i))
                  << c.what << " root " << root << " slot " << q << (in_place ? " in place" : "");
            }
          }
        }
        // Gatherv: rank q sends vcount(w(q)) ints, blocks in reverse order with gaps.
        std::vector<int> counts(static_cast<size_t>(n));
        for (int q = 0; q < n; ++q) counts[static_cast<size_t>(q)] = vcount(c.w(q));
        int total = 0;
        const std::vector<int> displs = reverse_displs(counts, &total);
        const int my_count = vcount(c.me);
        std::vector<int> sv(static_cast<size_t>(my_count) + 1);
        for (int i = 0; i < my_count; ++i) sv[static_cast<size_t>(i)] = val(c.me, 10 + i);
        std::vector<int> rv(static_cast<size_t>(total), kSent);
        const void* svb = sv.data();
        if (in_place && is_root) {
          for (int i = 0; i < my_count; ++i) {
            rv[static_cast<size_t>(displs[static_cast<size_t>(root)] + i)] = sv[static_cast<size_t>(i)];
          }
          svb = EP_IN_PLACE;
        }
        EXPECT_EQ(EP_Gatherv(svb, my_count, MPI_INT, is_root ? rv.data() : nullptr,
                             is_root ? counts.data() : nullptr, is_root ? displs.data() : nullptr,
                             MPI_INT, root, c.comm),
                  EP_SUCCESS);
        if (is_root) {
          std::vector<int> e(static_cast<size_t>(total), kSent);
          for (int q = 0; q < n; ++q) {
            for (int i = 0; i < counts[static_cast<size_t>(q)]; ++i) {
              e[static_cast<size_t>(displs[static_cast<size_t>(q)] + i)] = val(c.w(q), 10 + i);
            }
          }
          EXPECT_EQ(rv, e) << c.what << " Gatherv root " << root << (in_place ? " in place" : "");
        }
      }
    }
  });
}

// ---- Scatter / Scatterv ------------------------------------------------------------------------

TEST_P(Coll, ScatterAndScattervFromEveryRoot) {
  run_layout(GetParam(), [](const Ctx& c) {
    const int n = c.size;
    for (int root = 0; root < n; ++root) {
      const bool is_root = c.rank == root;
      for (int in_place = 0; in_place < 2; ++in_place) {
        // Scatter: slot q (2 ints) is meant for world endpoint w(q).
        std::vector<int> s;
        if (is_root) {
          for (int q = 0; q < n; ++q) {
            s.push_back(val(c.w(q), root));
            s.push_back(val(c.w(q), root + 50));
          }
        }
        int r[2] = {kSent, kSent};
        void* rb = (in_place && is_root) ? EP_IN_PLACE : static_cast<void*>(r);
        EXPECT_EQ(EP_Scatter(is_root ? s.data() : nullptr, 2, MPI_INT, rb, 2, MPI_INT, root, c.comm),
                  EP_SUCCESS);
        if (in_place && is_root) {
          EXPECT_EQ(r[0], kSent);
          // The root's own slot of the send buffer is left as it was.
          EXPECT_EQ(s[static_cast<size_t>(2 * root)], val(c.me, root));
        } else {
          EXPECT_EQ(r[0], val(c.me, root)) << c.what << " root " << root;
          EXPECT_EQ(r[1], val(c.me, root + 50)) << c.what << " root " << root;
        }
        // Scatterv: vcount(w(q)) ints for rank q, blocks in reverse order with gaps.
        std::vector<int> counts(static_cast<size_t>(n));
        for (int q = 0; q < n; ++q) counts[static_cast<size_t>(q)] = vcount(c.w(q));
        int total = 0;
        const std::vector<int> displs = reverse_displs(counts, &total);
        std::vector<int> sv;
        if (is_root) {
          sv.assign(static_cast<size_t>(total), -99);
          for (int q = 0; q < n; ++q) {
            for (int i = 0; i < counts[static_cast<size_t>(q)]; ++i) {
              sv[static_cast<size_t>(displs[static_cast<size_t>(q)] + i)] = val(c.w(q), 20 + i + root);
            }
          }
        }
        const int my_count = vcount(c.me);
        std::vector<int> rv(4, kSent);
        void* rvb = (in_place && is_root) ? EP_IN_PLACE : static_cast<void*>(rv.data());
        EXPECT_EQ(EP_Scatterv(is_root ? sv.data() : nullptr, is_root ? counts.data() : nullptr,
                              is_root ? displs.data() : nullptr, MPI_INT, rvb, my_count, MPI_INT,
                              root, c.comm),
                  EP_SUCCESS);
        for (int i = 0; i < 4; ++i) {
          const int e = (i < my_count && !(in_place && is_root)) ? val(c.me, 20 + i + root) : kSent;
          EXPECT_EQ(rv[static_cast<size_t>(i)], e) << c.what << " Scatterv root " << root << " i " << i;
        }
      }
    }
  });
}

// ---- Allgather / Allgatherv ----------------------------------------------------------------------

TEST_P(Coll, AllgatherAndAllgatherv) {
  run_layout(GetParam(), [](const Ctx& c) {
    const int n = c.size;
    for (int in_place = 0; in_place < 2; ++in_place) {
      int s[2] = {val(c.me, 0), val(c.me, 1)};
      std::vector<int> r(static_cast<size_t>(2 * n), kSent);
      const void* sb = s;
      if (in_place) {
        r[static_cast<size_t>(2 * c.rank)] = s[0];
        r[static_cast<size_t>(2 * c.rank + 1)] = s[1];
        sb = EP_IN_PLACE;
      }
      EXPECT_EQ(EP_Allgather(sb, 2, MPI_INT, r.data(), 2, MPI_INT, c.comm), EP_SUCCESS);
      for (int q = 0; q < n; ++q) {
        EXPECT_EQ(r[static_cast<size_t>(2 * q)], val(c.w(q), 0)) << c.what << " slot " << q;
        EXPECT_EQ(r[static_cast<size_t>(2 * q + 1)], val(c.w(q), 1)) << c.what << " slot " << q;
      }
      std::vector<int> counts(static_cast<size_t>(n));
      for (int q = 0; q < n; ++q) counts[static_cast<size_t>(q)] = vcount(c.w(q));
      int total = 0;
      const std::vector<int> displs = reverse_displs(counts, &total);
      const int my_count = vcount(c.me);
      std::vector<int> sv(static_cast<size_t>(my_count) + 1);
      for (int i = 0; i < my_count; ++i) sv[static_cast<size_t>(i)] = val(c.me, 30 + i);
      std::vector<int> rv(static_cast<size_t>(total), kSent);
      const void* svb = sv.data();
      if (in_place) {
        for (int i = 0; i < my_count; ++i) {
          rv[static_cast<size_t>(displs[static_cast<size_t>(c.rank)] + i)] = sv[static_cast<size_t>(i)];
        }
        svb = EP_IN_PLACE;
      }
      EXPECT_EQ(EP_Allgatherv(svb, my_count, MPI_INT, rv.data(), counts.data(), displs.data(),
                              MPI_INT, c.comm),
                EP_SUCCESS);
      std::vector<int> e(static_cast<size_t>(total), kSent);
      for (int q = 0; q < n; ++q) {
        for (int i = 0; i < counts[static_cast<size_t>(q)]; ++i) {
          e[static_cast<size_t>(displs[static_cast<size_t>(q)] + i)] = val(c.w(q), 30 + i);
        }
      }
      EXPECT_EQ(rv, e) << c.what << " Allgatherv" << (in_place ? " in place" : "");
    }
  });
}

// ---- Alltoall / Alltoallv ------------------------------------------------------------------------

// The value world endpoint `from` sends to world endpoint `to` at position i.
int a2a(int from, int to, int i) { return from * 10000 + to * 100 + i; }
// Alltoallv counts from `from` to `to` (may be 0); symmetric, as MPI_IN_PLACE needs.
int a2a_count(int from, int to) { return (from + to) % 3; }

TEST_P(Coll, AlltoallAndAlltoallv) {
  run_layout(GetParam(), [](const Ctx& c) {
    const int n = c.size;
    for (int in_place = 0; in_place < 2; ++in_place) {
      std::vector<int> s, r(static_cast<size_t>(2 * n), kSent);
      for (int d = 0; d < n; ++d) {
        s.push_back(a2a(c.me, c.w(d), 0));
        s.push_back(a2a(c.me, c.w(d), 1));
      }
      const void* sb = s.data();
      if (in_place) {
        r = s;
        sb = EP_IN_PLACE;
      }
      EXPECT_EQ(EP_Alltoall(sb, 2, MPI_INT, r.data(), 2, MPI_INT, c.comm), EP_SUCCESS);
      for (int q = 0; q < n; ++q) {
        EXPECT_EQ(r[static_cast<size_t>(2 * q)], a2a(c.w(q), c.me, 0)) << c.what << " from " << q;
        EXPECT_EQ(r[static_cast<size_t>(2 * q + 1)], a2a(c.w(q), c.me, 1)) << c.what;
      }
      // Alltoallv: send blocks in reverse order with gaps, receive blocks forward with gaps.
      std::vector<int> sc(static_cast<size_t>(n)), rc(static_cast<size_t>(n)),
          rd(static_cast<size_t>(n));
      for (int q = 0; q < n; ++q) {
        sc[static_cast<size_t>(q)] = a2a_count(c.me, c.w(q));
        rc[static_cast<size_t>(q)] = a2a_count(c.w(q), c.me);
      }
      int stotal = 0, rtotal = 0;
      const std::vector<int> sd = reverse_displs(sc, &stotal);
      for (int q = 0; q < n; ++q) {
        rd[static_cast<size_t>(q)] = rtotal;
        rtotal += rc[static_cast<size_t>(q)] + 2;
      }
      std::vector<int> sv(static_cast<size_t>(stotal), -99), rv(static_cast<size_t>(rtotal), kSent);
      for (int q = 0; q < n; ++q) {
        for (int i = 0; i < sc[static_cast<size_t>(q)]; ++i) {
          sv[static_cast<size_t>(sd[static_cast<size_t>(q)] + i)] = a2a(c.me, c.w(q), 40 + i);
        }
      }
      const void* svb = sv.data();
      if (in_place) {
        // MPI: the data to send is taken from recvbuf with recvcounts/rdispls.
        for (int q = 0; q < n; ++q) {
          for (int i = 0; i < rc[static_cast<size_t>(q)]; ++i) {
            rv[static_cast<size_t>(rd[static_cast<size_t>(q)] + i)] = a2a(c.me, c.w(q), 40 + i);
          }
        }
        svb = EP_IN_PLACE;
      }
      EXPECT_EQ(EP_Alltoallv(svb, in_place ? nullptr : sc.data(), in_place ? nullptr : sd.data(),
                             MPI_INT, rv.data(), rc.data(), rd.data(), MPI_INT, c.comm),
                EP_SUCCESS);
      std::vector<int> e(static_cast<size_t>(rtotal), kSent);
      for (int q = 0; q < n; ++q) {
        for (int i = 0; i < rc[static_cast<size_t>(q)]; ++i) {
          e[static_cast<size_t>(rd[static_cast<size_t>(q)] + i)] = a2a(c.w(q), c.me, 40 + i);
        }
      }
      EXPECT_EQ(rv, e) << c.what << " Alltoallv" << (in_place ? " in place" : "");
    }
  });
}

// ---- Reduce_scatter / Reduce_scatter_block ----------------------------------------------------

TEST_P(Coll, ReduceScatterAndBlock) {
  MatOp mop;
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    std::vector<int> counts(static_cast<size_t>(n)), offs(static_cast<size_t>(n));
    int total = 0;
    for (int q = 0; q < n; ++q) {
      counts[static_cast<size_t>(q)] = vcount(c.w(q));
      offs[static_cast<size_t>(q)] = total;
      total += counts[static_cast<size_t>(q)];
    }
    const int mine = counts[static_cast<size_t>(c.rank)], off = offs[static_cast<size_t>(c.rank)];
    for (int in_place = 0; in_place < 2; ++in_place) {
      // int SUM, Reduce_scatter with uneven (some zero) counts.
      std::vector<int> s(static_cast<size_t>(total) + 1), r(static_cast<size_t>(total) + 1, kSent);
      for (int k = 0; k < total; ++k) s[static_cast<size_t>(k)] = val(c.me, k);
      const void* sb = s.data();
      if (in_place) {
        r = s;
        sb = EP_IN_PLACE;
      }
      EXPECT_EQ(EP_Reduce_scatter(sb, r.data(), counts.data(), MPI_INT, MPI_SUM, c.comm), EP_SUCCESS);
      for (int i = 0; i < mine; ++i) {
        int e = 0;
        for (int w : c.members) e += val(w, off + i);
        EXPECT_EQ(r[static_cast<size_t>(i)], e) << c.what << " Reduce_scatter i " << i;
      }
      if (!in_place) {
        EXPECT_EQ(r[static_cast<size_t>(mine)], kSent) << c.what << ": wrote past block";
      }
      // The matrix op.
      std::vector<Mat> ms(static_cast<size_t>(total) + 1), mr(static_cast<size_t>(total) + 1, kMatSent);
      for (int k = 0; k < total; ++k) ms[static_cast<size_t>(k)] = mat_in(c.me, k, 1);
      const void* msb = ms.data();
      if (in_place) {
        mr = ms;
        msb = EP_IN_PLACE;
      }
      EXPECT_EQ(EP_Reduce_scatter(msb, mr.data(), counts.data(), mop.type, mop.op, c.comm),
                EP_SUCCESS);
      for (int i = 0; i < mine; ++i) {
        EXPECT_EQ(mr[static_cast<size_t>(i)], mat_product(c.members, off + i, 1))
            << c.what << " Reduce_scatter matrix i " << i;
      }
      // Reduce_scatter_block: 2 per rank.
      std::vector<int> bs(static_cast<size_t>(2 * n)), br(static_cast<size_t>(2 * n), kSent);
      for (int k = 0; k < 2 * n; ++k) bs[static_cast<size_t>(k)] = val(c.me, 60 + k);
      const void* bsb = bs.data();
      if (in_place) {
        br = bs;
        bsb = EP_IN_PLACE;
      }
      EXPECT_EQ(EP_Reduce_scatter_block(bsb, br.data(), 2, MPI_INT, MPI_SUM, c.comm), EP_SUCCESS);
      for (int i = 0; i < 2; ++i) {
        int e = 0;
        for (int w : c.members) e += val(w, 60 + 2 * c.rank + i);
        EXPECT_EQ(br[static_cast<size_t>(i)], e) << c.what << " Reduce_scatter_block i " << i;
      }
      std::vector<Mat> bms(static_cast<size_t>(2 * n)), bmr(static_cast<size_t>(2 * n), kMatSent);
      for (int k = 0; k < 2 * n; ++k) bms[static_cast<size_t>(k)] = mat_in(c.me, k, 2);
      const void* bmsb = bms.data();
      if (in_place) {
        bmr = bms;
        bmsb = EP_IN_PLACE;
      }
      EXPECT_EQ(EP_Reduce_scatter_block(bmsb, bmr.data(), 2, mop.type, mop.op, c.comm), EP_SUCCESS);
      for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(bmr[static_cast<size_t>(i)], mat_product(c.members, 2 * c.rank + i, 2))
            << c.what << " Reduce_scatter_block matrix i " << i;
      }
    }
  });
}

// ---- Scan / Exscan ------------------------------------------------------------------------------

TEST_P(Coll, ScanAndExscan) {
  MatOp mop;
  run_layout(GetParam(), [&](const Ctx& c) {
    for (int in_place = 0; in_place < 2; ++in_place) {
      // Scan, int SUM.
      int s[2] = {val(c.me, 0), val(c.me, 1)}, r[2] = {kSent, kSent};
      if (in_place) r[0] = s[0], r[1] = s[1];
      EXPECT_EQ(EP_Scan(in_place ? EP_IN_PLACE : s, r, 2, MPI_INT, MPI_SUM, c.comm), EP_SUCCESS);
      for (int i = 0; i < 2; ++i) {
        int e = 0;
        for (int q = 0; q <= c.rank; ++q) e += val(c.w(q), i);
        EXPECT_EQ(r[i], e) << c.what << " Scan rank " << c.rank;
      }
      // Scan, matrix op.
      Mat ms[2] = {mat_in(c.me, 0, 3), mat_in(c.me, 1, 3)}, mr[2] = {kMatSent, kMatSent};
      if (in_place) mr[0] = ms[0], mr[1] = ms[1];
      EXPECT_EQ(EP_Scan(in_place ? EP_IN_PLACE : ms, mr, 2, mop.type, mop.op, c.comm), EP_SUCCESS);
      for (int k = 0; k < 2; ++k) {
        EXPECT_EQ(mr[k], mat_product(prefix(c.members, c.rank + 1), k, 3))
            << c.what << " Scan matrix rank " << c.rank;
      }
      // Exscan, int SUM (rank 0's result is undefined).
      int xs[2] = {val(c.me, 5), val(c.me, 6)}, xr[2] = {kSent, kSent};
      if (in_place) xr[0] = xs[0], xr[1] = xs[1];
      EXPECT_EQ(EP_Exscan(in_place ? EP_IN_PLACE : xs, xr, 2, MPI_INT, MPI_SUM, c.comm), EP_SUCCESS);
      if (c.rank > 0) {
        for (int i = 0; i < 2; ++i) {
          int e = 0;
          for (int q = 0; q < c.rank; ++q) e += val(c.w(q), 5 + i);
          EXPECT_EQ(xr[i], e) << c.what << " Exscan rank " << c.rank;
        }
      }
      // Exscan, matrix op.
      Mat xms[2] = {mat_in(c.me, 0, 4), mat_in(c.me, 1, 4)}, xmr[2] = {kMatSent, kMatSent};
      if (in_place) xmr[0] = xms[0], xmr[1] = xms[1];
      EXPECT_EQ(EP_Exscan(in_place ? EP_IN_PLACE : xms, xmr, 2, mop.type, mop.op, c.comm),
                EP_SUCCESS);
      if (c.rank > 0) {
        for (int k = 0; k < 2; ++k) {
          EXPECT_EQ(xmr[k], mat_product(prefix(c.members, c.rank), k, 4))
              << c.what << " Exscan matrix rank " << c.rank;
        }
      }
    }
  });
}

// ---- Count 0 -------------------------------------------------------------------------------------

TEST_P(Coll, CountZeroTouchesNothing) {
  MatOp mop;
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    std::vector<int> s(static_cast<size_t>(n) + 2, 5), r(static_cast<size_t>(n) + 2, kSent);
    const std::vector<int> zeros(static_cast<size_t>(n), 0), zd(static_cast<size_t>(n), 0);
    const std::vector<int> untouched = r;
    for (int root : {0, n - 1}) {
      EXPECT_EQ(EP_Bcast(r.data(), 0, MPI_INT, root, c.comm), EP_SUCCESS);
      EXPECT_EQ(EP_Reduce(s.data(), r.data(), 0, MPI_INT, MPI_SUM, root, c.comm), EP_SUCCESS);
      EXPECT_EQ(EP_Reduce(s.data(), r.data(), 0, mop.type, mop.op, root, c.comm), EP_SUCCESS);
      EXPECT_EQ(EP_Gather(s.data(), 0, MPI_INT, r.data(), 0, MPI_INT, root, c.comm), EP_SUCCESS);
      EXPECT_EQ(EP_Gatherv(s.data(), 0, MPI_INT, r.data(), zeros.data(), zd.data(), MPI_INT, root,
                           c.comm),
                EP_SUCCESS);
      EXPECT_EQ(EP_Scatter(s.data(), 0, MPI_INT, r.data(), 0, MPI_INT, root, c.comm), EP_SUCCESS);
      EXPECT_EQ(EP_Scatterv(s.data(), zeros.data(), zd.data(), MPI_INT, r.data(), 0, MPI_INT, root,
                            c.comm),
                EP_SUCCESS);
    }
    EXPECT_EQ(EP_Allreduce(s.data(), r.data(), 0, MPI_INT, MPI_SUM, c.comm), EP_SUCCESS);
    EXPECT_EQ(EP_Allreduce(s.data(), r.data(), 0, mop.type, mop.op, c.comm), EP_SUCCESS);
    EXPECT_EQ(EP_Allgather(s.data(), 0, MPI_INT, r.data(), 0, MPI_INT, c.comm), EP_SUCCESS);
    EXPECT_EQ(EP_Allgatherv(s.data(), 0, MPI_INT, r.data(), zeros.data(), zd.data(), MPI_INT, c.comm),
              EP_SUCCESS);
    EXPECT_EQ(EP_Alltoall(s.data(), 0, MPI_INT, r.data(), 0, MPI_INT, c.comm), EP_SUCCESS);
    EXPECT_EQ(EP_Alltoallv(s.data(), zeros.data(), zd.data(), MPI_INT, r.data(), zeros.data(),
                           zd.data(), MPI_INT, c.comm),
              EP_SUCCESS);
    EXPECT_EQ(EP_Reduce_scatter(s.data(), r.data(), zeros.data(), MPI_INT, MPI_SUM, c.comm),
              EP_SUCCESS);
    EXPECT_EQ(EP_Reduce_scatter_block(s.data(), r.data(), 0, MPI_INT, MPI_SUM, c.comm), EP_SUCCESS);
    EXPECT_EQ(EP_Scan(s.data(), r.data(), 0, MPI_INT, MPI_SUM, c.comm), EP_SUCCESS);
    EXPECT_EQ(EP_Exscan(s.data(), r.data(), 0, MPI_INT, MPI_SUM, c.comm), EP_SUCCESS);
    // NULL buffers are fine with count 0.
    EXPECT_EQ(EP_Bcast(nullptr, 0, MPI_INT, 0, c.comm), EP_SUCCESS);
    EXPECT_EQ(EP_Allreduce(nullptr, nullptr, 0, MPI_INT, MPI_SUM, c.comm), EP_SUCCESS);
    EXPECT_EQ(EP_Allgather(nullptr, 0, MPI_INT, nullptr, 0, MPI_INT, c.comm), EP_SUCCESS);
    EXPECT_EQ(EP_Alltoall(nullptr, 0, MPI_INT, nullptr, 0, MPI_INT, c.comm), EP_SUCCESS);
    EXPECT_EQ(r, untouched) << c.what << ": a count-0 collective wrote the receive buffer";
    EXPECT_EQ(s, std::vector<int>(static_cast<size_t>(n) + 2, 5)) << c.what;
    // The communicator still works afterwards.
    int one = 1, sum = 0;
    EXPECT_EQ(EP_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c.comm), EP_SUCCESS);
    EXPECT_EQ(sum, n) << c.what;
  });
}

// ---- Derived datatypes ---------------------------------------------------------------------------

struct S {
  int a;
  double b;
  char c;
};

S s_of(int w, int k) { return S{w * 10 + k, w * 0.5 + k, static_cast<char>('a' + (w + k) % 26)}; }
bool same(const S& x, const S& y) { return x.a == y.a && x.b == y.b && x.c == y.c; }

// A user op on S: a summed, b summed, c max (commutative).
void s_fn(void* in, void* io, int* len, MPI_Datatype*) {
  S* a = static_cast<S*>(in);
  S* b = static_cast<S*>(io);
  for (int i = 0; i < *len; ++i) {
    b[i].a += a[i].a;
    b[i].b += a[i].b;
    b[i].c = std::max(a[i].c, b[i].c);
  }
}

// The user op for Types::vec: sums the ints the vector covers, in the layout the datatype
// describes (MPI passes the call's datatype).  Also accepts MPI_INT (contiguous ints).
MPI_Datatype g_vec_type = MPI_DATATYPE_NULL;
void vsum_fn(void* in, void* io, int* len, MPI_Datatype* dt) {
  int* a = static_cast<int*>(in);
  int* b = static_cast<int*>(io);
  if (*dt == g_vec_type) {
    for (int e = 0; e < *len; ++e) {
      for (int blk = 0; blk < 3; ++blk) {
        for (int j = 0; j < 2; ++j) b[e * 10 + blk * 4 + j] += a[e * 10 + blk * 4 + j];
      }
    }
  } else {
    for (int i = 0; i < *len; ++i) b[i] += a[i];
  }
}

struct Types {
  MPI_Datatype vec = MPI_DATATYPE_NULL;     // 3 blocks of 2 ints, stride 4 (extent 10 ints)
  MPI_Datatype gap1 = MPI_DATATYPE_NULL;    // 3 ints at stride 2 (extent 5 ints)
  MPI_Datatype strct = MPI_DATATYPE_NULL;   // S
  MPI_Datatype every2 = MPI_DATATYPE_NULL;  // MPI_INT resized to extent 2 ints
  MPI_Op sop = MPI_OP_NULL;
  MPI_Op vsum = MPI_OP_NULL;
  Types() {
    MPI_Type_vector(3, 2, 4, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    g_vec_type = vec;
    MPI_Op_create(&vsum_fn, 1, &vsum);
    MPI_Type_vector(3, 1, 2, MPI_INT, &gap1);
    MPI_Type_commit(&gap1);
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {offsetof(S, a), offsetof(S, b), offsetof(S, c)};
    MPI_Datatype ts[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Datatype tmp;
    MPI_Type_create_struct(3, bl, disp, ts, &tmp);
    MPI_Type_create_resized(tmp, 0, sizeof(S), &strct);
    MPI_Type_free(&tmp);
    MPI_Type_commit(&strct);
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &every2);
    MPI_Type_commit(&every2);
    MPI_Op_create(&s_fn, 1, &sop);
  }
  ~Types() {
    MPI_Op_free(&sop);
    MPI_Op_free(&vsum);
    MPI_Type_free(&vec);
    MPI_Type_free(&gap1);
    MPI_Type_free(&strct);
    MPI_Type_free(&every2);
  }
};

// Offsets (in ints) covered by `count` elements of Types::vec.
std::vector<int> vec_positions(int count) {
  std::vector<int> p;
  for (int e = 0; e < count; ++e) {
    for (int b = 0; b < 3; ++b) {
      for (int j = 0; j < 2; ++j) p.push_back(e * 10 + b * 4 + j);
    }
  }
  return p;
}

TEST_P(Coll, DerivedNonContiguousAndStructTypes) {
  Types t;
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    const std::vector<int> pos = vec_positions(2);  // 12 ints in a 20-int buffer
    // Bcast of a strided vector: the gaps stay untouched everywhere.
    for (int root : {0, n - 1}) {
      std::vector<int> b(20, kSent);
      if (c.rank == root) {
        for (size_t k = 0; k < pos.size(); ++k) b[static_cast<size_t>(pos[k])] = val(c.me, static_cast<int>(k));
      }
      EXPECT_EQ(EP_Bcast(b.data(), 2, t.vec, root, c.comm), EP_SUCCESS);
      std::vector<int> e(20, kSent);
      for (size_t k = 0; k < pos.size(); ++k) e[static_cast<size_t>(pos[k])] = val(c.w(root), static_cast<int>(k));
      EXPECT_EQ(b, e) << c.what << " Bcast vector root " << root;
    }
    // Allreduce on the strided vector type with a user op that sums the covered ints
    // (MPI 3.1 defines predefined ops only on predefined types).
    {
      std::vector<int> s(20, 1000), r(20, kSent);
      for (size_t k = 0; k < pos.size(); ++k) s[static_cast<size_t>(pos[k])] = val(c.me, static_cast<int>(k));
      EXPECT_EQ(EP_Allreduce(s.data(), r.data(), 2, t.vec, t.vsum, c.comm), EP_SUCCESS);
      std::vector<int> e(20, kSent);
      for (size_t k = 0; k < pos.size(); ++k) {
        int sum = 0;
        for (int w : c.members) sum += val(w, static_cast<int>(k));
        e[static_cast<size_t>(pos[k])] = sum;
      }
      EXPECT_EQ(r, e) << c.what << " Allreduce on a strided vector";
    }
    // Gather: strided sendtype (1 x gap1 = 3 ints) into contiguous MPI_INT at the root.
    for (int root : {n - 1, 0}) {
      int s[5] = {val(c.me, 0), -50, val(c.me, 1), -51, val(c.me, 2)};
      std::vector<int> r(static_cast<size_t>(3 * n), kSent);
      EXPECT_EQ(EP_Gather(s, 1, t.gap1, r.data(), 3, MPI_INT, root, c.comm), EP_SUCCESS);
      if (c.rank == root) {
        for (int q = 0; q < n; ++q) {
          for (int i = 0; i < 3; ++i) {
            EXPECT_EQ(r[static_cast<size_t>(3 * q + i)], val(c.w(q), i)) << c.what << " Gather gap1";
          }
        }
      }
      // Scatter: contiguous at the root, strided receive type (gaps untouched).
      std::vector<int> ss;
      for (int q = 0; q < n; ++q) {
        for (int i = 0; i < 3; ++i) ss.push_back(val(c.w(q), 70 + i));
      }
      int rr[5] = {kSent, kSent, kSent, kSent, kSent};
      EXPECT_EQ(EP_Scatter(ss.data(), 3, MPI_INT, rr, 1, t.gap1, root, c.comm), EP_SUCCESS);
      EXPECT_EQ(rr[0], val(c.me, 70)) << c.what << " Scatter gap1";
      EXPECT_EQ(rr[1], kSent) << c.what << " Scatter wrote a gap";
      EXPECT_EQ(rr[2], val(c.me, 71));
      EXPECT_EQ(rr[3], kSent);
      EXPECT_EQ(rr[4], val(c.me, 72));
    }
    // Allgather with the resized "every other int" receive type.
    {
      int s[2] = {val(c.me, 80), val(c.me, 81)};
      std::vector<int> r(static_cast<size_t>(4 * n), kSent);
      EXPECT_EQ(EP_Allgather(s, 2, MPI_INT, r.data(), 2, t.every2, c.comm), EP_SUCCESS);
      for (int q = 0; q < n; ++q) {
        EXPECT_EQ(r[static_cast<size_t>(4 * q)], val(c.w(q), 80)) << c.what << " every2";
        EXPECT_EQ(r[static_cast<size_t>(4 * q + 1)], kSent) << c.what << " every2 gap";
        EXPECT_EQ(r[static_cast<size_t>(4 * q + 2)], val(c.w(q), 81)) << c.what << " every2";
        EXPECT_EQ(r[static_cast<size_t>(4 * q + 3)], kSent) << c.what << " every2 gap";
      }
    }
    // Struct type: Bcast, Allgather, Alltoall, Allreduce with a user op.
    {
      S b[3];
      for (int k = 0; k < 3; ++k) b[k] = c.rank == n - 1 ? s_of(c.me, k) : S{-1, -1, 'z'};
      EXPECT_EQ(EP_Bcast(b, 3, t.strct, n - 1, c.comm), EP_SUCCESS);
      for (int k = 0; k < 3; ++k) EXPECT_TRUE(same(b[k], s_of(c.w(n - 1), k))) << c.what << " Bcast S";
      S s2[2] = {s_of(c.me, 0), s_of(c.me, 1)};
      std::vector<S> r2(static_cast<size_t>(2 * n), S{-1, -1, 'z'});
      EXPECT_EQ(EP_Allgather(s2, 2, t.strct, r2.data(), 2, t.strct, c.comm), EP_SUCCESS);
      for (int q = 0; q < n; ++q) {
        for (int k = 0; k < 2; ++k) {
          EXPECT_TRUE(same(r2[static_cast<size_t>(2 * q + k)], s_of(c.w(q), k)))
              << c.what << " Allgather S slot " << q;
        }
      }
      std::vector<S> s3, r3(static_cast<size_t>(n), S{-1, -1, 'z'});
      for (int d = 0; d < n; ++d) s3.push_back(s_of(c.me * 100 + c.w(d), 0));
      EXPECT_EQ(EP_Alltoall(s3.data(), 1, t.strct, r3.data(), 1, t.strct, c.comm), EP_SUCCESS);
      for (int q = 0; q < n; ++q) {
        EXPECT_TRUE(same(r3[static_cast<size_t>(q)], s_of(c.w(q) * 100 + c.me, 0)))
            << c.what << " Alltoall S from " << q;
      }
      S s4[2] = {s_of(c.me, 0), s_of(c.me, 1)}, r4[2] = {{-1, -1, 'z'}, {-1, -1, 'z'}};
      EXPECT_EQ(EP_Allreduce(s4, r4, 2, t.strct, t.sop, c.comm), EP_SUCCESS);
      for (int k = 0; k < 2; ++k) {
        S e = s_of(c.w(0), k);
        for (int q = 1; q < n; ++q) {
          const S x = s_of(c.w(q), k);
          e.a += x.a;
          e.b += x.b;
          e.c = std::max(e.c, x.c);
        }
        EXPECT_TRUE(same(r4[k], e)) << c.what << " Allreduce S user op, k " << k;
      }
    }
  });
}

// ---- Large payloads ----------------------------------------------------------------------------

TEST_P(Coll, LargePayloads) {
  MatOp mop;
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    {  // 400 KB int sum
      const int cnt = 100000;
      std::vector<int> s(cnt), r(cnt, kSent);
      for (int i = 0; i < cnt; ++i) s[static_cast<size_t>(i)] = (c.me + 1) * (i % 1000);
      EXPECT_EQ(EP_Allreduce(s.data(), r.data(), cnt, MPI_INT, MPI_SUM, c.comm), EP_SUCCESS);
      int wsum = 0;
      for (int w : c.members) wsum += w + 1;
      int bad = 0;
      for (int i = 0; i < cnt; ++i) bad += r[static_cast<size_t>(i)] != wsum * (i % 1000);
      EXPECT_EQ(bad, 0) << c.what << " large Allreduce";
    }
    {  // 320 KB of matrices, non-commutative
      const int cnt = 20000;
      std::vector<Mat> s(cnt), r(cnt, kMatSent);
      for (int i = 0; i < cnt; ++i) s[static_cast<size_t>(i)] = mat_in(c.me, i % 37, i % 5);
      EXPECT_EQ(EP_Allreduce(s.data(), r.data(), cnt, mop.type, mop.op, c.comm), EP_SUCCESS);
      int bad = 0;
      for (int i = 0; i < 37 * 5; ++i) {
        if (r[static_cast<size_t>(i)] != mat_product(c.members, i % 37, i % 5)) ++bad;
      }
      for (int i = 37 * 5; i < cnt; ++i) bad += r[static_cast<size_t>(i)] != r[static_cast<size_t>(i % (37 * 5))];
      EXPECT_EQ(bad, 0) << c.what << " large non-commutative Allreduce";
    }
    {  // 300 KB Bcast from the last rank
      const int cnt = 300000;
      std::vector<char> b(cnt, 0);
      if (c.rank == n - 1) {
        for (int i = 0; i < cnt; ++i) b[static_cast<size_t>(i)] = static_cast<char>((i * 7 + c.me) & 0x7f);
      }
      EXPECT_EQ(EP_Bcast(b.data(), cnt, MPI_CHAR, n - 1, c.comm), EP_SUCCESS);
      int bad = 0;
      for (int i = 0; i < cnt; ++i) bad += b[static_cast<size_t>(i)] != static_cast<char>((i * 7 + c.w(n - 1)) & 0x7f);
      EXPECT_EQ(bad, 0) << c.what << " large Bcast";
    }
    {  // Allgather 80 KB per rank, Alltoall 40 KB per pair
      const int cnt = 20000;
      std::vector<int> s(cnt), r(static_cast<size_t>(cnt) * n, kSent);
      for (int i = 0; i < cnt; ++i) s[static_cast<size_t>(i)] = c.me * 1000000 + i;
      EXPECT_EQ(EP_Allgather(s.data(), cnt, MPI_INT, r.data(), cnt, MPI_INT, c.comm), EP_SUCCESS);
      int bad = 0;
      for (int q = 0; q < n; ++q) {
        for (int i = 0; i < cnt; ++i) bad += r[static_cast<size_t>(q) * cnt + i] != c.w(q) * 1000000 + i;
      }
      EXPECT_EQ(bad, 0) << c.what << " large Allgather";
      const int pc = 10000;
      std::vector<int> as(static_cast<size_t>(pc) * n), ar(static_cast<size_t>(pc) * n, kSent);
      for (int d = 0; d < n; ++d) {
        for (int i = 0; i < pc; ++i) as[static_cast<size_t>(d) * pc + i] = a2a(c.me, c.w(d), i % 100) + i;
      }
      EXPECT_EQ(EP_Alltoall(as.data(), pc, MPI_INT, ar.data(), pc, MPI_INT, c.comm), EP_SUCCESS);
      bad = 0;
      for (int q = 0; q < n; ++q) {
        for (int i = 0; i < pc; ++i) bad += ar[static_cast<size_t>(q) * pc + i] != a2a(c.w(q), c.me, i % 100) + i;
      }
      EXPECT_EQ(bad, 0) << c.what << " large Alltoall";
    }
  });
}

// ---- Reduce (last) --------------------------------------------------------------------------------------

// Runs last: an earlier libep failed a non-root (I)reduce with a predefined datatype
// (EP_ERR_BUFFER) while the root waited forever; if that comes back, the watchdog aborts
// the job here and the other tests' results are already in the log.
TEST_P(Coll, ReduceToEveryRoot) {
  MatOp mop;
  run_layout(GetParam(), [&](const Ctx& c) {
    for (int root = 0; root < c.size; ++root) {
      const bool is_root = c.rank == root;
      // MPI_SUM on int; non-roots pass NULL as recvbuf.
      int s[4], r[4] = {kSent, kSent, kSent, kSent};
      for (int i = 0; i < 4; ++i) s[i] = val(c.me, i);
      EXPECT_EQ(EP_Reduce(s, is_root ? r : nullptr, 4, MPI_INT, MPI_SUM, root, c.comm),
                EP_SUCCESS);
      if (is_root) {
        for (int i = 0; i < 4; ++i) {
          int e = 0;
          for (int w : c.members) e += val(w, i);
          EXPECT_EQ(r[i], e) << c.what << " root " << root;
        }
      }
      // MPI_MAX on double, non-roots pass a buffer that must stay untouched.
      double ds = (c.me * 37 % 11) + 0.5, dr = -1;
      EXPECT_EQ(EP_Reduce(&ds, &dr, 1, MPI_DOUBLE, MPI_MAX, root, c.comm), EP_SUCCESS);
      if (is_root) {
        double e = -1;
        for (int w : c.members) e = std::max(e, (w * 37 % 11) + 0.5);
        EXPECT_EQ(dr, e) << c.what;
      } else {
        EXPECT_EQ(dr, -1) << c.what << ": non-root recvbuf written";
      }
      // Non-commutative: the product in rank order.
      Mat ms[2] = {mat_in(c.me, 0, root), mat_in(c.me, 1, root)};
      Mat mr[2] = {kMatSent, kMatSent};
      EXPECT_EQ(EP_Reduce(ms, mr, 2, mop.type, mop.op, root, c.comm), EP_SUCCESS);
      if (is_root) {
        EXPECT_EQ(mr[0], mat_product(c.members, 0, root)) << c.what << " root " << root;
        EXPECT_EQ(mr[1], mat_product(c.members, 1, root)) << c.what << " root " << root;
      } else {
        EXPECT_EQ(mr[0], kMatSent) << c.what;
      }
      // In place at the root (int SUM and the matrix op).
      int ip[3];
      for (int i = 0; i < 3; ++i) ip[i] = val(c.me, i + 7);
      EXPECT_EQ(EP_Reduce(is_root ? EP_IN_PLACE : ip, is_root ? ip : nullptr, 3, MPI_INT, MPI_SUM,
                          root, c.comm),
                EP_SUCCESS);
      if (is_root) {
        for (int i = 0; i < 3; ++i) {
          int e = 0;
          for (int w : c.members) e += val(w, i + 7);
          EXPECT_EQ(ip[i], e) << c.what << " in place, root " << root;
        }
      }
      Mat mip = mat_in(c.me, 5, root);
      Mat mipr = kMatSent;
      EXPECT_EQ(EP_Reduce(is_root ? EP_IN_PLACE : &mip, is_root ? &mip : &mipr, 1, mop.type,
                          mop.op, root, c.comm),
                EP_SUCCESS);
      if (is_root) {
        EXPECT_EQ(mip, mat_product(c.members, 5, root)) << c.what << " in place, root " << root;
      } else {
        EXPECT_EQ(mipr, kMatSent);
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Layouts, Coll,
                         ::testing::Values(Lay::kGrouped, Lay::kReversed, Lay::kInterleaved),
                         [](const ::testing::TestParamInfo<Lay>& info) {
                           return std::string(ep_coll_test::lay_name(info.param));
                         });

}  // namespace
