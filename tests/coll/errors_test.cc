// Wrong arguments to collectives, with EP_ERRORS_RETURN (set by run_endpoints on
// the world communicator and inherited by the split / intercommunicators made from it):
//  * bad root (-1, size, EP_ROOT on an intracommunicator) -> EP_ERR_ROOT;
//  * negative count (and negative entries in v-variant count arrays) -> EP_ERR_COUNT;
//  * MPI_OP_NULL -> EP_ERR_OP;
//  * MPI_DATATYPE_NULL and an uncommitted derived type -> EP_ERR_TYPE;
//  * EP_Scan / EP_Exscan (which MPI does not define there) on an intercommunicator ->
//    EP_ERR_COMM; EP_COMM_NULL -> EP_ERR_COMM;
//  * a NULL request pointer to a nonblocking collective -> EP_ERR_ARG;
//  * the same for every other nonblocking collective and EP_Alltoallw (and for
//    EP_Alltoallw: a NULL datatype array -> EP_ERR_ARG, one holding MPI_DATATYPE_NULL ->
//    EP_ERR_TYPE).
// Every endpoint passes the same bad argument, so every endpoint must get the error (none
// may hang waiting for the others), EP_Error_string must name the failing call, and the
// communicator must still work afterwards (a checked Allreduce/Bcast after each batch).
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tests/coll/coll_util.h"
#include "tests/common/harness.h"

namespace {

using ep_coll_test::Ctx;
using ep_coll_test::Lay;
using ep_coll_test::MatOp;
using ep_coll_test::run_layout;
using ep_coll_test::World;
using ep_test::last_error;

[[maybe_unused]] const bool kWatchdog = ep_coll_test::install_watchdog();

// Expects `rc == code` and that the error text names `call`.
void expect_error(int rc, int code, const char* call, const std::string& what) {
  EXPECT_EQ(rc, code) << what << ": " << call << " returned " << rc << " ("
                      << (rc == EP_SUCCESS ? std::string("success") : last_error(rc)) << ")";
  if (rc == code && code != EP_SUCCESS) {
    const std::string msg = last_error(rc);
    EXPECT_NE(msg.find(call), std::string::npos)
        << what << ": the error text does not name " << call << ": \"" << msg << "\"";
  }
}

// The communicator still works: a checked Allreduce and Bcast.
void expect_still_works(const Ctx& c, int salt) {
  int s = c.me + salt, r = -1;
  EXPECT_EQ(EP_Allreduce(&s, &r, 1, MPI_INT, MPI_SUM, c.comm), EP_SUCCESS) << c.what;
  int e = 0;
  for (int w : c.members) e += w + salt;
  EXPECT_EQ(r, e) << c.what << ": communicator broken after errors";
  const int root = salt % c.size;
  int b = c.rank == root ? c.me * 3 + salt : -1;
  EXPECT_EQ(EP_Bcast(&b, 1, MPI_INT, root, c.comm), EP_SUCCESS) << c.what;
  EXPECT_EQ(b, c.w(root) * 3 + salt) << c.what << ": communicator broken after errors";
}

class Errors : public ::testing::TestWithParam<Lay> {};

TEST_P(Errors, BadRoot) {
  MatOp mop;
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    std::vector<int> buf(static_cast<size_t>(4 * n) + 4, 1), rb(buf.size(), 0);
    std::vector<int> counts(static_cast<size_t>(n), 1), displs(static_cast<size_t>(n));
    for (int q = 0; q < n; ++q) displs[static_cast<size_t>(q)] = q;
    int salt = 0;
    for (int root : {-1, n, n + 5, EP_ROOT}) {
      const std::string w = c.what + " root " + std::to_string(root);
      expect_error(EP_Bcast(buf.data(), 1, MPI_INT, root, c.comm), EP_ERR_ROOT, "EP_Bcast", w);
      expect_error(EP_Reduce(buf.data(), rb.data(), 1, MPI_INT, MPI_SUM, root, c.comm),
                   EP_ERR_ROOT, "EP_Reduce", w);
      expect_error(EP_Reduce(buf.data(), rb.data(), 1, mop.type, mop.op, root, c.comm),
                   EP_ERR_ROOT, "EP_Reduce", w);
      expect_error(EP_Gather(buf.data(), 1, MPI_INT, rb.data(), 1, MPI_INT, root, c.comm),
                   EP_ERR_ROOT, "EP_Gather", w);
      expect_error(EP_Gatherv(buf.data(), 1, MPI_INT, rb.data(), counts.data(), displs.data(),
                              MPI_INT, root, c.comm),
                   EP_ERR_ROOT, "EP_Gatherv", w);
      expect_error(EP_Scatter(buf.data(), 1, MPI_INT, rb.data(), 1, MPI_INT, root, c.comm),
                   EP_ERR_ROOT, "EP_Scatter", w);
      expect_error(EP_Scatterv(buf.data(), counts.data(), displs.data(), MPI_INT, rb.data(), 1,
                               MPI_INT, root, c.comm),
                   EP_ERR_ROOT, "EP_Scatterv", w);
      EP_Request rq = EP_REQUEST_NULL;
      expect_error(EP_Ibcast(buf.data(), 1, MPI_INT, root, c.comm, &rq), EP_ERR_ROOT, "EP_Ibcast", w);
      EXPECT_EQ(rq, EP_REQUEST_NULL) << w << ": a failed call returned a request";
      expect_error(EP_Ireduce(buf.data(), rb.data(), 1, MPI_INT, MPI_SUM, root, c.comm, &rq),
                   EP_ERR_ROOT, "EP_Ireduce", w);
      EXPECT_EQ(rq, EP_REQUEST_NULL) << w << ": a failed call returned a request";
      expect_still_works(c, ++salt);
    }
  });
}

