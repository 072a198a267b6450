// Windows and active-target one-sided communication, on 1, 2 and 3 processes
// with uneven endpoints per process (3, 1, 2):
//  * EP_Win_create with a different size and displacement unit per endpoint (size 0 for
//    some): displacements are scaled by the *target's* unit; EP_Win_get_attr's pointer
//    conventions (EP_WIN_BASE: void **, EP_WIN_SIZE: MPI_Aint **, EP_WIN_DISP_UNIT:
//    int **); EP_Win_allocate (baseptr receives usable memory); EP_Win_get_group;
//    EP_Win_free sets the handle to EP_WIN_NULL;
//  * fence epochs in which every endpoint puts its slot into every endpoint's window,
//    then reads every window back with EP_Get;
//  * contiguous and vector derived datatypes as origin and as target types of put, get
//    and accumulate (gaps must stay untouched);
//  * 4 MiB puts and gets (above the 64 KiB eager limit) checked byte for byte, in fence
//    and in passive epochs, plus an unaligned 100,003-byte put; a vector type of 20,000
//    blocks as target type of put, accumulate and get;
//  * the fence, derived-type and large-transfer tests run on EP_Win_create windows and on
//    EP_Win_allocate ones (which the processes of a node reach directly);
//  * 200 windows created and freed in a loop (alternating create / allocate);
//  * windows on two communicators (a dup and a reversed split) used at once, one in
//    fence epochs and one in a lock_all epoch;
//  * operations on EP_PROC_NULL are no-ops.
// Every expected value is computed here from the ranks; target memory is read by its
// owner only after a fence (or an unlock followed by EP_Barrier).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/rma/rma_util.h"

namespace {

using ep_rma_test::Ctx;
using ep_rma_test::Flavor;
using ep_rma_test::free_win;
using ep_rma_test::make_win;
using ep_rma_test::open_win_filled;
using ep_rma_test::run_world;
using ep_rma_test::WinOf;

// Tests that run on EP_Win_create and on EP_Win_allocate windows.
class WinFlavor : public ::testing::TestWithParam<Flavor> {};

[[maybe_unused]] const bool kWatchdog = ep_rma_test::install_watchdog();

constexpr int64_t kSent = -7;  // "must not be written"

// Per-endpoint window shape for the heterogeneous test.
int du_of(int r) {
  static const int u[] = {8, 1, 4, 2};
  return u[r % 4];
}
bool zero_of(int r) { return r % 3 == 2; }

int64_t slot_val(int origin, int target, int round) {
  return 1000000LL * round + 1000LL * origin + target + 1;
}

// ---- Creation and attributes -----------------------------------------------------------------

TEST(Win, CreateWithPerEndpointSizeAndDispUnit) {
  run_world([](const Ctx& c) {
    const int n = c.size;
    const bool zero = zero_of(c.rank);
    const int du = du_of(c.rank);
    std::vector<int64_t> mem(static_cast<size_t>(n) + 1, kSent);
    void* base = zero ? nullptr : mem.data();
    const MPI_Aint bytes = zero ? 0 : static_cast<MPI_Aint>(8 * (n + 1));
    EP_Win win = make_win(base, bytes, du, c.comm);
    ASSERT_NE(win, EP_WIN_NULL) << c.who();

    void* got_base = reinterpret_cast<void*>(0x1);
    int flag = 0;
    EXPECT_EP_OK(EP_Win_get_attr(win, EP_WIN_BASE, &got_base, &flag));
    EXPECT_EQ(flag, 1) << c.who() << ": EP_WIN_BASE";
    EXPECT_EQ(got_base, base) << c.who() << ": EP_WIN_BASE";
    MPI_Aint* got_size = nullptr;
    flag = 0;
    EXPECT_EP_OK(EP_Win_get_attr(win, EP_WIN_SIZE, &got_size, &flag));
    EXPECT_EQ(flag, 1) << c.who() << ": EP_WIN_SIZE";
    ASSERT_NE(got_size, nullptr) << c.who() << ": EP_WIN_SIZE must give a MPI_Aint *";
    EXPECT_EQ(*got_size, bytes) << c.who() << ": EP_WIN_SIZE";
    int* got_du = nullptr;
    flag = 0;
    EXPECT_EP_OK(EP_Win_get_attr(win, EP_WIN_DISP_UNIT, &got_du, &flag));
    EXPECT_EQ(flag, 1) << c.who() << ": EP_WIN_DISP_UNIT";
    ASSERT_NE(got_du, nullptr) << c.who() << ": EP_WIN_DISP_UNIT must give an int *";
    EXPECT_EQ(*got_du, du) << c.who() << ": EP_WIN_DISP_UNIT";

    // Every origin writes its 8-byte slot (byte offset 8 * origin) in every non-empty
    // window, expressed in the target's displacement unit.
    std::vector<int64_t> src(static_cast<size_t>(n));
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOPRECEDE, win));
    for (int t = 0; t < n; ++t) {
      if (zero_of(t)) continue;
      src[static_cast<size_t>(t)] = slot_val(c.rank, t, 0);
      EXPECT_EP_OK(EP_Put(&src[static_cast<size_t>(t)], 1, MPI_INT64_T, t, 8 * c.rank / du_of(t), 1,
                          MPI_INT64_T, win));
    }
    EXPECT_EP_OK(EP_Win_fence(0, win));
    if (!zero) {
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(mem[static_cast<size_t>(r)], slot_val(r, c.rank, 0))
            << c.who() << " (disp_unit " << du << "): slot of origin " << r;
      }
      EXPECT_EQ(mem[static_cast<size_t>(n)], kSent) << c.who() << ": the spare slot was written";
    }
    // Read a neighbour's whole window back, spare slot included.
    const int t = (c.rank + 1) % n;
    std::vector<int64_t> got(static_cast<size_t>(n) + 1, -1);
    if (!zero_of(t)) {
      EXPECT_EP_OK(EP_Get(got.data(), n + 1, MPI_INT64_T, t, 0, n + 1, MPI_INT64_T, win));
    }
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, win));
    if (!zero_of(t)) {
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(got[static_cast<size_t>(r)], slot_val(r, t, 0))
            << c.who() << ": EP_Get of target " << t << " slot " << r;
      }
      EXPECT_EQ(got[static_cast<size_t>(n)], kSent) << c.who() << ": target " << t;
    }
    free_win(&win);
  });
}

