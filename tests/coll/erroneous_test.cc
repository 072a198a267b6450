// One erroneous endpoint in a collective (API.md, "Collectives"): an argument error
// found at some endpoints makes those endpoints return it; every other endpoint
// completes the call; none hangs, and the communicator stays usable.
//
// For every collective, blocking and nonblocking, on intracommunicators (grouped and
// interleaved layouts of the uneven world, 3/1/2 endpoints per process) and on
// intercommunicators (groups sharing processes, and groups of disjoint processes), each
// rank in turn - root and non-root - passes one bad argument while the others pass valid
// ones.  The bad one gets its error code (naming the call); the others get EP_SUCCESS and,
// where their result does not depend on the erroneous endpoint (a broadcast from a valid
// root), the right data; then a checked EP_Allreduce on the same communicator.
//
// The errors are those an endpoint can make alone: a NULL or EP_IN_PLACE buffer where
// data is needed (EP_Reduce with EP_IN_PLACE as the root's receive buffer among them),
// NULL count or datatype arrays, a NULL request pointer of a nonblocking call.  Errors in
// the arguments that must agree everywhere (a root out of range, MPI_OP_NULL) are made
// at endpoints whose process holds another endpoint of the communicator, which knows
// them (collectives/engine.h, "Erroneous endpoints").
#include <gtest/gtest.h>
#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/coll/coll_util.h"
#include "tests/coll/inter_util.h"
#include "tests/common/harness.h"