TEST_P(Errors, NegativeCount) {
  MatOp mop;
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    std::vector<int> buf(static_cast<size_t>(4 * n) + 4, 1), rb(buf.size(), 0);
    std::vector<int> ones(static_cast<size_t>(n), 1), displs(static_cast<size_t>(n));
    for (int q = 0; q < n; ++q) displs[static_cast<size_t>(q)] = q;
    std::vector<int> neg = ones;
    neg[static_cast<size_t>(n - 1)] = -1;  // one negative entry (the same everywhere)
    const int root = n - 1;
    const std::string& w = c.what;
    EP_Request rq = EP_REQUEST_NULL;
    expect_error(EP_Bcast(buf.data(), -1, MPI_INT, root, c.comm), EP_ERR_COUNT, "EP_Bcast", w);
    expect_error(EP_Reduce(buf.data(), rb.data(), -1, MPI_INT, MPI_SUM, root, c.comm), EP_ERR_COUNT,
                 "EP_Reduce", w);
    expect_error(EP_Allreduce(buf.data(), rb.data(), -2, MPI_INT, MPI_SUM, c.comm), EP_ERR_COUNT,
                 "EP_Allreduce", w);
    expect_error(EP_Allreduce(buf.data(), rb.data(), -1, mop.type, mop.op, c.comm), EP_ERR_COUNT,
                 "EP_Allreduce", w);
    expect_error(EP_Gather(buf.data(), -1, MPI_INT, rb.data(), -1, MPI_INT, root, c.comm),
                 EP_ERR_COUNT, "EP_Gather", w);
    expect_error(EP_Gatherv(buf.data(), -1, MPI_INT, rb.data(), neg.data(), displs.data(), MPI_INT,
                            root, c.comm),
                 EP_ERR_COUNT, "EP_Gatherv", w);
    expect_error(EP_Scatter(buf.data(), -1, MPI_INT, rb.data(), -1, MPI_INT, root, c.comm),
                 EP_ERR_COUNT, "EP_Scatter", w);
    expect_error(EP_Scatterv(buf.data(), neg.data(), displs.data(), MPI_INT, rb.data(), -1, MPI_INT,
                             root, c.comm),
                 EP_ERR_COUNT, "EP_Scatterv", w);
    expect_error(EP_Allgather(buf.data(), -1, MPI_INT, rb.data(), -1, MPI_INT, c.comm),
                 EP_ERR_COUNT, "EP_Allgather", w);
    expect_error(EP_Allgatherv(buf.data(), 1, MPI_INT, rb.data(), neg.data(), displs.data(),
                               MPI_INT, c.comm),
                 EP_ERR_COUNT, "EP_Allgatherv", w);
    expect_error(EP_Alltoall(buf.data(), -1, MPI_INT, rb.data(), -1, MPI_INT, c.comm),
                 EP_ERR_COUNT, "EP_Alltoall", w);
    expect_error(EP_Alltoallv(buf.data(), neg.data(), displs.data(), MPI_INT, rb.data(),
                              neg.data(), displs.data(), MPI_INT, c.comm),
                 EP_ERR_COUNT, "EP_Alltoallv", w);
    expect_error(EP_Reduce_scatter(buf.data(), rb.data(), neg.data(), MPI_INT, MPI_SUM, c.comm),
                 EP_ERR_COUNT, "EP_Reduce_scatter", w);
    expect_error(EP_Reduce_scatter_block(buf.data(), rb.data(), -1, MPI_INT, MPI_SUM, c.comm),
                 EP_ERR_COUNT, "EP_Reduce_scatter_block", w);
    expect_error(EP_Scan(buf.data(), rb.data(), -1, MPI_INT, MPI_SUM, c.comm), EP_ERR_COUNT,
                 "EP_Scan", w);
    expect_error(EP_Exscan(buf.data(), rb.data(), -1, MPI_INT, MPI_SUM, c.comm), EP_ERR_COUNT,
                 "EP_Exscan", w);
    expect_error(EP_Ibcast(buf.data(), -1, MPI_INT, root, c.comm, &rq), EP_ERR_COUNT, "EP_Ibcast", w);
    expect_error(EP_Ireduce(buf.data(), rb.data(), -1, MPI_INT, MPI_SUM, root, c.comm, &rq),
                 EP_ERR_COUNT, "EP_Ireduce", w);
    expect_error(EP_Iallreduce(buf.data(), rb.data(), -1, MPI_INT, MPI_SUM, c.comm, &rq),
                 EP_ERR_COUNT, "EP_Iallreduce", w);
    EXPECT_EQ(rq, EP_REQUEST_NULL) << w << ": a failed call returned a request";
    expect_still_works(c, 7);
  });
}

