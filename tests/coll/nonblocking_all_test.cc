// Every nonblocking collective (EP_Igather(v), EP_Iscatter(v), EP_Iallgather(v),
// EP_Ialltoall(v,w), EP_Ireduce_scatter(_block), EP_Iscan, EP_Iexscan) and blocking
// EP_Alltoallw, on grouped / reversed / interleaved layouts with uneven endpoints per
// process (ep_mpi_test runs 1, 2 and 3 processes):
//  * a table of cases (make_cases): every call with predefined and derived,
//    non-contiguous datatypes, the non-commutative matrix op for the reductions,
//    EP_IN_PLACE where MPI allows it, count 0 and zero-count ranks, v-variant
//    displacements in reversed order with gaps, Alltoallw with a different datatype
//    per peer and byte displacements; a few blocking calls (EP_Alltoallw, EP_Allgather,
//    EP_Scan) sit among them, so nonblocking and blocking calls mix;
//  * drivers: each case alone (start, wait, check); all outstanding at once on one
//    communicator, waited in reverse order and in a random order that differs per
//    endpoint (Wait, Testany polling, Waitany); asynchronous progress (start, every
//    endpoint sleeps outside libep, the first Testall finds all complete); the cases of
//    two communicators (the layout and the world) started interleaved and waited in a
//    random order.
// Every expected value is computed here from world-endpoint numbers and the layout
// (coll_util.h), never asked of libep; buffers that must not be written are checked too.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
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
using ep_coll_test::sleep_ms;
using ep_test::last_error;

[[maybe_unused]] const bool kWatchdog = ep_coll_test::install_watchdog();

constexpr int kS = -7;  // a sentinel: never a result
const Mat kMatS = {-1, -1, -1, -1};

int val(int w, int i) { return (w + 1) * 1000 + i; }

int settle_ms() { return ep_coll_test::sanitized() ? 4000 : 1500; }

// Derived datatypes the cases use (made on the main thread, as MPI_Type_* are not per
// endpoint):
//   vec2:    2 MPI_INT at stride 2 (non-contiguous, extent 3 ints);
//   pair:    2 contiguous MPI_INT;
//   stride2: one MPI_INT resized to an extent of 2 ints (a count of them skips every
//            other int: extent != size).
struct Types {
  MPI_Datatype vec2 = MPI_DATATYPE_NULL, pair = MPI_DATATYPE_NULL, stride2 = MPI_DATATYPE_NULL;
  Types() {
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec2);
    MPI_Type_commit(&vec2);
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Type_create_resized(MPI_INT, 0, 2 * static_cast<MPI_Aint>(sizeof(int)), &stride2);
    MPI_Type_commit(&stride2);
  }
  ~Types() {
    MPI_Type_free(&vec2);
    MPI_Type_free(&pair);
    MPI_Type_free(&stride2);
  }
  Types(const Types&) = delete;
  Types& operator=(const Types&) = delete;
};

// One endpoint's view of a communicator.
struct View {
  EP_Comm comm = EP_COMM_NULL;
  int rank = 0, size = 0, me = 0;
  std::vector<int> members;  // world endpoint of each rank
  std::string what;
  int w(int r) const { return members[static_cast<size_t>(r)]; }
};

View view_of(const Ctx& c, bool world) {
  View v;
  v.me = c.me;
  if (world) {
    v.comm = c.world;
    v.rank = c.me;
    v.size = c.wd->total;
    for (int w = 0; w < v.size; ++w) v.members.push_back(w);
    v.what = "world";
  } else {
    v.comm = c.comm;
    v.rank = c.rank;
    v.size = c.size;
    v.members = c.members;
    v.what = c.what;
  }
  return v;
}

// A collective: start (a blocking one completes and leaves *req null) and check.
struct Case {
  std::string name;
  bool blocking = false;
  std::function<int(EP_Request*)> start;
  std::function<void()> check;
};

using IntBuf = std::shared_ptr<std::vector<int>>;
using MatBuf = std::shared_ptr<std::vector<Mat>>;
IntBuf ints(size_t n, int fill = kS) { return std::make_shared<std::vector<int>>(n, fill); }
MatBuf mats(size_t n) { return std::make_shared<std::vector<Mat>>(n, kMatS); }

// Reversed v-layout: block q starts after the blocks of ranks > q, one gap int each.
std::vector<int> reversed_displs(const std::vector<int>& counts, int* total) {
  const int n = static_cast<int>(counts.size());
  std::vector<int> d(static_cast<size_t>(n));
  int off = 0;
  for (int q = n - 1; q >= 0; --q) {
    d[static_cast<size_t>(q)] = off + 1;
    off += counts[static_cast<size_t>(q)] + 1;
  }
  *total = off + 1;
  return d;
}

// ---- The cases: gather and scatter families ---------------------------------------------

