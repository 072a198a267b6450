// Derived datatypes on the message paths: between endpoints of one process no call
// makes an MPI call (libep's datatype engine packs and unpacks; runtime/datatype.h),
// whatever the datatype and whatever the call - blocking, nonblocking, persistent,
// synchronous, probes and matched probes, sendrecv; and a datatype freed while an
// operation that uses it is pending (a receive, a send, a persistent request, within a
// process and across processes, eager and rendezvous) still moves the right bytes, even
// once MPI reused its handle for another type.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <barrier>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/runtime.h"
#include "tests/common/harness.h"
#include "tests/p2p/p2p_util.h"

namespace {

using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;

[[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(120, 600);

// A datatype over an array of doubles: which doubles one element covers, in typemap
// order, and how far apart elements are (in doubles).
struct Shape {
  std::string name;
  std::function<MPI_Datatype()> make;  // committed
  std::vector<int> index;              // of one element, in typemap order
  int extent = 0;                      // doubles
  int count = 1;                       // elements per message
  // Doubles a buffer of `count` elements spans.
  int span() const {
    int hi = 0;
    for (int i : index) hi = std::max(hi, i + 1);
    return (count - 1) * extent + hi;
  }
  int doubles() const { return static_cast<int>(index.size()) * count; }
  // The k-th double of the message, in typemap order.
  int at(int k) const {
    const int n = static_cast<int>(index.size());
    return k / n * extent + index[k % n];
  }
};

MPI_Datatype commit(MPI_Datatype t) {
  MPI_Type_commit(&t);
  return t;
}

std::vector<Shape> shapes() {
  std::vector<Shape> v;
  v.push_back({"double x8", [] { return commit(MPI_DOUBLE); }, {0}, 1, 8});
  v.push_back({"vector(8,1,2)",
               [] {
                 MPI_Datatype t;
                 MPI_Type_vector(8, 1, 2, MPI_DOUBLE, &t);
                 return commit(t);
               },
               {0, 2, 4, 6, 8, 10, 12, 14},
               15});
  v.push_back({"indexed",
               [] {
                 MPI_Datatype t;
                 const int bl[] = {2, 1, 3};
                 const int disp[] = {5, 0, 9};
                 MPI_Type_indexed(3, bl, disp, MPI_DOUBLE, &t);
                 return commit(t);
               },
               {5, 6, 0, 9, 10, 11},
               12,
               2});
  v.push_back({"struct",
               [] {
                 MPI_Datatype t;
                 const int bl[] = {1, 2};
                 const MPI_Aint disp[] = {0, 3 * sizeof(double)};
                 const MPI_Datatype types[] = {MPI_DOUBLE, MPI_DOUBLE};
                 MPI_Type_create_struct(2, bl, disp, types, &t);
                 return commit(t);
               },
               {0, 3, 4},
               5,
               3});
  v.push_back({"resized vector",
               [] {
                 MPI_Datatype c, t;
                 MPI_Type_vector(3, 1, 3, MPI_DOUBLE, &c);
                 MPI_Type_create_resized(c, -static_cast<MPI_Aint>(sizeof(double)),
                                         10 * sizeof(double), &t);
                 MPI_Type_free(&c);
                 return commit(t);
               },
               {0, 3, 6},
               10,
               2});
  // Above EP_EAGER_LIMIT (16 KiB): a rendezvous.
  std::vector<int> every_other(4096);
  for (int i = 0; i < 4096; ++i) every_other[i] = 2 * i;
  v.push_back({"vector(4096,1,2) (rendezvous)",
               [] {
                 MPI_Datatype t;
                 MPI_Type_vector(4096, 1, 2, MPI_DOUBLE, &t);
                 return commit(t);
               },
               every_other, 8191});
  return v;
}

// The value of double k of a message (src, dst, round).
double value(int src, int dst, int round, int k) {
  return src * 1e6 + dst * 1e4 + round * 100 + k + 0.25;
}
constexpr double kUntouched = -7.5;

std::vector<double> outgoing(const Shape& s, int src, int dst, int round) {
  std::vector<double> b(static_cast<size_t>(s.span()), kUntouched);
  for (int k = 0; k < s.doubles(); ++k) b[s.at(k)] = value(src, dst, round, k);
  return b;
}
// Counts the doubles of `b` that differ from what (src, dst, round) sent, the gaps
// included (they must stay kUntouched).
int wrong(const Shape& s, const std::vector<double>& b, int src, int dst, int round) {
  std::vector<double> want(b.size(), kUntouched);
  for (int k = 0; k < s.doubles(); ++k) want[s.at(k)] = value(src, dst, round, k);
  int n = 0;
  for (size_t i = 0; i < b.size(); ++i) n += b[i] != want[i];
  return n;
}

// This process's first endpoint rank under the uneven layout, and its endpoints.
int first_local_rank() {
  int r = 0;
  for (int p = 0; p < world_rank(); ++p) r += uneven(p);
  return r;
}

TEST(DerivedTypes, InProcessTrafficMakesNoMpiCall) {
  const int n = uneven(world_rank());
  const int first = first_local_rank();
  const std::vector<Shape> all = shapes();
  std::barrier sync(n);
  std::vector<uint64_t> calls(3);
  run_endpoints(n, [&](EP_Comm comm, int i) {
    const int me = first + i;
    const int next = first + (i + 1) % n, prev = first + (i + n - 1) % n;
    std::vector<MPI_Datatype> types;
    for (const Shape& s : all) types.push_back(s.make());
    sync.arrive_and_wait();
    if (i == 0) calls[2] = ep::runtime::mpi_calls_outside_engine();
    sync.arrive_and_wait();
    // Persistent requests, one pair per shape (made before the measured rounds).
    std::vector<std::vector<double>> pin(all.size()), pout(all.size());
    std::vector<EP_Request> preq(2 * all.size());
    for (size_t t = 0; t < all.size(); ++t) {
      pin[t].assign(static_cast<size_t>(all[t].span()), kUntouched);
      pout[t] = outgoing(all[t], me, next, 99);
      ASSERT_EQ(EP_Recv_init(pin[t].data(), all[t].count, types[t], prev, 40, comm, &preq[2 * t]),
                EP_SUCCESS);
      ASSERT_EQ(
          EP_Send_init(pout[t].data(), all[t].count, types[t], next, 40, comm, &preq[2 * t + 1]),
          EP_SUCCESS);
    }
    // One round of every way of sending and receiving, every shape.  Round 0 is the
    // warm-up: each type's first description asks MPI, once.
    auto round = [&](int r) {
      for (size_t t = 0; t < all.size(); ++t) {
        const Shape& s = all[t];
        SCOPED_TRACE(s.name + " round " + std::to_string(r));
        const MPI_Datatype ty = types[t];
        const int c = s.count;
        std::vector<double> out = outgoing(s, me, next, r);
        auto fresh = [&] { return std::vector<double>(static_cast<size_t>(s.span()), kUntouched); };
        // sendrecv
        std::vector<double> in = fresh();
        ASSERT_EQ(EP_Sendrecv(out.data(), c, ty, next, 1, in.data(), c, ty, prev, 1, comm,
                              EP_STATUS_IGNORE),
                  EP_SUCCESS);
        EXPECT_EQ(wrong(s, in, prev, me, r), 0) << "sendrecv";
        // nonblocking, standard and synchronous
        for (int tag : {2, 3}) {
          in = fresh();
          EP_Request q[2];
          ASSERT_EQ(EP_Irecv(in.data(), c, ty, prev, tag, comm, &q[0]), EP_SUCCESS);
          ASSERT_EQ(tag == 2 ? EP_Isend(out.data(), c, ty, next, tag, comm, &q[1])
                             : EP_Issend(out.data(), c, ty, next, tag, comm, &q[1]),
                    EP_SUCCESS);
          ASSERT_EQ(EP_Waitall(2, q, EP_STATUSES_IGNORE), EP_SUCCESS);
          EXPECT_EQ(wrong(s, in, prev, me, r), 0) << (tag == 2 ? "isend" : "issend");
        }
        // blocking receive of a message sent before it was posted, found by a probe
        in = fresh();
        EP_Request sq;
        ASSERT_EQ(EP_Isend(out.data(), c, ty, next, 4, comm, &sq), EP_SUCCESS);
        EP_Status st;
        ASSERT_EQ(EP_Probe(prev, 4, comm, &st), EP_SUCCESS);
        int got = -1;
        ASSERT_EQ(EP_Get_count(&st, ty, &got), EP_SUCCESS);
        EXPECT_EQ(got, c);
        ASSERT_EQ(EP_Recv(in.data(), c, ty, prev, 4, comm, EP_STATUS_IGNORE), EP_SUCCESS);
        ASSERT_EQ(EP_Wait(&sq, EP_STATUS_IGNORE), EP_SUCCESS);
        EXPECT_EQ(wrong(s, in, prev, me, r), 0) << "probe, recv";
        // matched probes: blocking and not
        for (int tag : {5, 6}) {
          in = fresh();
          ASSERT_EQ(EP_Isend(out.data(), c, ty, next, tag, comm, &sq), EP_SUCCESS);
          EP_Message m = EP_MESSAGE_NULL;
          if (tag == 5) {
            ASSERT_EQ(EP_Mprobe(prev, tag, comm, &m, EP_STATUS_IGNORE), EP_SUCCESS);
            ASSERT_EQ(EP_Mrecv(in.data(), c, ty, &m, EP_STATUS_IGNORE), EP_SUCCESS);
          } else {
            int flag = 0;
            while (!flag) {
              ASSERT_EQ(EP_Improbe(prev, tag, comm, &flag, &m, EP_STATUS_IGNORE), EP_SUCCESS);
            }
            EP_Request rq;
            ASSERT_EQ(EP_Imrecv(in.data(), c, ty, &m, &rq), EP_SUCCESS);
            ASSERT_EQ(EP_Wait(&rq, EP_STATUS_IGNORE), EP_SUCCESS);
          }
          ASSERT_EQ(EP_Wait(&sq, EP_STATUS_IGNORE), EP_SUCCESS);
          EXPECT_EQ(wrong(s, in, prev, me, r), 0) << (tag == 5 ? "mprobe" : "improbe");
        }
        // persistent (their buffers stay where the requests point)
        std::fill(pin[t].begin(), pin[t].end(), kUntouched);
        ASSERT_EQ(EP_Startall(2, &preq[2 * t]), EP_SUCCESS);
        ASSERT_EQ(EP_Waitall(2, &preq[2 * t], EP_STATUSES_IGNORE), EP_SUCCESS);
        EXPECT_EQ(wrong(s, pin[t], prev, me, 99), 0) << "persistent";
        // into contiguous doubles: the typemap's order
        std::vector<double> flat(static_cast<size_t>(s.doubles()), kUntouched);
        ASSERT_EQ(EP_Sendrecv(out.data(), c, ty, next, 7, flat.data(), s.doubles(), MPI_DOUBLE,
                              prev, 7, comm, EP_STATUS_IGNORE),
                  EP_SUCCESS);
        int bad = 0;
        for (int k = 0; k < s.doubles(); ++k) bad += flat[k] != value(prev, me, r, k);
        EXPECT_EQ(bad, 0) << "to contiguous";
      }
    };
    round(0);
    sync.arrive_and_wait();
    if (i == 0) calls[0] = ep::runtime::mpi_calls_outside_engine();
    sync.arrive_and_wait();
    for (int r = 1; r <= 3; ++r) round(r);
    sync.arrive_and_wait();
    if (i == 0) calls[1] = ep::runtime::mpi_calls_outside_engine();
    for (EP_Request& q : preq) EP_Request_free(&q);
    for (MPI_Datatype& t : types) {
      if (t != MPI_DOUBLE) MPI_Type_free(&t);
    }
  });
  EXPECT_GT(calls[0] - calls[2], 0u) << "the first descriptions asked MPI (the count counts)";
  EXPECT_EQ(calls[1] - calls[0], 0u) << "MPI calls made by messages between endpoints of one "
                                        "process";
}

// A vector type and a type that may take its handle once it is freed.
MPI_Datatype make_vector(int n) {
  MPI_Datatype t;
  MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &t);
  return commit(t);
}
MPI_Datatype make_other() {
  MPI_Datatype t;
  const int bl[] = {3, 1};
  const int disp[] = {1, 0};
  MPI_Type_indexed(2, bl, disp, MPI_DOUBLE, &t);
  return commit(t);
}

Shape vector_shape(int n) {
  Shape s;
  s.name = "vector(" + std::to_string(n) + ",1,2)";
  for (int i = 0; i < n; ++i) s.index.push_back(2 * i);
  s.extent = 2 * n - 1;
  return s;
}

TEST(DerivedTypes, ATypeFreedWhileItsOperationIsPendingStillWorks) {
  const int size = [] {
    int s = 0;
    for (int p = 0; p < ep_test::world_size(); ++p) s += uneven(p);
    return s;
  }();
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    const int me = ep_p2p_test::rank_of(comm);
    for (const ep_p2p_test::Pair& pr : ep_p2p_test::pairs(size)) {
      for (int n : {8, 4096}) {  // eager, rendezvous
        const Shape s = vector_shape(n);
        SCOPED_TRACE(std::string(pr.what) + ", " + s.name);
        if (me == pr.b) {
          // A posted receive whose type is freed (and its handle reused) before the
          // message comes.
          std::vector<double> in(static_cast<size_t>(s.span()), kUntouched);
          MPI_Datatype t = make_vector(n);
          EP_Request q;
          ASSERT_EQ(EP_Irecv(in.data(), 1, t, pr.a, 10, comm, &q), EP_SUCCESS);
          MPI_Type_free(&t);
          MPI_Datatype other = make_other();
          int go = 1;
          ASSERT_EQ(EP_Send(&go, 1, MPI_INT, pr.a, 11, comm), EP_SUCCESS);
          ASSERT_EQ(EP_Wait(&q, EP_STATUS_IGNORE), EP_SUCCESS);
          EXPECT_EQ(wrong(s, in, pr.a, pr.b, 0), 0) << "irecv";
          // A send whose type was freed before the receive was posted.
          std::vector<double> flat(static_cast<size_t>(n), kUntouched);
          ASSERT_EQ(EP_Recv(&go, 1, MPI_INT, pr.a, 12, comm, EP_STATUS_IGNORE), EP_SUCCESS);
          ASSERT_EQ(EP_Recv(flat.data(), n, MPI_DOUBLE, pr.a, 13, comm, EP_STATUS_IGNORE),
                    EP_SUCCESS);
          int bad = 0;
          for (int k = 0; k < n; ++k) bad += flat[k] != value(pr.a, pr.b, 1, k);
          EXPECT_EQ(bad, 0) << "isend";
          // Persistent requests whose type is freed after their init.
          MPI_Datatype pt = make_vector(n);
          ASSERT_EQ(EP_Recv_init(in.data(), 1, pt, pr.a, 14, comm, &q), EP_SUCCESS);
          MPI_Type_free(&pt);
          MPI_Datatype other2 = make_other();
          for (int r = 2; r < 4; ++r) {
            in.assign(in.size(), kUntouched);
            ASSERT_EQ(EP_Start(&q), EP_SUCCESS);
            ASSERT_EQ(EP_Send(&go, 1, MPI_INT, pr.a, 15, comm), EP_SUCCESS);
            ASSERT_EQ(EP_Wait(&q, EP_STATUS_IGNORE), EP_SUCCESS);
            EXPECT_EQ(wrong(s, in, pr.a, pr.b, r), 0) << "persistent receive, start " << r;
          }
          EP_Request_free(&q);
          MPI_Type_free(&other);
          MPI_Type_free(&other2);
        } else if (me == pr.a) {
          std::vector<double> flat(static_cast<size_t>(n));
          for (int k = 0; k < n; ++k) flat[k] = value(pr.a, pr.b, 0, k);
          int go = 0;
          ASSERT_EQ(EP_Recv(&go, 1, MPI_INT, pr.b, 11, comm, EP_STATUS_IGNORE), EP_SUCCESS);
          ASSERT_EQ(EP_Send(flat.data(), n, MPI_DOUBLE, pr.b, 10, comm), EP_SUCCESS);
          // The send of a type freed (and its handle reused) before anyone receives.
          std::vector<double> out = outgoing(s, pr.a, pr.b, 1);
          MPI_Datatype t = make_vector(n);
          EP_Request q;
          ASSERT_EQ(EP_Isend(out.data(), 1, t, pr.b, 13, comm, &q), EP_SUCCESS);
          MPI_Type_free(&t);
          MPI_Datatype other = make_other();
          ASSERT_EQ(EP_Send(&go, 1, MPI_INT, pr.b, 12, comm), EP_SUCCESS);
          ASSERT_EQ(EP_Wait(&q, EP_STATUS_IGNORE), EP_SUCCESS);
          // A persistent send of a freed type, started twice.
          MPI_Datatype pt = make_vector(n);
          ASSERT_EQ(EP_Send_init(out.data(), 1, pt, pr.b, 14, comm, &q), EP_SUCCESS);
          MPI_Type_free(&pt);
          MPI_Datatype other2 = make_other();
          for (int r = 2; r < 4; ++r) {
            const std::vector<double> next = outgoing(s, pr.a, pr.b, r);
            std::copy(next.begin(), next.end(), out.begin());  // (where the request points)
            ASSERT_EQ(EP_Recv(&go, 1, MPI_INT, pr.b, 15, comm, EP_STATUS_IGNORE), EP_SUCCESS);
            ASSERT_EQ(EP_Start(&q), EP_SUCCESS);
            ASSERT_EQ(EP_Wait(&q, EP_STATUS_IGNORE), EP_SUCCESS);
          }
          EP_Request_free(&q);
          MPI_Type_free(&other);
          MPI_Type_free(&other2);
        }
      }
    }
  });
}

}  // namespace
