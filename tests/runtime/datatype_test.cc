// describe() and the datatype engine (runtime/datatype.h, runtime/typemap.h): the
// process-wide table of builtin datatypes is filled by whichever thread first asks for a
// type, while other threads ask too; every derived type of every MPI 3.1 constructor
// packs, unpacks and copies byte for byte as MPI_Pack/MPI_Unpack do, with no MPI call
// once described; a freed handle that MPI reuses gets the new type's layout (one
// process; run under TSAN too).
#include "runtime/datatype.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/mpi_calls.h"
#include "runtime/datatype_decode.h"

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

// ---- The engine against MPI_Pack/MPI_Unpack ---------------------------------------------

MPI_Datatype committed(MPI_Datatype t) {
  MPI_Type_commit(&t);
  return t;
}

// A buffer for `count` elements of `t` with room around them, and the address MPI
// calls the buffer (the element 0 origin).
struct Buf {
  std::vector<unsigned char> mem;
  char* base = nullptr;
  Buf(MPI_Datatype t, int count, unsigned seed, int fill = -1) {
    MPI_Count lb = 0, extent = 0, tlb = 0, textent = 0;
    MPI_Type_get_extent_x(t, &lb, &extent);
    MPI_Type_get_true_extent_x(t, &tlb, &textent);
    const int64_t ext = extent;
    const int64_t lo = std::min<int64_t>(tlb, tlb + (count - 1) * ext);
    const int64_t hi = std::max<int64_t>(tlb + textent, tlb + textent + (count - 1) * ext);
    constexpr int64_t kPad = 64;
    mem.resize(static_cast<size_t>(hi - lo + 2 * kPad));
    std::mt19937 rng(seed);
    for (auto& b : mem)
      b = fill >= 0 ? static_cast<unsigned char>(fill) : static_cast<unsigned char>(rng());
    base = reinterpret_cast<char*>(mem.data()) + kPad - lo;
  }
};

// Packs, unpacks (whole and truncated) and copies `count` elements of `t` with libep's
// engine and with MPI, and expects the same bytes everywhere.
void expect_like_mpi(MPI_Datatype t, int count, const std::string& what) {
  SCOPED_TRACE(what + " x" + std::to_string(count));
  TypeInfo ti;
  ASSERT_TRUE(describe(t, &ti));
  const TypeInfo want = from_mpi(t);
  EXPECT_EQ(ti.size, want.size);
  EXPECT_EQ(ti.extent, want.extent);
  MPI_Count tlb = 0, textent = 0;
  MPI_Type_get_true_extent_x(t, &tlb, &textent);
  if (ti.size > 0) {
    EXPECT_EQ(ti.true_lb, want.true_lb);
    EXPECT_EQ(ep::runtime::true_extent(ti), textent);
  }
  const int64_t bytes = ti.size * count;

  // pack
  Buf src(t, count, 1);
  std::vector<char> want_packed(static_cast<size_t>(bytes) + 1), got_packed(want_packed.size());
  int pos = 0;
  MPI_Pack(src.base, count, t, want_packed.data(), static_cast<int>(bytes), &pos, MPI_COMM_SELF);
  ASSERT_EQ(pos, bytes);
  TypeInfo bi;
  ASSERT_TRUE(describe(MPI_BYTE, &bi));
  const uint64_t calls = ep::mpi_calls_outside_engine();
  ep::runtime::pack(src.base, count, ti, got_packed.data());
  EXPECT_EQ(got_packed, want_packed) << "pack";

  // unpack, whole
  Buf want_dst(t, count, 2, 0xee), got_dst(t, count, 2, 0xee);
  pos = 0;
  MPI_Unpack(want_packed.data(), static_cast<int>(bytes), &pos, want_dst.base, count, t,
             MPI_COMM_SELF);
  ep::runtime::unpack(want_packed.data(), bytes, got_dst.base, count, ti);
  EXPECT_EQ(got_dst.mem, want_dst.mem) << "unpack";

  // unpack, truncated: whole elements only (count - 1 of them)
  if (bytes > 0) {
    Buf want_short(t, count, 3, 0xdd), got_short(t, count, 3, 0xdd);
    pos = 0;
    MPI_Unpack(want_packed.data(), static_cast<int>(bytes), &pos, want_short.base, count - 1, t,
               MPI_COMM_SELF);
    ep::runtime::unpack(want_packed.data(), bytes - 1, got_short.base, count, ti);
    EXPECT_EQ(got_short.mem, want_short.mem) << "truncated unpack";
  }

  // copy: type to type (through its packed form), type to bytes, bytes to type
  Buf got_copy(t, count, 4, 0xcc);
  ep::runtime::copy(src.base, count, ti, got_copy.base, count, ti, bytes);
  Buf want_copy(t, count, 4, 0xcc);
  pos = 0;
  MPI_Unpack(want_packed.data(), static_cast<int>(bytes), &pos, want_copy.base, count, t,
             MPI_COMM_SELF);
  EXPECT_EQ(got_copy.mem, want_copy.mem) << "copy";
  std::vector<char> flat(static_cast<size_t>(bytes) + 1);
  ep::runtime::copy(src.base, count, ti, flat.data(), static_cast<int>(bytes), bi, bytes);
  EXPECT_EQ(flat, want_packed) << "copy to bytes";
  Buf got_from_flat(t, count, 4, 0xcc);
  ep::runtime::copy(want_packed.data(), static_cast<int>(bytes), bi, got_from_flat.base, count, ti,
                    bytes);
  EXPECT_EQ(got_from_flat.mem, want_copy.mem) << "copy from bytes";
  EXPECT_EQ(ep::mpi_calls_outside_engine(), calls) << "the engine called MPI";

  // The flattening from MPI_Pack alone (darray's way) agrees too.
  ep::runtime::NodePtr probed = ep::runtime::probe_typemap(t, MPI_COMM_SELF);
  ASSERT_NE(probed, nullptr);
  std::vector<char> probe_packed(want_packed.size());
  ep::runtime::pack_elements(*probed, ti.extent, src.base, count, probe_packed.data());
  EXPECT_EQ(probe_packed, want_packed) << "probe";
}