TEST(Win, GetAttrFollowsMpiPointerConventions) {
  run_world([](const Ctx& c) {
    // Odd sizes and units, so that nothing can be right by accident.
    std::vector<char> mem(64);
    const MPI_Aint bytes = 13 + c.rank;
    const int du = 3 + c.rank;
    EP_Win win = make_win(mem.data() + 1, bytes, du, c.comm);
    ASSERT_NE(win, EP_WIN_NULL);
    void* b = nullptr;
    MPI_Aint* s = nullptr;
    int* u = nullptr;
    int f1 = 0, f2 = 0, f3 = 0;
    EXPECT_EP_OK(EP_Win_get_attr(win, EP_WIN_BASE, &b, &f1));
    EXPECT_EP_OK(EP_Win_get_attr(win, EP_WIN_SIZE, &s, &f2));
    EXPECT_EP_OK(EP_Win_get_attr(win, EP_WIN_DISP_UNIT, &u, &f3));
    EXPECT_TRUE(f1 && f2 && f3) << c.who();
    EXPECT_EQ(b, static_cast<void*>(mem.data() + 1)) << c.who();
    ASSERT_NE(s, nullptr);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(*s, bytes) << c.who();
    EXPECT_EQ(*u, du) << c.who();
    free_win(&win);
  });
}

TEST(Win, AllocateGivesUsableMemory) {
  run_world([](const Ctx& c) {
    const int n = c.size;
    const bool zero = zero_of(c.rank);
    const MPI_Aint bytes = zero ? 0 : static_cast<MPI_Aint>(8 * n);
    void* basep = nullptr;
    EP_Win win = EP_WIN_NULL;
    ASSERT_EP_OK(EP_Win_allocate(bytes, 8, MPI_INFO_NULL, c.comm, &basep, &win));
    ASSERT_NE(win, EP_WIN_NULL);
    EXPECT_EP_OK(EP_Win_set_errhandler(win, EP_ERRORS_RETURN));
    if (!zero) {
      ASSERT_NE(basep, nullptr) << c.who() << ": EP_Win_allocate gave no memory";
    }
    void* attr_base = nullptr;
    int flag = 0;
    EXPECT_EP_OK(EP_Win_get_attr(win, EP_WIN_BASE, &attr_base, &flag));
    EXPECT_EQ(flag, 1);
    if (!zero) {
      EXPECT_EQ(attr_base, basep) << c.who();
    }
    MPI_Aint* sz = nullptr;
    EXPECT_EP_OK(EP_Win_get_attr(win, EP_WIN_SIZE, &sz, &flag));
    ASSERT_NE(sz, nullptr);
    EXPECT_EQ(*sz, bytes);
    int64_t* mem = static_cast<int64_t*>(basep);
    // The owner initializes its memory with local stores before the first fence.
    for (int i = 0; !zero && i < n; ++i) mem[i] = 500000 + 100LL * c.rank + i;

    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOPRECEDE, win));
    const int t = (c.rank + 1) % n;
    std::vector<int64_t> got(static_cast<size_t>(n), -1);
    if (!zero_of(t)) {
      EXPECT_EP_OK(EP_Get(got.data(), n, MPI_INT64_T, t, 0, n, MPI_INT64_T, win));
    }
    EXPECT_EP_OK(EP_Win_fence(0, win));
    if (!zero_of(t)) {
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(got[static_cast<size_t>(i)], 500000 + 100LL * t + i)
            << c.who() << ": initial value of target " << t << " slot " << i;
      }
    }
    // Now every origin overwrites its own slot everywhere.
    std::vector<int64_t> src(static_cast<size_t>(n));
    for (int t2 = 0; t2 < n; ++t2) {
      if (zero_of(t2)) continue;
      src[static_cast<size_t>(t2)] = slot_val(c.rank, t2, 3);
      EXPECT_EP_OK(
          EP_Put(&src[static_cast<size_t>(t2)], 1, MPI_INT64_T, t2, c.rank, 1, MPI_INT64_T, win));
    }
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, win));
    for (int r = 0; !zero && r < n; ++r) {
      EXPECT_EQ(mem[r], slot_val(r, c.rank, 3)) << c.who() << ": slot of origin " << r;
    }
    free_win(&win);
  });
}

