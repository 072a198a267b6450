// Wrong one-sided calls, with EP_ERRORS_RETURN set on the window, on 1, 2 and 3
// processes with uneven endpoints per process (3, 1, 2). Every error is detected at the
// origin (it knows every target's window size), so each endpoint makes its own mistakes
// independently and nobody may hang:
//  * range: beyond the target's size (in the target's displacement unit, which differs per
//    endpoint), a count that runs over the end, a vector target type whose extent runs
//    over, a negative displacement, a huge displacement, any count > 0 to a size-0 window
//    -> EP_ERR_RMA_RANGE, for put, get, accumulate, get_accumulate, fetch-and-op and
//    compare-and-swap; the boundary cases just inside succeed; a failed call writes
//    nothing;
//  * epochs: an operation before any fence or lock, to a target that is not locked, or
//    after a fence with EP_MODE_NOSUCCEED; unlock without lock; a second lock of the same
//    target; a lock (or lock_all) inside lock_all (or a lock); a fence inside a passive
//    epoch; EP_Win_flush / EP_Win_flush_all outside a passive epoch -> EP_ERR_RMA_SYNC;
//    the erroneous fence does not take part in the collective;
//  * a bad target rank -> EP_ERR_RANK; MPI_DATATYPE_NULL or an uncommitted type ->
//    EP_ERR_TYPE; a user-defined MPI_Op or MPI_OP_NULL in the accumulate family ->
//    EP_ERR_OP; a negative count -> EP_ERR_COUNT; EP_WIN_NULL -> EP_ERR_WIN for every
//    window call;
//  * a bad size or disp_unit at one endpoint of EP_Win_create / EP_Win_allocate: EP_ERR_ARG
//    there, an error at every other endpoint, no window anywhere, and no hang;
//  * a bad lock_type, assert, keyval or errhandler, a NULL flag or group: EP_ERR_ARG, and the
//    window still works afterwards;
//  * afterwards the window still works and every endpoint's data is intact; EP_Error_string
//    names the failing call.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/rma/rma_util.h"