TEST_P(Errors, NullOp) {
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    std::vector<int> buf(static_cast<size_t>(2 * n) + 2, 1), rb(buf.size(), 0);
    std::vector<int> ones(static_cast<size_t>(n), 1);
    const std::string& w = c.what;
    EP_Request rq = EP_REQUEST_NULL;
    expect_error(EP_Reduce(buf.data(), rb.data(), 1, MPI_INT, MPI_OP_NULL, 0, c.comm), EP_ERR_OP,
                 "EP_Reduce", w);
    expect_error(EP_Allreduce(buf.data(), rb.data(), 1, MPI_INT, MPI_OP_NULL, c.comm), EP_ERR_OP,
                 "EP_Allreduce", w);
    expect_error(EP_Reduce_scatter(buf.data(), rb.data(), ones.data(), MPI_INT, MPI_OP_NULL, c.comm),
                 EP_ERR_OP, "EP_Reduce_scatter", w);
    expect_error(EP_Reduce_scatter_block(buf.data(), rb.data(), 1, MPI_INT, MPI_OP_NULL, c.comm),
                 EP_ERR_OP, "EP_Reduce_scatter_block", w);
    expect_error(EP_Scan(buf.data(), rb.data(), 1, MPI_INT, MPI_OP_NULL, c.comm), EP_ERR_OP,
                 "EP_Scan", w);
    expect_error(EP_Exscan(buf.data(), rb.data(), 1, MPI_INT, MPI_OP_NULL, c.comm), EP_ERR_OP,
                 "EP_Exscan", w);
    expect_error(EP_Ireduce(buf.data(), rb.data(), 1, MPI_INT, MPI_OP_NULL, n - 1, c.comm, &rq),
                 EP_ERR_OP, "EP_Ireduce", w);
    expect_error(EP_Iallreduce(buf.data(), rb.data(), 1, MPI_INT, MPI_OP_NULL, c.comm, &rq),
                 EP_ERR_OP, "EP_Iallreduce", w);
    EXPECT_EQ(rq, EP_REQUEST_NULL) << w << ": a failed call returned a request";
    // In place with a null op, too.
    expect_error(EP_Allreduce(EP_IN_PLACE, rb.data(), 1, MPI_INT, MPI_OP_NULL, c.comm), EP_ERR_OP,
                 "EP_Allreduce", w);
    expect_still_works(c, 3);
  });
}

TEST_P(Errors, NullDatatypeAndNullRequest) {
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    std::vector<int> buf(static_cast<size_t>(6 * n) + 6, 1), rb(buf.size(), 0);
    const std::string& w = c.what;
    expect_error(EP_Bcast(buf.data(), 1, MPI_DATATYPE_NULL, 0, c.comm), EP_ERR_TYPE, "EP_Bcast", w);
    expect_error(EP_Allreduce(buf.data(), rb.data(), 1, MPI_DATATYPE_NULL, MPI_SUM, c.comm),
                 EP_ERR_TYPE, "EP_Allreduce", w);
    expect_error(EP_Allgather(buf.data(), 1, MPI_DATATYPE_NULL, rb.data(), 1, MPI_DATATYPE_NULL,
                              c.comm),
                 EP_ERR_TYPE, "EP_Allgather", w);
    expect_error(EP_Alltoall(buf.data(), 1, MPI_DATATYPE_NULL, rb.data(), 1, MPI_DATATYPE_NULL,
                             c.comm),
                 EP_ERR_TYPE, "EP_Alltoall", w);
    // NULL request pointers.
    expect_error(EP_Ibarrier(c.comm, nullptr), EP_ERR_ARG, "EP_Ibarrier", w);
    expect_error(EP_Ibcast(buf.data(), 1, MPI_INT, 0, c.comm, nullptr), EP_ERR_ARG, "EP_Ibcast", w);
    expect_error(EP_Iallreduce(buf.data(), rb.data(), 1, MPI_INT, MPI_SUM, c.comm, nullptr),
                 EP_ERR_ARG, "EP_Iallreduce", w);
    expect_error(EP_Ireduce(buf.data(), rb.data(), 1, MPI_INT, MPI_SUM, 0, c.comm, nullptr),
                 EP_ERR_ARG, "EP_Ireduce", w);
    expect_still_works(c, 11);
  });
}

// MPI 3.1 (4.1.9): a derived datatype must be committed before it is used in
// communication; libep's datatype check (runtime/datatype.cc describe()) says so too.
TEST_P(Errors, UncommittedDatatype) {
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    std::vector<int> buf(static_cast<size_t>(6 * n) + 6, 1), rb(buf.size(), 0);
    const std::string& w = c.what;
    // A derived type that was never committed.
    MPI_Datatype unc = MPI_DATATYPE_NULL;
    MPI_Type_contiguous(2, MPI_INT, &unc);
    expect_error(EP_Bcast(buf.data(), 1, unc, n - 1, c.comm), EP_ERR_TYPE, "EP_Bcast", w);
    expect_error(EP_Allgather(buf.data(), 1, unc, rb.data(), 1, unc, c.comm), EP_ERR_TYPE,
                 "EP_Allgather", w);
    MPI_Type_free(&unc);
    expect_still_works(c, 13);
  });
}