TEST(Win, GetGroupIsTheCommunicatorsGroup) {
  run_world([](const Ctx& c) {
    int x = 0;
    EP_Win win = make_win(&x, sizeof x, sizeof x, c.comm);
    ASSERT_NE(win, EP_WIN_NULL);
    EP_Group wg = EP_GROUP_NULL, cg = EP_GROUP_NULL;
    ASSERT_EP_OK(EP_Win_get_group(win, &wg));
    ASSERT_NE(wg, EP_GROUP_NULL);
    int gs = -1, gr = -1;
    EXPECT_EP_OK(EP_Group_size(wg, &gs));
    EXPECT_EP_OK(EP_Group_rank(wg, &gr));
    EXPECT_EQ(gs, c.size);
    EXPECT_EQ(gr, c.rank) << c.who();
    ASSERT_EP_OK(EP_Comm_group(c.comm, &cg));
    std::vector<int> r1(static_cast<size_t>(c.size)), r2(static_cast<size_t>(c.size), -1);
    for (int i = 0; i < c.size; ++i) r1[static_cast<size_t>(i)] = i;
    EXPECT_EP_OK(EP_Group_translate_ranks(wg, c.size, r1.data(), cg, r2.data()));
    EXPECT_EQ(r1, r2) << c.who() << ": window group ranks differ from the communicator's";
    EXPECT_EP_OK(EP_Group_free(&wg));
    EXPECT_EP_OK(EP_Group_free(&cg));
    EXPECT_EQ(wg, EP_GROUP_NULL);
    free_win(&win);
  });
}

// ---- Fence epochs ------------------------------------------------------------------------------

TEST_P(WinFlavor, FenceEpochsWriteEverySlotEverywhere) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, static_cast<size_t>(n), 8, c.comm, kSent);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    const int64_t* mem = w.mem;
    std::vector<int64_t> src(static_cast<size_t>(n));
    std::vector<int64_t> got(static_cast<size_t>(n) * static_cast<size_t>(n));
    const int rounds = ep_test::scaled(40);
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOPRECEDE, win));
    for (int round = 0; round < rounds; ++round) {
      // Put epoch: my slot (index = my rank) in every window, mine included.
      for (int t = 0; t < n; ++t) {
        src[static_cast<size_t>(t)] = slot_val(c.rank, t, round);
        EXPECT_EP_OK(
            EP_Put(&src[static_cast<size_t>(t)], 1, MPI_INT64_T, t, c.rank, 1, MPI_INT64_T, win));
      }
      EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSTORE, win));
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(mem[static_cast<size_t>(r)], slot_val(r, c.rank, round))
            << c.who() << " round " << round << ": slot of origin " << r;
      }
      // Get epoch: read every window whole.
      std::fill(got.begin(), got.end(), -1);
      for (int t = 0; t < n; ++t) {
        EXPECT_EP_OK(
            EP_Get(&got[static_cast<size_t>(t) * n], n, MPI_INT64_T, t, 0, n, MPI_INT64_T, win));
      }
      EXPECT_EP_OK(EP_Win_fence(round + 1 == rounds ? EP_MODE_NOSUCCEED : 0, win));
      for (int t = 0; t < n; ++t) {
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(got[static_cast<size_t>(t) * n + r], slot_val(r, t, round))
              << c.who() << " round " << round << ": EP_Get of target " << t << " slot " << r;
        }
      }
    }
    free_win(&win);
  });
}

TEST(Win, ProcNullTargetIsANoOp) {
  run_world([](const Ctx& c) {
    int64_t mem[2] = {kSent, kSent};
    EP_Win win = make_win(mem, sizeof mem, 8, c.comm);
    ASSERT_NE(win, EP_WIN_NULL);
    int64_t v = 5, g = 77, r = 88;
    EXPECT_EP_OK(EP_Win_fence(0, win));
    EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, EP_PROC_NULL, 0, 1, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Get(&g, 1, MPI_INT64_T, EP_PROC_NULL, 0, 1, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Accumulate(&v, 1, MPI_INT64_T, EP_PROC_NULL, 1, 1, MPI_INT64_T, MPI_SUM, win));
    EXPECT_EP_OK(EP_Fetch_and_op(&v, &r, MPI_INT64_T, EP_PROC_NULL, 0, MPI_SUM, win));
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, win));
    EXPECT_EQ(mem[0], kSent);
    EXPECT_EQ(mem[1], kSent);
    EXPECT_EQ(g, 77) << "EP_Get from EP_PROC_NULL wrote the origin buffer";
    free_win(&win);
  });
}

