// Dynamic windows (EP_Win_create_dynamic, EP_Win_attach, EP_Win_detach) on 1, 2
// and 3 processes with uneven endpoints (3, 1, 2).
//  * three regions per endpoint, every origin puts into every region of every target and
//    reads them back; the targets see the values;
//  * detached memory: a put, get or accumulate to a region its target detached is
//    EP_ERR_RMA_RANGE - from the operation, or at the latest from the flush that follows -
//    and writes nothing at the target nor into the origin buffer; a region attached again
//    works again;
//  * attach/detach errors: overlapping regions (EP_ERR_ARG), a base that is not attached
//    (EP_ERR_RMA_RANGE), attach on another flavor (EP_ERR_WIN), NULL base (EP_ERR_ARG);
//  * 300 regions (more than the published table holds): still exact, still checked;
//  * stress (tag "stress", TSAN in CI): every endpoint attaches and detaches a scratch
//    region in a loop while all endpoints accumulate into every target's stable region and
//    put into the scratch regions; the stable totals are exact, scratch accesses either
//    land or report EP_ERR_RMA_RANGE.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/rma/rma_util.h"

namespace {

using ep_rma_test::Ctx;
using ep_rma_test::run_world;

[[maybe_unused]] const bool kWatchdog = ep_rma_test::install_watchdog();

// Every test runs with the node paths (published regions, cross-memory attach) and with
// ep_shared_memory=false (the target's progress thread checks and serves).
class Dynamic : public ::testing::TestWithParam<bool> {};

EP_Win dyn(EP_Comm comm, bool handler) {
  EP_Win w = EP_WIN_NULL;
  MPI_Info info = MPI_INFO_NULL;
  if (handler) {
    MPI_Info_create(&info);
    MPI_Info_set(info, "ep_shared_memory", "false");
  }
  EXPECT_EP_OK(EP_Win_create_dynamic(info, comm, &w));
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  EXPECT_EP_OK(EP_Win_set_errhandler(w, EP_ERRORS_RETURN));
  return w;
}

std::vector<MPI_Aint> gather_addr(const void* p, EP_Comm comm, int n) {
  MPI_Aint a = 0;
  MPI_Get_address(p, &a);
  std::vector<MPI_Aint> all(static_cast<size_t>(n));
  EXPECT_EP_OK(EP_Allgather(&a, 1, MPI_AINT, all.data(), 1, MPI_AINT, comm));
  return all;
}

// An operation's range error appears at the operation or at the flush after it.
int op_then_flush(int op_rc, int t, EP_Win win) {
  const int flush_rc = EP_Win_flush(t, win);
  if (op_rc != EP_SUCCESS) {
    EXPECT_EQ(flush_rc, EP_SUCCESS) << "the error is reported once";
    return op_rc;
  }
  return flush_rc;
}

TEST_P(Dynamic, SeveralRegionsPerEndpoint) {
  const bool handler = GetParam();
  run_world([handler](const Ctx& c) {
    const int n = c.size;
    EP_Win win = dyn(c.comm, handler);
    std::vector<std::vector<int32_t>> regions(3);
    std::vector<std::vector<MPI_Aint>> addr;
    for (int k = 0; k < 3; ++k) {
      regions[k].assign(static_cast<size_t>(n) + 1 + k, -1);
      EXPECT_EP_OK(EP_Win_attach(win, regions[k].data(),
                                 static_cast<MPI_Aint>(regions[k].size() * sizeof(int32_t))));
      addr.push_back(gather_addr(regions[k].data(), c.comm, n));
    }
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    for (int t = 0; t < n; ++t) {
      for (int k = 0; k < 3; ++k) {
        const int32_t v = 100 * c.rank + 10 * k + t;
        EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT32_T, t, addr[k][t] + 4 * c.rank, 1, MPI_INT32_T, win));
      }
    }
    EXPECT_EP_OK(EP_Win_flush_all(win));
    for (int t = 0; t < n; ++t) {
      for (int k = 0; k < 3; ++k) {
        int32_t got = 0;
        EXPECT_EP_OK(EP_Get(&got, 1, MPI_INT32_T, t, addr[k][t] + 4 * c.rank, 1, MPI_INT32_T, win));
        EXPECT_EP_OK(EP_Win_flush(t, win));
        EXPECT_EQ(got, 100 * c.rank + 10 * k + t) << c.who() << " target " << t << " region " << k;
      }
    }
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    for (int k = 0; k < 3; ++k) {
      for (int o = 0; o < n; ++o) EXPECT_EQ(regions[k][o], 100 * o + 10 * k + c.rank);
      EXPECT_EQ(regions[k][n], -1) << "past the origins' slots nothing changed";
    }
    for (int k = 0; k < 3; ++k) EXPECT_EP_OK(EP_Win_detach(win, regions[k].data()));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EP_OK(EP_Win_free(&win));
  });
}