namespace {

using ep_rma_test::Ctx;
using ep_rma_test::describe;
using ep_rma_test::free_win;
using ep_rma_test::make_win;
using ep_rma_test::run_world;

[[maybe_unused]] const bool kWatchdog = ep_rma_test::install_watchdog();

constexpr int64_t kSent = -7;

// Expects `rc == code`; for an error, that EP_Error_string's text names `call`.
void expect_error(int rc, int code, const char* call, const std::string& what) {
  EXPECT_EQ(rc, code) << what << ": " << call << " returned " << rc << " (" << describe(rc) << ")";
  if (rc == code && code != EP_SUCCESS) {
    const std::string msg = ep_test::last_error(rc);
    EXPECT_NE(msg.find(call), std::string::npos)
        << what << ": the error text does not name " << call << ": \"" << msg << "\"";
  }
}

int64_t val(int origin, int target) { return 1000LL * origin + target + 1; }

// Displacement unit of endpoint r's window (in bytes); every window but the size-0 ones
// holds n int64 slots, slot o belonging to origin o.
int du_of(int r) {
  static const int u[] = {8, 4, 1, 2};
  return u[r % 4];
}
bool zero_of(int r) { return r % 3 == 2; }

// A window per endpoint as above; the owner checks after the test that slot o holds
// val(o, me) for every origin o (written by a correct put in a passive epoch).
struct RangeWin {
  std::vector<int64_t> mem;
  EP_Win win = EP_WIN_NULL;
};

void expect_slots(const Ctx& c, const std::vector<int64_t>& mem, const std::string& what) {
  if (zero_of(c.rank)) return;
  for (int o = 0; o < c.size; ++o) {
    EXPECT_EQ(mem[static_cast<size_t>(o)], val(o, c.rank))
        << c.who() << " " << what << ": slot of origin " << o;
  }
}

TEST(RmaErrors, OutOfRangeAccessesAreRangeErrors) {
  run_world([](const Ctx& c) {
    const int n = c.size;
    const MPI_Aint bytes = zero_of(c.rank) ? 0 : 8 * n;
    std::vector<int64_t> mem(static_cast<size_t>(n), kSent);
    EP_Win win = make_win(zero_of(c.rank) ? nullptr : mem.data(), bytes, du_of(c.rank), c.comm);
    ASSERT_NE(win, EP_WIN_NULL);
    std::vector<int64_t> src(static_cast<size_t>(n) + 2, 99), dst(static_cast<size_t>(n) + 2);
    int64_t r = 0;
    const int64_t one = 1;
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    for (int t = 0; t < n; ++t) {
      const std::string w = c.who() + " -> target " + std::to_string(t);
      const int du = du_of(t);
      if (zero_of(t)) {
        // A size-0 window: any count > 0 is out of range; count 0 is fine.
        expect_error(EP_Put(&one, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, win), EP_ERR_RMA_RANGE,
                     "EP_Put", w + " (size 0)");
        expect_error(EP_Get(&r, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, win), EP_ERR_RMA_RANGE,
                     "EP_Get", w + " (size 0)");
        expect_error(EP_Accumulate(&one, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, MPI_SUM, win),
                     EP_ERR_RMA_RANGE, "EP_Accumulate", w + " (size 0)");
        expect_error(EP_Fetch_and_op(&one, &r, MPI_INT64_T, t, 0, MPI_SUM, win), EP_ERR_RMA_RANGE,
                     "EP_Fetch_and_op", w + " (size 0)");
        EXPECT_EP_OK(EP_Put(&one, 0, MPI_INT64_T, t, 0, 0, MPI_INT64_T, win)) << w;
        continue;
      }
      // Slot s is at displacement 8 s / du in the target's unit; the last slot is n - 1.
      auto disp = [&](int slot) { return static_cast<MPI_Aint>(8 * slot / du); };
      const MPI_Aint end = disp(n);  // first displacement past the window
      // Just inside: my own slot (the last slot for the last origin).
      src[0] = val(c.rank, t);
      EXPECT_EP_OK(EP_Put(&src[0], 1, MPI_INT64_T, t, disp(c.rank), 1, MPI_INT64_T, win)) << w;
      // Past the end, and running over the end (would overwrite the other origins' slots
      // after mine if it wrote anything).
      expect_error(EP_Put(&src[1], 1, MPI_INT64_T, t, end, 1, MPI_INT64_T, win), EP_ERR_RMA_RANGE,
                   "EP_Put", w + " at the end");
      expect_error(EP_Put(&src[1], n - c.rank + 1, MPI_INT64_T, t, disp(c.rank), n - c.rank + 1,
                          MPI_INT64_T, win),
                   EP_ERR_RMA_RANGE, "EP_Put", w + " running over the end");
      if (du < 8) {
        // One unit before the end: 8 bytes would cross it.
        expect_error(EP_Put(&src[1], 1, MPI_INT64_T, t, end - 1, 1, MPI_INT64_T, win),
                     EP_ERR_RMA_RANGE, "EP_Put", w + " straddling the end");
      }
      expect_error(EP_Put(&src[1], 1, MPI_INT64_T, t, -1, 1, MPI_INT64_T, win), EP_ERR_RMA_RANGE,
                   "EP_Put", w + " negative displacement");
      expect_error(EP_Put(&src[1], 1, MPI_INT64_T, t, MPI_Aint{1} << 58, 1, MPI_INT64_T, win),
                   EP_ERR_RMA_RANGE, "EP_Put", w + " huge displacement");
      // The other calls, past the end and at a negative displacement.
      for (MPI_Aint d : {end, MPI_Aint{-8}}) {
        const std::string wd = w + " disp " + std::to_string(d);
        expect_error(EP_Get(dst.data(), 1, MPI_INT64_T, t, d, 1, MPI_INT64_T, win),
                     EP_ERR_RMA_RANGE, "EP_Get", wd);
        expect_error(EP_Accumulate(&one, 1, MPI_INT64_T, t, d, 1, MPI_INT64_T, MPI_SUM, win),
                     EP_ERR_RMA_RANGE, "EP_Accumulate", wd);
        expect_error(EP_Get_accumulate(&one, 1, MPI_INT64_T, &r, 1, MPI_INT64_T, t, d, 1,
                                       MPI_INT64_T, MPI_SUM, win),
                     EP_ERR_RMA_RANGE, "EP_Get_accumulate", wd);
        expect_error(EP_Fetch_and_op(&one, &r, MPI_INT64_T, t, d, MPI_SUM, win), EP_ERR_RMA_RANGE,
                     "EP_Fetch_and_op", wd);
        expect_error(EP_Compare_and_swap(&one, &one, &r, MPI_INT64_T, t, d, win), EP_ERR_RMA_RANGE,
                     "EP_Compare_and_swap", wd);
      }
      EXPECT_EP_OK(EP_Win_flush(t, win));
    }
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    // Only the correct puts landed.
    expect_slots(c, mem, "after range errors");
    EXPECT_EP_OK(EP_Barrier(c.comm));

    // Read-only epoch: whole-window gets are just inside, one more element is not; a
    // vector target type whose extent is the window fits, one a slot longer does not.
    MPI_Datatype fit = MPI_DATATYPE_NULL, over = MPI_DATATYPE_NULL;
    MPI_Type_vector(2, 1, n - 1, MPI_INT64_T, &fit);  // extent n slots
    MPI_Type_vector(2, 1, n, MPI_INT64_T, &over);     // extent n + 1 slots
    MPI_Type_commit(&fit);
    MPI_Type_commit(&over);
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    for (int t = 0; t < n; ++t) {
      if (zero_of(t)) continue;
      const std::string w = c.who() + " -> target " + std::to_string(t);
      std::fill(dst.begin(), dst.end(), -1);
      int64_t two[2] = {-1, -1};
      EXPECT_EP_OK(EP_Get(dst.data(), n, MPI_INT64_T, t, 0, n, MPI_INT64_T, win)) << w;
      expect_error(EP_Get(dst.data(), n + 1, MPI_INT64_T, t, 0, n + 1, MPI_INT64_T, win),
                   EP_ERR_RMA_RANGE, "EP_Get", w + " whole window + 1");
      EXPECT_EP_OK(EP_Get(two, 2, MPI_INT64_T, t, 0, 1, fit, win)) << w << " vector that fits";
      expect_error(EP_Get(two, 2, MPI_INT64_T, t, 0, 1, over, win), EP_ERR_RMA_RANGE, "EP_Get",
                   w + " vector running over the end");
      EXPECT_EP_OK(EP_Win_flush(t, win));
      for (int o = 0; o < n; ++o) {
        EXPECT_EQ(dst[static_cast<size_t>(o)], val(o, t)) << w << " slot " << o;
      }
      EXPECT_EQ(dst[static_cast<size_t>(n)], -1) << w << ": the failed get wrote";
      EXPECT_EQ(two[0], val(0, t)) << w;
      EXPECT_EQ(two[1], val(n - 1, t)) << w;
    }
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    MPI_Type_free(&fit);
    MPI_Type_free(&over);
    EXPECT_EP_OK(EP_Barrier(c.comm));
    free_win(&win);
  });
}

TEST(RmaErrors, OperationsOutsideAnEpochAreSyncErrors) {
  run_world([](const Ctx& c) {
    const int n = c.size;
    const int right = (c.rank + 1) % n, left = (c.rank + n - 1) % n;
    std::vector<int64_t> mem(static_cast<size_t>(n), kSent);
    EP_Win win = make_win(mem.data(), 8 * n, 8, c.comm);
    ASSERT_NE(win, EP_WIN_NULL);
    const int64_t one = 1;
    int64_t r = 0;
    const std::string w = c.who();
    // Before any fence or lock.
    expect_error(EP_Put(&one, 1, MPI_INT64_T, right, c.rank, 1, MPI_INT64_T, win), EP_ERR_RMA_SYNC,
                 "EP_Put", w + " before any epoch");
    expect_error(EP_Get(&r, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, win), EP_ERR_RMA_SYNC,
                 "EP_Get", w + " before any epoch");
    expect_error(EP_Accumulate(&one, 1, MPI_INT64_T, c.rank, 0, 1, MPI_INT64_T, MPI_SUM, win),
                 EP_ERR_RMA_SYNC, "EP_Accumulate", w + " before any epoch (own window)");
    expect_error(EP_Get_accumulate(&one, 1, MPI_INT64_T, &r, 1, MPI_INT64_T, right, 0, 1,
                                   MPI_INT64_T, MPI_SUM, win),
                 EP_ERR_RMA_SYNC, "EP_Get_accumulate", w + " before any epoch");
    expect_error(EP_Fetch_and_op(&one, &r, MPI_INT64_T, right, 0, MPI_SUM, win), EP_ERR_RMA_SYNC,
                 "EP_Fetch_and_op", w + " before any epoch");
    expect_error(EP_Compare_and_swap(&one, &one, &r, MPI_INT64_T, right, 0, win), EP_ERR_RMA_SYNC,
                 "EP_Compare_and_swap", w + " before any epoch");
    // Unlock without a lock.
    expect_error(EP_Win_unlock(right, win), EP_ERR_RMA_SYNC, "EP_Win_unlock", w + " no lock");
    expect_error(EP_Win_unlock_all(win), EP_ERR_RMA_SYNC, "EP_Win_unlock_all", w + " no lock_all");

    // Lock, then a second lock of the same target, a lock_all, a fence, an operation to
    // a target that is not locked.
    EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, right, 0, win));
    expect_error(EP_Win_lock(EP_LOCK_SHARED, right, 0, win), EP_ERR_RMA_SYNC, "EP_Win_lock",
                 w + " second shared lock of the same target");
    expect_error(EP_Win_lock(EP_LOCK_EXCLUSIVE, right, 0, win), EP_ERR_RMA_SYNC, "EP_Win_lock",
                 w + " exclusive lock of a target already locked");
    expect_error(EP_Win_lock_all(0, win), EP_ERR_RMA_SYNC, "EP_Win_lock_all",
                 w + " lock_all inside a lock");
    expect_error(EP_Win_fence(0, win), EP_ERR_RMA_SYNC, "EP_Win_fence", w + " fence inside a lock");
    expect_error(EP_Put(&one, 1, MPI_INT64_T, left, c.rank, 1, MPI_INT64_T, win), EP_ERR_RMA_SYNC,
                 "EP_Put", w + " to a target that is not locked");
    expect_error(EP_Win_unlock(left, win), EP_ERR_RMA_SYNC, "EP_Win_unlock",
                 w + " unlock of a target that is not locked");
    // The lock survived the errors: a put and its flush work, then one unlock.
    const int64_t v1 = val(c.rank, right);
    EXPECT_EP_OK(EP_Put(&v1, 1, MPI_INT64_T, right, c.rank, 1, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Win_flush(right, win));
    EXPECT_EP_OK(EP_Win_unlock(right, win));
    expect_error(EP_Win_unlock(right, win), EP_ERR_RMA_SYNC, "EP_Win_unlock", w + " second unlock");

    // lock_all, then any lock, a second lock_all, a fence, unlock of one target.
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    expect_error(EP_Win_lock(EP_LOCK_SHARED, left, 0, win), EP_ERR_RMA_SYNC, "EP_Win_lock",
                 w + " lock inside lock_all");
    expect_error(EP_Win_lock(EP_LOCK_EXCLUSIVE, c.rank, 0, win), EP_ERR_RMA_SYNC, "EP_Win_lock",
                 w + " exclusive lock inside lock_all");
    expect_error(EP_Win_lock_all(0, win), EP_ERR_RMA_SYNC, "EP_Win_lock_all",
                 w + " lock_all inside lock_all");
    expect_error(EP_Win_fence(0, win), EP_ERR_RMA_SYNC, "EP_Win_fence",
                 w + " fence inside lock_all");
    expect_error(EP_Win_unlock(left, win), EP_ERR_RMA_SYNC, "EP_Win_unlock",
                 w + " unlock inside lock_all");
    const int64_t v2 = val(c.rank, left);
    EXPECT_EP_OK(EP_Put(&v2, 1, MPI_INT64_T, left, c.rank, 1, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    expect_error(EP_Win_unlock_all(win), EP_ERR_RMA_SYNC, "EP_Win_unlock_all",
                 w + " second unlock_all");
    EXPECT_EP_OK(EP_Barrier(c.comm));
    // Every origin put into its right and left neighbour's slot.
    for (int o = 0; o < n; ++o) {
      const bool written = o == left || o == right;
      EXPECT_EQ(mem[static_cast<size_t>(o)], written ? val(o, c.rank) : kSent)
          << w << " slot " << o;
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));

    // Fence epochs: the erroneous fences above took no part in the collective, so these
    // fences match up. After EP_MODE_NOSUCCEED no epoch is open.
    std::vector<int64_t> src(static_cast<size_t>(n));
    EXPECT_EP_OK(EP_Win_fence(0, win));
    for (int t = 0; t < n; ++t) {
      src[static_cast<size_t>(t)] = val(c.rank, t);
      EXPECT_EP_OK(
          EP_Put(&src[static_cast<size_t>(t)], 1, MPI_INT64_T, t, c.rank, 1, MPI_INT64_T, win));
    }
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, win));
    expect_error(EP_Put(&one, 1, MPI_INT64_T, right, c.rank, 1, MPI_INT64_T, win), EP_ERR_RMA_SYNC,
                 "EP_Put", w + " after a fence with EP_MODE_NOSUCCEED");
    expect_error(EP_Accumulate(&one, 1, MPI_INT64_T, right, c.rank, 1, MPI_INT64_T, MPI_SUM, win),
                 EP_ERR_RMA_SYNC, "EP_Accumulate", w + " after a fence with EP_MODE_NOSUCCEED");
    expect_slots(c, mem, "after the fence epoch");
    // A passive epoch is allowed after EP_MODE_NOSUCCEED.
    int64_t back = -1;
    EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, right, 0, win));
    EXPECT_EP_OK(EP_Get(&back, 1, MPI_INT64_T, right, c.rank, 1, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Win_unlock(right, win));
    EXPECT_EQ(back, val(c.rank, right)) << w;
    EXPECT_EP_OK(EP_Barrier(c.comm));
    free_win(&win);
  });
}