// Every type below, with its name; each is freed by the fixture.
class Engine : public ::testing::Test {
 protected:
  ~Engine() override {
    for (MPI_Datatype& t : made_) MPI_Type_free(&t);
  }
  MPI_Datatype keep(MPI_Datatype t) {
    made_.push_back(committed(t));
    return made_.back();
  }
  void check(MPI_Datatype t, const std::string& what) {
    for (int count : {1, 3}) expect_like_mpi(t, count, what);
  }
  std::vector<MPI_Datatype> made_;
};

TEST_F(Engine, NamedTypesWithHolesPackLikeMpi) {
  for (MPI_Datatype t : {MPI_SHORT_INT, MPI_DOUBLE_INT, MPI_LONG_DOUBLE_INT, MPI_FLOAT_INT,
                         MPI_2INT, MPI_DOUBLE, MPI_CHAR}) {
    check(t, "named");
  }
}

TEST_F(Engine, ContiguousAndDupPackLikeMpi) {
  MPI_Datatype t;
  MPI_Type_contiguous(3, MPI_INT, &t);
  check(keep(t), "contiguous(3, int)");
  MPI_Datatype s;
  MPI_Type_contiguous(2, MPI_SHORT_INT, &s);
  check(keep(s), "contiguous(2, short_int)");
  MPI_Datatype d;
  MPI_Type_dup(made_[1], &d);
  check(keep(d), "dup(contiguous(2, short_int))");
}

TEST_F(Engine, VectorsPackLikeMpi) {
  MPI_Datatype t;
  MPI_Type_vector(8, 1, 2, MPI_DOUBLE, &t);
  check(keep(t), "vector(8,1,2,double)");
  MPI_Type_vector(3, 2, -4, MPI_INT, &t);
  check(keep(t), "vector(3,2,-4,int) (negative stride)");
  MPI_Type_create_hvector(4, 3, 40, MPI_SHORT, &t);
  check(keep(t), "hvector(4,3,40,short)");
  MPI_Type_create_hvector(3, 1, -24, MPI_DOUBLE, &t);
  check(keep(t), "hvector(3,1,-24,double)");
  MPI_Type_vector(5, 2, 2, MPI_INT, &t);
  check(keep(t), "vector(5,2,2,int) (dense)");
}

