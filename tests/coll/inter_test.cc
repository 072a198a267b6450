// Collectives on intercommunicators and EP_Comm_split of an intercommunicator.
// The intercommunicators join two groups of the world endpoints communicator (uneven
// endpoints per process), in four shapes:
//   SharedGrouped, SharedInterleaved  groups by world endpoint parity: with 2 or more
//                                     endpoints, a process has endpoints in both groups;
//                                     ranks within a group by world number, or alternating
//                                     between processes;
//   ProcsGrouped, ProcsReversed       groups by process parity (disjoint processes when
//                                     there are 2 or more; parity of the endpoint with
//                                     one process); ranks by world number or reversed.
// Checked, with expected values computed from world numbers and MPI's split rule alone:
//  * every blocking collective (Barrier, Bcast, Gather(v), Scatter(v), Allgather(v),
//    Alltoall(v), Reduce, Allreduce, Reduce_scatter(_block)) with every root of both groups,
//    int SUM and the non-commutative matrix product (the other group's rank order);
//  * derived datatypes (a strided vector type against MPI_INT), count 0;
//  * Ibarrier/Ibcast/Ireduce/Iallreduce: several outstanding, completed out of order;
//    asynchronous progress while every endpoint sleeps outside libep;
//  * intercommunicators made by EP_Comm_dup, EP_Comm_idup, EP_Comm_create and
//    EP_Comm_split work the same;
//  * EP_Alltoallw and EP_Ialltoallw (per-peer datatypes, byte displacements);
//  * every other nonblocking form (Igather(v), Iscatter(v), Iallgather(v), Ialltoall(v),
//    Ireduce_scatter(_block)) outstanding at once, roots in both groups;
//  * bad root, EP_IN_PLACE, negative counts, Scan/Exscan: the same error at every endpoint,
//    nobody hangs, the communicator works afterwards;
//  * EP_Comm_split of an intercommunicator: colours on both sides, EP_UNDEFINED, a colour
//    of one side only (EP_COMM_NULL), a bad colour (EP_ERR_ARG everywhere), and
//    collectives on the result.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "tests/coll/coll_util.h"
#include "tests/coll/inter_util.h"
#include "tests/common/harness.h"