// EP_IN_PLACE where MPI 3.1 forbids it is EP_ERR_BUFFER (API.md).  Each call below is
// erroneous at every endpoint (for the rooted ones: the root passes EP_IN_PLACE where it
// is forbidden at the root, the others pass it where only the root may), so every
// endpoint must return the error at once, none may write anything, and the
// communicator must still work.
TEST_P(Errors, InPlaceWhereMpiForbidsIt) {
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    const size_t len = static_cast<size_t>(4 * n) + 4;
    std::vector<int> buf(len), rb(len);
    for (size_t i = 0; i < len; ++i) {
      buf[i] = c.me * 1000 + static_cast<int>(i);
      rb[i] = -c.me - 1;
    }
    const std::vector<int> buf0 = buf, rb0 = rb;
    std::vector<int> ones(static_cast<size_t>(n), 1), displs(static_cast<size_t>(n));
    for (int q = 0; q < n; ++q) displs[static_cast<size_t>(q)] = q;
    const int root = n - 1;
    const bool at_root = c.rank == root;
    void* ip = EP_IN_PLACE;
    const std::string& w = c.what;
    EP_Request rq = EP_REQUEST_NULL;
    expect_error(EP_Allreduce(buf.data(), ip, 1, MPI_INT, MPI_SUM, c.comm), EP_ERR_BUFFER,
                 "EP_Allreduce", w);
    expect_error(EP_Allreduce(ip, ip, 1, MPI_INT, MPI_SUM, c.comm), EP_ERR_BUFFER, "EP_Allreduce",
                 w);
    expect_error(EP_Iallreduce(buf.data(), ip, 1, MPI_INT, MPI_SUM, c.comm, &rq), EP_ERR_BUFFER,
                 "EP_Iallreduce", w);
    expect_error(EP_Allgather(buf.data(), 1, MPI_INT, ip, 1, MPI_INT, c.comm), EP_ERR_BUFFER,
                 "EP_Allgather", w);
    expect_error(EP_Allgatherv(buf.data(), 1, MPI_INT, ip, ones.data(), displs.data(), MPI_INT,
                               c.comm),
                 EP_ERR_BUFFER, "EP_Allgatherv", w);
    expect_error(EP_Bcast(ip, 1, MPI_INT, root, c.comm), EP_ERR_BUFFER, "EP_Bcast", w);
    expect_error(EP_Ibcast(ip, 1, MPI_INT, root, c.comm, &rq), EP_ERR_BUFFER, "EP_Ibcast", w);
    expect_error(EP_Alltoall(buf.data(), 1, MPI_INT, ip, 1, MPI_INT, c.comm), EP_ERR_BUFFER,
                 "EP_Alltoall", w);
    expect_error(EP_Alltoallv(buf.data(), ones.data(), displs.data(), MPI_INT, ip, ones.data(),
                              displs.data(), MPI_INT, c.comm),
                 EP_ERR_BUFFER, "EP_Alltoallv", w);
    expect_error(EP_Reduce_scatter(buf.data(), ip, ones.data(), MPI_INT, MPI_SUM, c.comm),
                 EP_ERR_BUFFER, "EP_Reduce_scatter", w);
    expect_error(EP_Reduce_scatter_block(buf.data(), ip, 1, MPI_INT, MPI_SUM, c.comm),
                 EP_ERR_BUFFER, "EP_Reduce_scatter_block", w);
    expect_error(EP_Scan(buf.data(), ip, 1, MPI_INT, MPI_SUM, c.comm), EP_ERR_BUFFER, "EP_Scan", w);
    expect_error(EP_Exscan(buf.data(), ip, 1, MPI_INT, MPI_SUM, c.comm), EP_ERR_BUFFER, "EP_Exscan",
                 w);
    // Rooted: the root's receive (or send) buffer, the others' send (or receive) buffer.
    expect_error(EP_Reduce(at_root ? buf.data() : ip, at_root ? ip : rb.data(), 1, MPI_INT,
                           MPI_SUM, root, c.comm),
                 EP_ERR_BUFFER, "EP_Reduce", w);
    expect_error(EP_Ireduce(at_root ? buf.data() : ip, at_root ? ip : rb.data(), 1, MPI_INT,
                            MPI_SUM, root, c.comm, &rq),
                 EP_ERR_BUFFER, "EP_Ireduce", w);
    expect_error(EP_Gather(at_root ? buf.data() : ip, 1, MPI_INT, at_root ? ip : rb.data(), 1,
                           MPI_INT, root, c.comm),
                 EP_ERR_BUFFER, "EP_Gather", w);
    expect_error(EP_Gatherv(at_root ? buf.data() : ip, 1, MPI_INT, at_root ? ip : rb.data(),
                            ones.data(), displs.data(), MPI_INT, root, c.comm),
                 EP_ERR_BUFFER, "EP_Gatherv", w);
    expect_error(EP_Scatter(at_root ? ip : buf.data(), 1, MPI_INT, at_root ? rb.data() : ip, 1,
                            MPI_INT, root, c.comm),
                 EP_ERR_BUFFER, "EP_Scatter", w);
    expect_error(EP_Scatterv(at_root ? ip : buf.data(), ones.data(), displs.data(), MPI_INT,
                             at_root ? rb.data() : ip, 1, MPI_INT, root, c.comm),
                 EP_ERR_BUFFER, "EP_Scatterv", w);
    EXPECT_EQ(rq, EP_REQUEST_NULL) << w << ": a failed call returned a request";
    EXPECT_EQ(buf, buf0) << w << ": a failed call wrote its send buffer";
    EXPECT_EQ(rb, rb0) << w << ": a failed call wrote a receive buffer";
    expect_still_works(c, 17);
  });
}