TEST_P(Dynamic, DetachedMemoryIsRangeError) {
  const bool handler = GetParam();
  run_world([handler](const Ctx& c) {
    const int n = c.size;
    EP_Win win = dyn(c.comm, handler);
    std::vector<int64_t> a(static_cast<size_t>(n), 0), b(static_cast<size_t>(n), 7);
    EXPECT_EP_OK(EP_Win_attach(win, a.data(), static_cast<MPI_Aint>(n * 8)));
    EXPECT_EP_OK(EP_Win_attach(win, b.data(), static_cast<MPI_Aint>(n * 8)));
    const auto aa = gather_addr(a.data(), c.comm, n), ba = gather_addr(b.data(), c.comm, n);
    EXPECT_EP_OK(EP_Win_detach(win, b.data()));
    EXPECT_EP_OK(EP_Barrier(c.comm));  // every b is detached now
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    for (int t = 0; t < n; ++t) {
      const int64_t v = 1;
      int64_t got = -3;
      EXPECT_EQ(op_then_flush(
                    EP_Put(&v, 1, MPI_INT64_T, t, ba[t] + 8 * c.rank, 1, MPI_INT64_T, win), t, win),
                EP_ERR_RMA_RANGE)
          << c.who() << " put to target " << t;
      EXPECT_EQ(op_then_flush(EP_Get(&got, 1, MPI_INT64_T, t, ba[t], 1, MPI_INT64_T, win), t, win),
                EP_ERR_RMA_RANGE);
      EXPECT_EQ(got, -3) << "a failed get writes nothing into the origin buffer";
      EXPECT_EQ(
          op_then_flush(EP_Accumulate(&v, 1, MPI_INT64_T, t, ba[t], 1, MPI_INT64_T, MPI_SUM, win),
                        t, win),
          EP_ERR_RMA_RANGE);
      // Straddling the end of an attached region.
      EXPECT_EQ(op_then_flush(EP_Put(&v, 1, MPI_INT64_T, t, aa[t] + 8 * n - 4, 1, MPI_INT64_T, win),
                              t, win),
                EP_ERR_RMA_RANGE);
      // The attached region still works.
      EXPECT_EP_OK(
          EP_Accumulate(&v, 1, MPI_INT64_T, t, aa[t] + 8 * c.rank, 1, MPI_INT64_T, MPI_SUM, win));
    }
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    for (int o = 0; o < n; ++o) {
      EXPECT_EQ(a[o], 1) << c.who();
      EXPECT_EQ(b[o], 7) << c.who() << ": detached memory was written";
    }
    // Attached again: accessible again.
    EXPECT_EP_OK(EP_Win_attach(win, b.data(), static_cast<MPI_Aint>(n * 8)));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    const int t = (c.rank + 1) % n;
    const int64_t v = 9;
    EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, t, ba[t] + 8 * c.rank, 1, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EQ(b[(c.rank + n - 1) % n], 9);
    EXPECT_EP_OK(EP_Win_detach(win, b.data()));
    EXPECT_EP_OK(EP_Win_detach(win, a.data()));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EP_OK(EP_Win_free(&win));
  });
}

TEST_P(Dynamic, AttachDetachErrors) {
  const bool handler = GetParam();
  run_world([handler](const Ctx& c) {
    EP_Win win = dyn(c.comm, handler);
    std::vector<char> m(256);
    EXPECT_EP_OK(EP_Win_attach(win, m.data() + 64, 64));
    EXPECT_EQ(EP_Win_attach(win, m.data() + 64, 64), EP_ERR_ARG) << "the same region twice";
    EXPECT_EQ(EP_Win_attach(win, m.data() + 100, 8), EP_ERR_ARG) << "inside";
    EXPECT_EQ(EP_Win_attach(win, m.data() + 32, 64), EP_ERR_ARG) << "overlapping the start";
    EXPECT_EQ(EP_Win_attach(win, m.data() + 120, 64), EP_ERR_ARG) << "overlapping the end";
    EXPECT_EP_OK(EP_Win_attach(win, m.data() + 128, 64)) << "adjacent is fine";
    EXPECT_EP_OK(EP_Win_attach(win, m.data(), 64)) << "adjacent below is fine";
    EXPECT_EQ(EP_Win_attach(win, nullptr, 8), EP_ERR_ARG);
    EXPECT_EQ(EP_Win_attach(win, m.data() + 200, -1), EP_ERR_ARG);
    EXPECT_EQ(EP_Win_detach(win, m.data() + 65), EP_ERR_RMA_RANGE) << "not a region's base";
    EXPECT_EQ(EP_Win_detach(win, m.data() + 192), EP_ERR_RMA_RANGE);
    EXPECT_EP_OK(EP_Win_detach(win, m.data() + 64));
    EXPECT_EQ(EP_Win_detach(win, m.data() + 64), EP_ERR_RMA_RANGE) << "detached twice";
    EXPECT_EP_OK(EP_Win_detach(win, m.data()));
    EXPECT_EP_OK(EP_Win_detach(win, m.data() + 128));
    MPI_Aint size = 0;
    int du = 0;
    void* base = nullptr;
    EXPECT_EQ(EP_Win_shared_query(win, 0, &size, &du, &base), EP_ERR_WIN);
    EXPECT_EQ(EP_Win_attach(EP_WIN_NULL, m.data(), 8), EP_ERR_WIN);
    EXPECT_EQ(EP_Win_detach(EP_WIN_NULL, m.data()), EP_ERR_WIN);
    // Other flavors have no regions.
    EP_Win other = ep_rma_test::make_win(m.data(), 256, 1, c.comm);
    EXPECT_EQ(EP_Win_attach(other, m.data(), 8), EP_ERR_WIN);
    EXPECT_EQ(EP_Win_detach(other, m.data()), EP_ERR_WIN);
    ep_rma_test::free_win(&other);
    EXPECT_EP_OK(EP_Win_free(&win));
  });
}