TEST(RmaErrors, FlushOutsideAPassiveEpochIsASyncError) {
  run_world([](const Ctx& c) {
    int64_t mem = 0;
    EP_Win win = make_win(&mem, 8, 8, c.comm);
    ASSERT_NE(win, EP_WIN_NULL);
    const int right = (c.rank + 1) % c.size;
    expect_error(EP_Win_flush(right, win), EP_ERR_RMA_SYNC, "EP_Win_flush", c.who());
    expect_error(EP_Win_flush_all(win), EP_ERR_RMA_SYNC, "EP_Win_flush_all", c.who());
    EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, right, 0, win));
    EXPECT_EP_OK(EP_Win_flush(right, win));
    EXPECT_EP_OK(EP_Win_unlock(right, win));
    free_win(&win);
  });
}

// Arguments of the synchronization and attribute calls: each a clear EP_ERR_ARG naming
// the call, and the window still works afterwards.
TEST(RmaErrors, BadLockTypeAssertKeyvalAndErrhandler) {
  run_world([](const Ctx& c) {
    int64_t mem = 0;
    EP_Win win = make_win(&mem, 8, 8, c.comm);
    ASSERT_NE(win, EP_WIN_NULL);
    const std::string w = c.who();
    const int right = (c.rank + 1) % c.size;
    expect_error(EP_Win_lock(12345, right, 0, win), EP_ERR_ARG, "EP_Win_lock", w);
    expect_error(EP_Win_lock(EP_LOCK_SHARED, right, EP_MODE_NOPUT, win), EP_ERR_ARG,
                 "EP_Win_lock", w);
    expect_error(EP_Win_lock_all(EP_MODE_NOSTORE, win), EP_ERR_ARG, "EP_Win_lock_all", w);
    expect_error(EP_Win_fence(1 << 30, win), EP_ERR_ARG, "EP_Win_fence", w);
    void* attr = nullptr;
    int flag = 0;
    expect_error(EP_Win_get_attr(win, MPI_TAG_UB, &attr, &flag), EP_ERR_ARG,
                 "EP_Win_get_attr", w);
    expect_error(EP_Win_get_attr(win, EP_WIN_BASE, &attr, nullptr), EP_ERR_ARG,
                 "EP_Win_get_attr", w);
    expect_error(EP_Win_set_errhandler(win, reinterpret_cast<EP_Errhandler>(7)), EP_ERR_ARG,
                 "EP_Win_set_errhandler", w);
    expect_error(EP_Win_get_group(win, nullptr), EP_ERR_ARG, "EP_Win_get_group", w);
    // None of that opened an epoch or broke the window.
    const int64_t one = 1;
    expect_error(EP_Put(&one, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, win), EP_ERR_RMA_SYNC,
                 "EP_Put", w);
    EXPECT_EP_OK(EP_Win_lock(EP_LOCK_EXCLUSIVE, right, 0, win));
    EXPECT_EP_OK(EP_Accumulate(&one, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, MPI_SUM, win));
    EXPECT_EP_OK(EP_Win_unlock(right, win));
    EXPECT_EQ(EP_Barrier(c.comm), EP_SUCCESS);
    EXPECT_EQ(mem, 1) << w << ": one accumulate from the left neighbour";
    free_win(&win);
  });
}