void gather_cases(const View& v, int salt, std::vector<Case>* cs) {
  const int n = v.size, rk = v.rank, me = v.me;
  const std::string at = v.what + " salt " + std::to_string(salt) + " rank " + std::to_string(rk);
  const int root = salt % n;
  for (bool in_place : {false, true}) {  // Igather: 2 ints each
    IntBuf s = ints(2), r = ints(static_cast<size_t>(2 * n));
    for (int k = 0; k < 2; ++k) (*s)[k] = val(me, salt + k);
    const bool ip = in_place && rk == root;
    if (ip) std::copy(s->begin(), s->end(), r->begin() + 2 * rk);
    cs->push_back({in_place ? "Igather in place" : "Igather", false,
                   [=](EP_Request* q) {
                     return EP_Igather(ip ? EP_IN_PLACE : s->data(), 2, MPI_INT, r->data(), 2,
                                       MPI_INT, root, v.comm, q);
                   },
                   [=] {
                     for (int p = 0; p < n; ++p) {
                       for (int k = 0; k < 2; ++k) {
                         EXPECT_EQ((*r)[2 * p + k], rk == root ? val(v.w(p), salt + k) : kS)
                             << at << " Igather root " << root << " block " << p;
                       }
                     }
                   }});
  }
  {  // Igatherv: rank p sends (p + salt) % 3 ints (some none), reversed displacements
    std::vector<int> cnt(static_cast<size_t>(n));
    for (int p = 0; p < n; ++p) cnt[p] = (p + salt) % 3;
    int total = 0;
    std::vector<int> dsp = reversed_displs(cnt, &total);
    IntBuf s = ints(3), r = ints(static_cast<size_t>(total));
    for (int k = 0; k < 3; ++k) (*s)[k] = val(me, 10 + k);
    cs->push_back({"Igatherv", false,
                   [=](EP_Request* q) {
                     // Non-roots pass NULL for the arguments significant only at the root.
                     const bool at_root = rk == root;
                     return EP_Igatherv(s->data(), cnt[rk], MPI_INT, at_root ? r->data() : nullptr,
                                        at_root ? cnt.data() : nullptr,
                                        at_root ? dsp.data() : nullptr, MPI_INT, root, v.comm, q);
                   },
                   [=] {
                     std::vector<int> e(static_cast<size_t>(total), kS);
                     if (rk == root) {
                       for (int p = 0; p < n; ++p) {
                         for (int k = 0; k < cnt[p]; ++k) e[dsp[p] + k] = val(v.w(p), 10 + k);
                       }
                     }
                     EXPECT_EQ(*r, e) << at << " Igatherv root " << root;
                   }});
  }
}

void scatter_cases(const View& v, int salt, const Types& t, std::vector<Case>* cs) {
  const int n = v.size, rk = v.rank, me = v.me;
  const std::string at = v.what + " salt " + std::to_string(salt) + " rank " + std::to_string(rk);
  const MPI_Datatype vec2 = t.vec2;  // lambdas copy the handle, not the owner
  for (bool in_place : {false, true}) {
    // Iscatter: 2 ints per rank from the root, received through vec2 (positions 0 and 2).
    const int sroot = (salt + 1) % n;
    IntBuf s = ints(static_cast<size_t>(2 * n)), r = ints(3);
    if (rk == sroot) {
      for (int p = 0; p < n; ++p) {
        for (int k = 0; k < 2; ++k) (*s)[2 * p + k] = val(me, 20 + 2 * p + k);
      }
    }
    const bool ip = in_place && rk == sroot;
    cs->push_back({in_place ? "Iscatter in place" : "Iscatter", false,
                   [=](EP_Request* q) {
                     return EP_Iscatter(s->data(), 2, MPI_INT, ip ? EP_IN_PLACE : r->data(), 1,
                                        vec2, sroot, v.comm, q);
                   },
                   [=] {
                     std::vector<int> e(3, kS);
                     if (!ip) {
                       e[0] = val(v.w(sroot), 20 + 2 * rk);
                       e[2] = val(v.w(sroot), 21 + 2 * rk);
                     }
                     EXPECT_EQ(*r, e) << at << " Iscatter root " << sroot;
                   }});
  }
  {  // Iscatterv: rank p gets (2p + salt) % 3 ints, reversed displacements at the root
    const int sroot = n - 1 - salt % n;
    std::vector<int> cnt(static_cast<size_t>(n));
    for (int p = 0; p < n; ++p) cnt[p] = (2 * p + salt) % 3;
    int total = 0;
    std::vector<int> dsp = reversed_displs(cnt, &total);
    IntBuf s = ints(static_cast<size_t>(total)), r = ints(3);
    if (rk == sroot) {
      for (int p = 0; p < n; ++p) {
        for (int k = 0; k < cnt[p]; ++k) (*s)[dsp[p] + k] = val(me, 30 + 3 * p + k);
      }
    }
    cs->push_back({"Iscatterv", false,
                   [=](EP_Request* q) {
                     const bool at_root = rk == sroot;
                     return EP_Iscatterv(at_root ? s->data() : nullptr,
                                         at_root ? cnt.data() : nullptr,
                                         at_root ? dsp.data() : nullptr, MPI_INT, r->data(),
                                         cnt[rk], MPI_INT, sroot, v.comm, q);
                   },
                   [=] {
                     std::vector<int> e(3, kS);
                     for (int k = 0; k < cnt[rk]; ++k) e[k] = val(v.w(sroot), 30 + 3 * rk + k);
                     EXPECT_EQ(*r, e) << at << " Iscatterv root " << sroot;
                   }});
  }
}