// More regions than the published table holds (rma/window.h's RegionTable::kMax): the
// node's origins then go through the target's handler, which still checks every range.
TEST_P(Dynamic, ManyRegions) {
  const bool handler = GetParam();
  run_world([handler](const Ctx& c) {
    constexpr int kRegions = 300;
    const int n = c.size;
    EP_Win win = dyn(c.comm, handler);
    std::vector<int64_t> mem(2 * kRegions, 0);
    for (int k = 0; k < kRegions; ++k) EXPECT_EP_OK(EP_Win_attach(win, &mem[2 * k], 8));
    const auto last = gather_addr(&mem[2 * (kRegions - 1)], c.comm, n);
    const auto first = gather_addr(&mem[0], c.comm, n);
    const int t = (c.rank + 1) % n, from = (c.rank + n - 1) % n;
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    const int64_t v = 50 + c.rank;
    EXPECT_EP_OK(EP_Put(&v, 1, MPI_INT64_T, t, last[t], 1, MPI_INT64_T, win));
    EXPECT_EP_OK(EP_Accumulate(&v, 1, MPI_INT64_T, t, first[t], 1, MPI_INT64_T, MPI_SUM, win));
    EXPECT_EQ(
        op_then_flush(EP_Put(&v, 1, MPI_INT64_T, t, last[t] + 8, 1, MPI_INT64_T, win), t, win),
        EP_ERR_RMA_RANGE)
        << "the gap between two regions is not attached";
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EQ(mem[2 * (kRegions - 1)], 50 + from);
    EXPECT_EQ(mem[0], 50 + from);
    EXPECT_EQ(mem[2 * (kRegions - 1) + 1], 0);
    for (int k = 0; k < kRegions; ++k) EXPECT_EP_OK(EP_Win_detach(win, &mem[2 * k]));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EP_OK(EP_Win_free(&win));
  });
}

TEST_P(Dynamic, StressAttachDetachWhileAccessed) {
  const bool handler = GetParam();
  static constexpr int kRounds = 150;
  run_world([handler](const Ctx& c) {
    const int n = c.size;
    EP_Win win = dyn(c.comm, handler);
    std::vector<int64_t> stable(1, 0), scratch(static_cast<size_t>(n), 0);
    EXPECT_EP_OK(EP_Win_attach(win, stable.data(), 8));
    const auto sa = gather_addr(stable.data(), c.comm, n);
    const auto xa = gather_addr(scratch.data(), c.comm, n);
    EXPECT_EP_OK(EP_Win_lock_all(0, win));
    int landed = 0, refused = 0;
    for (int i = 0; i < kRounds; ++i) {
      // My scratch region comes and goes while the others access it (each origin its own
      // slot: conflicting puts would be a race of the test's own making).
      if (i % 2 == 0) {
        EXPECT_EP_OK(EP_Win_attach(win, scratch.data(), static_cast<MPI_Aint>(8 * n)));
      } else {
        EXPECT_EP_OK(EP_Win_detach(win, scratch.data()));
      }
      const int t = (c.rank + i) % n;
      const int64_t one = 1;
      EXPECT_EP_OK(EP_Accumulate(&one, 1, MPI_INT64_T, t, sa[t], 1, MPI_INT64_T, MPI_SUM, win));
      const int rc = op_then_flush(
          EP_Put(&one, 1, MPI_INT64_T, t, xa[t] + 8 * c.rank, 1, MPI_INT64_T, win), t, win);
      if (rc == EP_SUCCESS) {
        ++landed;
      } else {
        EXPECT_EQ(rc, EP_ERR_RMA_RANGE) << c.who() << " round " << i;
        ++refused;
      }
    }
    EXPECT_EQ(landed + refused, kRounds);
    EXPECT_EP_OK(EP_Win_unlock_all(win));
    if (kRounds % 2 == 1) EXPECT_EP_OK(EP_Win_detach(win, scratch.data()));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    // Round i accumulates into (rank + i) % n: each target gets kRounds in total.
    int64_t total = 0;
    EXPECT_EP_OK(EP_Allreduce(stable.data(), &total, 1, MPI_INT64_T, MPI_SUM, c.comm));
    EXPECT_EQ(total, static_cast<int64_t>(n) * kRounds);
    EXPECT_EP_OK(EP_Win_detach(win, stable.data()));
    EXPECT_EP_OK(EP_Barrier(c.comm));
    EXPECT_EP_OK(EP_Win_free(&win));
  });
}

INSTANTIATE_TEST_SUITE_P(Paths, Dynamic, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "Handler" : "Node");
                         });

}  // namespace