void user_sum(void* in, void* io, int* len, MPI_Datatype*) {
  for (int i = 0; i < *len; ++i) static_cast<int64_t*>(io)[i] += static_cast<int64_t*>(in)[i];
}

TEST(RmaErrors, BadRankTypeOpAndCount) {
  MPI_Op user = MPI_OP_NULL;
  MPI_Op_create(&user_sum, 1, &user);
  MPI_Datatype uncommitted = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(2, MPI_INT64_T, &uncommitted);
  run_world([&](const Ctx& c) {
    const int n = c.size;
    std::vector<int64_t> mem(static_cast<size_t>(n), kSent);
    EP_Win win = make_win(mem.data(), 8 * n, 8, c.comm);
    ASSERT_NE(win, EP_WIN_NULL);
    const int right = (c.rank + 1) % n;
    const int64_t one = 1;
    int64_t r = 0, two[2] = {0, 0};
    const std::string w = c.who();
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    for (int bad : {n, n + 7, -5}) {
      const std::string wr = w + " target " + std::to_string(bad);
      expect_error(EP_Put(&one, 1, MPI_INT64_T, bad, 0, 1, MPI_INT64_T, win), EP_ERR_RANK, "EP_Put",
                   wr);
      expect_error(EP_Get(&r, 1, MPI_INT64_T, bad, 0, 1, MPI_INT64_T, win), EP_ERR_RANK, "EP_Get",
                   wr);
      expect_error(EP_Accumulate(&one, 1, MPI_INT64_T, bad, 0, 1, MPI_INT64_T, MPI_SUM, win),
                   EP_ERR_RANK, "EP_Accumulate", wr);
      expect_error(EP_Get_accumulate(&one, 1, MPI_INT64_T, &r, 1, MPI_INT64_T, bad, 0, 1,
                                     MPI_INT64_T, MPI_SUM, win),
                   EP_ERR_RANK, "EP_Get_accumulate", wr);
      expect_error(EP_Fetch_and_op(&one, &r, MPI_INT64_T, bad, 0, MPI_SUM, win), EP_ERR_RANK,
                   "EP_Fetch_and_op", wr);
      expect_error(EP_Compare_and_swap(&one, &one, &r, MPI_INT64_T, bad, 0, win), EP_ERR_RANK,
                   "EP_Compare_and_swap", wr);
      expect_error(EP_Win_flush(bad, win), EP_ERR_RANK, "EP_Win_flush", wr);
    }
    // Datatypes.
    expect_error(EP_Put(&one, 1, MPI_DATATYPE_NULL, right, 0, 1, MPI_INT64_T, win), EP_ERR_TYPE,
                 "EP_Put", w + " origin MPI_DATATYPE_NULL");
    expect_error(EP_Put(&one, 1, MPI_INT64_T, right, 0, 1, MPI_DATATYPE_NULL, win), EP_ERR_TYPE,
                 "EP_Put", w + " target MPI_DATATYPE_NULL");
    expect_error(EP_Get(&r, 1, MPI_DATATYPE_NULL, right, 0, 1, MPI_INT64_T, win), EP_ERR_TYPE,
                 "EP_Get", w + " origin MPI_DATATYPE_NULL");
    expect_error(EP_Accumulate(&one, 1, MPI_INT64_T, right, 0, 1, MPI_DATATYPE_NULL, MPI_SUM, win),
                 EP_ERR_TYPE, "EP_Accumulate", w + " target MPI_DATATYPE_NULL");
    expect_error(EP_Fetch_and_op(&one, &r, MPI_DATATYPE_NULL, right, 0, MPI_SUM, win), EP_ERR_TYPE,
                 "EP_Fetch_and_op", w + " MPI_DATATYPE_NULL");
    expect_error(EP_Compare_and_swap(&one, &one, &r, MPI_DATATYPE_NULL, right, 0, win), EP_ERR_TYPE,
                 "EP_Compare_and_swap", w + " MPI_DATATYPE_NULL");
    expect_error(EP_Put(two, 1, uncommitted, right, 0, 2, MPI_INT64_T, win), EP_ERR_TYPE, "EP_Put",
                 w + " uncommitted origin type");
    // Ops: user-defined ops and MPI_OP_NULL are not allowed in the accumulate family.
    expect_error(EP_Accumulate(&one, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, user, win),
                 EP_ERR_OP, "EP_Accumulate", w + " user-defined op");
    expect_error(EP_Accumulate(&one, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, MPI_OP_NULL, win),
                 EP_ERR_OP, "EP_Accumulate", w + " MPI_OP_NULL");
    expect_error(EP_Get_accumulate(&one, 1, MPI_INT64_T, &r, 1, MPI_INT64_T, right, 0, 1,
                                   MPI_INT64_T, user, win),
                 EP_ERR_OP, "EP_Get_accumulate", w + " user-defined op");
    expect_error(EP_Fetch_and_op(&one, &r, MPI_INT64_T, right, 0, user, win), EP_ERR_OP,
                 "EP_Fetch_and_op", w + " user-defined op");
    // Counts.
    expect_error(EP_Put(&one, -1, MPI_INT64_T, right, 0, -1, MPI_INT64_T, win), EP_ERR_COUNT,
                 "EP_Put", w + " negative count");
    expect_error(EP_Get(&r, -1, MPI_INT64_T, right, 0, -1, MPI_INT64_T, win), EP_ERR_COUNT,
                 "EP_Get", w + " negative count");
    // The epoch is intact: a correct put to my slot at my right neighbour.
    const int64_t v = val(c.rank, right);
    EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, right, c.rank, 1, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    // Lock calls with a bad rank.
    expect_error(EP_Win_lock(EP_LOCK_SHARED, n, 0, win), EP_ERR_RANK, "EP_Win_lock",
                 w + " lock of rank n");
    expect_error(EP_Win_unlock(n, win), EP_ERR_RANK, "EP_Win_unlock", w + " unlock of rank n");
    EXPECT_EP_OK(EP_Barrier(c.comm));
    const int left = (c.rank + n - 1) % n;
    for (int o = 0; o < n; ++o) {
      EXPECT_EQ(mem[static_cast<size_t>(o)], o == left ? val(o, c.rank) : kSent)
          << w << " slot " << o;
    }
    EXPECT_EP_OK(EP_Barrier(c.comm));
    free_win(&win);
  });
  MPI_Op_free(&user);
  MPI_Type_free(&uncommitted);
}