TEST_F(Engine, IndexedTypesPackLikeMpi) {
  MPI_Datatype t;
  const int bl[] = {1, 3, 2, 0};
  const int disp[] = {5, 0, 9, 2};  // unsorted, one empty block
  MPI_Type_indexed(4, bl, disp, MPI_INT, &t);
  check(keep(t), "indexed (unsorted)");
  const int ndisp[] = {-3, 4, -8, 1};
  MPI_Type_indexed(4, bl, ndisp, MPI_DOUBLE, &t);
  check(keep(t), "indexed (negative displacements)");
  const MPI_Aint hdisp[] = {40, -16, 3, 100};
  MPI_Type_create_hindexed(4, bl, hdisp, MPI_SHORT, &t);
  check(keep(t), "hindexed");
  const int bdisp[] = {7, 1, 4};
  MPI_Type_create_indexed_block(3, 2, bdisp, MPI_FLOAT, &t);
  check(keep(t), "indexed_block");
  const MPI_Aint hbdisp[] = {0, 33, -11};
  MPI_Type_create_hindexed_block(3, 3, hbdisp, MPI_CHAR, &t);
  check(keep(t), "hindexed_block");
  std::vector<int> many_disp(1000);
  for (int i = 0; i < 1000; ++i) many_disp[i] = 3 * i + (i % 7);
  MPI_Type_create_indexed_block(1000, 1, many_disp.data(), MPI_INT, &t);
  check(keep(t), "indexed_block of 1000 irregular blocks (a list node)");
}

TEST_F(Engine, StructsAndResizedPackLikeMpi) {
  struct S {
    char c;
    double d;
    int i[3];
  };
  const int bl[] = {1, 1, 3};
  const MPI_Aint disp[] = {offsetof(S, c), offsetof(S, d), offsetof(S, i)};
  const MPI_Datatype types[] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
  MPI_Datatype t;
  MPI_Type_create_struct(3, bl, disp, types, &t);
  const MPI_Datatype s = keep(t);
  check(s, "struct {char, double, int[3]}");
  MPI_Type_create_resized(s, 0, sizeof(S), &t);
  check(keep(t), "resized struct (its C extent)");
  const MPI_Aint ndisp[] = {-20, 8, -4};
  MPI_Type_create_struct(3, bl, ndisp, types, &t);
  check(keep(t), "struct (negative displacements)");
  MPI_Datatype v;
  MPI_Type_vector(3, 1, 3, MPI_INT, &v);
  MPI_Type_create_resized(v, -8, 48, &t);
  MPI_Type_free(&v);
  check(keep(t), "resized vector (negative lb)");
  MPI_Type_create_resized(MPI_DOUBLE, 0, 24, &t);
  check(keep(t), "resized double (extent 24)");
}

TEST_F(Engine, NestedTypesPackLikeMpi) {
  struct P {
    int a;
    double b;
  };
  const int bl[] = {1, 1};
  const MPI_Aint disp[] = {offsetof(P, a), offsetof(P, b)};
  const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE};
  MPI_Datatype p, vp, t;
  MPI_Type_create_struct(2, bl, disp, types, &p);
  MPI_Type_vector(3, 2, 5, p, &vp);
  check(keep(vp), "vector of struct");
  MPI_Datatype col;
  MPI_Type_vector(4, 1, 6, MPI_DOUBLE, &col);
  const int sbl[] = {2, 1, 1};
  const MPI_Aint sdisp[] = {0, 500, -64};
  const MPI_Datatype stypes[] = {col, MPI_CHAR, vp};
  MPI_Type_create_struct(3, sbl, sdisp, stypes, &t);
  check(keep(t), "struct of vectors");
  MPI_Datatype r;
  MPI_Type_create_resized(col, 0, 8, &r);
  MPI_Type_contiguous(6, r, &t);  // columns interleaved: a 6-column strided block
  check(keep(t), "contiguous of resized column");
  const int ibl[] = {2, 1};
  const int idisp[] = {1, -2};
  MPI_Type_indexed(2, ibl, idisp, vp, &t);
  check(keep(t), "indexed of vector of struct");
  MPI_Type_free(&p);
  MPI_Type_free(&col);
  MPI_Type_free(&r);
}

