// Nonblocking collectives whose derived datatypes the application frees before they
// complete (and whose handles MPI may hand to new types meanwhile): the operation keeps
// the descriptions it was started with (runtime/datatype.h, "Lifetime"), and a
// reduction keeps MPI's type alive for the user op (collectives/engine.h, OpArgs), so
// the results are those of the types given.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <barrier>
#include <vector>

#include "tests/common/harness.h"

namespace {

using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;

[[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(120, 600);

MPI_Datatype vector_of(int n, MPI_Datatype base) {
  MPI_Datatype t;
  MPI_Type_vector(n, 1, 2, base, &t);
  MPI_Type_commit(&t);
  return t;
}
// A type that may take a freed type's handle.
MPI_Datatype another() {
  MPI_Datatype t;
  const int bl[] = {1, 2};
  const int disp[] = {3, 0};
  MPI_Type_indexed(2, bl, disp, MPI_INT, &t);
  MPI_Type_commit(&t);
  return t;
}

TEST(DerivedTypes, IbcastOfAFreedVectorCompletes) {
  for (int n : {8, 4096}) {  // a small and a large payload
    run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
      int rank = 0;
      EP_Comm_rank(comm, &rank);
      std::vector<double> buf(static_cast<size_t>(2 * n), -1.0);
      if (rank == 0) {
        for (int k = 0; k < n; ++k) buf[2 * k] = k + 0.5;
      }
      MPI_Datatype t = vector_of(n, MPI_DOUBLE);
      EP_Request r;
      ASSERT_EQ(EP_Ibcast(buf.data(), 1, t, 0, comm, &r), EP_SUCCESS);
      MPI_Type_free(&t);
      MPI_Datatype other = another();
      ASSERT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
      int bad = 0;
      for (int k = 0; k < n; ++k) bad += buf[2 * k] != k + 0.5 || buf[2 * k + 1] != -1.0;
      EXPECT_EQ(bad, 0) << "n " << n << ", rank " << rank;
      MPI_Type_free(&other);
    });
  }
}

// The types of the reduction test, shared by the process's endpoints; the user ops
// count calls that get another handle than these (MPI 3.1: the one given).
MPI_Datatype g_pair = MPI_DATATYPE_NULL, g_every_other = MPI_DATATYPE_NULL;
std::atomic<int> g_other_handle{0};

// User ops over the two derived types (MPI's predefined ops take predefined types
// only): a sum of the ints each element covers.  They run after the application freed
// the types (the operation keeps MPI's type alive) and ask MPI their size.
void sum_pairs(void* in, void* inout, int* len, MPI_Datatype* type) {
  if (*type != g_pair) g_other_handle.fetch_add(1);
  int size = 0;
  MPI_Type_size(*type, &size);  // 2 ints (contiguous)
  const int n = *len * size / static_cast<int>(sizeof(int));
  for (int i = 0; i < n; ++i) static_cast<int*>(inout)[i] += static_cast<int*>(in)[i];
}
void sum_every_other(void* in, void* inout, int* len, MPI_Datatype* type) {
  if (*type != g_every_other) g_other_handle.fetch_add(1);
  int size = 0;
  MPI_Type_size(*type, &size);  // 5 ints, every other one of 9
  for (int e = 0; e < *len; ++e) {
    for (int k = 0; k < size / static_cast<int>(sizeof(int)); ++k) {
      static_cast<int*>(inout)[9 * e + 2 * k] += static_cast<int*>(in)[9 * e + 2 * k];
    }
  }
}

TEST(DerivedTypes, IallreduceOverAFreedDerivedTypeCompletes) {
  MPI_Op pairs_op, every_other_op;
  MPI_Op_create(sum_pairs, 1, &pairs_op);
  MPI_Op_create(sum_every_other, 1, &every_other_op);
  // Contiguous pairs of ints (combined where they are) and every other int of 9
  // (packed between the processes).
  MPI_Type_contiguous(2, MPI_INT, &g_pair);
  MPI_Type_commit(&g_pair);
  g_every_other = vector_of(5, MPI_INT);
  const MPI_Datatype pair = g_pair, every_other = g_every_other;
  const int n = uneven(world_rank());
  std::barrier sync(n);
  run_endpoints(n, [&](EP_Comm comm, int i) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    std::vector<int> in1(6), out1(6, -1), in2(9), out2(9, -1);
    for (int k = 0; k < 6; ++k) in1[k] = rank * 10 + k;
    for (int k = 0; k < 9; ++k) in2[k] = rank * 100 + k;
    EP_Request r[2];
    ASSERT_EQ(EP_Iallreduce(in1.data(), out1.data(), 3, pair, pairs_op, comm, &r[0]), EP_SUCCESS);
    ASSERT_EQ(EP_Iallreduce(in2.data(), out2.data(), 1, every_other, every_other_op, comm, &r[1]),
              EP_SUCCESS);
    sync.arrive_and_wait();
    MPI_Datatype other = MPI_DATATYPE_NULL;
    if (i == 0) {  // every endpoint of the process started: the types go
      MPI_Datatype p = pair, v = every_other;
      MPI_Type_free(&p);
      MPI_Type_free(&v);
      other = another();
    }
    sync.arrive_and_wait();
    ASSERT_EQ(EP_Waitall(2, r, EP_STATUSES_IGNORE), EP_SUCCESS);
    const int ranks = size * (size - 1) / 2;  // sum of the ranks
    for (int k = 0; k < 6; ++k) EXPECT_EQ(out1[k], ranks * 10 + size * k) << "pair " << k;
    for (int k = 0; k < 9; ++k) {
      EXPECT_EQ(out2[k], k % 2 == 0 ? ranks * 100 + size * k : -1) << "vector " << k;
    }
    if (other != MPI_DATATYPE_NULL) MPI_Type_free(&other);
  });
  EXPECT_EQ(g_other_handle.load(), 0) << "a user op got another handle than the one given";
  MPI_Op_free(&pairs_op);
  MPI_Op_free(&every_other_op);
}

TEST(DerivedTypes, IallgatherIntoAFreedVectorCompletes) {
  run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    // Each rank's 3 ints land in every other int of a block of 5 (resized to 6 ints:
    // blocks apart).
    MPI_Datatype v = vector_of(3, MPI_INT), block;
    MPI_Type_create_resized(v, 0, 6 * sizeof(int), &block);
    MPI_Type_free(&v);
    MPI_Type_commit(&block);
    const int mine[3] = {rank, rank + 1000, rank + 2000};
    std::vector<int> all(static_cast<size_t>(6 * size), -1);
    EP_Request r;
    ASSERT_EQ(EP_Iallgather(mine, 3, MPI_INT, all.data(), 1, block, comm, &r), EP_SUCCESS);
    MPI_Type_free(&block);
    MPI_Datatype other = another();
    ASSERT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
    int bad = 0;
    for (int q = 0; q < size; ++q) {
      for (int i = 0; i < 6; ++i) {
        const int want = i % 2 == 0 ? q + 1000 * (i / 2) : -1;
        bad += all[6 * q + i] != want;
      }
    }
    EXPECT_EQ(bad, 0);
    MPI_Type_free(&other);
  });
}

}  // namespace