// A bad creation argument at one endpoint: that endpoint gets EP_ERR_ARG, every other
// endpoint an error too (nobody hangs, no window is created), and the communicator
// still creates windows afterwards.
TEST(RmaErrors, BadCreationArgumentFailsEverywhere) {
  run_world([](const Ctx& c) {
    const int n = c.size;
    int64_t mem[2] = {kSent, kSent};
    struct Case {
      int bad_rank;
      bool allocate;
      MPI_Aint size;
      int disp_unit;
      const char* what;
    };
    const Case cases[] = {{1, false, -8, 8, "negative size"},
                          {n - 1, false, 16, 0, "disp_unit 0"},
                          {0, true, 16, -4, "negative disp_unit"},
                          {n / 2, true, -1, 8, "negative size"}};
    for (const Case& k : cases) {
      const bool bad = c.rank == k.bad_rank;
      const char* call = k.allocate ? "EP_Win_allocate" : "EP_Win_create";
      const std::string w =
          c.who() + " " + call + " " + k.what + " at rank " + std::to_string(k.bad_rank);
      const MPI_Aint size = bad ? k.size : 16;
      const int du = bad ? k.disp_unit : 8;
      EP_Win win = EP_WIN_NULL;
      void* basep = nullptr;
      const int rc = k.allocate ? EP_Win_allocate(size, du, MPI_INFO_NULL, c.comm, &basep, &win)
                                : EP_Win_create(mem, size, du, MPI_INFO_NULL, c.comm, &win);
      if (bad) {
        expect_error(rc, EP_ERR_ARG, call, w);
      } else {
        EXPECT_NE(rc, EP_SUCCESS) << w << ": a window was created although an endpoint failed";
      }
      EXPECT_EQ(win, EP_WIN_NULL) << w;
      if (win != EP_WIN_NULL) EP_Win_free(&win);
    }
    // The communicator still makes working windows.
    EP_Win win = make_win(mem, sizeof mem, 8, c.comm);
    ASSERT_NE(win, EP_WIN_NULL);
    const int right = (c.rank + 1) % n;
    const int64_t v = 1000 + c.rank;
    EXPECT_EP_OK(EP_Win_fence(0, win));
    EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, right, 1, 1, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Win_fence(EP_MODE_NOSUCCEED, win));
    EXPECT_EQ(mem[1], 1000 + (c.rank + n - 1) % n) << c.who();
    EXPECT_EQ(mem[0], kSent) << c.who();
    free_win(&win);
  });
}