void allgather_cases(const View& v, int salt, const Types& t, std::vector<Case>* cs) {
  const MPI_Datatype vec2 = t.vec2;  // lambdas copy the handle, not the owner
  const int n = v.size, rk = v.rank, me = v.me;
  const std::string at = v.what + " salt " + std::to_string(salt) + " rank " + std::to_string(rk);
  for (bool in_place : {false, true}) {
    // Iallgather: sent through vec2 (positions 0 and 2 of 3), received as 2 MPI_INT.
    IntBuf s = ints(3, 99), r = ints(static_cast<size_t>(2 * n));
    (*s)[0] = val(me, 40 + salt);
    (*s)[2] = val(me, 41 + salt);
    if (in_place) {
      (*r)[2 * rk] = (*s)[0];
      (*r)[2 * rk + 1] = (*s)[2];
    }
    cs->push_back({in_place ? "Iallgather in place" : "Iallgather", false,
                   [=](EP_Request* q) {
                     return EP_Iallgather(in_place ? EP_IN_PLACE : s->data(), 1, vec2, r->data(),
                                          2, MPI_INT, v.comm, q);
                   },
                   [=] {
                     for (int p = 0; p < n; ++p) {
                       EXPECT_EQ((*r)[2 * p], val(v.w(p), 40 + salt)) << at << " Iallgather " << p;
                       EXPECT_EQ((*r)[2 * p + 1], val(v.w(p), 41 + salt)) << at << " Iallgather";
                     }
                   }});
  }
  for (bool in_place : {false, true}) {  // Iallgatherv: (p + 2 salt) % 3 ints from rank p
    std::vector<int> cnt(static_cast<size_t>(n));
    for (int p = 0; p < n; ++p) cnt[p] = (p + 2 * salt) % 3;
    int total = 0;
    std::vector<int> dsp = reversed_displs(cnt, &total);
    IntBuf s = ints(2), r = ints(static_cast<size_t>(total));
    for (int k = 0; k < 2; ++k) (*s)[k] = val(me, 50 + k);
    if (in_place) {
      for (int k = 0; k < cnt[rk]; ++k) (*r)[dsp[rk] + k] = (*s)[k];
    }
    cs->push_back({in_place ? "Iallgatherv in place" : "Iallgatherv", false,
                   [=](EP_Request* q) {
                     return EP_Iallgatherv(in_place ? EP_IN_PLACE : s->data(), cnt[rk], MPI_INT,
                                           r->data(), cnt.data(), dsp.data(), MPI_INT, v.comm, q);
                   },
                   [=] {
                     std::vector<int> e(static_cast<size_t>(total), kS);
                     for (int p = 0; p < n; ++p) {
                       for (int k = 0; k < cnt[p]; ++k) e[dsp[p] + k] = val(v.w(p), 50 + k);
                     }
                     EXPECT_EQ(*r, e) << at << " Iallgatherv";
                   }});
  }
}

// ---- The cases: all-to-all family ---------------------------------------------------------

// The value rank `from` (world endpoint wf) sends to rank `to` as element k.
int a2a(int wf, int to, int k, int salt) { return val(wf, 100 * to + k + salt); }

void alltoall_cases(const View& v, int salt, std::vector<Case>* cs) {
  const int n = v.size, rk = v.rank, me = v.me;
  const std::string at = v.what + " salt " + std::to_string(salt) + " rank " + std::to_string(rk);
  for (bool in_place : {false, true}) {  // Ialltoall: 2 ints per peer
    IntBuf s = ints(static_cast<size_t>(2 * n)), r = ints(static_cast<size_t>(2 * n));
    for (int d = 0; d < n; ++d) {
      for (int k = 0; k < 2; ++k) (in_place ? *r : *s)[2 * d + k] = a2a(me, d, k, salt);
    }
    cs->push_back({in_place ? "Ialltoall in place" : "Ialltoall", false,
                   [=](EP_Request* q) {
                     return EP_Ialltoall(in_place ? EP_IN_PLACE : s->data(), 2, MPI_INT, r->data(),
                                         2, MPI_INT, v.comm, q);
                   },
                   [=] {
                     for (int p = 0; p < n; ++p) {
                       for (int k = 0; k < 2; ++k) {
                         EXPECT_EQ((*r)[2 * p + k], a2a(v.w(p), rk, k, salt))
                             << at << " Ialltoall from " << p;
                       }
                     }
                   }});
  }
  {  // Ialltoallv: (from + 2 to + salt) % 3 ints, reversed send and shifted receive layout
    auto cnt = [salt](int from, int to) { return (from + 2 * to + salt) % 3; };
    std::vector<int> sc(static_cast<size_t>(n)), sd(static_cast<size_t>(n)),
        rc(static_cast<size_t>(n)), rd(static_cast<size_t>(n));
    for (int p = 0; p < n; ++p) {
      sc[p] = cnt(rk, p);
      sd[p] = (n - 1 - p) * 3;
      rc[p] = cnt(p, rk);
      rd[p] = p * 3 + 1;
    }
    IntBuf s = ints(static_cast<size_t>(3 * n)), r = ints(static_cast<size_t>(3 * n + 1));
    for (int d = 0; d < n; ++d) {
      for (int k = 0; k < sc[d]; ++k) (*s)[sd[d] + k] = a2a(me, d, k, salt);
    }
    cs->push_back({"Ialltoallv", false,
                   [=](EP_Request* q) {
                     return EP_Ialltoallv(s->data(), sc.data(), sd.data(), MPI_INT, r->data(),
                                          rc.data(), rd.data(), MPI_INT, v.comm, q);
                   },
                   [=] {
                     std::vector<int> e(static_cast<size_t>(3 * n + 1), kS);
                     for (int p = 0; p < n; ++p) {
                       for (int k = 0; k < rc[p]; ++k) e[rd[p] + k] = a2a(v.w(p), rk, k, salt);
                     }
                     EXPECT_EQ(*r, e) << at << " Ialltoallv";
                   }});
  }
}

