// describe() (runtime/datatype.h): the process-wide table of builtin datatypes is
// filled by whichever thread first asks for a type, while other threads ask too; every
// answer must equal what MPI says of the type (one process; run under TSAN too).
#include "runtime/datatype.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

namespace {

using ep::runtime::describe;
using ep::runtime::TypeInfo;

TypeInfo from_mpi(MPI_Datatype t) {
  MPI_Count size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
  MPI_Type_size_x(t, &size);
  MPI_Type_get_extent_x(t, &lb, &extent);
  MPI_Type_get_true_extent_x(t, &tlb, &textent);
  TypeInfo ti;
  ti.size = size;
  ti.extent = extent;
  ti.true_lb = tlb;
  ti.contiguous = size == textent && extent == textent;
  return ti;
}

TEST(Describe, BuiltinTypesFromManyThreadsAtOnceMatchMpi) {
  const std::vector<MPI_Datatype> types = {
      MPI_BYTE,   MPI_CHAR,      MPI_SIGNED_CHAR, MPI_SHORT,     MPI_INT,
      MPI_LONG,   MPI_LONG_LONG, MPI_FLOAT,       MPI_DOUBLE,    MPI_LONG_DOUBLE,
      MPI_INT8_T, MPI_INT64_T,   MPI_UINT32_T,    MPI_C_BOOL,    MPI_C_DOUBLE_COMPLEX,
      MPI_PACKED, MPI_2INT,      MPI_DOUBLE_INT,  MPI_SHORT_INT, MPI_LONG_DOUBLE_INT};
  std::vector<TypeInfo> expect;
  for (MPI_Datatype t : types) expect.push_back(from_mpi(t));
  constexpr int kThreads = 4, kRounds = 2000;
  std::atomic<int> ready{0};
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      std::vector<size_t> order(types.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::mt19937 rng(1234 + k);
      ready.fetch_add(1, std::memory_order_acq_rel);
      while (ready.load(std::memory_order_acquire) < kThreads) {
      }  // start together: the first questions race for the slots
      for (int round = 0; round < kRounds; ++round) {
        std::shuffle(order.begin(), order.end(), rng);
        for (size_t i : order) {
          TypeInfo got;
          const TypeInfo& want = expect[i];
          if (!describe(types[i], &got) || got.size != want.size || got.extent != want.extent ||
              got.true_lb != want.true_lb || got.contiguous != want.contiguous) {
            mismatches.fetch_add(1, std::memory_order_relaxed);
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
  // The pair types are not contiguous (their extent has a gap): the table must say so.
  TypeInfo di;
  ASSERT_TRUE(describe(MPI_DOUBLE_INT, &di));
  EXPECT_EQ(di.contiguous, from_mpi(MPI_DOUBLE_INT).contiguous);
  TypeInfo none;
  EXPECT_FALSE(describe(MPI_DATATYPE_NULL, &none));
}

}  // namespace