// ---- Derived datatypes --------------------------------------------------------------------------

// Value k of the data origin o sends to target t.
int dval(int o, int t, int k) { return o * 10000 + t * 100 + k; }

constexpr int kRegion = 32;  // ints per region; region 0 from the left, 1 from the right

// What region `reg` of target t holds after the put epoch of origin o (window initialized
// to -1): see the operations in DerivedDatatypesAsOriginAndTarget.
std::vector<int> expected_region(int o, int t) {
  std::vector<int> e(kRegion, -1);
  auto f = [&](int k) { return dval(o, t, k); };
  for (int k = 0; k < 3; ++k) e[static_cast<size_t>(k)] = f(k);                    // contig -> int
  for (int k = 0; k < 3; ++k) e[static_cast<size_t>(4 + 2 * k)] = f(3 + k);        // int -> vec
  for (int k = 0; k < 3; ++k) e[static_cast<size_t>(10 + k)] = f(6 + k);           // vec -> contig
  for (int k = 0; k < 3; ++k) e[static_cast<size_t>(14 + 2 * k)] = -1 + f(9 + k);  // acc
  for (int k = 0; k < 4; ++k) e[static_cast<size_t>(20 + k)] = -1 + f(12 + k);     // acc
  e[24] = f(16);                                                                   // vec2 -> vec2
  e[25] = f(17);
  e[27] = f(18);
  e[28] = f(19);
  return e;
}

struct Types {
  MPI_Datatype contig3 = MPI_DATATYPE_NULL;  // 3 ints
  MPI_Datatype vec = MPI_DATATYPE_NULL;      // 3 blocks of 1 int, stride 2 (extent 5)
  MPI_Datatype vec2 = MPI_DATATYPE_NULL;     // 2 blocks of 2 ints, stride 3 (extent 5)
  Types() {
    MPI_Type_contiguous(3, MPI_INT, &contig3);
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
    MPI_Type_vector(2, 2, 3, MPI_INT, &vec2);
    MPI_Type_commit(&contig3);
    MPI_Type_commit(&vec);
    MPI_Type_commit(&vec2);
  }
  ~Types() {
    MPI_Type_free(&contig3);
    MPI_Type_free(&vec);
    MPI_Type_free(&vec2);
  }
};