// Alltoallw: 2 * ((from + 2 to + salt) % 3) ints go from `from` to `to` (0, 2 or 4).  The
// sender describes them as MPI_INT (to % 3 == 0), vec2 (to % 3 == 1: elements at ints 0
// and 2 of each 3) or stride2 (to % 3 == 2: every other int), the receiver as MPI_INT
// (from even) or pair (from odd).  Byte
// displacements: send regions of 16 ints in reversed rank order, receive regions of 8
// ints one int in.  In place: the counts are symmetric, 2 * ((p + q + salt) % 3).
void alltoallw_cases(const View& v, int salt, const Types& t, std::vector<Case>* cs) {
  const int n = v.size, rk = v.rank, me = v.me;
  const std::string at = v.what + " salt " + std::to_string(salt) + " rank " + std::to_string(rk);
  constexpr int kI = static_cast<int>(sizeof(int));
  auto nints = [salt](int from, int to) { return 2 * ((from + 2 * to + salt) % 3); };
  for (int mode = 0; mode < 2; ++mode) {  // blocking EP_Alltoallw, EP_Ialltoallw
    std::vector<int> sc(static_cast<size_t>(n)), sd(static_cast<size_t>(n)),
        rc(static_cast<size_t>(n)), rd(static_cast<size_t>(n));
    std::vector<MPI_Datatype> st(static_cast<size_t>(n)), rt(static_cast<size_t>(n));
    IntBuf s = ints(static_cast<size_t>(16 * n)), r = ints(static_cast<size_t>(8 * n + 1));
    for (int p = 0; p < n; ++p) {
      const int out = nints(rk, p), in = nints(p, rk);
      st[p] = p % 3 == 0 ? MPI_INT : p % 3 == 1 ? t.vec2 : t.stride2;
      sc[p] = p % 3 == 1 ? out / 2 : out;
      sd[p] = (n - 1 - p) * 16 * kI;
      rt[p] = p % 2 == 0 ? MPI_INT : t.pair;
      rc[p] = p % 2 == 0 ? in : in / 2;
      rd[p] = (p * 8 + 1) * kI;
      const int base = (n - 1 - p) * 16;
      for (int j = 0; j < out; ++j) {
        const int pos = p % 3 == 0 ? j : p % 3 == 1 ? (j / 2) * 3 + (j % 2) * 2 : 2 * j;
        (*s)[base + pos] = a2a(me, p, j, salt);
      }
    }
    const bool blocking = mode == 0;
    cs->push_back({blocking ? "Alltoallw" : "Ialltoallw", blocking,
                   [=](EP_Request* q) {
                     if (blocking) {
                       *q = EP_REQUEST_NULL;
                       return EP_Alltoallw(s->data(), sc.data(), sd.data(), st.data(), r->data(),
                                           rc.data(), rd.data(), rt.data(), v.comm);
                     }
                     return EP_Ialltoallw(s->data(), sc.data(), sd.data(), st.data(), r->data(),
                                          rc.data(), rd.data(), rt.data(), v.comm, q);
                   },
                   [=] {
                     std::vector<int> e(static_cast<size_t>(8 * n + 1), kS);
                     for (int p = 0; p < n; ++p) {
                       for (int j = 0; j < nints(p, rk); ++j) e[p * 8 + 1 + j] = a2a(v.w(p), rk, j, salt);
                     }
                     EXPECT_EQ(*r, e) << at << (blocking ? " Alltoallw" : " Ialltoallw");
                   }});
  }
  {  // Ialltoallw in place
    auto sym = [salt](int p, int q) { return 2 * ((p + q + salt) % 3); };
    std::vector<int> rc(static_cast<size_t>(n)), rd(static_cast<size_t>(n));
    std::vector<MPI_Datatype> rt(static_cast<size_t>(n));
    IntBuf r = ints(static_cast<size_t>(8 * n));
    for (int p = 0; p < n; ++p) {
      rt[p] = p % 2 == 0 ? t.pair : MPI_INT;
      rc[p] = p % 2 == 0 ? sym(rk, p) / 2 : sym(rk, p);
      rd[p] = (n - 1 - p) * 8 * kI;
      for (int j = 0; j < sym(rk, p); ++j) (*r)[(n - 1 - p) * 8 + j] = a2a(me, p, j, salt);
    }
    cs->push_back({"Ialltoallw in place", false,
                   [=](EP_Request* q) {
                     // The send arguments are ignored: NULL is fine.
                     return EP_Ialltoallw(EP_IN_PLACE, nullptr, nullptr, nullptr, r->data(),
                                          rc.data(), rd.data(), rt.data(), v.comm, q);
                   },
                   [=] {
                     std::vector<int> e(static_cast<size_t>(8 * n), kS);
                     for (int p = 0; p < n; ++p) {
                       for (int j = 0; j < sym(rk, p); ++j) e[(n - 1 - p) * 8 + j] = a2a(v.w(p), rk, j, salt);
                     }
                     EXPECT_EQ(*r, e) << at << " Ialltoallw in place";
                   }});
  }
}