// Every other nonblocking collective and EP_Alltoallw: bad root,
// negative counts, null and uncommitted datatypes (an Alltoallw type array that is NULL
// or holds MPI_DATATYPE_NULL), MPI_OP_NULL, EP_IN_PLACE where MPI forbids it, and a NULL
// request pointer.  Every endpoint fails at once, returns no request and writes nothing.
TEST_P(Errors, OtherNonblockingCollectivesAndAlltoallwRejectWrongArguments) {
  MatOp mop;
  run_layout(GetParam(), [&](const Ctx& c) {
    const int n = c.size;
    const size_t len = static_cast<size_t>(4 * n) + 4;
    std::vector<int> buf(len), rb(len);
    for (size_t i = 0; i < len; ++i) {
      buf[i] = c.me * 1000 + static_cast<int>(i);
      rb[i] = -c.me - 1;
    }
    const std::vector<int> buf0 = buf, rb0 = rb;
    std::vector<int> ones(static_cast<size_t>(n), 1), displs(static_cast<size_t>(n)),
        bdispls(static_cast<size_t>(n));
    for (int q = 0; q < n; ++q) {
      displs[static_cast<size_t>(q)] = q;
      bdispls[static_cast<size_t>(q)] = q * static_cast<int>(sizeof(int));
    }
    std::vector<int> neg = ones;
    neg[static_cast<size_t>(n - 1)] = -1;
    std::vector<MPI_Datatype> types(static_cast<size_t>(n), MPI_INT), bad_types = types;
    bad_types[static_cast<size_t>(n - 1)] = MPI_DATATYPE_NULL;
    MPI_Datatype unc = MPI_DATATYPE_NULL;
    MPI_Type_contiguous(2, MPI_INT, &unc);
    const int* s = buf.data();
    int* r = rb.data();
    void* ip = EP_IN_PLACE;
    const std::string& w = c.what;
    EP_Request rq = EP_REQUEST_NULL;
    const int root = n - 1;
    const bool at_root = c.rank == root;
    // Bad roots.
    for (int bad : {-1, n, EP_ROOT}) {
      const std::string wr = w + " root " + std::to_string(bad);
      expect_error(EP_Igather(s, 1, MPI_INT, r, 1, MPI_INT, bad, c.comm, &rq), EP_ERR_ROOT,
                   "EP_Igather", wr);
      expect_error(EP_Igatherv(s, 1, MPI_INT, r, ones.data(), displs.data(), MPI_INT, bad, c.comm,
                               &rq),
                   EP_ERR_ROOT, "EP_Igatherv", wr);
      expect_error(EP_Iscatter(s, 1, MPI_INT, r, 1, MPI_INT, bad, c.comm, &rq), EP_ERR_ROOT,
                   "EP_Iscatter", wr);
      expect_error(EP_Iscatterv(s, ones.data(), displs.data(), MPI_INT, r, 1, MPI_INT, bad, c.comm,
                                &rq),
                   EP_ERR_ROOT, "EP_Iscatterv", wr);
    }
    // Negative counts (and a negative entry of a count array).
    expect_error(EP_Igather(s, -1, MPI_INT, r, -1, MPI_INT, root, c.comm, &rq), EP_ERR_COUNT,
                 "EP_Igather", w);
    expect_error(EP_Igatherv(s, -1, MPI_INT, r, neg.data(), displs.data(), MPI_INT, root, c.comm,
                             &rq),
                 EP_ERR_COUNT, "EP_Igatherv", w);
    expect_error(EP_Iscatter(s, -1, MPI_INT, r, -1, MPI_INT, root, c.comm, &rq), EP_ERR_COUNT,
                 "EP_Iscatter", w);
    expect_error(EP_Iscatterv(s, neg.data(), displs.data(), MPI_INT, r, -1, MPI_INT, root, c.comm,
                              &rq),
                 EP_ERR_COUNT, "EP_Iscatterv", w);
    expect_error(EP_Iallgather(s, -1, MPI_INT, r, -1, MPI_INT, c.comm, &rq), EP_ERR_COUNT,
                 "EP_Iallgather", w);
    expect_error(EP_Iallgatherv(s, 1, MPI_INT, r, neg.data(), displs.data(), MPI_INT, c.comm, &rq),
                 EP_ERR_COUNT, "EP_Iallgatherv", w);
    expect_error(EP_Ialltoall(s, -1, MPI_INT, r, -1, MPI_INT, c.comm, &rq), EP_ERR_COUNT,
                 "EP_Ialltoall", w);
    expect_error(EP_Ialltoallv(s, neg.data(), displs.data(), MPI_INT, r, neg.data(), displs.data(),
                               MPI_INT, c.comm, &rq),
                 EP_ERR_COUNT, "EP_Ialltoallv", w);
    expect_error(EP_Alltoallw(s, neg.data(), bdispls.data(), types.data(), r, neg.data(),
                              bdispls.data(), types.data(), c.comm),
                 EP_ERR_COUNT, "EP_Alltoallw", w);
    expect_error(EP_Ialltoallw(s, ones.data(), bdispls.data(), types.data(), r, neg.data(),
                               bdispls.data(), types.data(), c.comm, &rq),
                 EP_ERR_COUNT, "EP_Ialltoallw", w);
    expect_error(EP_Ireduce_scatter(s, r, neg.data(), MPI_INT, MPI_SUM, c.comm, &rq), EP_ERR_COUNT,
                 "EP_Ireduce_scatter", w);
    expect_error(EP_Ireduce_scatter_block(s, r, -1, MPI_INT, MPI_SUM, c.comm, &rq), EP_ERR_COUNT,
                 "EP_Ireduce_scatter_block", w);
    expect_error(EP_Iscan(s, r, -1, MPI_INT, MPI_SUM, c.comm, &rq), EP_ERR_COUNT, "EP_Iscan", w);
    expect_error(EP_Iexscan(s, r, -1, MPI_INT, MPI_SUM, c.comm, &rq), EP_ERR_COUNT, "EP_Iexscan",
                 w);
    // Null and uncommitted datatypes.
    expect_error(EP_Iallgather(s, 1, MPI_DATATYPE_NULL, r, 1, MPI_INT, c.comm, &rq), EP_ERR_TYPE,
                 "EP_Iallgather", w);
    expect_error(EP_Ialltoall(s, 1, MPI_INT, r, 1, unc, c.comm, &rq), EP_ERR_TYPE, "EP_Ialltoall",
                 w);
    expect_error(EP_Igather(s, 1, unc, r, 1, MPI_INT, root, c.comm, &rq), EP_ERR_TYPE, "EP_Igather",
                 w);
    expect_error(EP_Iscan(s, r, 1, MPI_DATATYPE_NULL, MPI_SUM, c.comm, &rq), EP_ERR_TYPE,
                 "EP_Iscan", w);
    expect_error(EP_Ireduce_scatter_block(s, r, 1, unc, MPI_SUM, c.comm, &rq), EP_ERR_TYPE,
                 "EP_Ireduce_scatter_block", w);
    expect_error(EP_Alltoallw(s, ones.data(), bdispls.data(), bad_types.data(), r, ones.data(),
                              bdispls.data(), types.data(), c.comm),
                 EP_ERR_TYPE, "EP_Alltoallw", w);
    expect_error(EP_Ialltoallw(s, ones.data(), bdispls.data(), types.data(), r, ones.data(),
                               bdispls.data(), bad_types.data(), c.comm, &rq),
                 EP_ERR_TYPE, "EP_Ialltoallw", w);
    expect_error(EP_Alltoallw(s, ones.data(), bdispls.data(), nullptr, r, ones.data(),
                              bdispls.data(), types.data(), c.comm),
                 EP_ERR_ARG, "EP_Alltoallw", w);
    expect_error(EP_Ialltoallw(s, ones.data(), nullptr, types.data(), r, ones.data(),
                               bdispls.data(), types.data(), c.comm, &rq),
                 EP_ERR_ARG, "EP_Ialltoallw", w);
    // MPI_OP_NULL.
    expect_error(EP_Ireduce_scatter(s, r, ones.data(), MPI_INT, MPI_OP_NULL, c.comm, &rq),
                 EP_ERR_OP, "EP_Ireduce_scatter", w);
    expect_error(EP_Ireduce_scatter_block(s, r, 1, mop.type, MPI_OP_NULL, c.comm, &rq), EP_ERR_OP,
                 "EP_Ireduce_scatter_block", w);
    expect_error(EP_Iscan(s, r, 1, MPI_INT, MPI_OP_NULL, c.comm, &rq), EP_ERR_OP, "EP_Iscan", w);
    expect_error(EP_Iexscan(ip, r, 1, MPI_INT, MPI_OP_NULL, c.comm, &rq), EP_ERR_OP, "EP_Iexscan",
                 w);
    // EP_IN_PLACE where MPI forbids it (rooted: the root's other buffer, the others' own).
    expect_error(EP_Iallgather(s, 1, MPI_INT, ip, 1, MPI_INT, c.comm, &rq), EP_ERR_BUFFER,
                 "EP_Iallgather", w);
    expect_error(EP_Iallgatherv(s, 1, MPI_INT, ip, ones.data(), displs.data(), MPI_INT, c.comm,
                                &rq),
                 EP_ERR_BUFFER, "EP_Iallgatherv", w);
    expect_error(EP_Ialltoall(s, 1, MPI_INT, ip, 1, MPI_INT, c.comm, &rq), EP_ERR_BUFFER,
                 "EP_Ialltoall", w);
    expect_error(EP_Ialltoallv(ip, ones.data(), displs.data(), MPI_INT, ip, ones.data(),
                               displs.data(), MPI_INT, c.comm, &rq),
                 EP_ERR_BUFFER, "EP_Ialltoallv", w);
    expect_error(EP_Alltoallw(s, ones.data(), bdispls.data(), types.data(), ip, ones.data(),
                              bdispls.data(), types.data(), c.comm),
                 EP_ERR_BUFFER, "EP_Alltoallw", w);
    expect_error(EP_Ialltoallw(ip, ones.data(), bdispls.data(), types.data(), ip, ones.data(),
                               bdispls.data(), types.data(), c.comm, &rq),
                 EP_ERR_BUFFER, "EP_Ialltoallw", w);
    expect_error(EP_Ireduce_scatter(s, ip, ones.data(), MPI_INT, MPI_SUM, c.comm, &rq),
                 EP_ERR_BUFFER, "EP_Ireduce_scatter", w);
    expect_error(EP_Ireduce_scatter_block(ip, ip, 1, MPI_INT, MPI_SUM, c.comm, &rq), EP_ERR_BUFFER,
                 "EP_Ireduce_scatter_block", w);
    expect_error(EP_Iscan(s, ip, 1, MPI_INT, MPI_SUM, c.comm, &rq), EP_ERR_BUFFER, "EP_Iscan", w);
    expect_error(EP_Iexscan(ip, ip, 1, MPI_INT, MPI_SUM, c.comm, &rq), EP_ERR_BUFFER, "EP_Iexscan",
                 w);
    expect_error(EP_Igather(at_root ? s : ip, 1, MPI_INT, at_root ? ip : r, 1, MPI_INT, root, c.comm,
                            &rq),
                 EP_ERR_BUFFER, "EP_Igather", w);
    expect_error(EP_Igatherv(at_root ? s : ip, 1, MPI_INT, at_root ? ip : r, ones.data(),
                             displs.data(), MPI_INT, root, c.comm, &rq),
                 EP_ERR_BUFFER, "EP_Igatherv", w);
    expect_error(EP_Iscatter(at_root ? ip : s, 1, MPI_INT, at_root ? r : ip, 1, MPI_INT, root,
                             c.comm, &rq),
                 EP_ERR_BUFFER, "EP_Iscatter", w);
    expect_error(EP_Iscatterv(at_root ? ip : s, ones.data(), displs.data(), MPI_INT,
                              at_root ? r : ip, 1, MPI_INT, root, c.comm, &rq),
                 EP_ERR_BUFFER, "EP_Iscatterv", w);
    // NULL request pointers.
    expect_error(EP_Igather(s, 1, MPI_INT, r, 1, MPI_INT, 0, c.comm, nullptr), EP_ERR_ARG,
                 "EP_Igather", w);
    expect_error(EP_Igatherv(s, 1, MPI_INT, r, ones.data(), displs.data(), MPI_INT, 0, c.comm,
                             nullptr),
                 EP_ERR_ARG, "EP_Igatherv", w);
    expect_error(EP_Iscatter(s, 1, MPI_INT, r, 1, MPI_INT, 0, c.comm, nullptr), EP_ERR_ARG,
                 "EP_Iscatter", w);
    expect_error(EP_Iscatterv(s, ones.data(), displs.data(), MPI_INT, r, 1, MPI_INT, 0, c.comm,
                              nullptr),
                 EP_ERR_ARG, "EP_Iscatterv", w);
    expect_error(EP_Iallgather(s, 1, MPI_INT, r, 1, MPI_INT, c.comm, nullptr), EP_ERR_ARG,
                 "EP_Iallgather", w);
    expect_error(EP_Iallgatherv(s, 1, MPI_INT, r, ones.data(), displs.data(), MPI_INT, c.comm,
                                nullptr),
                 EP_ERR_ARG, "EP_Iallgatherv", w);
    expect_error(EP_Ialltoall(s, 1, MPI_INT, r, 1, MPI_INT, c.comm, nullptr), EP_ERR_ARG,
                 "EP_Ialltoall", w);
    expect_error(EP_Ialltoallv(s, ones.data(), displs.data(), MPI_INT, r, ones.data(),
                               displs.data(), MPI_INT, c.comm, nullptr),
                 EP_ERR_ARG, "EP_Ialltoallv", w);
    expect_error(EP_Ialltoallw(s, ones.data(), bdispls.data(), types.data(), r, ones.data(),
                               bdispls.data(), types.data(), c.comm, nullptr),
                 EP_ERR_ARG, "EP_Ialltoallw", w);
    expect_error(EP_Ireduce_scatter(s, r, ones.data(), MPI_INT, MPI_SUM, c.comm, nullptr),
                 EP_ERR_ARG, "EP_Ireduce_scatter", w);
    expect_error(EP_Ireduce_scatter_block(s, r, 1, MPI_INT, MPI_SUM, c.comm, nullptr), EP_ERR_ARG,
                 "EP_Ireduce_scatter_block", w);
    expect_error(EP_Iscan(s, r, 1, MPI_INT, MPI_SUM, c.comm, nullptr), EP_ERR_ARG, "EP_Iscan", w);
    expect_error(EP_Iexscan(s, r, 1, MPI_INT, MPI_SUM, c.comm, nullptr), EP_ERR_ARG, "EP_Iexscan",
                 w);
    MPI_Type_free(&unc);
    EXPECT_EQ(rq, EP_REQUEST_NULL) << w << ": a failed call returned a request";
    EXPECT_EQ(buf, buf0) << w << ": a failed call wrote its send buffer";
    EXPECT_EQ(rb, rb0) << w << ": a failed call wrote a receive buffer";
    expect_still_works(c, 19);
  });
}