TEST_P(WinFlavor, DerivedDatatypesAsOriginAndTarget) {
  const Types ty;
  const Flavor flavor = GetParam();
  run_world([&](const Ctx& c) {
    const int n = c.size;
    WinOf<int> w = open_win_filled<int>(flavor, 2 * kRegion, sizeof(int), c.comm, -1);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    const int* mem = w.mem;
    // I am the left neighbour of L (I write its region 0) and the right one of R (region 1).
    const int targets[2] = {(c.rank + 1) % n, (c.rank + n - 1) % n};
    struct Src {
      int s1[3], s2[3], s3[5], s4[3], s5[5], s6[5];
    } src[2];
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOPRECEDE, win));
    for (int reg = 0; reg < 2; ++reg) {
      const int t = targets[reg];
      const MPI_Aint off = reg * kRegion;
      auto f = [&](int k) { return dval(c.rank, t, k); };
      Src& s = src[reg];
      for (int k = 0; k < 3; ++k) {
        s.s1[k] = f(k);
        s.s2[k] = f(3 + k);
        s.s4[k] = f(9 + k);
      }
      const int s3[5] = {f(6), -99, f(7), -99, f(8)};
      const int s5[5] = {f(12), f(13), -99, f(14), f(15)};
      const int s6[5] = {f(16), f(17), -99, f(18), f(19)};
      std::memcpy(s.s3, s3, sizeof s3);
      std::memcpy(s.s5, s5, sizeof s5);
      std::memcpy(s.s6, s6, sizeof s6);
      EXPECT_EP_OK(EP_Put(s.s1, 1, ty.contig3, t, off + 0, 3, MPI_INT, win));
      EXPECT_EP_OK(EP_Put(s.s2, 3, MPI_INT, t, off + 4, 1, ty.vec, win));
      EXPECT_EP_OK(EP_Put(s.s3, 1, ty.vec, t, off + 10, 1, ty.contig3, win));
      EXPECT_EP_OK(EP_Accumulate(s.s4, 1, ty.contig3, t, off + 14, 1, ty.vec, MPI_SUM, win));
      EXPECT_EP_OK(EP_Accumulate(s.s5, 1, ty.vec2, t, off + 20, 4, MPI_INT, MPI_SUM, win));
      EXPECT_EP_OK(EP_Put(s.s6, 1, ty.vec2, t, off + 24, 1, ty.vec2, win));
    }
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSTORE, win));
    // My region 0 was written by my left neighbour, region 1 by my right one.
    const int from[2] = {(c.rank + n - 1) % n, (c.rank + 1) % n};
    for (int reg = 0; reg < 2; ++reg) {
      const std::vector<int> e = expected_region(from[reg], c.rank);
      for (int i = 0; i < kRegion; ++i) {
        EXPECT_EQ(mem[static_cast<size_t>(reg * kRegion + i)], e[static_cast<size_t>(i)])
            << c.who() << ": region " << reg << " (from " << from[reg] << ") int " << i;
      }
    }
    // Read back with derived types on either side.
    struct Got {
      int g1[3], g2[5], g3[6], g4[5], g5[5];
    } got[2];
    for (int reg = 0; reg < 2; ++reg) {
      const int t = targets[reg];
      const MPI_Aint off = reg * kRegion;
      Got& g = got[reg];
      std::fill(std::begin(g.g1), std::end(g.g1), -5);
      std::fill(std::begin(g.g2), std::end(g.g2), -5);
      std::fill(std::begin(g.g3), std::end(g.g3), -5);
      std::fill(std::begin(g.g4), std::end(g.g4), -5);
      std::fill(std::begin(g.g5), std::end(g.g5), -5);
      EXPECT_EP_OK(EP_Get(g.g1, 3, MPI_INT, t, off + 4, 1, ty.vec, win));
      EXPECT_EP_OK(EP_Get(g.g2, 1, ty.vec, t, off + 0, 3, MPI_INT, win));
      EXPECT_EP_OK(EP_Get(g.g3, 6, MPI_INT, t, off + 10, 2, ty.contig3, win));
      EXPECT_EP_OK(EP_Get(g.g4, 1, ty.vec2, t, off + 24, 1, ty.vec2, win));
      // An atomic read (MPI_NO_OP) into a vector result type.
      EXPECT_EP_OK(EP_Get_accumulate(nullptr, 0, MPI_INT, g.g5, 1, ty.vec, t, off + 0, 3, MPI_INT,
                                     MPI_NO_OP, win));
    }
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, win));
    for (int reg = 0; reg < 2; ++reg) {
      const int t = targets[reg];
      auto f = [&](int k) { return dval(c.rank, t, k); };
      const Got& g = got[reg];
      const std::string w = c.who() + " target " + std::to_string(t);
      EXPECT_EQ(std::vector<int>(g.g1, g.g1 + 3), (std::vector<int>{f(3), f(4), f(5)}))
          << w << ": get vec -> int";
      EXPECT_EQ(std::vector<int>(g.g2, g.g2 + 5), (std::vector<int>{f(0), -5, f(1), -5, f(2)}))
          << w << ": get int -> vec (gaps must stay untouched)";
      EXPECT_EQ(std::vector<int>(g.g3, g.g3 + 6),
                (std::vector<int>{f(6), f(7), f(8), -1, -1 + f(9), -1}))
          << w << ": get 2 x contig -> int";
      EXPECT_EQ(std::vector<int>(g.g4, g.g4 + 5),
                (std::vector<int>{f(16), f(17), -5, f(18), f(19)}))
          << w << ": get vec2 -> vec2";
      EXPECT_EQ(std::vector<int>(g.g5, g.g5 + 5), (std::vector<int>{f(0), -5, f(1), -5, f(2)}))
          << w << ": get_accumulate(MPI_NO_OP) int -> vec result";
    }
    free_win(&win);
  });
}

// ---- Large transfers
// -------------------------------------------------------------------------------

constexpr size_t kLarge = 4u << 20;  // 4 MiB, far above the 64 KiB eager limit

uint8_t pat(int origin, size_t i, int salt) {
  return static_cast<uint8_t>(i * 131 + (i >> 13) + static_cast<size_t>(origin) * 37 +
                              static_cast<size_t>(salt) * 11);
}

std::vector<uint8_t> pattern(int origin, size_t n, int salt) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = pat(origin, i, salt);
  return v;
}

// Index of the first difference, or -1.
long first_diff(const uint8_t* a, const uint8_t* b, size_t n) {
  if (std::memcmp(a, b, n) == 0) return -1;
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return static_cast<long>(i);
  }
  return -1;
}