namespace {

using ep_coll_test::Ctx;
using ep_coll_test::IC;
using ep_coll_test::Lay;
using ep_coll_test::MatOp;
using ep_coll_test::run_inter;
using ep_coll_test::run_layout;
using ep_coll_test::Shape;
using ep_test::last_error;

[[maybe_unused]] const bool kWatchdog = ep_coll_test::install_watchdog();

// One collective call: `bad` makes this endpoint pass its bad argument.  Returns the code.
struct Case {
  const char* call;
  int code;  // what the bad endpoint gets
  std::function<int(bool bad, int e)> run;
};

void expect_outcome(int rc, bool bad, const Case& k, const std::string& what) {
  if (!bad) {
    EXPECT_EQ(rc, EP_SUCCESS) << what << ": a valid endpoint's " << k.call << " returned " << rc
                              << " (" << (rc == EP_SUCCESS ? "" : last_error(rc)) << ")";
    return;
  }
  EXPECT_EQ(rc, k.code) << what << ": the erroneous endpoint's " << k.call << " returned " << rc;
  if (rc == k.code) {
    const std::string msg = last_error(rc);
    EXPECT_NE(msg.find(k.call), std::string::npos) << what << ": \"" << msg << "\"";
  }
}

// Waits for a nonblocking call's request, if it made one.
int settle(int rc, EP_Request* rq) {
  if (rc != EP_SUCCESS || *rq == EP_REQUEST_NULL) return rc;
  return EP_Wait(rq, EP_STATUS_IGNORE);
}

// ---- Intracommunicators ------------------------------------------------------------------

// The still-usable check: an Allreduce of world numbers.
void expect_intra_works(const Ctx& c, const std::string& what) {
  int s = c.me + 1, r = -1;
  ASSERT_EQ(EP_Allreduce(&s, &r, 1, MPI_INT, MPI_SUM, c.comm), EP_SUCCESS) << what;
  int e = 0;
  for (int w : c.members) e += w + 1;
  EXPECT_EQ(r, e) << what << ": the next Allreduce is wrong";
}

// Does this endpoint's process hold another endpoint of the communicator?
bool has_mate(const Ctx& c, int rank) {
  const int p = c.wd->proc_of(c.w(rank));
  int n = 0;
  for (int w : c.members) n += c.wd->proc_of(w) == p;
  return n >= 2;
}

std::vector<Case> intra_cases(const Ctx& c, std::vector<int>& sb, std::vector<int>& rb,
                              std::vector<int>& ones, std::vector<int>& displs,
                              std::vector<MPI_Datatype>& types, const MatOp& mop,
                              std::vector<int>& mat) {
  const int n = c.size;
  int* s = sb.data();
  int* r = rb.data();
  const int* cnt = ones.data();
  const int* dsp = displs.data();
  const MPI_Datatype* ty = types.data();
  const MPI_Datatype mtype = mop.type;
  const MPI_Op mopop = mop.op;
  EP_Comm comm = c.comm;
  const int me = c.rank;
  auto other = [n](int e) { return (e + 1) % n; };
  std::vector<Case> v;
  // Blocking.
  v.push_back({"EP_Bcast", EP_ERR_BUFFER, [=](bool bad, int e) {
                 return EP_Bcast(bad ? nullptr : s, 1, MPI_INT, e, comm);  // the root is bad
               }});
  v.push_back({"EP_Bcast", EP_ERR_BUFFER, [=](bool bad, int e) {
                 return EP_Bcast(bad ? nullptr : s, 1, MPI_INT, other(e), comm);
               }});
  v.push_back({"EP_Reduce", EP_ERR_BUFFER, [=](bool bad, int e) {  // root: recvbuf IN_PLACE
                 return EP_Reduce(s, bad ? EP_IN_PLACE : r, 1, MPI_INT, MPI_SUM, e, comm);
               }});
  v.push_back({"EP_Reduce", EP_ERR_BUFFER, [=](bool bad, int e) {
                 return EP_Reduce(bad ? nullptr : s, r, 1, MPI_INT, MPI_SUM, other(e), comm);
               }});
  v.push_back({"EP_Reduce", EP_ERR_BUFFER, [=, &mat](bool bad, int e) {
                 return EP_Reduce(mat.data(), bad ? EP_IN_PLACE : mat.data() + 4, 1, mtype,
                                  mopop, e, comm);
               }});
  v.push_back({"EP_Allreduce", EP_ERR_BUFFER, [=](bool bad, int) {
                 return EP_Allreduce(bad ? nullptr : s, r, 1, MPI_INT, MPI_SUM, comm);
               }});
  v.push_back({"EP_Allreduce", EP_ERR_BUFFER, [=](bool bad, int) {
                 return EP_Allreduce(s, bad ? nullptr : r, 2000, MPI_INT, MPI_MAX, comm);  // ring
               }});
  v.push_back({"EP_Allreduce", EP_ERR_BUFFER, [=, &mat](bool bad, int) {
                 return EP_Allreduce(mat.data(), bad ? EP_IN_PLACE : mat.data() + 4, 1, mtype,
                                     mopop, comm);
               }});
  v.push_back({"EP_Gather", EP_ERR_BUFFER, [=](bool bad, int e) {
                 return EP_Gather(s, 1, MPI_INT, bad ? nullptr : r, 1, MPI_INT, e, comm);
               }});
  v.push_back({"EP_Gather", EP_ERR_BUFFER, [=](bool bad, int e) {
                 return EP_Gather(bad ? nullptr : s, 1, MPI_INT, r, 1, MPI_INT, other(e), comm);
               }});
  v.push_back({"EP_Gatherv", EP_ERR_ARG, [=](bool bad, int e) {
                 return EP_Gatherv(s, 1, MPI_INT, r, bad ? nullptr : cnt, dsp, MPI_INT, e, comm);
               }});
  v.push_back({"EP_Allgather", EP_ERR_BUFFER, [=](bool bad, int) {
                 return EP_Allgather(bad ? nullptr : s, 1, MPI_INT, r, 1, MPI_INT, comm);
               }});
  v.push_back({"EP_Allgatherv", EP_ERR_ARG, [=](bool bad, int) {
                 return EP_Allgatherv(s, 1, MPI_INT, r, bad ? nullptr : cnt, dsp, MPI_INT, comm);
               }});
  v.push_back({"EP_Scatter", EP_ERR_BUFFER, [=](bool bad, int e) {
                 return EP_Scatter(bad ? nullptr : s, 1, MPI_INT, r, 1, MPI_INT, e, comm);
               }});
  v.push_back({"EP_Scatter", EP_ERR_BUFFER, [=](bool bad, int e) {
                 return EP_Scatter(s, 1, MPI_INT, bad ? nullptr : r, 1, MPI_INT, other(e), comm);
               }});
  v.push_back({"EP_Scatterv", EP_ERR_ARG, [=](bool bad, int e) {
                 return EP_Scatterv(s, bad ? nullptr : cnt, dsp, MPI_INT, r, 1, MPI_INT, e, comm);
               }});
  v.push_back({"EP_Alltoall", EP_ERR_BUFFER, [=](bool bad, int) {
                 return EP_Alltoall(bad ? nullptr : s, 1, MPI_INT, r, 1, MPI_INT, comm);
               }});
  v.push_back({"EP_Alltoallv", EP_ERR_ARG, [=](bool bad, int) {
                 return EP_Alltoallv(s, cnt, dsp, MPI_INT, r, bad ? nullptr : cnt, dsp, MPI_INT,
                                     comm);
               }});
  v.push_back({"EP_Alltoallw", EP_ERR_ARG, [=, &displs](bool bad, int) {
                 std::vector<int> bd(displs.size());
                 for (size_t i = 0; i < bd.size(); ++i) bd[i] = displs[i] * 4;
                 return EP_Alltoallw(s, cnt, bd.data(), ty, r, cnt, bd.data(), bad ? nullptr : ty,
                                     comm);
               }});
  v.push_back({"EP_Reduce_scatter", EP_ERR_ARG, [=](bool bad, int) {
                 return EP_Reduce_scatter(s, r, bad ? nullptr : cnt, MPI_INT, MPI_SUM, comm);
               }});
  v.push_back({"EP_Reduce_scatter_block", EP_ERR_BUFFER, [=](bool bad, int) {
                 return EP_Reduce_scatter_block(bad ? nullptr : s, r, 1, MPI_INT, MPI_SUM, comm);
               }});
  v.push_back({"EP_Scan", EP_ERR_BUFFER, [=](bool bad, int) {
                 return EP_Scan(bad ? nullptr : s, r, 1, MPI_INT, MPI_SUM, comm);
               }});
  v.push_back({"EP_Exscan", EP_ERR_BUFFER, [=, &mat](bool bad, int) {
                 return EP_Exscan(mat.data(), bad ? EP_IN_PLACE : mat.data() + 4, 1, mtype,
                                  mopop, comm);
               }});
  // Nonblocking: a NULL request pointer, the other arguments valid.
  auto nb = [](bool bad, const std::function<int(EP_Request*)>& call) {
    EP_Request rq = EP_REQUEST_NULL;
    return settle(call(bad ? nullptr : &rq), &rq);
  };
  v.push_back({"EP_Ibarrier", EP_ERR_ARG,
               [=](bool bad, int) { return nb(bad, [=](EP_Request* q) { return EP_Ibarrier(comm, q); }); }});
  v.push_back({"EP_Ibcast", EP_ERR_ARG, [=](bool bad, int e) {
                 return nb(bad, [=](EP_Request* q) { return EP_Ibcast(s, 1, MPI_INT, e, comm, q); });
               }});
  v.push_back({"EP_Ireduce", EP_ERR_ARG, [=](bool bad, int e) {
                 return nb(bad, [=](EP_Request* q) {
                   return EP_Ireduce(s, r, 1, MPI_INT, MPI_SUM, e, comm, q);
                 });
               }});
  v.push_back({"EP_Iallreduce", EP_ERR_ARG, [=](bool bad, int) {
                 return nb(bad, [=](EP_Request* q) {
                   return EP_Iallreduce(s, r, 1, MPI_INT, MPI_SUM, comm, q);
                 });
               }});
  v.push_back({"EP_Iallreduce", EP_ERR_BUFFER, [=, &mat](bool bad, int) {
                 EP_Request rq = EP_REQUEST_NULL;
                 return settle(EP_Iallreduce(mat.data(), bad ? EP_IN_PLACE : mat.data() + 4, 1,
                                             mtype, mopop, comm, &rq),
                               &rq);
               }});
  v.push_back({"EP_Igather", EP_ERR_ARG, [=](bool bad, int e) {
                 return nb(bad, [=](EP_Request* q) {
                   return EP_Igather(s, 1, MPI_INT, r, 1, MPI_INT, e, comm, q);
                 });
               }});
  v.push_back({"EP_Igatherv", EP_ERR_BUFFER, [=](bool bad, int e) {
                 EP_Request rq = EP_REQUEST_NULL;
                 return settle(EP_Igatherv(bad ? nullptr : s, 1, MPI_INT, r, cnt, dsp, MPI_INT,
                                           other(e), comm, &rq),
                               &rq);
               }});
  v.push_back({"EP_Iallgather", EP_ERR_ARG, [=](bool bad, int) {
                 return nb(bad, [=](EP_Request* q) {
                   return EP_Iallgather(s, 1, MPI_INT, r, 1, MPI_INT, comm, q);
                 });
               }});
  v.push_back({"EP_Iallgatherv", EP_ERR_ARG, [=](bool bad, int) {
                 return nb(bad, [=](EP_Request* q) {
                   return EP_Iallgatherv(s, 1, MPI_INT, r, cnt, dsp, MPI_INT, comm, q);
                 });
               }});
  v.push_back({"EP_Iscatter", EP_ERR_BUFFER, [=](bool bad, int e) {
                 EP_Request rq = EP_REQUEST_NULL;
                 return settle(
                     EP_Iscatter(bad ? nullptr : s, 1, MPI_INT, r, 1, MPI_INT, e, comm, &rq), &rq);
               }});
  v.push_back({"EP_Iscatterv", EP_ERR_ARG, [=](bool bad, int e) {
                 return nb(bad, [=](EP_Request* q) {
                   return EP_Iscatterv(s, cnt, dsp, MPI_INT, r, 1, MPI_INT, e, comm, q);
                 });
               }});
  v.push_back({"EP_Ialltoall", EP_ERR_ARG, [=](bool bad, int) {
                 return nb(bad, [=](EP_Request* q) {
                   return EP_Ialltoall(s, 1, MPI_INT, r, 1, MPI_INT, comm, q);
                 });
               }});
  v.push_back({"EP_Ialltoallv", EP_ERR_ARG, [=](bool bad, int) {
                 return nb(bad, [=](EP_Request* q) {
                   return EP_Ialltoallv(s, cnt, dsp, MPI_INT, r, cnt, dsp, MPI_INT, comm, q);
                 });
               }});
  v.push_back({"EP_Ialltoallw", EP_ERR_ARG, [=, &displs](bool bad, int) {
                 std::vector<int> bd(displs.size());
                 for (size_t i = 0; i < bd.size(); ++i) bd[i] = displs[i] * 4;
                 return nb(bad, [=](EP_Request* q) {
                   return EP_Ialltoallw(s, cnt, bd.data(), ty, r, cnt, bd.data(), ty, comm, q);
                 });
               }});
  v.push_back({"EP_Ireduce_scatter", EP_ERR_ARG, [=](bool bad, int) {
                 return nb(bad, [=](EP_Request* q) {
                   return EP_Ireduce_scatter(s, r, cnt, MPI_INT, MPI_SUM, comm, q);
                 });
               }});
  v.push_back({"EP_Ireduce_scatter_block", EP_ERR_ARG, [=](bool bad, int) {
                 return nb(bad, [=](EP_Request* q) {
                   return EP_Ireduce_scatter_block(s, r, 1, MPI_INT, MPI_SUM, comm, q);
                 });
               }});
  v.push_back({"EP_Iscan", EP_ERR_ARG, [=](bool bad, int) {
                 return nb(bad, [=](EP_Request* q) {
                   return EP_Iscan(s, r, 1, MPI_INT, MPI_SUM, comm, q);
                 });
               }});
  v.push_back({"EP_Iexscan", EP_ERR_ARG, [=](bool bad, int) {
                 return nb(bad, [=](EP_Request* q) {
                   return EP_Iexscan(s, r, 1, MPI_INT, MPI_SUM, comm, q);
                 });
               }});
  (void)me;
  return v;
}

class Erroneous : public ::testing::TestWithParam<Lay> {};

TEST_P(Erroneous, EachRankInTurnReturnsItsErrorAndNobodyHangs) {
  MatOp mop;
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    std::vector<int> sb(static_cast<size_t>(2000 + n)), rb(sb.size(), 0);
    for (size_t i = 0; i < sb.size(); ++i) sb[i] = c.me * 1000 + static_cast<int>(i);
    std::vector<int> ones(static_cast<size_t>(n), 1), displs(static_cast<size_t>(n));
    for (int q = 0; q < n; ++q) displs[static_cast<size_t>(q)] = q;
    std::vector<MPI_Datatype> types(static_cast<size_t>(n), MPI_INT);
    std::vector<int> mat(8);
    const ep_test::Mat m = ep_coll_test::mat_in(c.me, 0);
    for (int i = 0; i < 4; ++i) mat[static_cast<size_t>(i)] = m[static_cast<size_t>(i)];
    const std::vector<Case> cases = intra_cases(c, sb, rb, ones, displs, types, mop, mat);
    for (const Case& k : cases) {
      for (int e = 0; e < n; ++e) {
        const std::string what =
            c.what + " " + k.call + " erroneous rank " + std::to_string(e) + " at rank " +
            std::to_string(c.rank);
        expect_outcome(k.run(c.rank == e, e), c.rank == e, k, what);
        expect_intra_works(c, what);
      }
    }
  });
}