INSTANTIATE_TEST_SUITE_P(Layouts, Errors,
                         ::testing::Values(Lay::kGrouped, Lay::kReversed, Lay::kInterleaved),
                         [](const ::testing::TestParamInfo<Lay>& info) {
                           return std::string(ep_coll_test::lay_name(info.param));
                         });

TEST(ErrorsComm, NullCommunicator) {
  int b = 0, r = 0;
  EP_Request rq = EP_REQUEST_NULL;
  EXPECT_EQ(EP_Barrier(EP_COMM_NULL), EP_ERR_COMM);
  EXPECT_EQ(EP_Bcast(&b, 1, MPI_INT, 0, EP_COMM_NULL), EP_ERR_COMM);
  EXPECT_EQ(EP_Allreduce(&b, &r, 1, MPI_INT, MPI_SUM, EP_COMM_NULL), EP_ERR_COMM);
  EXPECT_EQ(EP_Gather(&b, 1, MPI_INT, &r, 1, MPI_INT, 0, EP_COMM_NULL), EP_ERR_COMM);
  EXPECT_EQ(EP_Scan(&b, &r, 1, MPI_INT, MPI_SUM, EP_COMM_NULL), EP_ERR_COMM);
  EXPECT_EQ(EP_Ibarrier(EP_COMM_NULL, &rq), EP_ERR_COMM);
  EXPECT_EQ(EP_Iallreduce(&b, &r, 1, MPI_INT, MPI_SUM, EP_COMM_NULL, &rq), EP_ERR_COMM);
  EXPECT_EQ(rq, EP_REQUEST_NULL);
}