TEST_P(WinFlavor, LargePutAndGetAreByteExact) {
  const Flavor flavor = GetParam();
  run_world([flavor](const Ctx& c) {
    const int n = c.size;
    WinOf<uint8_t> w = open_win_filled<uint8_t>(flavor, kLarge, 1, c.comm, uint8_t{0xEE});
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    const uint8_t* mem = w.mem;
    const int right = (c.rank + 1) % n, left = (c.rank + n - 1) % n, far = (c.rank + 2) % n;

    // Fence epoch: 4 MiB to my right neighbour.
    const std::vector<uint8_t> src = pattern(c.rank, kLarge, 0);
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOPRECEDE, win));
    EXPECT_EP_OK(EP_Put(src.data(), static_cast<int>(kLarge), MPI_BYTE, right, 0,
                        static_cast<int>(kLarge), MPI_BYTE, win));
    EXPECT_EP_OK(EP_Win_fence(0, win));
    std::vector<uint8_t> expect = pattern(left, kLarge, 0);
    EXPECT_EQ(first_diff(mem, expect.data(), kLarge), -1)
        << c.who() << ": 4 MiB put from " << left << " differs at that byte";
    // Fence epoch: 4 MiB get of the window two to the right (written by its left neighbour).
    std::vector<uint8_t> got(kLarge, 0x11);
    EXPECT_EP_OK(EP_Get(got.data(), static_cast<int>(kLarge), MPI_BYTE, far, 0,
                        static_cast<int>(kLarge), MPI_BYTE, win));
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, win));
    const std::vector<uint8_t> expect_far = pattern((far + n - 1) % n, kLarge, 0);
    EXPECT_EQ(first_diff(got.data(), expect_far.data(), kLarge), -1)
        << c.who() << ": 4 MiB get from " << far << " differs at that byte";

    // Passive epoch: an unaligned 100,003-byte put at byte 3, then a whole-window get.
    const size_t odd = 100003;
    const std::vector<uint8_t> src2 = pattern(c.rank, odd, 1);
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    EXPECT_EP_OK(EP_Put(src2.data(), static_cast<int>(odd), MPI_BYTE, right, 3,
                        static_cast<int>(odd), MPI_BYTE, win));
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    const std::vector<uint8_t> e2 = pattern(left, odd, 1);
    std::memcpy(expect.data() + 3, e2.data(), odd);
    EXPECT_EQ(first_diff(mem, expect.data(), kLarge), -1)
        << c.who() << ": after the unaligned put from " << left;
    std::fill(got.begin(), got.end(), 0x22);
    EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, far, 0, win));
    EXPECT_EP_OK(EP_Get(got.data(), static_cast<int>(kLarge), MPI_BYTE, far, 0,
                        static_cast<int>(kLarge), MPI_BYTE, win));
    EXPECT_EP_OK(EP_Win_unlock(far, win));
    std::vector<uint8_t> ef = expect_far;
    const std::vector<uint8_t> ef2 = pattern((far + n - 1) % n, odd, 1);
    std::memcpy(ef.data() + 3, ef2.data(), odd);
    EXPECT_EQ(first_diff(got.data(), ef.data(), kLarge), -1)
        << c.who() << ": passive 4 MiB get from " << far;
    EXPECT_EP_OK(EP_Barrier(c.comm));
    free_win(&win);
  });
}

// A vector type of 20,000 blocks: more blocks than one packet carries, so a single
// operation is cut by block count as well as by size.
TEST_P(WinFlavor, StridedTypesWithManyBlocks) {
  constexpr int kBlocks = 20000;
  MPI_Datatype strided = MPI_DATATYPE_NULL;  // kBlocks int64, stride 2 (extent 2 kBlocks - 1)
  MPI_Type_vector(kBlocks, 1, 2, MPI_INT64_T, &strided);
  MPI_Type_commit(&strided);
  const Flavor flavor = GetParam();
  run_world([&](const Ctx& c) {
    const int n = c.size;
    const int right = (c.rank + 1) % n, left = (c.rank + n - 1) % n, far = (c.rank + 2) % n;
    WinOf<int64_t> w = open_win_filled<int64_t>(flavor, 2 * kBlocks, 8, c.comm, kSent);
    ASSERT_NE(w.win, EP_WIN_NULL);
    EP_Win win = w.win;
    const int64_t* mem = w.mem;
    auto v = [](int o, int i) { return 1000000LL * o + i; };
    std::vector<int64_t> src(kBlocks), add(kBlocks, c.rank + 1), got(kBlocks, -1);
    for (int i = 0; i < kBlocks; ++i) src[static_cast<size_t>(i)] = v(c.rank, i);
    // Put: contiguous origin -> even slots of my right neighbour.
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOPRECEDE, win));
    EXPECT_EP_OK(EP_Put(src.data(), kBlocks, MPI_INT64_T, right, 0, 1, strided, win));
    EXPECT_EP_OK(EP_Win_fence(0, win));
    int bad = 0;
    for (int i = 0; i < kBlocks && bad < 5; ++i) {
      if (mem[2 * i] != v(left, i) || mem[2 * i + 1] != kSent) {
        ADD_FAILURE() << c.who() << ": after the strided put from " << left << ", slots " << 2 * i
                      << ", " << 2 * i + 1 << " hold " << mem[2 * i] << ", " << mem[2 * i + 1];
        ++bad;
      }
    }
    // An empty epoch: nobody accumulates into rank 0's odd slots before it checked them.
    EXPECT_EP_OK(EP_Win_fence(0, win));
    // Accumulate: everybody adds rank + 1 to the odd slots of rank 0.
    EXPECT_EP_OK(EP_Accumulate(add.data(), kBlocks, MPI_INT64_T, 0, 1, 1, strided, MPI_SUM, win));
    EXPECT_EP_OK(EP_Win_fence(0, win));
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += r + 1;
    for (int i = 0; i < kBlocks && bad < 10; ++i) {
      const int64_t e = c.rank == 0 ? kSent + sum : kSent;
      if (mem[2 * i + 1] != e) {
        ADD_FAILURE() << c.who() << ": odd slot " << 2 * i + 1 << " holds " << mem[2 * i + 1]
                      << ", expected " << e;
        ++bad;
      }
    }
    // Get: the even slots of the window two to the right, into a contiguous buffer; and its
    // first kBlocks slots into the even elements of a strided buffer.
    std::vector<int64_t> spread(2 * kBlocks, -3);
    EXPECT_EP_OK(EP_Get(got.data(), kBlocks, MPI_INT64_T, far, 0, 1, strided, win));
    EXPECT_EP_OK(EP_Get(spread.data(), 1, strided, far, 0, kBlocks, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, win));
    for (int j = 0; j < kBlocks && bad < 15; ++j) {
      // far's slot j: even slots hold the put from far's left neighbour, odd ones kSent
      // (plus the accumulated sum at rank 0).
      const int64_t e = j % 2 == 0 ? v((far + n - 1) % n, j / 2) : (far == 0 ? kSent + sum : kSent);
      if (spread[2 * static_cast<size_t>(j)] != e || spread[2 * static_cast<size_t>(j) + 1] != -3) {
        ADD_FAILURE() << c.who() << ": get into a strided origin from " << far << ", slot " << j
                      << ": " << spread[2 * static_cast<size_t>(j)] << " (expected " << e
                      << "), gap " << spread[2 * static_cast<size_t>(j) + 1];
        ++bad;
      }
    }
    for (int i = 0; i < kBlocks && bad < 15; ++i) {
      if (got[static_cast<size_t>(i)] != v((far + n - 1) % n, i)) {
        ADD_FAILURE() << c.who() << ": strided get from " << far << ", element " << i << " is "
                      << got[static_cast<size_t>(i)];
        ++bad;
      }
    }
    free_win(&win);
  });
  MPI_Type_free(&strided);
}