TEST_F(Engine, SubarraysAndDarraysPackLikeMpi) {
  const int sizes[] = {6, 5, 4}, subsizes[] = {2, 3, 2}, starts[] = {1, 2, 1};
  MPI_Datatype t;
  MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
  check(keep(t), "subarray 3-D C");
  MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_INT, &t);
  check(keep(t), "subarray 2-D Fortran");
  MPI_Datatype p;
  MPI_Type_contiguous(2, MPI_SHORT, &p);
  MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, p, &t);
  MPI_Type_free(&p);
  check(keep(t), "subarray of contiguous");
  const int gsizes[] = {9, 10};
  const int psizes[] = {2, 3};
  struct Dist {
    int d0, d1, a0, a1, order;
    const char* what;
  } dists[] = {
      {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG,
       MPI_DISTRIBUTE_DFLT_DARG, MPI_ORDER_C, "darray block/block C"},
      {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK, 2, MPI_DISTRIBUTE_DFLT_DARG, MPI_ORDER_C,
       "darray cyclic(2)/block C"},
      {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_DFLT_DARG, 3, MPI_ORDER_FORTRAN,
       "darray block/cyclic(3) Fortran"},
      {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_DFLT_DARG,
       MPI_DISTRIBUTE_DFLT_DARG, MPI_ORDER_C, "darray cyclic/cyclic C"},
  };
  for (const Dist& d : dists) {
    for (int rank : {0, 4}) {
      const int distribs[] = {d.d0, d.d1}, dargs[] = {d.a0, d.a1};
      MPI_Type_create_darray(6, rank, 2, gsizes, distribs, dargs, psizes, d.order, MPI_INT, &t);
      check(keep(t), std::string(d.what) + " rank " + std::to_string(rank));
    }
  }
}

TEST_F(Engine, Fortran90TypesPackLikeMpi) {
  MPI_Datatype t;
  ASSERT_EQ(MPI_Type_create_f90_real(15, MPI_UNDEFINED, &t), MPI_SUCCESS);
  check(t, "f90 real(15)");  // (predefined: never freed)
  ASSERT_EQ(MPI_Type_create_f90_integer(9, &t), MPI_SUCCESS);
  check(t, "f90 integer(9)");
  MPI_Datatype v;
  MPI_Type_vector(3, 1, 2, t, &v);
  check(keep(v), "vector of f90 integer");
}

TEST_F(Engine, ZeroSizeTypesMoveNothing) {
  MPI_Datatype t;
  MPI_Type_contiguous(0, MPI_INT, &t);
  check(keep(t), "contiguous(0, int)");
  const int bl[] = {0, 0};
  const MPI_Aint disp[] = {0, 16};
  const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE};
  MPI_Type_create_struct(2, bl, disp, types, &t);
  check(keep(t), "struct of empty blocks");
  MPI_Datatype r;
  MPI_Type_create_resized(made_.back(), 0, 16, &r);
  check(keep(r), "empty type resized to extent 16");
  TypeInfo ti;
  ASSERT_TRUE(describe(r, &ti));
  EXPECT_EQ(ti.size, 0);
  EXPECT_EQ(ti.extent, 16);
}

TEST_F(Engine, LargeVectorsStayLoops) {
  MPI_Datatype t;
  MPI_Type_vector(100000, 1, 2, MPI_INT, &t);
  const MPI_Datatype v = keep(t);
  expect_like_mpi(v, 2, "vector(100000,1,2,int)");
  TypeInfo ti;
  ASSERT_TRUE(describe(v, &ti));
  ASSERT_NE(ti.desc, nullptr);
  EXPECT_EQ(ti.desc->root->kind, ep::runtime::TypeNode::kLoop);
  EXPECT_EQ(ti.desc->root->nruns, 100000);
}

TEST_F(Engine, ContiguityComesFromTheTypemap) {
  MPI_Datatype t;
  MPI_Type_contiguous(4, MPI_INT, &t);
  TypeInfo ti;
  ASSERT_TRUE(describe(keep(t), &ti));
  EXPECT_TRUE(ti.contiguous);
  EXPECT_EQ(ti.desc, nullptr);
  // Dense, but its typemap visits the second half first: MPI_Pack reorders the bytes.
  const int bl[] = {2, 2};
  const int disp[] = {2, 0};
  MPI_Type_indexed(2, bl, disp, MPI_INT, &t);
  ASSERT_TRUE(describe(keep(t), &ti));
  EXPECT_FALSE(ti.contiguous);
  check(made_.back(), "indexed {2..3, 0..1}");
}