// ---- The cases: reductions ----------------------------------------------------------------

void reduce_scatter_cases(const View& v, int salt, const MatOp& mop, std::vector<Case>* cs) {
  const MPI_Datatype mtype = mop.type;  // lambdas copy the handles, not the owner
  const MPI_Op mo = mop.op;
  const int n = v.size, rk = v.rank, me = v.me;
  const std::string at = v.what + " salt " + std::to_string(salt) + " rank " + std::to_string(rk);
  {  // Ireduce_scatter, non-commutative op: rank p gets (p + salt) % 2 + 1 matrices
    std::vector<int> cnt(static_cast<size_t>(n));
    for (int p = 0; p < n; ++p) cnt[p] = (p + salt) % 2 + 1;
    const int total = std::accumulate(cnt.begin(), cnt.end(), 0);
    const int off = std::accumulate(cnt.begin(), cnt.begin() + rk, 0);
    MatBuf s = mats(static_cast<size_t>(total)), r = mats(3);
    for (int k = 0; k < total; ++k) (*s)[k] = mat_in(me, k, salt);
    cs->push_back({"Ireduce_scatter (matrix op)", false,
                   [=](EP_Request* q) {
                     return EP_Ireduce_scatter(s->data(), r->data(), cnt.data(), mtype, mo,
                                               v.comm, q);
                   },
                   [=] {
                     for (int k = 0; k < 3; ++k) {
                       EXPECT_EQ((*r)[k], k < cnt[rk] ? mat_product(v.members, off + k, salt) : kMatS)
                           << at << " Ireduce_scatter element " << k;
                     }
                   }});
  }
  {  // Ireduce_scatter in place, SUM: the whole vector in recvbuf, the result its first block
    std::vector<int> cnt(static_cast<size_t>(n));
    for (int p = 0; p < n; ++p) cnt[p] = (p + salt) % 3;  // some ranks get nothing
    const int total = std::accumulate(cnt.begin(), cnt.end(), 0);
    const int off = std::accumulate(cnt.begin(), cnt.begin() + rk, 0);
    IntBuf r = ints(static_cast<size_t>(total + 1));
    for (int k = 0; k < total; ++k) (*r)[k] = val(me, k + salt);
    cs->push_back({"Ireduce_scatter in place", false,
                   [=](EP_Request* q) {
                     return EP_Ireduce_scatter(EP_IN_PLACE, r->data(), cnt.data(), MPI_INT, MPI_SUM,
                                               v.comm, q);
                   },
                   [=] {
                     for (int k = 0; k < cnt[rk]; ++k) {
                       int e = 0;
                       for (int w : v.members) e += val(w, off + k + salt);
                       EXPECT_EQ((*r)[k], e) << at << " Ireduce_scatter in place " << k;
                     }
                     EXPECT_EQ((*r)[total], kS) << at << " written past the vector";
                   }});
  }
  for (bool in_place : {false, true}) {  // Ireduce_scatter_block: 2 ints per rank, SUM
    IntBuf s = ints(static_cast<size_t>(2 * n)), r = ints(static_cast<size_t>(2 * n));
    for (int k = 0; k < 2 * n; ++k) (in_place ? *r : *s)[k] = val(me, 3 * k + salt);
    cs->push_back({in_place ? "Ireduce_scatter_block in place" : "Ireduce_scatter_block", false,
                   [=](EP_Request* q) {
                     return EP_Ireduce_scatter_block(in_place ? EP_IN_PLACE : s->data(), r->data(),
                                                     2, MPI_INT, MPI_SUM, v.comm, q);
                   },
                   [=] {
                     for (int k = 0; k < 2; ++k) {
                       int e = 0;
                       for (int w : v.members) e += val(w, 3 * (2 * rk + k) + salt);
                       EXPECT_EQ((*r)[k], e) << at << " Ireduce_scatter_block " << k;
                     }
                     if (!in_place) {
                       for (int k = 2; k < 2 * n; ++k) EXPECT_EQ((*r)[k], kS) << at;
                     }
                   }});
  }
  {  // Ireduce_scatter_block, non-commutative op, one matrix per rank
    MatBuf s = mats(static_cast<size_t>(n)), r = mats(1);
    for (int k = 0; k < n; ++k) (*s)[k] = mat_in(me, k, salt + 1);
    cs->push_back({"Ireduce_scatter_block (matrix op)", false,
                   [=](EP_Request* q) {
                     return EP_Ireduce_scatter_block(s->data(), r->data(), 1, mtype, mo,
                                                     v.comm, q);
                   },
                   [=] {
                     EXPECT_EQ((*r)[0], mat_product(v.members, rk, salt + 1))
                         << at << " Ireduce_scatter_block (matrix op)";
                   }});
  }
}