// A process may have no endpoint in the communicator (num_ep 0): windows span only the
// endpoints, and every operation still reaches its target.
TEST(Win, ProcessWithoutEndpointsTakesNoPart) {
  const int np = ep_test::world_size();
  const int p = ep_test::world_rank();
  auto count_of = [](int q) { return q == 1 ? 0 : ep_test::uneven(q); };
  int n = 0, base = 0;
  for (int q = 0; q < np; ++q) {
    if (q == p) base = n;
    n += count_of(q);
  }
  ep_test::run_endpoints(count_of(p), [&](EP_Comm comm, int idx) {
    const int me = base + idx;
    int r = -1;
    EXPECT_EP_OK(EP_Comm_rank(comm, &r));
    ASSERT_EQ(r, me);
    std::vector<int64_t> mem(static_cast<size_t>(n), kSent), src(static_cast<size_t>(n));
    EP_Win win = make_win(mem.data(), 8 * n, 8, comm);
    ASSERT_NE(win, EP_WIN_NULL);
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOPRECEDE, win));
    for (int t = 0; t < n; ++t) {
      src[static_cast<size_t>(t)] = slot_val(me, t, 7);
      EXPECT_EP_OK(
          EP_Put(&src[static_cast<size_t>(t)], 1, MPI_INT64_T, t, me, 1, MPI_INT64_T, win));
    }
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, win));
    for (int o = 0; o < n; ++o) {
      EXPECT_EQ(mem[static_cast<size_t>(o)], slot_val(o, me, 7)) << "rank " << me << " slot " << o;
    }
    EXPECT_EP_OK(EP_Barrier(comm));  // everybody checked before the next updates
    int64_t one = 1, old = -1;
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    EXPECT_EP_OK(EP_Fetch_and_op(&one, &old, MPI_INT64_T, n - 1, 0, MPI_SUM, win));
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    EXPECT_GE(old, slot_val(0, n - 1, 7));
    EXPECT_EP_OK(EP_Barrier(comm));
    if (me == n - 1) {
      EXPECT_EQ(mem[0], slot_val(0, n - 1, 7) + n) << "rank " << me;
    }
    free_win(&win);
  });
}

// ---- Many windows
// ----------------------------------------------------------------------------------

TEST(Win, ManyWindowsCreatedAndFreed) {
  run_world([](const Ctx& c) {
    const int n = c.size;
    const int iters = ep_test::scaled(200);
    const int right = (c.rank + 1) % n, left = (c.rank + n - 1) % n;
    for (int it = 0; it < iters; ++it) {
      std::vector<int64_t> own(2, kSent);
      int64_t* mem = own.data();
      EP_Win win = EP_WIN_NULL;
      if (it % 2 == 0) {
        win = make_win(mem, 16, 8, c.comm);
      } else {
        void* basep = nullptr;
        ASSERT_EP_OK(EP_Win_allocate(16, 8, MPI_INFO_NULL, c.comm, &basep, &win));
        EXPECT_EP_OK(EP_Win_set_errhandler(win, EP_ERRORS_RETURN));
        mem = static_cast<int64_t*>(basep);
        mem[0] = mem[1] = kSent;
      }
      ASSERT_NE(win, EP_WIN_NULL) << "iteration " << it;
      const int64_t v = 1000LL * c.rank + it;
      EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOPRECEDE, win));
      EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, right, 1, 1, MPI_INT64_T, win));
      EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, win));
      EXPECT_EQ(mem[1], 1000LL * left + it) << c.who() << " iteration " << it;
      EXPECT_EQ(mem[0], kSent) << c.who() << " iteration " << it;
      free_win(&win);
      if (testing::Test::HasFatalFailure()) return;
    }
  });
}