namespace {

using ep_coll_test::index_in;
using ep_coll_test::IC;
using ep_coll_test::run_inter;
using ep_coll_test::Shape;
using ep_coll_test::shape_name;
using ep_coll_test::group_members;
using ep_coll_test::colour_of;
using ep_coll_test::key_of;
using ep_coll_test::Mat;
using ep_coll_test::mat_in;
using ep_coll_test::mat_product;
using ep_coll_test::MatOp;
using ep_coll_test::sleep_ms;
using ep_coll_test::World;
using ep_test::last_error;

[[maybe_unused]] const bool kWatchdog = ep_coll_test::install_watchdog();

constexpr int kSent = -7;
const Mat kMatSent = {-1, -1, -1, -1};

int val(int w, int i) { return (w + 1) * 100 + i; }

void expect_mat(const Mat& got, const Mat& want, const std::string& what) {
  EXPECT_TRUE(got == want) << what << ": got {" << got[0] << "," << got[1] << "," << got[2] << ","
                           << got[3] << "} want {" << want[0] << "," << want[1] << "," << want[2]
                           << "," << want[3] << "}";
}

class Inter : public ::testing::TestWithParam<Shape> {};

// ---- Barrier, Bcast ------------------------------------------------------------------------

TEST_P(Inter, BarrierAndBcastFromEveryRoot) {
  run_inter(GetParam(), [&](const IC& c) {
    ASSERT_EQ(EP_Barrier(c.inter), EP_SUCCESS);
    for (int g = 0; g < 2; ++g) {
      for (int rr = 0; rr < static_cast<int>(c.group(g).size()); ++rr) {
        const int root = c.root_arg(g, rr);
        const int rootw = c.group(g)[static_cast<size_t>(rr)];
        std::vector<int> b(5, kSent);
        if (root == EP_ROOT) {
          for (int i = 0; i < 5; ++i) b[static_cast<size_t>(i)] = val(c.me, i) + g;
        }
        const std::vector<int> before = b;
        int rc = EP_Bcast(b.data(), 5, MPI_INT, root, c.inter);
        ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
        for (int i = 0; i < 5; ++i) {
          const int want = c.colour == g ? before[static_cast<size_t>(i)] : val(rootw, i) + g;
          EXPECT_EQ(b[static_cast<size_t>(i)], want)
              << c.what << ": bcast from rank " << rr << " of group " << g << ", element " << i;
        }
      }
    }
    ASSERT_EQ(EP_Barrier(c.inter), EP_SUCCESS);
  });
}

// ---- Gather(v), Scatter(v) -------------------------------------------------------------------

// Gatherv/Scatterv layout over the remote group: rank r's count and its displacement
// (blocks in reverse rank order, one element of slack between them).
int vcount(int r) { return r % 3; }
std::vector<int> rev_displs(const std::vector<int>& counts) {
  std::vector<int> d(counts.size());
  int at = 0;
  for (int r = static_cast<int>(counts.size()) - 1; r >= 0; --r) {
    d[static_cast<size_t>(r)] = at;
    at += counts[static_cast<size_t>(r)] + 1;
  }
  return d;
}

TEST_P(Inter, GatherAndGathervFromEveryRoot) {
  run_inter(GetParam(), [&](const IC& c) {
    for (int g = 0; g < 2; ++g) {
      for (int rr = 0; rr < static_cast<int>(c.group(g).size()); ++rr) {
        const int root = c.root_arg(g, rr);
        const std::string w =
            c.what + ": root " + std::to_string(rr) + " of group " + std::to_string(g);
        // Gather: 3 elements from every endpoint of the other group.
        std::vector<int> s(3), r(static_cast<size_t>(3 * c.rsize), kSent);
        for (int i = 0; i < 3; ++i) s[static_cast<size_t>(i)] = val(c.me, i);
        int rc = EP_Gather(s.data(), 3, MPI_INT, r.data(), 3, MPI_INT, root, c.inter);
        ASSERT_EQ(rc, EP_SUCCESS) << w << ": " << last_error(rc);
        for (int q = 0; q < c.rsize; ++q) {
          for (int i = 0; i < 3; ++i) {
            EXPECT_EQ(r[static_cast<size_t>(3 * q + i)], root == EP_ROOT ? val(c.rw(q), i) : kSent)
                << w << ": gather block of remote rank " << q;
          }
        }
        // Gatherv: remote rank q sends vcount(q) elements, placed in reverse order.
        std::vector<int> counts(static_cast<size_t>(c.rsize));
        for (int q = 0; q < c.rsize; ++q) counts[static_cast<size_t>(q)] = vcount(q);
        const std::vector<int> displs = rev_displs(counts);
        std::vector<int> rv(static_cast<size_t>(4 * c.rsize + 1), kSent);
        rc = EP_Gatherv(s.data(), vcount(c.lrank), MPI_INT, rv.data(), counts.data(), displs.data(),
                        MPI_INT, root, c.inter);
        ASSERT_EQ(rc, EP_SUCCESS) << w << ": " << last_error(rc);
        std::vector<int> want(rv.size(), kSent);
        if (root == EP_ROOT) {
          for (int q = 0; q < c.rsize; ++q) {
            for (int i = 0; i < vcount(q); ++i)
              want[static_cast<size_t>(displs[static_cast<size_t>(q)] + i)] = val(c.rw(q), i);
          }
        }
        EXPECT_EQ(rv, want) << w << ": gatherv";
      }
    }
  });
}

TEST_P(Inter, ScatterAndScattervFromEveryRoot) {
  run_inter(GetParam(), [&](const IC& c) {
    for (int g = 0; g < 2; ++g) {
      for (int rr = 0; rr < static_cast<int>(c.group(g).size()); ++rr) {
        const int root = c.root_arg(g, rr);
        const int rootw = c.group(g)[static_cast<size_t>(rr)];
        const std::string w =
            c.what + ": root " + std::to_string(rr) + " of group " + std::to_string(g);
        auto code = [](int rw, int dest, int i) { return (rw + 1) * 1000 + dest * 10 + i; };
        // Scatter: 2 elements for each remote rank.
        std::vector<int> s(static_cast<size_t>(2 * c.rsize), kSent), r(2, kSent);
        if (root == EP_ROOT) {
          for (int q = 0; q < c.rsize; ++q) {
            for (int i = 0; i < 2; ++i) s[static_cast<size_t>(2 * q + i)] = code(c.me, q, i);
          }
        }
        int rc = EP_Scatter(s.data(), 2, MPI_INT, r.data(), 2, MPI_INT, root, c.inter);
        ASSERT_EQ(rc, EP_SUCCESS) << w << ": " << last_error(rc);
        for (int i = 0; i < 2; ++i) {
          EXPECT_EQ(r[static_cast<size_t>(i)], c.colour == g ? kSent : code(rootw, c.lrank, i))
              << w << ": scatter element " << i;
        }
        // Scatterv: remote rank q gets vcount(q + 1) elements from reversed blocks.
        std::vector<int> counts(static_cast<size_t>(c.rsize));
        for (int q = 0; q < c.rsize; ++q) counts[static_cast<size_t>(q)] = vcount(q + 1);
        const std::vector<int> displs = rev_displs(counts);
        std::vector<int> sv(static_cast<size_t>(4 * c.rsize + 1), kSent), rv(3, kSent);
        if (root == EP_ROOT) {
          for (int q = 0; q < c.rsize; ++q) {
            for (int i = 0; i < counts[static_cast<size_t>(q)]; ++i)
              sv[static_cast<size_t>(displs[static_cast<size_t>(q)] + i)] = code(c.me, q, i);
          }
        }
        const int mine = c.colour == g ? 3 : vcount(c.lrank + 1);
        rc = EP_Scatterv(sv.data(), counts.data(), displs.data(), MPI_INT, rv.data(), mine, MPI_INT,
                         root, c.inter);
        ASSERT_EQ(rc, EP_SUCCESS) << w << ": " << last_error(rc);
        for (int i = 0; i < 3; ++i) {
          const bool got = c.colour != g && i < mine;
          EXPECT_EQ(rv[static_cast<size_t>(i)], got ? code(rootw, c.lrank, i) : kSent)
              << w << ": scatterv element " << i;
        }
      }
    }
  });
}

// ---- Allgather(v), Alltoall(v) ---------------------------------------------------------------

TEST_P(Inter, AllgatherAndAllgatherv) {
  run_inter(GetParam(), [&](const IC& c) {
    std::vector<int> s(2), r(static_cast<size_t>(2 * c.rsize), kSent);
    for (int i = 0; i < 2; ++i) s[static_cast<size_t>(i)] = val(c.me, i);
    int rc = EP_Allgather(s.data(), 2, MPI_INT, r.data(), 2, MPI_INT, c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    for (int q = 0; q < c.rsize; ++q) {
      for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(r[static_cast<size_t>(2 * q + i)], val(c.rw(q), i))
            << c.what << ": allgather block of remote rank " << q;
      }
    }
    // Allgatherv: rank q of each group sends vcount(q) elements; reversed placement.
    std::vector<int> counts(static_cast<size_t>(c.rsize));
    for (int q = 0; q < c.rsize; ++q) counts[static_cast<size_t>(q)] = vcount(q);
    const std::vector<int> displs = rev_displs(counts);
    std::vector<int> sv(3), rv(static_cast<size_t>(4 * c.rsize + 1), kSent);
    for (int i = 0; i < 3; ++i) sv[static_cast<size_t>(i)] = val(c.me, i) + 50;
    rc = EP_Allgatherv(sv.data(), vcount(c.lrank), MPI_INT, rv.data(), counts.data(), displs.data(),
                       MPI_INT, c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    std::vector<int> want(rv.size(), kSent);
    for (int q = 0; q < c.rsize; ++q) {
      for (int i = 0; i < vcount(q); ++i)
        want[static_cast<size_t>(displs[static_cast<size_t>(q)] + i)] = val(c.rw(q), i) + 50;
    }
    EXPECT_EQ(rv, want) << c.what << ": allgatherv";
  });
}

TEST_P(Inter, AlltoallAndAlltoallv) {
  run_inter(GetParam(), [&](const IC& c) {
    auto code = [](int from_w, int to_rank, int i) {
      return (from_w + 1) * 1000 + to_rank * 10 + i;
    };
    std::vector<int> s(static_cast<size_t>(2 * c.rsize)), r(s.size(), kSent);
    for (int q = 0; q < c.rsize; ++q) {
      for (int i = 0; i < 2; ++i) s[static_cast<size_t>(2 * q + i)] = code(c.me, q, i);
    }
    int rc = EP_Alltoall(s.data(), 2, MPI_INT, r.data(), 2, MPI_INT, c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    for (int q = 0; q < c.rsize; ++q) {
      for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(r[static_cast<size_t>(2 * q + i)], code(c.rw(q), c.lrank, i))
            << c.what << ": alltoall block from remote rank " << q;
      }
    }
    // Alltoallv: world endpoint w sends (w + d) % 3 elements to remote rank d.
    std::vector<int> sc(static_cast<size_t>(c.rsize)), rcn(sc.size());
    for (int q = 0; q < c.rsize; ++q) {
      sc[static_cast<size_t>(q)] = (c.me + q) % 3;
      rcn[static_cast<size_t>(q)] = (c.rw(q) + c.lrank) % 3;
    }
    const std::vector<int> sd = rev_displs(sc), rd = rev_displs(rcn);
    std::vector<int> sv(static_cast<size_t>(4 * c.rsize + 1), kSent), rv(sv.size(), kSent);
    for (int q = 0; q < c.rsize; ++q) {
      for (int i = 0; i < sc[static_cast<size_t>(q)]; ++i)
        sv[static_cast<size_t>(sd[static_cast<size_t>(q)] + i)] = code(c.me, q, i);
    }
    rc = EP_Alltoallv(sv.data(), sc.data(), sd.data(), MPI_INT, rv.data(), rcn.data(), rd.data(),
                      MPI_INT, c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    std::vector<int> want(rv.size(), kSent);
    for (int q = 0; q < c.rsize; ++q) {
      for (int i = 0; i < rcn[static_cast<size_t>(q)]; ++i)
        want[static_cast<size_t>(rd[static_cast<size_t>(q)] + i)] = code(c.rw(q), c.lrank, i);
    }
    EXPECT_EQ(rv, want) << c.what << ": alltoallv";
  });
}

// ---- Reductions ------------------------------------------------------------------------------

TEST_P(Inter, ReduceFromEveryRootSumAndNonCommutative) {
  MatOp mop;
  run_inter(GetParam(), [&](const IC& c) {
    for (int g = 0; g < 2; ++g) {
      for (int rr = 0; rr < static_cast<int>(c.group(g).size()); ++rr) {
        const int root = c.root_arg(g, rr);
        const std::string w =
            c.what + ": root " + std::to_string(rr) + " of group " + std::to_string(g);
        std::vector<int> s(4), r(4, kSent);
        for (int i = 0; i < 4; ++i) s[static_cast<size_t>(i)] = val(c.me, i);
        int rc = EP_Reduce(s.data(), r.data(), 4, MPI_INT, MPI_SUM, root, c.inter);
        ASSERT_EQ(rc, EP_SUCCESS) << w << ": " << last_error(rc);
        for (int i = 0; i < 4; ++i) {
          int want = kSent;
          if (root == EP_ROOT) {
            want = 0;
            for (int x : c.rmem) want += val(x, i);
          }
          EXPECT_EQ(r[static_cast<size_t>(i)], want) << w << ": reduce sum element " << i;
        }
        Mat ms[2] = {mat_in(c.me, 0, rr), mat_in(c.me, 1, rr)};
        Mat mr[2] = {kMatSent, kMatSent};
        rc = EP_Reduce(ms, mr, 2, mop.type, mop.op, root, c.inter);
        ASSERT_EQ(rc, EP_SUCCESS) << w << ": " << last_error(rc);
        for (int k = 0; k < 2; ++k) {
          expect_mat(mr[k], root == EP_ROOT ? mat_product(c.rmem, k, rr) : kMatSent,
                     w + ": reduce matrix product " + std::to_string(k));
        }
      }
    }
  });
}

TEST_P(Inter, AllreduceSumAndNonCommutative) {
  MatOp mop;
  run_inter(GetParam(), [&](const IC& c) {
    std::vector<int> s(5), r(5, kSent);
    for (int i = 0; i < 5; ++i) s[static_cast<size_t>(i)] = val(c.me, i);
    int rc = EP_Allreduce(s.data(), r.data(), 5, MPI_INT, MPI_SUM, c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    for (int i = 0; i < 5; ++i) {
      int want = 0;
      for (int x : c.rmem) want += val(x, i);
      EXPECT_EQ(r[static_cast<size_t>(i)], want) << c.what << ": allreduce element " << i;
    }
    Mat ms[3] = {mat_in(c.me, 0), mat_in(c.me, 1), mat_in(c.me, 2)};
    Mat mr[3] = {kMatSent, kMatSent, kMatSent};
    rc = EP_Allreduce(ms, mr, 3, mop.type, mop.op, c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    for (int k = 0; k < 3; ++k)
      expect_mat(mr[k], mat_product(c.rmem, k),
                 c.what + ": allreduce product " + std::to_string(k));
  });
}

// The counts of Reduce_scatter over a group of n: kTotal elements in all, spread evenly.
constexpr int kTotal = 7;
std::vector<int> spread(int n) {
  std::vector<int> v(static_cast<size_t>(n), kTotal / n);
  for (int r = 0; r < kTotal % n; ++r) ++v[static_cast<size_t>(r)];
  return v;
}

TEST_P(Inter, ReduceScatterAndBlock) {
  MatOp mop;
  run_inter(GetParam(), [&](const IC& c) {
    const std::vector<int> counts = spread(c.lsize);
    const int off = std::accumulate(counts.begin(), counts.begin() + c.lrank, 0);
    const int mine = counts[static_cast<size_t>(c.lrank)];
    std::vector<int> s(kTotal), r(static_cast<size_t>(kTotal) + 1, kSent);
    for (int i = 0; i < kTotal; ++i) s[static_cast<size_t>(i)] = val(c.me, i);
    int rc = EP_Reduce_scatter(s.data(), r.data(), counts.data(), MPI_INT, MPI_SUM, c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    for (int i = 0; i <= mine; ++i) {
      int want = kSent;
      if (i < mine) {
        want = 0;
        for (int x : c.rmem) want += val(x, off + i);
      }
      EXPECT_EQ(r[static_cast<size_t>(i)], want) << c.what << ": reduce_scatter element " << i;
    }
    std::vector<Mat> ms, mr(static_cast<size_t>(kTotal), kMatSent);
    for (int k = 0; k < kTotal; ++k) ms.push_back(mat_in(c.me, k));
    rc = EP_Reduce_scatter(ms.data(), mr.data(), counts.data(), mop.type, mop.op, c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    for (int i = 0; i < mine; ++i)
      expect_mat(mr[static_cast<size_t>(i)], mat_product(c.rmem, off + i),
                 c.what + ": reduce_scatter product " + std::to_string(i));
    // Block: each group's vector is its size times its recvcount; both are lsize * rsize.
    const int rcount = c.rsize;
    std::vector<int> sb(static_cast<size_t>(c.lsize * c.rsize)),
        rb(static_cast<size_t>(rcount), kSent);
    for (size_t i = 0; i < sb.size(); ++i) sb[i] = val(c.me, static_cast<int>(i));
    rc = EP_Reduce_scatter_block(sb.data(), rb.data(), rcount, MPI_INT, MPI_SUM, c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    for (int i = 0; i < rcount; ++i) {
      int want = 0;
      for (int x : c.rmem) want += val(x, c.lrank * rcount + i);
      EXPECT_EQ(rb[static_cast<size_t>(i)], want) << c.what << ": reduce_scatter_block " << i;
    }
    std::vector<Mat> mb, mbr(static_cast<size_t>(rcount), kMatSent);
    for (size_t k = 0; k < sb.size(); ++k) mb.push_back(mat_in(c.me, static_cast<int>(k), 3));
    rc = EP_Reduce_scatter_block(mb.data(), mbr.data(), rcount, mop.type, mop.op, c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    for (int i = 0; i < rcount; ++i)
      expect_mat(mbr[static_cast<size_t>(i)], mat_product(c.rmem, c.lrank * rcount + i, 3),
                 c.what + ": reduce_scatter_block product " + std::to_string(i));
  });
}

// ---- Derived datatypes, count 0 --------------------------------------------------------------

TEST_P(Inter, DerivedTypesAndCountZero) {
  MPI_Datatype vec = MPI_DATATYPE_NULL;  // 2 ints with a hole: extent 3 ints
  MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  run_inter(GetParam(), [&](const IC& c) {
    // Allgather: 4 MPI_INT sent, received as 2 elements of vec (6 ints, holes untouched).
    std::vector<int> s(4), r(static_cast<size_t>(6 * c.rsize), kSent);
    for (int i = 0; i < 4; ++i) s[static_cast<size_t>(i)] = val(c.me, i);
    int rc = EP_Allgather(s.data(), 4, MPI_INT, r.data(), 2, vec, c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    for (int q = 0; q < c.rsize; ++q) {
      const int* b = r.data() + 6 * q;
      const int want[6] = {val(c.rw(q), 0), kSent, val(c.rw(q), 1),
                           val(c.rw(q), 2), kSent, val(c.rw(q), 3)};
      for (int i = 0; i < 6; ++i)
        EXPECT_EQ(b[i], want[i]) << c.what << ": vec allgather remote " << q << " int " << i;
    }
    // Bcast of vec from group 0's rank 0.
    std::vector<int> bb(6, kSent);
    const int root = c.root_arg(0, 0);
    if (root == EP_ROOT) {
      for (int i = 0; i < 6; ++i) bb[static_cast<size_t>(i)] = 10 + i;
    }
    rc = EP_Bcast(bb.data(), 2, vec, root, c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    if (c.colour == 1) {
      const std::vector<int> want = {10, kSent, 12, 13, kSent, 15};
      EXPECT_EQ(bb, want) << c.what << ": vec bcast";
    }
    // Count 0 everywhere: success, nothing written.
    int z = kSent, zr = kSent;
    EXPECT_EQ(EP_Bcast(&z, 0, MPI_INT, root, c.inter), EP_SUCCESS);
    EXPECT_EQ(EP_Allreduce(&z, &zr, 0, MPI_INT, MPI_SUM, c.inter), EP_SUCCESS);
    EXPECT_EQ(EP_Reduce(&z, &zr, 0, MPI_INT, MPI_SUM, c.root_arg(1, 0), c.inter), EP_SUCCESS);
    EXPECT_EQ(EP_Gather(&z, 0, MPI_INT, &zr, 0, MPI_INT, c.root_arg(0, 0), c.inter), EP_SUCCESS);
    EXPECT_EQ(EP_Alltoall(&z, 0, MPI_INT, &zr, 0, MPI_INT, c.inter), EP_SUCCESS);
    EXPECT_EQ(EP_Allgather(&z, 0, MPI_INT, &zr, 0, MPI_INT, c.inter), EP_SUCCESS);
    EXPECT_EQ(EP_Reduce_scatter_block(&z, &zr, 0, MPI_INT, MPI_SUM, c.inter), EP_SUCCESS);
    EXPECT_EQ(z, kSent);
    EXPECT_EQ(zr, kSent) << c.what << ": a count-0 collective wrote its receive buffer";
  });
  MPI_Type_free(&vec);
}

// ---- Nonblocking -----------------------------------------------------------------------------

// Long enough for the progress thread to finish everything started before it.
int settle_ms() { return ep_coll_test::sanitized() ? 4000 : 1500; }

TEST_P(Inter, NonblockingSeveralOutstandingOutOfOrder) {
  MatOp mop;
  run_inter(GetParam(), [&](const IC& c) {
    for (int g = 0; g < 2; ++g) {
      const int root = c.root_arg(g, c.group(g).size() > 1 ? 1 : 0);
      const int rootw = c.group(g)[c.group(g).size() > 1 ? 1 : 0];
      int b[3] = {kSent, kSent, kSent};
      if (root == EP_ROOT) {
        for (int i = 0; i < 3; ++i) b[i] = val(c.me, i) + g;
      }
      int s1 = val(c.me, 0), r1 = kSent, s2 = val(c.me, 1) * 2, r2 = kSent;
      Mat ms = mat_in(c.me, 0, g), mr = kMatSent;
      EP_Request rq[5];
      ASSERT_EQ(EP_Ibcast(b, 3, MPI_INT, root, c.inter, &rq[0]), EP_SUCCESS);
      ASSERT_EQ(EP_Iallreduce(&s1, &r1, 1, MPI_INT, MPI_SUM, c.inter, &rq[1]), EP_SUCCESS);
      ASSERT_EQ(EP_Ireduce(&ms, &mr, 1, mop.type, mop.op, root, c.inter, &rq[2]), EP_SUCCESS);
      ASSERT_EQ(EP_Ibarrier(c.inter, &rq[3]), EP_SUCCESS);
      ASSERT_EQ(EP_Iallreduce(&s2, &r2, 1, MPI_INT, MPI_MAX, c.inter, &rq[4]), EP_SUCCESS);
      for (int i = 4; i >= 0; --i) ASSERT_EQ(EP_Wait(&rq[i], EP_STATUS_IGNORE), EP_SUCCESS);
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(b[i],
                  c.colour == g ? (root == EP_ROOT ? val(c.me, i) + g : kSent) : val(rootw, i) + g)
            << c.what << ": ibcast element " << i;
      }
      int sum = 0, mx = 0;
      for (int x : c.rmem) {
        sum += val(x, 0);
        mx = std::max(mx, val(x, 1) * 2);
      }
      EXPECT_EQ(r1, sum) << c.what << ": iallreduce sum";
      EXPECT_EQ(r2, mx) << c.what << ": iallreduce max";
      if (root == EP_ROOT) {
        // The root's group receives the product of the other group's inputs.
        std::vector<int> other = c.rmem;
        expect_mat(mr, mat_product(other, 0, g), c.what + ": ireduce product");
      } else {
        expect_mat(mr, kMatSent, c.what + ": ireduce output at a non-root");
      }
    }
  });
}

TEST_P(Inter, AsynchronousProgressWhileEveryEndpointSleeps) {
  run_inter(GetParam(), [&](const IC& c) {
    int s = val(c.me, 0), r = kSent;
    int b = c.root_arg(0, 0) == EP_ROOT ? 4242 : kSent;
    EP_Request rq[3];
    ASSERT_EQ(EP_Iallreduce(&s, &r, 1, MPI_INT, MPI_SUM, c.inter, &rq[0]), EP_SUCCESS);
    ASSERT_EQ(EP_Ibcast(&b, 1, MPI_INT, c.root_arg(0, 0), c.inter, &rq[1]), EP_SUCCESS);
    ASSERT_EQ(EP_Ibarrier(c.inter, &rq[2]), EP_SUCCESS);
    // Compute (sleep) without calling libep; the progress thread must finish the work.
    sleep_ms(settle_ms());
    int flag = 0;
    EXPECT_EQ(EP_Testall(3, rq, &flag, EP_STATUSES_IGNORE), EP_SUCCESS);
    EXPECT_EQ(flag, 1) << c.what << ": not complete at the first EP_Testall after a " << settle_ms()
                       << " ms sleep (no asynchronous progress?)";
    if (flag == 0) {
      ASSERT_EQ(EP_Waitall(3, rq, EP_STATUSES_IGNORE), EP_SUCCESS);
    }
    int sum = 0;
    for (int x : c.rmem) sum += val(x, 0);
    EXPECT_EQ(r, sum);
    if (c.colour == 1) {
      EXPECT_EQ(b, 4242) << c.what;
    }
  });
}

// ---- Intercommunicators made by dup -----------------------------------------------------------

TEST_P(Inter, DupOfAnIntercommunicator) {
  run_inter(GetParam(), [&](const IC& c) {
    EP_Comm d = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(c.inter, &d), EP_SUCCESS);
    std::vector<int> r(static_cast<size_t>(c.rsize), kSent);
    ASSERT_EQ(EP_Allgather(&c.me, 1, MPI_INT, r.data(), 1, MPI_INT, d), EP_SUCCESS);
    EXPECT_EQ(r, c.rmem) << c.what << ": allgather on a dup gives the remote group in rank order";
    EXPECT_EQ(EP_Comm_free(&d), EP_SUCCESS);
  });
}

TEST_P(Inter, IdupAndCreateOfAnIntercommunicator) {
  run_inter(GetParam(), [&](const IC& c) {
    EP_Comm d = EP_COMM_NULL;
    EP_Request rq = EP_REQUEST_NULL;
    ASSERT_EQ(EP_Comm_idup(c.inter, &d, &rq), EP_SUCCESS);
    ASSERT_EQ(EP_Wait(&rq, EP_STATUS_IGNORE), EP_SUCCESS);
    int s = val(c.me, 0), r = kSent, sum = 0;
    for (int x : c.rmem) sum += val(x, 0);
    ASSERT_EQ(EP_Allreduce(&s, &r, 1, MPI_INT, MPI_SUM, d), EP_SUCCESS);
    EXPECT_EQ(r, sum) << c.what << ": allreduce on an idup";
    EXPECT_EQ(EP_Comm_free(&d), EP_SUCCESS);
    // EP_Comm_create with the whole local group: the same membership.
    EP_Group g = EP_GROUP_NULL;
    ASSERT_EQ(EP_Comm_group(c.inter, &g), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_create(c.inter, g, &d), EP_SUCCESS);
    ASSERT_NE(d, EP_COMM_NULL);
    std::vector<int> got(static_cast<size_t>(c.rsize), kSent);
    ASSERT_EQ(EP_Allgather(&c.me, 1, MPI_INT, got.data(), 1, MPI_INT, d), EP_SUCCESS);
    EXPECT_EQ(got, c.rmem) << c.what << ": allgather on an EP_Comm_create result";
    EXPECT_EQ(EP_Comm_free(&d), EP_SUCCESS);
    EXPECT_EQ(EP_Group_free(&g), EP_SUCCESS);
  });
}

// EP_Alltoallw, then EP_Ialltoallw with the same arguments.  The block for remote rank d
// is two ints: sent as 2 MPI_INT (d even) or 1 strided vector (d odd), blocks in reverse
// order; received as 1 vector when (source + my rank) is even, else 2 MPI_INT.
TEST_P(Inter, AlltoallwBlockingAndNonblocking) {
  MPI_Datatype vec = MPI_DATATYPE_NULL;
  MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  run_inter(GetParam(), [&](const IC& c) {
    auto code = [](int from_w, int to_rank, int i) {
      return (from_w + 1) * 1000 + to_rank * 10 + i;
    };
    constexpr int kSlot = 4;  // ints per block
    const int n = c.rsize;
    std::vector<int> sb(static_cast<size_t>(kSlot * n), kSent), want(sb.size() + 1, kSent);
    std::vector<int> sc, sd, rcn, rd;
    std::vector<MPI_Datatype> st, rt;
    for (int d = 0; d < n; ++d) {
      const int base = kSlot * (n - 1 - d);
      const bool strided = d % 2 == 1;
      sb[static_cast<size_t>(base)] = code(c.me, d, 0);
      sb[static_cast<size_t>(base + (strided ? 2 : 1))] = code(c.me, d, 1);
      sc.push_back(strided ? 1 : 2);
      sd.push_back(base * static_cast<int>(sizeof(int)));
      st.push_back(strided ? vec : MPI_INT);
    }
    for (int q = 0; q < n; ++q) {
      const int base = kSlot * q;
      const bool strided = (q + c.lrank) % 2 == 0;
      want[static_cast<size_t>(base)] = code(c.rw(q), c.lrank, 0);
      want[static_cast<size_t>(base + (strided ? 2 : 1))] = code(c.rw(q), c.lrank, 1);
      rcn.push_back(strided ? 1 : 2);
      rd.push_back(base * static_cast<int>(sizeof(int)));
      rt.push_back(strided ? vec : MPI_INT);
    }
    std::vector<int> rb(want.size(), kSent);
    int rc = EP_Alltoallw(sb.data(), sc.data(), sd.data(), st.data(), rb.data(), rcn.data(),
                          rd.data(), rt.data(), c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    EXPECT_EQ(rb, want) << c.what << ": alltoallw";
    std::vector<int> nb(want.size(), kSent);
    EP_Request rq = EP_REQUEST_NULL;
    rc = EP_Ialltoallw(sb.data(), sc.data(), sd.data(), st.data(), nb.data(), rcn.data(), rd.data(),
                       rt.data(), c.inter, &rq);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    ASSERT_EQ(EP_Wait(&rq, EP_STATUS_IGNORE), EP_SUCCESS);
    EXPECT_EQ(nb, want) << c.what << ": ialltoallw";
  });
  MPI_Type_free(&vec);
}

// Every nonblocking form that has no blocking twin among the tests above started at once,
// rooted ones at rank 0 of group g (both g), waited in reverse start order.
TEST_P(Inter, EveryOtherNonblockingFormOutstandingAtOnce) {
  run_inter(GetParam(), [&](const IC& c) {
    auto code = [](int from_w, int to_rank, int i) {
      return (from_w + 1) * 1000 + to_rank * 10 + i;
    };
    const int n = c.rsize;
    for (int g = 0; g < 2; ++g) {
      const std::string w = c.what + ": roots in group " + std::to_string(g);
      const int root = c.root_arg(g, 0);
      const int rootw = c.group(g)[0];
      // Inputs.
      std::vector<int> mine(3), blocks(static_cast<size_t>(2 * n));
      for (int i = 0; i < 3; ++i) mine[static_cast<size_t>(i)] = val(c.me, i) + g;
      for (int q = 0; q < n; ++q) {
        for (int i = 0; i < 2; ++i) blocks[static_cast<size_t>(2 * q + i)] = code(c.me, q, i) + g;
      }
      std::vector<int> counts(static_cast<size_t>(n));
      for (int q = 0; q < n; ++q) counts[static_cast<size_t>(q)] = vcount(q);
      const std::vector<int> displs = rev_displs(counts);
      std::vector<int> sc(static_cast<size_t>(n)), rcn(sc.size());
      for (int q = 0; q < n; ++q) {
        sc[static_cast<size_t>(q)] = (c.me + q) % 3;
        rcn[static_cast<size_t>(q)] = (c.rw(q) + c.lrank) % 3;
      }
      const std::vector<int> sd = rev_displs(sc), rd = rev_displs(rcn);
      std::vector<int> sv(static_cast<size_t>(4 * n + 1), kSent);
      for (int q = 0; q < n; ++q) {
        for (int i = 0; i < sc[static_cast<size_t>(q)]; ++i)
          sv[static_cast<size_t>(sd[static_cast<size_t>(q)] + i)] = code(c.me, q, i) + g;
      }
      const std::vector<int> rs_counts = spread(c.lsize);
      const int off = std::accumulate(rs_counts.begin(), rs_counts.begin() + c.lrank, 0);
      std::vector<int> rs_in(kTotal), bl_in(static_cast<size_t>(c.lsize * n));
      for (int i = 0; i < kTotal; ++i) rs_in[static_cast<size_t>(i)] = val(c.me, i) * (g + 1);
      for (size_t i = 0; i < bl_in.size(); ++i) bl_in[i] = val(c.me, static_cast<int>(i)) - g;
      // Outputs.
      std::vector<int> ga(static_cast<size_t>(3 * n), kSent), gv(static_cast<size_t>(4 * n + 1), kSent),
          sca(2, kSent), scv(3, kSent), ag(static_cast<size_t>(3 * n), kSent),
          agv(static_cast<size_t>(4 * n + 1), kSent), aa(static_cast<size_t>(2 * n), kSent),
          av(sv.size(), kSent), rs(static_cast<size_t>(kTotal) + 1, kSent),
          rb(static_cast<size_t>(n), kSent);
      // Scatter(v) at the root: block q for remote rank q (2 ints; v: vcount(q) at displs).
      std::vector<int> scv_in(static_cast<size_t>(4 * n + 1), kSent);
      for (int q = 0; q < n; ++q) {
        for (int i = 0; i < vcount(q); ++i)
          scv_in[static_cast<size_t>(displs[static_cast<size_t>(q)] + i)] = code(c.me, q, i) + g;
      }
      EP_Request rq[10];
      ASSERT_EQ(EP_Igather(mine.data(), 3, MPI_INT, ga.data(), 3, MPI_INT, root, c.inter, &rq[0]),
                EP_SUCCESS);
      ASSERT_EQ(EP_Igatherv(mine.data(), vcount(c.lrank), MPI_INT, gv.data(), counts.data(),
                            displs.data(), MPI_INT, root, c.inter, &rq[1]),
                EP_SUCCESS);
      ASSERT_EQ(EP_Iscatter(blocks.data(), 2, MPI_INT, sca.data(), 2, MPI_INT, root, c.inter, &rq[2]),
                EP_SUCCESS);
      ASSERT_EQ(EP_Iscatterv(scv_in.data(), counts.data(), displs.data(), MPI_INT, scv.data(),
                             vcount(c.lrank), MPI_INT, root, c.inter, &rq[3]),
                EP_SUCCESS);
      ASSERT_EQ(EP_Iallgather(mine.data(), 3, MPI_INT, ag.data(), 3, MPI_INT, c.inter, &rq[4]),
                EP_SUCCESS);
      ASSERT_EQ(EP_Iallgatherv(mine.data(), vcount(c.lrank), MPI_INT, agv.data(), counts.data(),
                               displs.data(), MPI_INT, c.inter, &rq[5]),
                EP_SUCCESS);
      ASSERT_EQ(EP_Ialltoall(blocks.data(), 2, MPI_INT, aa.data(), 2, MPI_INT, c.inter, &rq[6]),
                EP_SUCCESS);
      ASSERT_EQ(EP_Ialltoallv(sv.data(), sc.data(), sd.data(), MPI_INT, av.data(), rcn.data(),
                              rd.data(), MPI_INT, c.inter, &rq[7]),
                EP_SUCCESS);
      ASSERT_EQ(EP_Ireduce_scatter(rs_in.data(), rs.data(), rs_counts.data(), MPI_INT, MPI_SUM,
                                   c.inter, &rq[8]),
                EP_SUCCESS);
      ASSERT_EQ(EP_Ireduce_scatter_block(bl_in.data(), rb.data(), n, MPI_INT, MPI_SUM, c.inter,
                                         &rq[9]),
                EP_SUCCESS);
      for (int i = 9; i >= 0; --i) ASSERT_EQ(EP_Wait(&rq[i], EP_STATUS_IGNORE), EP_SUCCESS) << w;
      // Expected values, from world numbers alone.
      std::vector<int> want_ga(ga.size(), kSent), want_gv(gv.size(), kSent);
      if (root == EP_ROOT) {
        for (int q = 0; q < n; ++q) {
          for (int i = 0; i < 3; ++i) want_ga[static_cast<size_t>(3 * q + i)] = val(c.rw(q), i) + g;
          for (int i = 0; i < vcount(q); ++i)
            want_gv[static_cast<size_t>(displs[static_cast<size_t>(q)] + i)] = val(c.rw(q), i) + g;
        }
      }
      EXPECT_EQ(ga, want_ga) << w << ": igather";
      EXPECT_EQ(gv, want_gv) << w << ": igatherv";
      std::vector<int> want_sca(2, kSent), want_scv(3, kSent);
      if (c.colour != g) {
        for (int i = 0; i < 2; ++i) want_sca[static_cast<size_t>(i)] = code(rootw, c.lrank, i) + g;
        for (int i = 0; i < vcount(c.lrank); ++i)
          want_scv[static_cast<size_t>(i)] = code(rootw, c.lrank, i) + g;
      }
      EXPECT_EQ(sca, want_sca) << w << ": iscatter";
      EXPECT_EQ(scv, want_scv) << w << ": iscatterv";
      std::vector<int> want_ag(ag.size(), kSent), want_agv(agv.size(), kSent);
      std::vector<int> want_aa(aa.size(), kSent), want_av(av.size(), kSent);
      for (int q = 0; q < n; ++q) {
        for (int i = 0; i < 3; ++i) want_ag[static_cast<size_t>(3 * q + i)] = val(c.rw(q), i) + g;
        for (int i = 0; i < vcount(q); ++i)
          want_agv[static_cast<size_t>(displs[static_cast<size_t>(q)] + i)] = val(c.rw(q), i) + g;
        for (int i = 0; i < 2; ++i)
          want_aa[static_cast<size_t>(2 * q + i)] = code(c.rw(q), c.lrank, i) + g;
        for (int i = 0; i < rcn[static_cast<size_t>(q)]; ++i)
          want_av[static_cast<size_t>(rd[static_cast<size_t>(q)] + i)] =
              code(c.rw(q), c.lrank, i) + g;
      }
      EXPECT_EQ(ag, want_ag) << w << ": iallgather";
      EXPECT_EQ(agv, want_agv) << w << ": iallgatherv";
      EXPECT_EQ(aa, want_aa) << w << ": ialltoall";
      EXPECT_EQ(av, want_av) << w << ": ialltoallv";
      const int m = rs_counts[static_cast<size_t>(c.lrank)];
      for (int i = 0; i <= m; ++i) {
        int want = kSent;
        if (i < m) {
          want = 0;
          for (int x : c.rmem) want += val(x, off + i) * (g + 1);
        }
        EXPECT_EQ(rs[static_cast<size_t>(i)], want) << w << ": ireduce_scatter element " << i;
      }
      for (int i = 0; i < n; ++i) {
        int want = 0;
        for (int x : c.rmem) want += val(x, c.lrank * n + i) - g;
        EXPECT_EQ(rb[static_cast<size_t>(i)], want) << w << ": ireduce_scatter_block " << i;
      }
    }
  });
}

// ---- Errors ----------------------------------------------------------------------------------

void expect_error(int rc, int code, const char* call, const std::string& what) {
  EXPECT_EQ(rc, code) << what << ": " << call << " returned " << rc << " ("
                      << (rc == EP_SUCCESS ? std::string("success") : last_error(rc)) << ")";
  if (rc == code && code != EP_SUCCESS) {
    EXPECT_NE(last_error(rc).find(call), std::string::npos)
        << what << ": the error text does not name " << call;
  }
}

TEST_P(Inter, WrongArgumentsFailEverywhere) {
  run_inter(GetParam(), [&](const IC& c) {
    const std::string w = c.what;
    std::vector<int> buf(static_cast<size_t>(4 * (c.lsize + c.rsize)) + 4, 1), rb(buf.size(), 0);
    std::vector<int> ones(buf.size(), 1), displs(buf.size(), 0);
    EP_Request rq = EP_REQUEST_NULL;
    for (int bad : {c.rsize, -5, EP_ANY_SOURCE}) {
      expect_error(EP_Bcast(buf.data(), 1, MPI_INT, bad, c.inter), EP_ERR_ROOT, "EP_Bcast", w);
      expect_error(EP_Gather(buf.data(), 1, MPI_INT, rb.data(), 1, MPI_INT, bad, c.inter),
                   EP_ERR_ROOT, "EP_Gather", w);
      expect_error(EP_Scatterv(buf.data(), ones.data(), displs.data(), MPI_INT, rb.data(), 1,
                               MPI_INT, bad, c.inter),
                   EP_ERR_ROOT, "EP_Scatterv", w);
      expect_error(EP_Reduce(buf.data(), rb.data(), 1, MPI_INT, MPI_SUM, bad, c.inter), EP_ERR_ROOT,
                   "EP_Reduce", w);
      expect_error(EP_Ibcast(buf.data(), 1, MPI_INT, bad, c.inter, &rq), EP_ERR_ROOT, "EP_Ibcast",
                   w);
      expect_error(EP_Ireduce(buf.data(), rb.data(), 1, MPI_INT, MPI_SUM, bad, c.inter, &rq),
                   EP_ERR_ROOT, "EP_Ireduce", w);
    }
    expect_error(EP_Allreduce(EP_IN_PLACE, rb.data(), 1, MPI_INT, MPI_SUM, c.inter), EP_ERR_BUFFER,
                 "EP_Allreduce", w);
    expect_error(EP_Iallreduce(EP_IN_PLACE, rb.data(), 1, MPI_INT, MPI_SUM, c.inter, &rq),
                 EP_ERR_BUFFER, "EP_Iallreduce", w);
    expect_error(EP_Allgather(EP_IN_PLACE, 1, MPI_INT, rb.data(), 1, MPI_INT, c.inter),
                 EP_ERR_BUFFER, "EP_Allgather", w);
    expect_error(EP_Alltoall(EP_IN_PLACE, 1, MPI_INT, rb.data(), 1, MPI_INT, c.inter),
                 EP_ERR_BUFFER, "EP_Alltoall", w);
    expect_error(
        EP_Gather(EP_IN_PLACE, 1, MPI_INT, rb.data(), 1, MPI_INT, c.root_arg(0, 0), c.inter),
        EP_ERR_BUFFER, "EP_Gather", w);
    expect_error(EP_Reduce_scatter_block(EP_IN_PLACE, rb.data(), 1, MPI_INT, MPI_SUM, c.inter),
                 EP_ERR_BUFFER, "EP_Reduce_scatter_block", w);
    expect_error(EP_Bcast(buf.data(), -1, MPI_INT, c.root_arg(1, 0), c.inter), EP_ERR_COUNT,
                 "EP_Bcast", w);
    expect_error(EP_Allreduce(buf.data(), rb.data(), -2, MPI_INT, MPI_SUM, c.inter), EP_ERR_COUNT,
                 "EP_Allreduce", w);
    expect_error(
        EP_Gather(buf.data(), -1, MPI_INT, rb.data(), 1, MPI_INT, c.root_arg(0, 0), c.inter),
        EP_ERR_COUNT, "EP_Gather", w);
    expect_error(
        EP_Scatter(buf.data(), 1, MPI_INT, rb.data(), -1, MPI_INT, c.root_arg(1, 0), c.inter),
        EP_ERR_COUNT, "EP_Scatter", w);
    expect_error(EP_Allgather(buf.data(), 1, MPI_INT, rb.data(), -3, MPI_INT, c.inter),
                 EP_ERR_COUNT, "EP_Allgather", w);
    std::vector<int> neg(buf.size(), -1);
    expect_error(EP_Alltoallv(buf.data(), ones.data(), displs.data(), MPI_INT, rb.data(),
                              neg.data(), displs.data(), MPI_INT, c.inter),
                 EP_ERR_COUNT, "EP_Alltoallv", w);
    expect_error(EP_Reduce_scatter(buf.data(), rb.data(), neg.data(), MPI_INT, MPI_SUM, c.inter),
                 EP_ERR_COUNT, "EP_Reduce_scatter", w);
    expect_error(EP_Reduce_scatter_block(buf.data(), rb.data(), -1, MPI_INT, MPI_SUM, c.inter),
                 EP_ERR_COUNT, "EP_Reduce_scatter_block", w);
    expect_error(EP_Allreduce(buf.data(), rb.data(), 1, MPI_INT, MPI_OP_NULL, c.inter), EP_ERR_OP,
                 "EP_Allreduce", w);
    expect_error(EP_Scan(buf.data(), rb.data(), 1, MPI_INT, MPI_SUM, c.inter), EP_ERR_COMM,
                 "EP_Scan", w);
    expect_error(EP_Exscan(buf.data(), rb.data(), 1, MPI_INT, MPI_SUM, c.inter), EP_ERR_COMM,
                 "EP_Exscan", w);
    EXPECT_EQ(rq, EP_REQUEST_NULL);
    // Still works.
    int s = val(c.me, 0), r = kSent;
    ASSERT_EQ(EP_Allreduce(&s, &r, 1, MPI_INT, MPI_SUM, c.inter), EP_SUCCESS);
    int sum = 0;
    for (int x : c.rmem) sum += val(x, 0);
    EXPECT_EQ(r, sum) << w << ": the intercommunicator after the errors";
  });
}

// ---- EP_Comm_split of an intercommunicator ---------------------------------------------------

// The colour of local rank r of group g: group 0's rank 2 alone uses colour 5 (absent from
// group 1); rank 1 of each group passes EP_UNDEFINED; the others r % 2.
int split_colour(int g, int r) {
  if (g == 0 && r == 2) return 5;
  if (r == 1) return EP_UNDEFINED;
  return r % 2;
}

// The ranks of group g (of size n) with colour col, in new rank order (key = -rank).
std::vector<int> split_members(const std::vector<int>& mem, int g, int col) {
  std::vector<int> out;
  for (int r = static_cast<int>(mem.size()) - 1; r >= 0; --r) {
    if (split_colour(g, r) == col) out.push_back(mem[static_cast<size_t>(r)]);
  }
  return out;
}

TEST_P(Inter, SplitOfAnIntercommunicator) {
  run_inter(GetParam(), [&](const IC& c) {
    const int col = split_colour(c.colour, c.lrank);
    EP_Comm n = EP_COMM_NULL;
    int rc = EP_Comm_split(c.inter, col, -c.lrank, &n);
    ASSERT_EQ(rc, EP_SUCCESS) << c.what << ": " << last_error(rc);
    const std::vector<int> lm =
        col == EP_UNDEFINED ? std::vector<int>() : split_members(c.lmem, c.colour, col);
    const std::vector<int> rm =
        col == EP_UNDEFINED ? std::vector<int>() : split_members(c.rmem, 1 - c.colour, col);
    if (col == EP_UNDEFINED || rm.empty()) {
      EXPECT_EQ(n, EP_COMM_NULL) << c.what << ": colour " << col;
      return;
    }
    ASSERT_NE(n, EP_COMM_NULL) << c.what << ": colour " << col;
    int flag = 0, r = -1, sz = -1, rsz = -1;
    EXPECT_EQ(EP_Comm_test_inter(n, &flag), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(EP_Comm_rank(n, &r), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_size(n, &sz), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_remote_size(n, &rsz), EP_SUCCESS);
    EXPECT_EQ(r, index_in(lm, c.me)) << c.what;
    EXPECT_EQ(sz, static_cast<int>(lm.size())) << c.what;
    ASSERT_EQ(rsz, static_cast<int>(rm.size())) << c.what;
    // The remote group in its new rank order, and a reduction over it.
    std::vector<int> got(rm.size(), kSent);
    ASSERT_EQ(EP_Allgather(&c.me, 1, MPI_INT, got.data(), 1, MPI_INT, n), EP_SUCCESS);
    EXPECT_EQ(got, rm) << c.what << ": remote group of colour " << col;
    int s = val(c.me, 0), sum = kSent, want = 0;
    for (int x : rm) want += val(x, 0);
    ASSERT_EQ(EP_Allreduce(&s, &sum, 1, MPI_INT, MPI_SUM, n), EP_SUCCESS);
    EXPECT_EQ(sum, want) << c.what;
    EXPECT_EQ(EP_Comm_free(&n), EP_SUCCESS);
  });
}

TEST_P(Inter, SplitWithABadColourFailsEverywhere) {
  run_inter(GetParam(), [&](const IC& c) {
    // One endpoint of group 1 passes colour -3: both groups fail.
    const int col = c.colour == 1 && c.lrank == 0 ? -3 : 0;
    EP_Comm n = EP_COMM_NULL;
    expect_error(EP_Comm_split(c.inter, col, 0, &n), EP_ERR_ARG, "EP_Comm_split", c.what);
    EXPECT_EQ(n, EP_COMM_NULL);
    // Still works: a split with one colour is a copy.
    ASSERT_EQ(EP_Comm_split(c.inter, 0, c.lrank, &n), EP_SUCCESS);
    std::vector<int> got(static_cast<size_t>(c.rsize), kSent);
    ASSERT_EQ(EP_Allgather(&c.me, 1, MPI_INT, got.data(), 1, MPI_INT, n), EP_SUCCESS);
    EXPECT_EQ(got, c.rmem) << c.what;
    EXPECT_EQ(EP_Comm_free(&n), EP_SUCCESS);
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, Inter,
                         ::testing::Values(Shape::kSharedGrouped, Shape::kSharedInterleaved,
                                           Shape::kProcsGrouped, Shape::kProcsReversed),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return std::string(shape_name(info.param));
                         });

}  // namespace