// ---- Lifetime ------------------------------------------------------------------------------

TEST(Lifetime, UncommittedTypeIsRefusedUntilCommitted) {
  MPI_Datatype t;
  MPI_Type_vector(2, 1, 3, MPI_INT, &t);
  TypeInfo ti;
  EXPECT_FALSE(describe(t, &ti));
  EXPECT_FALSE(describe(t, &ti));  // (not remembered as valid)
  MPI_Type_commit(&t);
  EXPECT_TRUE(describe(t, &ti));
  EXPECT_EQ(ti.size, 8);
  MPI_Type_free(&t);
}

TEST(Lifetime, AReusedHandleGetsTheNewLayout) {
  MPI_Datatype v;
  MPI_Type_vector(4, 1, 3, MPI_INT, &v);
  MPI_Type_commit(&v);
  TypeInfo vi;
  ASSERT_TRUE(describe(v, &vi));
  ASSERT_NE(ep::runtime::cached_desc(v), nullptr);
  const MPI_Datatype old = v;
  MPI_Type_free(&v);
  EXPECT_EQ(ep::runtime::cached_desc(old), nullptr) << "the freed type's entry was not retired";
  // Make indexed types until MPI hands back the freed handle.
  std::vector<MPI_Datatype> others;
  MPI_Datatype reused = MPI_DATATYPE_NULL;
  const int bl[] = {2, 1};
  const int disp[] = {5, 0};
  for (int i = 0; i < 1000 && reused == MPI_DATATYPE_NULL; ++i) {
    MPI_Datatype t;
    MPI_Type_indexed(2, bl, disp, MPI_INT, &t);
    MPI_Type_commit(&t);
    if (t == old) {
      reused = t;
    } else {
      others.push_back(t);
    }
  }
  ASSERT_NE(reused, MPI_DATATYPE_NULL) << "MPI never reused the handle";
  TypeInfo ti;
  ASSERT_TRUE(describe(reused, &ti));
  EXPECT_EQ(ti.size, 12);
  expect_like_mpi(reused, 2, "indexed in the vector's old handle");
  MPI_Type_free(&reused);
  for (MPI_Datatype& t : others) MPI_Type_free(&t);
}

TEST(Lifetime, ADupHasItsOwnEntryAndOutlivesItsOriginal) {
  MPI_Datatype v, d;
  MPI_Type_vector(3, 2, 4, MPI_SHORT, &v);
  MPI_Type_commit(&v);
  TypeInfo vi;
  ASSERT_TRUE(describe(v, &vi));
  MPI_Type_dup(v, &d);
  MPI_Type_free(&v);
  expect_like_mpi(d, 2, "dup of a freed vector");
  MPI_Type_free(&d);
}

TEST(Lifetime, AHeldDescriptionOutlivesItsType) {
  MPI_Datatype v;
  MPI_Type_vector(5, 1, 2, MPI_DOUBLE, &v);
  MPI_Type_commit(&v);
  TypeInfo ti;
  ASSERT_TRUE(describe(v, &ti));
  Buf src(v, 2, 9);
  std::vector<char> want(80);
  int pos = 0;
  MPI_Pack(src.base, 2, v, want.data(), 80, &pos, MPI_COMM_SELF);
  auto held = std::make_unique<ep::runtime::TypeRef>(ti);
  MPI_Type_free(&v);
  // Evict this thread's cached reference too: other types fill its set.
  for (int i = 0; i < 300; ++i) {
    MPI_Datatype t;
    MPI_Type_vector(2, 1, 2 + i, MPI_INT, &t);
    MPI_Type_commit(&t);
    TypeInfo x;
    ASSERT_TRUE(describe(t, &x));
    MPI_Type_free(&t);
  }
  std::vector<char> got(80);
  ep::runtime::pack(src.base, 2, *held, got.data());
  EXPECT_EQ(got, want);
  // The held reference was the last: letting it go frees the description, once.
  const int64_t live = ep::runtime::live_descs();
  held.reset();
  EXPECT_EQ(ep::runtime::live_descs(), live - 1);
}

}  // namespace
