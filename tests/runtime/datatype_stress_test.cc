// The datatype cache under churn (runtime/datatype.h): reader threads describe, hold
// and pack types while a creator thread frees them - MPI hands their handles to the
// next types it makes - and makes new ones.  Every pack must equal MPI_Pack of the
// type the reader described (a stale layout for a reused handle, or a description freed
// under a holder, shows as wrong bytes, or to TSAN and ASAN); once every type is freed
// and every thread gone, every description was freed, once (seeded;
// LIBEP_STRESS_SEED=<n> reproduces a run).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "runtime/datatype.h"
#include "tests/common/harness.h"

namespace {

using ep::runtime::TypeInfo;
using ep::runtime::TypeRef;

// A random committed derived type of ints and doubles whose bytes never overlap (its
// unpack then repacks to the same bytes).
MPI_Datatype random_type(std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const MPI_Datatype base = pick(0, 1) ? MPI_INT : MPI_DOUBLE;
  MPI_Datatype t = MPI_DATATYPE_NULL;
  switch (pick(0, 5)) {
    case 0:
      MPI_Type_contiguous(pick(0, 9), base, &t);
      break;
    case 1: {
      const int bl = pick(1, 3);
      MPI_Type_vector(pick(1, 20), bl, (pick(0, 1) ? 1 : -1) * (bl + pick(0, 3)), base, &t);
      break;
    }
    case 2: {  // blocks of at most 3 in distinct slots of 4, in random order
      const int n = pick(1, 6);
      std::vector<int> bl(n), disp(n), slot(10);
      for (int i = 0; i < 10; ++i) slot[i] = 4 * i - 12;
      std::shuffle(slot.begin(), slot.end(), rng);
      for (int i = 0; i < n; ++i) {
        bl[i] = pick(0, 3);
        disp[i] = slot[i];
      }
      MPI_Type_indexed(n, bl.data(), disp.data(), base, &t);
      break;
    }
    case 3: {
      const int bl[] = {pick(1, 2), pick(0, 3)};
      const MPI_Aint disp[] = {pick(0, 8) * 4, 40 + pick(0, 5) * 8};
      const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE};
      MPI_Type_create_struct(2, bl, disp, types, &t);
      break;
    }
    case 4: {  // an extent beyond the vector's span: elements apart
      const int n = pick(1, 5), stride = pick(2, 4);
      MPI_Datatype v;
      MPI_Type_vector(n, 1, stride, base, &v);
      MPI_Aint lb = 0, extent = 0;
      MPI_Type_get_extent(v, &lb, &extent);
      MPI_Type_create_resized(v, -8 * pick(0, 2), extent + 8 * pick(0, 10), &t);
      MPI_Type_free(&v);
      break;
    }
    default: {
      const int sizes[] = {pick(2, 6), pick(2, 6)};
      const int subsizes[] = {pick(1, sizes[0]), pick(1, sizes[1])};
      const int starts[] = {pick(0, sizes[0] - subsizes[0]), pick(0, sizes[1] - subsizes[1])};
      MPI_Type_create_subarray(2, sizes, subsizes, starts,
                               pick(0, 1) ? MPI_ORDER_C : MPI_ORDER_FORTRAN, base, &t);
      break;
    }
  }
  MPI_Type_commit(&t);
  return t;
}

// A slot of the pool: a live type, a buffer of kCount of its elements and what MPI_Pack
// makes of it.  Guarded by mu; readers copy what they need under it.
constexpr int kCount = 3;
struct Slot {
  std::mutex mu;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  std::vector<char> mem;  // the buffer; element 0 at mem.data() + origin
  int64_t origin = 0;
  std::vector<char> packed;