// A valid root's broadcast reaches every valid endpoint when another one fails.
TEST_P(Erroneous, ValidEndpointsGetTheBroadcast) {
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    for (int e = 0; e < n; ++e) {
      const int root = (e + 1) % n;
      if (root == e) continue;
      int v = c.rank == root ? 4242 + e : -1;
      const int rc = EP_Bcast(c.rank == e ? nullptr : &v, 1, MPI_INT, root, c.comm);
      const std::string what = c.what + " erroneous rank " + std::to_string(e);
      if (c.rank == e) {
        EXPECT_EQ(rc, EP_ERR_BUFFER) << what;
      } else {
        EXPECT_EQ(rc, EP_SUCCESS) << what;
        EXPECT_EQ(v, 4242 + e) << what;
      }
      expect_intra_works(c, what);
    }
  });
}

// Errors in the arguments that must agree (a root out of range, MPI_OP_NULL), made at an
// endpoint whose process holds another endpoint of the communicator.
TEST_P(Erroneous, SharedArgumentErrorsWithAProcessMate) {
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    std::vector<int> s(static_cast<size_t>(n), c.me), r(static_cast<size_t>(n), 0);
    for (int e = 0; e < n; ++e) {
      if (!has_mate(c, e)) continue;
      const bool bad = c.rank == e;
      const int root = (e + 1) % n;
      const std::string what = c.what + " erroneous rank " + std::to_string(e);
      int rc = EP_Bcast(s.data(), 1, MPI_INT, bad ? n + 3 : root, c.comm);
      EXPECT_EQ(rc, bad ? EP_ERR_ROOT : EP_SUCCESS) << what << " EP_Bcast";
      expect_intra_works(c, what);
      rc = EP_Reduce(s.data(), r.data(), 1, MPI_INT, bad ? MPI_OP_NULL : MPI_SUM, root, c.comm);
      EXPECT_EQ(rc, bad ? EP_ERR_OP : EP_SUCCESS) << what << " EP_Reduce";
      expect_intra_works(c, what);
      rc = EP_Allreduce(s.data(), r.data(), 1, MPI_INT, bad ? MPI_OP_NULL : MPI_SUM, c.comm);
      EXPECT_EQ(rc, bad ? EP_ERR_OP : EP_SUCCESS) << what << " EP_Allreduce";
      expect_intra_works(c, what);
      rc = EP_Allreduce(s.data(), r.data(), bad ? -1 : 1, MPI_INT, MPI_SUM, c.comm);
      EXPECT_EQ(rc, bad ? EP_ERR_COUNT : EP_SUCCESS) << what << " EP_Allreduce";
      expect_intra_works(c, what);
      rc = EP_Gather(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, bad ? -1 : root, c.comm);
      EXPECT_EQ(rc, bad ? EP_ERR_ROOT : EP_SUCCESS) << what << " EP_Gather";
      expect_intra_works(c, what);
      EP_Request rq = EP_REQUEST_NULL;
      rc = settle(EP_Iscatter(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, bad ? EP_ROOT : root,
                              c.comm, &rq),
                  &rq);
      EXPECT_EQ(rc, bad ? EP_ERR_ROOT : EP_SUCCESS) << what << " EP_Iscatter";
      expect_intra_works(c, what);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Layouts, Erroneous, ::testing::Values(Lay::kGrouped, Lay::kInterleaved,
                                                           Lay::kWideInterleaved),
                         [](const ::testing::TestParamInfo<Lay>& i) {
                           return std::string(ep_coll_test::lay_name(i.param));
                         });

// ---- Intercommunicators ------------------------------------------------------------------

// The still-usable check: each group's Allreduce is the other group's sum.
void expect_inter_works(const IC& c, const std::string& what) {
  int s = c.me + 1, r = -1;
  ASSERT_EQ(EP_Allreduce(&s, &r, 1, MPI_INT, MPI_SUM, c.inter), EP_SUCCESS) << what;
  int e = 0;
  for (int w : c.rmem) e += w + 1;
  EXPECT_EQ(r, e) << what << ": the next Allreduce is wrong";
}

class ErroneousInter : public ::testing::TestWithParam<Shape> {};

TEST_P(ErroneousInter, EachRankInTurnReturnsItsErrorAndNobodyHangs) {
  run_inter(GetParam(), [&](const IC& c) {
    const int big = c.lsize + c.rsize;
    std::vector<int> sb(static_cast<size_t>(4 * big), c.me), rb(sb.size(), 0);
    std::vector<int> ones(static_cast<size_t>(big), 1), displs(static_cast<size_t>(big));
    for (int q = 0; q < big; ++q) displs[static_cast<size_t>(q)] = q;
    int* s = sb.data();
    int* r = rb.data();
    const int* cnt = ones.data();
    const int* dsp = displs.data();
    EP_Comm comm = c.inter;
    // Rooted at rank rr of group g; `bad` per endpoint.
    // `rooted`: at the rest of the root's group (EP_PROC_NULL) no argument is significant,
    // so the bad endpoint's call is valid there.
    struct InterCase {
      const char* call;
      int code;
      bool rooted;
      std::function<int(bool bad, int g, int rr)> run;
    };
    std::vector<InterCase> cases = {
        {"EP_Bcast", EP_ERR_BUFFER, true,
         [&](bool bad, int g, int rr) {
           return EP_Bcast(bad ? nullptr : s, 1, MPI_INT, c.root_arg(g, rr), comm);
         }},
        {"EP_Reduce", EP_ERR_BUFFER, true,
         [&](bool bad, int g, int rr) {
           return EP_Reduce(bad ? nullptr : s, bad ? nullptr : r, 1, MPI_INT, MPI_SUM,
                            c.root_arg(g, rr), comm);
         }},
        {"EP_Gather", EP_ERR_BUFFER, true,
         [&](bool bad, int g, int rr) {
           return EP_Gather(bad ? nullptr : s, 1, MPI_INT, bad ? nullptr : r, 1, MPI_INT,
                            c.root_arg(g, rr), comm);
         }},
        {"EP_Scatter", EP_ERR_BUFFER, true,
         [&](bool bad, int g, int rr) {
           return EP_Scatter(bad ? nullptr : s, 1, MPI_INT, bad ? nullptr : r, 1, MPI_INT,
                             c.root_arg(g, rr), comm);
         }},
        {"EP_Allreduce", EP_ERR_BUFFER, false,
         [&](bool bad, int, int) {
           return EP_Allreduce(bad ? nullptr : s, r, 1, MPI_INT, MPI_SUM, comm);
         }},
        {"EP_Allgather", EP_ERR_BUFFER, false,
         [&](bool bad, int, int) {
           return EP_Allgather(bad ? nullptr : s, 1, MPI_INT, r, 1, MPI_INT, comm);
         }},
        {"EP_Alltoallv", EP_ERR_ARG, false,
         [&](bool bad, int, int) {
           return EP_Alltoallv(s, cnt, dsp, MPI_INT, r, bad ? nullptr : cnt, dsp, MPI_INT, comm);
         }},
        {"EP_Reduce_scatter_block", EP_ERR_BUFFER, false,
         [&](bool bad, int, int) {
           return EP_Reduce_scatter_block(bad ? nullptr : s, r, 1, MPI_INT, MPI_SUM, comm);
         }},
        {"EP_Ibarrier", EP_ERR_ARG, false,
         [&](bool bad, int, int) {
           EP_Request rq = EP_REQUEST_NULL;
           return settle(EP_Ibarrier(comm, bad ? nullptr : &rq), &rq);
         }},
        {"EP_Ibcast", EP_ERR_ARG, false,
         [&](bool bad, int g, int rr) {
           EP_Request rq = EP_REQUEST_NULL;
           return settle(EP_Ibcast(s, 1, MPI_INT, c.root_arg(g, rr), comm, bad ? nullptr : &rq),
                         &rq);
         }},
        {"EP_Iallreduce", EP_ERR_ARG, false,
         [&](bool bad, int, int) {
           EP_Request rq = EP_REQUEST_NULL;
           return settle(EP_Iallreduce(s, r, 1, MPI_INT, MPI_SUM, comm, bad ? nullptr : &rq),
                         &rq);
         }},
    };
    // Every endpoint of both groups in turn: (group, rank) pairs.
    for (const InterCase& k : cases) {
      for (int g = 0; g < 2; ++g) {
        const int gsize = c.colour == g ? c.lsize : c.rsize;
        for (int e = 0; e < gsize; ++e) {
          // The erroneous endpoint is rank e of group g; the root is rank 0 of group g
          // (e = 0: the root itself is erroneous).
          const bool bad = c.colour == g && c.lrank == e;
          const bool significant = !k.rooted || c.colour != g || c.lrank == 0;
          const std::string what = c.what + " " + k.call + " erroneous rank " +
                                   std::to_string(e) + " of group " + std::to_string(g);
          Case plain{k.call, k.code, nullptr};
          expect_outcome(k.run(bad, g, 0), bad && significant, plain, what);
          expect_inter_works(c, what);
        }
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, ErroneousInter,
                         ::testing::Values(Shape::kSharedGrouped, Shape::kProcsGrouped),
                         [](const ::testing::TestParamInfo<Shape>& i) {
                           return std::string(ep_coll_test::shape_name(i.param));
                         });

}  // namespace