// ---- Windows on two communicators
// ----------------------------------------------------------------

TEST(Win, WindowsOnTwoCommunicatorsAtOnce) {
  run_world([](const Ctx& c) {
    const int n = c.size;
    // The split: color = rank % 2, key = -rank (ranks reversed within a color).
    const int color = c.rank % 2;
    int ns = 0, my_s = 0;
    for (int r = 0; r < n; ++r) {
      if (r % 2 != color) continue;
      ++ns;
      if (r > c.rank) ++my_s;
    }
    EP_Comm dup = EP_COMM_NULL, split = EP_COMM_NULL;
    ASSERT_EP_OK(EP_Comm_dup(c.comm, &dup));
    ASSERT_EP_OK(EP_Comm_split(c.comm, color, -c.rank, &split));
    int r = -1;
    EXPECT_EP_OK(EP_Comm_rank(split, &r));
    ASSERT_EQ(r, my_s) << c.who() << ": unexpected split rank";

    std::vector<int64_t> ma(static_cast<size_t>(n), kSent), mb(static_cast<size_t>(n), kSent),
        mc(static_cast<size_t>(ns), kSent);
    EP_Win wa = make_win(ma.data(), 8 * n, 8, c.comm);
    EP_Win wb = make_win(mb.data(), 8 * n, 8, dup);
    EP_Win wc = make_win(mc.data(), 8 * ns, 8, split);
    ASSERT_TRUE(wa != EP_WIN_NULL && wb != EP_WIN_NULL && wc != EP_WIN_NULL);
    auto va = [](int o, int t) { return 1000000LL + 1000 * o + t; };
    auto vb = [](int o, int t) { return 2000000LL + 1000 * o + t; };
    auto vc = [](int o, int t) { return 3000000LL + 1000 * o + t; };
    std::vector<int64_t> sa(static_cast<size_t>(n)), sb(static_cast<size_t>(n)),
        sc(static_cast<size_t>(ns));
    const int rounds = ep_test::scaled(30);
    for (int round = 0; round < rounds; ++round) {
      EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOPRECEDE, wa));
      EXPECT_EP_OK(EP_Win_lock_all(0, wc));
      EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOPRECEDE, wb));
      for (int t = 0; t < n; ++t) {
        sa[static_cast<size_t>(t)] = va(c.rank, t) + round;
        sb[static_cast<size_t>(t)] = vb(c.rank, t) + round;
        EXPECT_EP_OK(
            EP_Put(&sa[static_cast<size_t>(t)], 1, MPI_INT64_T, t, c.rank, 1, MPI_INT64_T, wa));
        EXPECT_EP_OK(
            EP_Put(&sb[static_cast<size_t>(t)], 1, MPI_INT64_T, t, c.rank, 1, MPI_INT64_T, wb));
      }
      for (int t = 0; t < ns; ++t) {
        sc[static_cast<size_t>(t)] = vc(my_s, t) + round;
        EXPECT_EP_OK(
            EP_Put(&sc[static_cast<size_t>(t)], 1, MPI_INT64_T, t, my_s, 1, MPI_INT64_T, wc));
      }
      EXPECT_EP_OK(EP_Win_unlock_all(wc));
      EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, wa));
      EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, wb));
      EXPECT_EP_OK(EP_Barrier(c.comm));  // the lock_all epochs on wc are over everywhere
      for (int o = 0; o < n; ++o) {
        EXPECT_EQ(ma[static_cast<size_t>(o)], va(o, c.rank) + round) << c.who() << " wa " << o;
        EXPECT_EQ(mb[static_cast<size_t>(o)], vb(o, c.rank) + round) << c.who() << " wb " << o;
      }
      for (int o = 0; o < ns; ++o) {
        EXPECT_EQ(mc[static_cast<size_t>(o)], vc(o, my_s) + round)
            << c.who() << " wc (split rank " << my_s << ") from split rank " << o;
      }
      EXPECT_EP_OK(EP_Barrier(c.comm));  // checks done before the next round's puts
    }
    free_win(&wa);
    free_win(&wb);
    free_win(&wc);
    EXPECT_EP_OK(EP_Comm_free(&dup));
    EXPECT_EP_OK(EP_Comm_free(&split));
  });
}

INSTANTIATE_TEST_SUITE_P(Flavors, WinFlavor, ::testing::Values(Flavor::kCreate, Flavor::kAllocate, Flavor::kHandler),
                         ep_rma_test::flavor_name);

}  // namespace