void scan_cases(const View& v, int salt, const MatOp& mop, std::vector<Case>* cs) {
  const MPI_Datatype mtype = mop.type;  // lambdas copy the handles, not the owner
  const MPI_Op mo = mop.op;
  const int rk = v.rank, me = v.me;
  const std::string at = v.what + " salt " + std::to_string(salt) + " rank " + std::to_string(rk);
  for (int mode = 0; mode < 3; ++mode) {  // Iscan, Iexscan, blocking EP_Scan: matrix op
    const bool excl = mode == 1, blocking = mode == 2;
    MatBuf s = mats(2), r = mats(2);
    for (int k = 0; k < 2; ++k) (*s)[k] = mat_in(me, k, salt + mode);
    const char* name = excl ? "Iexscan" : blocking ? "Scan" : "Iscan";
    cs->push_back({name, blocking,
                   [=](EP_Request* q) {
                     if (blocking) {
                       *q = EP_REQUEST_NULL;
                       return EP_Scan(s->data(), r->data(), 2, mtype, mo, v.comm);
                     }
                     return excl ? EP_Iexscan(s->data(), r->data(), 2, mtype, mo, v.comm, q)
                                 : EP_Iscan(s->data(), r->data(), 2, mtype, mo, v.comm, q);
                   },
                   [=] {
                     const int upto = excl ? rk : rk + 1;
                     if (upto == 0) return;  // Exscan at rank 0: undefined
                     for (int k = 0; k < 2; ++k) {
                       EXPECT_EQ((*r)[k], mat_product(prefix(v.members, upto), k, salt + mode))
                           << at << " " << name << " element " << k;
                     }
                   }});
  }
  for (bool excl : {false, true}) {  // in place, SUM
    IntBuf r = ints(2);
    for (int k = 0; k < 2; ++k) (*r)[k] = val(me, 60 + k + salt);
    cs->push_back({excl ? "Iexscan in place" : "Iscan in place", false,
                   [=](EP_Request* q) {
                     return excl ? EP_Iexscan(EP_IN_PLACE, r->data(), 2, MPI_INT, MPI_SUM, v.comm, q)
                                 : EP_Iscan(EP_IN_PLACE, r->data(), 2, MPI_INT, MPI_SUM, v.comm, q);
                   },
                   [=] {
                     const int upto = excl ? rk : rk + 1;
                     if (upto == 0) return;
                     for (int k = 0; k < 2; ++k) {
                       int e = 0;
                       for (int w : prefix(v.members, upto)) e += val(w, 60 + k + salt);
                       EXPECT_EQ((*r)[k], e) << at << (excl ? " Iexscan" : " Iscan") << " in place";
                     }
                   }});
  }
}