// The collectives MPI does not define on intercommunicators (Scan, Exscan), on one (groups:
// even / odd world endpoints): EP_ERR_COMM at every endpoint; afterwards collectives that
// intercommunicators support still work on it (tests/coll/inter_test.cc covers them all).
TEST(ErrorsComm, ScanAndExscanOnAnIntercommunicator) {
  MatOp mop;
  const World wd;
  const int p = ep_test::world_rank();
  ep_test::run_endpoints(wd.counts[static_cast<size_t>(p)], [&](EP_Comm world, int idx) {
    const int me = wd.base[static_cast<size_t>(p)] + idx;
    const int colour = me % 2;
    EP_Comm local = EP_COMM_NULL, ic = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, colour, me, &local), EP_SUCCESS);
    // Local leader = local rank 0 (world endpoint `colour`); the remote leader is the other
    // group's rank 0 as a world rank.
    int rc = EP_Intercomm_create(local, 0, world, 1 - colour, 77, &ic);
    ASSERT_EQ(rc, EP_SUCCESS) << last_error(rc);
    std::vector<int> remote;
    for (int w = 0; w < wd.total; ++w) {
      if (w % 2 != colour) remote.push_back(w);
    }
    std::vector<int> buf(static_cast<size_t>(4 * wd.total) + 4, 1), rb(buf.size(), 0);
    const std::string w = "intercomm";
    EP_Request rq = EP_REQUEST_NULL;
    expect_error(EP_Scan(buf.data(), rb.data(), 1, MPI_INT, MPI_SUM, ic), EP_ERR_COMM, "EP_Scan", w);
    expect_error(EP_Exscan(buf.data(), rb.data(), 1, MPI_INT, MPI_SUM, ic), EP_ERR_COMM,
                 "EP_Exscan", w);
    expect_error(EP_Scan(buf.data(), rb.data(), 1, mop.type, mop.op, ic), EP_ERR_COMM, "EP_Scan",
                 w);
    EXPECT_EQ(rq, EP_REQUEST_NULL);
    // Still works: Barrier, Allreduce (the other group's sum), Bcast from group 0's rank 0.
    EXPECT_EQ(EP_Barrier(ic), EP_SUCCESS);
    int s = me + 1, r = -1;
    EXPECT_EQ(EP_Allreduce(&s, &r, 1, MPI_INT, MPI_SUM, ic), EP_SUCCESS);
    int e = 0;
    for (int x : remote) e += x + 1;
    EXPECT_EQ(r, e) << "intercomm Allreduce must give the other group's sum";
    int lrank = -1;
    EXPECT_EQ(EP_Comm_rank(ic, &lrank), EP_SUCCESS);
    int b = colour == 0 && lrank == 0 ? 4242 : -1;
    const int root = colour == 0 ? (lrank == 0 ? EP_ROOT : EP_PROC_NULL) : 0;
    EXPECT_EQ(EP_Bcast(&b, 1, MPI_INT, root, ic), EP_SUCCESS);
    if (colour == 1) {
      EXPECT_EQ(b, 4242);
    }
    ep_test::ep_barrier(world);
    EXPECT_EQ(EP_Comm_free(&ic), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&local), EP_SUCCESS);
  });
}

}  // namespace