// EP_Win_free inside a passive epoch is an epoch error at every endpoint (none enters the
// collective free); after unlock_all the free works.
TEST(RmaErrors, FreeInsideAPassiveEpochIsASyncError) {
  run_world([](const Ctx& c) {
    int64_t mem = 0;
    EP_Win win = make_win(&mem, 8, 8, c.comm);
    ASSERT_NE(win, EP_WIN_NULL);
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    expect_error(EP_Win_free(&win), EP_ERR_RMA_SYNC, "EP_Win_free", c.who() + " in lock_all");
    EXPECT_NE(win, EP_WIN_NULL) << c.who() << ": a failed free must leave the handle";
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    const int right = (c.rank + 1) % c.size;
    EXPECT_EP_OK(EP_Win_lock(EP_LOCK_SHARED, right, 0, win));
    expect_error(EP_Win_free(&win), EP_ERR_RMA_SYNC, "EP_Win_free", c.who() + " in a lock");
    EXPECT_EP_OK(EP_Win_unlock(right, win));
    free_win(&win);
  });
}

TEST(RmaErrors, NullWindowIsAWinError) {
  run_world([](const Ctx& c) {
    EP_Win win = EP_WIN_NULL;
    const int64_t one = 1;
    int64_t r = 0;
    int flag = 0;
    void* p = nullptr;
    EP_Group g = EP_GROUP_NULL;
    const std::string w = c.who();
    expect_error(EP_Win_free(&win), EP_ERR_WIN, "EP_Win_free", w);
    expect_error(EP_Win_set_errhandler(win, EP_ERRORS_RETURN), EP_ERR_WIN, "EP_Win_set_errhandler",
                 w);
    expect_error(EP_Win_get_attr(win, EP_WIN_BASE, &p, &flag), EP_ERR_WIN, "EP_Win_get_attr", w);
    expect_error(EP_Win_get_group(win, &g), EP_ERR_WIN, "EP_Win_get_group", w);
    expect_error(EP_Win_fence(0, win), EP_ERR_WIN, "EP_Win_fence", w);
    expect_error(EP_Win_lock(EP_LOCK_SHARED, 0, 0, win), EP_ERR_WIN, "EP_Win_lock", w);
    expect_error(EP_Win_unlock(0, win), EP_ERR_WIN, "EP_Win_unlock", w);
    expect_error(EP_Win_lock_all(0, win), EP_ERR_WIN, "EP_Win_lock_all", w);
    expect_error(EP_Win_unlock_all(win), EP_ERR_WIN, "EP_Win_unlock_all", w);
    expect_error(EP_Win_flush(0, win), EP_ERR_WIN, "EP_Win_flush", w);
    expect_error(EP_Win_flush_all(win), EP_ERR_WIN, "EP_Win_flush_all", w);
    expect_error(EP_Put(&one, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win), EP_ERR_WIN, "EP_Put", w);
    expect_error(EP_Get(&r, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win), EP_ERR_WIN, "EP_Get", w);
    expect_error(EP_Accumulate(&one, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_SUM, win),
                 EP_ERR_WIN, "EP_Accumulate", w);
    expect_error(EP_Get_accumulate(&one, 1, MPI_INT64_T, &r, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T,
                                   MPI_SUM, win),
                 EP_ERR_WIN, "EP_Get_accumulate", w);
    expect_error(EP_Fetch_and_op(&one, &r, MPI_INT64_T, 0, 0, MPI_SUM, win), EP_ERR_WIN,
                 "EP_Fetch_and_op", w);
    expect_error(EP_Compare_and_swap(&one, &one, &r, MPI_INT64_T, 0, 0, win), EP_ERR_WIN,
                 "EP_Compare_and_swap", w);
    // A null communicator to EP_Win_create / EP_Win_allocate.
    EP_Win nw = EP_WIN_NULL;
    expect_error(EP_Win_create(&r, 8, 8, MPI_INFO_NULL, EP_COMM_NULL, &nw), EP_ERR_COMM,
                 "EP_Win_create", w);
    expect_error(EP_Win_allocate(8, 8, MPI_INFO_NULL, EP_COMM_NULL, &p, &nw), EP_ERR_COMM,
                 "EP_Win_allocate", w);
    EXPECT_EQ(nw, EP_WIN_NULL);
  });
}

}  // namespace