// Count 0 everywhere: nothing is written; a blocking EP_Allgather sits among them.
void zero_cases(const View& v, int salt, const MatOp& mop, std::vector<Case>* cs) {
  const MPI_Datatype mtype = mop.type;  // lambdas copy the handles, not the owner
  const MPI_Op mo = mop.op;
  const int n = v.size, rk = v.rank;
  const std::string at = v.what + " salt " + std::to_string(salt) + " rank " + std::to_string(rk);
  IntBuf s = ints(4, 5), r = ints(4);
  const int root = (salt + 2) % n;
  cs->push_back({"count 0", false,
                 [=](EP_Request* q) {
                   return EP_Igather(s->data(), 0, MPI_INT, r->data(), 0, MPI_INT, root, v.comm, q);
                 },
                 [=] { EXPECT_EQ(*r, std::vector<int>(4, kS)) << at << " Igather count 0"; }});
  cs->push_back({"count 0", false,
                 [=](EP_Request* q) {
                   return EP_Ialltoall(s->data(), 0, MPI_INT, r->data(), 0, MPI_INT, v.comm, q);
                 },
                 [=] { EXPECT_EQ(*r, std::vector<int>(4, kS)) << at << " Ialltoall count 0"; }});
  cs->push_back({"count 0", false,
                 [=](EP_Request* q) {
                   return EP_Iscan(s->data(), r->data(), 0, mtype, mo, v.comm, q);
                 },
                 [=] { EXPECT_EQ(*r, std::vector<int>(4, kS)) << at << " Iscan count 0"; }});
  cs->push_back({"count 0", false,
                 [=](EP_Request* q) {
                   return EP_Ireduce_scatter_block(s->data(), r->data(), 0, MPI_INT, MPI_SUM,
                                                   v.comm, q);
                 },
                 [=] {
                   EXPECT_EQ(*r, std::vector<int>(4, kS)) << at << " Ireduce_scatter_block count 0";
                 }});
  IntBuf g = ints(static_cast<size_t>(n));
  const int me = v.me;
  cs->push_back({"Allgather", true,
                 [=](EP_Request* q) {
                   *q = EP_REQUEST_NULL;
                   return EP_Allgather(&me, 1, MPI_INT, g->data(), 1, MPI_INT, v.comm);
                 },
                 [=] { EXPECT_EQ(*g, v.members) << at << " blocking Allgather among them"; }});
}

std::vector<Case> make_cases(const View& v, int salt, const Types& t, const MatOp& mop) {
  std::vector<Case> cs;
  gather_cases(v, salt, &cs);
  scatter_cases(v, salt, t, &cs);
  allgather_cases(v, salt, t, &cs);
  alltoall_cases(v, salt, &cs);
  alltoallw_cases(v, salt, t, &cs);
  reduce_scatter_cases(v, salt, mop, &cs);
  scan_cases(v, salt, mop, &cs);
  zero_cases(v, salt, mop, &cs);
  return cs;
}

// Starts every case in order; returns the requests (null for blocking cases).
std::vector<EP_Request> start_all(std::vector<Case>& cs, const std::string& at) {
  std::vector<EP_Request> rq(cs.size(), EP_REQUEST_NULL);
  for (size_t i = 0; i < cs.size(); ++i) {
    const int rc = cs[i].start(&rq[i]);
    EXPECT_EQ(rc, EP_SUCCESS) << at << " " << cs[i].name << ": " << last_error(rc);
    if (!cs[i].blocking) {
      EXPECT_NE(rq[i], EP_REQUEST_NULL) << at << " " << cs[i].name;
    }
  }
  return rq;
}

// ---- Drivers ------------------------------------------------------------------------------

class NBAll : public ::testing::TestWithParam<Lay> {};

TEST_P(NBAll, EachAloneStartWaitCheck) {
  MatOp mop;
  Types t;
  run_layout(GetParam(), [&](const Ctx& c) {
    const View v = view_of(c, false);
    for (int salt = 0; salt < 2; ++salt) {
      std::vector<Case> cs = make_cases(v, salt, t, mop);
      for (Case& k : cs) {
        EP_Request rq = EP_REQUEST_NULL;
        const int rc = k.start(&rq);
        EXPECT_EQ(rc, EP_SUCCESS) << v.what << " " << k.name << ": " << last_error(rc);
        EXPECT_EQ(EP_Wait(&rq, EP_STATUS_IGNORE), EP_SUCCESS) << v.what << " " << k.name;
        EXPECT_EQ(rq, EP_REQUEST_NULL);
        k.check();
      }
    }
  });
}

TEST_P(NBAll, AllOutstandingWaitedInReverse) {
  MatOp mop;
  Types t;
  run_layout(GetParam(), [&](const Ctx& c) {
    const View v = view_of(c, false);
    std::vector<Case> cs = make_cases(v, 3, t, mop);
    std::vector<EP_Request> rq = start_all(cs, v.what);
    for (size_t i = cs.size(); i-- > 0;) {
      EXPECT_EQ(EP_Wait(&rq[i], EP_STATUS_IGNORE), EP_SUCCESS) << v.what << " " << cs[i].name;
    }
    for (Case& k : cs) k.check();
  });
}

// Each endpoint completes the requests in its own random order: Wait on a random one,
// Testany polling, Waitany.
TEST_P(NBAll, AllOutstandingWaitedInRandomOrder) {
  MatOp mop;
  Types t;
  const uint64_t seed = ep_test::stress_seed("nonblocking_all_test");
  run_layout(GetParam(), [&](const Ctx& c) {
    const View v = view_of(c, false);
    std::mt19937_64 rng(seed + static_cast<uint64_t>(c.me) * 7919);
    for (int round = 0; round < 2; ++round) {
      std::vector<Case> cs = make_cases(v, 4 + round, t, mop);
      std::vector<EP_Request> rq = start_all(cs, v.what);
      std::vector<size_t> order(cs.size());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      size_t i = 0;
      for (; i < order.size() / 2; ++i) {
        EXPECT_EQ(EP_Wait(&rq[order[i]], EP_STATUS_IGNORE), EP_SUCCESS) << v.what;
      }
      // The rest: Testany until one completes, then Waitany, alternating.
      bool test = true;
      for (;;) {
        int idx = -1, flag = 0;
        if (test) {
          EXPECT_EQ(EP_Testany(static_cast<int>(rq.size()), rq.data(), &idx, &flag,
                               EP_STATUS_IGNORE),
                    EP_SUCCESS);
          if (!flag) continue;
        } else {
          EXPECT_EQ(EP_Waitany(static_cast<int>(rq.size()), rq.data(), &idx, EP_STATUS_IGNORE),
                    EP_SUCCESS);
        }
        if (idx == EP_UNDEFINED) break;
        test = !test;
      }
      for (EP_Request r : rq) EXPECT_EQ(r, EP_REQUEST_NULL) << v.what;
      for (Case& k : cs) k.check();
    }
  });
}