  void fill(MPI_Datatype t, std::mt19937_64& rng) {
    type = t;
    MPI_Count lb = 0, extent = 0, tlb = 0, textent = 0;
    MPI_Type_get_extent_x(t, &lb, &extent);
    MPI_Type_get_true_extent_x(t, &tlb, &textent);
    const int64_t lo = std::min<int64_t>(tlb, tlb + (kCount - 1) * extent);
    const int64_t hi = std::max<int64_t>(tlb + textent, tlb + textent + (kCount - 1) * extent);
    mem.assign(static_cast<size_t>(hi - lo + 16), 0);
    for (char& c : mem) c = static_cast<char>(rng());
    origin = -lo + 8;
    MPI_Count size = 0;
    MPI_Type_size_x(t, &size);
    packed.assign(static_cast<size_t>(size * kCount), 0);
    int pos = 0;
    MPI_Pack(mem.data() + origin, kCount, t, packed.data(), static_cast<int>(packed.size()), &pos,
             MPI_COMM_SELF);
  }
};

TEST(DatatypeStress, ReadersPackRightWhileTypesAreFreedAndTheirHandlesReused) {
  std::mt19937_64 seed_rng(ep_test::stress_seed("datatype_stress_test"));
  constexpr int kSlots = 8, kReaders = 3;
  const int rounds = ep_test::scaled(20000);
  const int64_t live_before = ep::runtime::live_descs();
  std::vector<std::unique_ptr<Slot>> slots;
  for (int i = 0; i < kSlots; ++i) {
    slots.push_back(std::make_unique<Slot>());
    slots.back()->fill(random_type(seed_rng), seed_rng);
  }
  std::atomic<bool> done{false};
  std::atomic<int64_t> wrong{0}, packs{0}, described_freed{0};
  std::vector<uint64_t> seeds;
  for (int r = 0; r <= kReaders; ++r) seeds.push_back(seed_rng());
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      std::mt19937_64 rng(seeds[r]);
      std::vector<TypeRef> held;  // descriptions kept across the creator's frees
      std::vector<std::vector<char>> mems, wants;
      std::vector<int64_t> origins;
      while (!done.load(std::memory_order_relaxed)) {
        Slot& s = *slots[rng() % kSlots];
        {
          std::lock_guard<std::mutex> lock(s.mu);
          TypeInfo ti;
          if (!ep::runtime::describe(s.type, &ti)) {
            wrong.fetch_add(1);
            continue;
          }
          held.emplace_back(ti);
          mems.push_back(s.mem);
          wants.push_back(s.packed);
          origins.push_back(s.origin);
        }
        // Pack with every description held, the freed ones too.
        for (size_t i = 0; i < held.size(); ++i) {
          std::vector<char> got(wants[i].size() + 1, 0x5a);
          ep::runtime::pack(mems[i].data() + origins[i], kCount, held[i], got.data());
          got.pop_back();
          if (got != wants[i]) wrong.fetch_add(1);
          std::vector<char> back(mems[i].size(), 0);
          ep::runtime::unpack(wants[i].data(), static_cast<int64_t>(wants[i].size()),
                              back.data() + origins[i], kCount, held[i]);
          std::vector<char> again(wants[i].size() + 1, 0x5a);
          ep::runtime::pack(back.data() + origins[i], kCount, held[i], again.data());
          again.pop_back();
          if (again != wants[i]) wrong.fetch_add(1);
          packs.fetch_add(1, std::memory_order_relaxed);
        }
        if (held.size() >= 4) {  // let the oldest go (maybe the last reference of a freed type)
          held.erase(held.begin());
          mems.erase(mems.begin());
          wants.erase(wants.begin());
          origins.erase(origins.begin());
          described_freed.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  std::thread creator([&] {
    std::mt19937_64 rng(seeds[kReaders]);
    for (int i = 0; i < rounds; ++i) {
      Slot& s = *slots[rng() % kSlots];
      std::lock_guard<std::mutex> lock(s.mu);
      MPI_Type_free(&s.type);  // its handle is likely the next type's
      s.fill(random_type(rng), rng);
    }
    done.store(true);
  });
  creator.join();
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(packs.load(), 0);
  EXPECT_GT(described_freed.load(), 0);
  for (auto& s : slots) MPI_Type_free(&s->type);
  // Every description of a freed type went, once: the readers' references and caches
  // died with them, the table's with each MPI_Type_free.
  EXPECT_EQ(ep::runtime::live_descs(), live_before);
}

}  // namespace