// Started (staggered), then every endpoint sleeps without calling libep: the progress
// thread must complete them all, so the first Testall finds everything done.
TEST_P(NBAll, CompleteWhileEveryEndpointSleeps) {
  MatOp mop;
  Types t;
  run_layout(GetParam(), [&](const Ctx& c) {
    const View v = view_of(c, false);
    std::vector<Case> all = make_cases(v, 6, t, mop), cs;
    for (Case& k : all) {
      if (!k.blocking) cs.push_back(k);
    }
    if (c.rank % 2 == 1) sleep_ms(200);
    std::vector<EP_Request> rq = start_all(cs, v.what);
    sleep_ms(settle_ms());
    int flag = 0;
    EXPECT_EQ(EP_Testall(static_cast<int>(rq.size()), rq.data(), &flag, EP_STATUSES_IGNORE),
              EP_SUCCESS);
    EXPECT_EQ(flag, 1) << v.what << " rank " << c.rank << ": not complete at the first test after "
                       << settle_ms() << " ms outside libep (no asynchronous progress?)";
    if (!flag) {
      EXPECT_EQ(EP_Waitall(static_cast<int>(rq.size()), rq.data(), EP_STATUSES_IGNORE), EP_SUCCESS);
    }
    for (Case& k : cs) k.check();
  });
}

// The cases of two communicators (the layout and the world communicator): round 0 starts
// their nonblocking cases interleaved, in an order that differs between endpoints (each
// communicator's own order is the same everywhere), and completes them in one Waitall;
// round 1 starts every world case, then every layout case (blocking ones included), and
// waits in reverse.
TEST_P(NBAll, TwoCommunicatorsInterleaved) {
  MatOp mop;
  Types t;
  run_layout(GetParam(), [&](const Ctx& c) {
    const View a = view_of(c, false), b = view_of(c, true);
    for (int round = 0; round < 2; ++round) {
      std::vector<Case> ca = make_cases(a, 7 + round, t, mop), cb = make_cases(b, 9 + round, t, mop);
      if (round == 0) {
        // Endpoints start the two communicators' cases in different orders: blocking
        // calls would then wait for each other (erroneous in MPI), so only nonblocking.
        auto drop_blocking = [](std::vector<Case>* cs) {
          cs->erase(std::remove_if(cs->begin(), cs->end(), [](const Case& k) { return k.blocking; }),
                    cs->end());
        };
        drop_blocking(&ca);
        drop_blocking(&cb);
      }
      std::vector<EP_Request> rq;
      auto start = [&](Case& k, const std::string& what) {
        EP_Request r = EP_REQUEST_NULL;
        const int rc = k.start(&r);
        EXPECT_EQ(rc, EP_SUCCESS) << what << " " << k.name << ": " << last_error(rc);
        rq.push_back(r);
      };
      if (round == 0) {  // a, b, a, b, ... (odd world endpoints: b, a, b, a, ...)
        for (size_t i = 0; i < std::max(ca.size(), cb.size()); ++i) {
          const bool b_first = c.me % 2 == 1;
          if (b_first && i < cb.size()) start(cb[i], b.what);
          if (i < ca.size()) start(ca[i], a.what);
          if (!b_first && i < cb.size()) start(cb[i], b.what);
        }
      } else {  // every b, then every a, blocking ones included (same order everywhere)
        for (Case& k : cb) start(k, b.what);
        for (Case& k : ca) start(k, a.what);
      }
      if (round == 0) {
        EXPECT_EQ(EP_Waitall(static_cast<int>(rq.size()), rq.data(), EP_STATUSES_IGNORE),
                  EP_SUCCESS);
      } else {
        for (size_t i = rq.size(); i-- > 0;) EXPECT_EQ(EP_Wait(&rq[i], EP_STATUS_IGNORE), EP_SUCCESS);
      }
      for (Case& k : ca) k.check();
      for (Case& k : cb) k.check();
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Layouts, NBAll,
                         ::testing::Values(Lay::kGrouped, Lay::kReversed, Lay::kInterleaved),
                         [](const ::testing::TestParamInfo<Lay>& info) {
                           return std::string(ep_coll_test::lay_name(info.param));
                         });

}  // namespace
