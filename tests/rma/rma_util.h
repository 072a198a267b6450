// rma_util.h - helpers shared by the one-sided tests in tests/rma:
//
//  * World: where every endpoint of the world endpoints communicator lives (process,
//    index within the process), computed from ep_test::uneven(p) alone (3, 1, 2
//    endpoints per process), never asked of libep.
//  * run_world(): creates the world endpoints communicator and runs fn(ctx) on one
//    thread per endpoint (ctx.rank is checked against EP_Comm_rank).
//  * EXPECT_EP_OK / ASSERT_EP_OK: a call that must succeed; on failure the message
//    carries the call's text and EP_Error_string's details.
//  * make_win(): EP_Win_create with EP_ERRORS_RETURN set on the new window.
//  * A watchdog: a test that runs longer than its limit (a hang, e.g. an endpoint that
//    failed a fence its peers still wait in, or a lock that is never granted) prints its
//    name and aborts the job, so the log names the hanging test.
//
// Synchronization used by the tests to read their own window memory: a fence, or the
// origin's unlock/flush followed by EP_Barrier (or a message) - never polling.
#ifndef EP_TESTS_RMA_RMA_UTIL_H_
#define EP_TESTS_RMA_RMA_UTIL_H_

#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ep/ep.h"
#include "tests/common/harness.h"

namespace ep_rma_test {

// ---- The world endpoints communicator ---------------------------------------------------

struct World {
  std::vector<int> counts;  // endpoints of process p
  std::vector<int> base;    // rank of process p's first endpoint
  int total = 0;
  World() {
    const int np = ep_test::world_size();
    for (int p = 0; p < np; ++p) {
      base.push_back(total);
      counts.push_back(ep_test::uneven(p));
      total += counts.back();
    }
  }
  int proc_of(int r) const {
    for (size_t p = 0; p < counts.size(); ++p) {
      if (r >= base[p] && r < base[p] + counts[p]) return static_cast<int>(p);
    }
    return -1;
  }
  int nprocs() const { return static_cast<int>(counts.size()); }
};

struct Ctx {
  EP_Comm comm = EP_COMM_NULL;
  int rank = -1;  // my endpoint rank (= base[proc] + idx)
  int size = 0;
  int proc = -1;  // my MPI process
  int idx = -1;   // my index within the process
  const World* wd = nullptr;
  // A readable prefix for failure messages.
  std::string who() const {
    return "rank " + std::to_string(rank) + " (process " + std::to_string(proc) + ")";
  }
  // True if rank r lives in another MPI process than me.
  bool remote(int r) const { return wd->proc_of(r) != proc; }
};

inline void run_world(const std::function<void(const Ctx&)>& fn) {
  const World wd;
  const int p = ep_test::world_rank();
  ep_test::run_endpoints(wd.counts[static_cast<size_t>(p)], [&](EP_Comm comm, int idx) {
    Ctx c;
    c.comm = comm;
    c.proc = p;
    c.idx = idx;
    c.rank = wd.base[static_cast<size_t>(p)] + idx;
    c.size = wd.total;
    c.wd = &wd;
    int r = -1, s = -1;
    ASSERT_EQ(EP_Comm_rank(comm, &r), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_size(comm, &s), EP_SUCCESS);
    ASSERT_EQ(r, c.rank) << "endpoint " << idx << " of process " << p;
    ASSERT_EQ(s, c.size);
    fn(c);
    // Nobody frees its communicator while a peer may still use it.
    EXPECT_EQ(EP_Barrier(comm), EP_SUCCESS);
  });
}

// ---- Checked calls -----------------------------------------------------------------------

inline std::string describe(int rc) {
  return rc == EP_SUCCESS ? std::string("EP_SUCCESS") : ep_test::last_error(rc);
}

// Predicate formatter for EXPECT_EP_OK / ASSERT_EP_OK (both accept "<< more context").
inline ::testing::AssertionResult ep_ok(const char* expr, int rc) {
  if (rc == EP_SUCCESS) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expr << " returned " << rc << ": " << describe(rc);
}

#define EXPECT_EP_OK(call) EXPECT_PRED_FORMAT1(::ep_rma_test::ep_ok, (call))
#define ASSERT_EP_OK(call) ASSERT_PRED_FORMAT1(::ep_rma_test::ep_ok, (call))

// EP_Win_create, then EP_ERRORS_RETURN on the window (windows start with
// EP_ERRORS_ARE_FATAL; the tests want failures as test failures, not aborts).
inline EP_Win make_win(void* base, MPI_Aint size, int disp_unit, EP_Comm comm) {
  EP_Win win = EP_WIN_NULL;
  const int rc = EP_Win_create(base, size, disp_unit, MPI_INFO_NULL, comm, &win);
  EXPECT_EQ(rc, EP_SUCCESS) << "EP_Win_create: " << describe(rc);
  if (rc == EP_SUCCESS) {
    EXPECT_EQ(EP_Win_set_errhandler(win, EP_ERRORS_RETURN), EP_SUCCESS);
  }
  return win;
}

inline void free_win(EP_Win* win) {
  const int rc = EP_Win_free(win);
  EXPECT_EQ(rc, EP_SUCCESS) << "EP_Win_free: " << describe(rc);
  EXPECT_EQ(*win, EP_WIN_NULL) << "EP_Win_free must set the handle to EP_WIN_NULL";
}

// ---- Window flavors ---------------------------------------------------------------------
//
// EP_Win_create exposes user memory; EP_Win_allocate memory may be reached by the other
// processes of the node directly (a different code path), so most tests run on both.

// kHandler: EP_Win_create with the info key ep_shared_memory=false, so that the node's
// other processes go through the target's progress thread (the path windows on other
// nodes take) instead of cross-memory attach.
// kDynamic: EP_Win_create_dynamic, each endpoint's memory attached, the addresses
// exchanged (WinOf::disp).  kShared: EP_Win_allocate_shared (the tests run on one node).
// kDynamicHandler: kDynamic with ep_shared_memory=false (the node's other processes
// go through the target's progress thread, as other nodes do).
enum class Flavor { kCreate, kAllocate, kHandler, kDynamic, kShared, kDynamicHandler };

inline const char* flavor_name(const ::testing::TestParamInfo<Flavor>& info) {
  switch (info.param) {
    case Flavor::kCreate:
      return "Create";
    case Flavor::kAllocate:
      return "Allocate";
    case Flavor::kDynamic:
      return "Dynamic";
    case Flavor::kShared:
      return "Shared";
    case Flavor::kDynamicHandler:
      return "DynamicHandler";
    default:
      return "Handler";
  }
}

// A window of n elements of T per endpoint (disp_unit du) and its memory.
template <class T>
struct WinOf {
  EP_Win win = EP_WIN_NULL;
  T* mem = nullptr;    // the window memory (n elements)
  std::vector<T> own;  // EP_Win_create's (and the dynamic window's attached) memory
  std::vector<MPI_Aint> addr;  // kDynamic: every endpoint's attached address, by rank
  // The target displacement of element i at rank t (disp_unit sizeof(T), except dynamic).
  MPI_Aint disp(int t, size_t i) const {
    if (addr.empty()) return static_cast<MPI_Aint>(i);
    return addr[static_cast<size_t>(t)] + static_cast<MPI_Aint>(i * sizeof(T));
  }
};

// Creates the window, lets init(mem) initialize this endpoint's memory, then a barrier:
// every window is initialized before anyone accesses it.
template <class T, class Init>
WinOf<T> open_win(Flavor f, size_t n, int du, EP_Comm comm, Init&& init) {
  WinOf<T> w;
  const MPI_Aint bytes = static_cast<MPI_Aint>(n * sizeof(T));
  if (f == Flavor::kCreate) {
    w.own.resize(n);
    w.mem = w.own.data();
    w.win = make_win(w.mem, bytes, du, comm);
  } else if (f == Flavor::kHandler) {
    w.own.resize(n);
    w.mem = w.own.data();
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "ep_shared_memory", "false");
    const int rc = EP_Win_create(w.mem, bytes, du, info, comm, &w.win);
    MPI_Info_free(&info);
    EXPECT_EQ(rc, EP_SUCCESS) << "EP_Win_create: " << describe(rc);
    if (rc == EP_SUCCESS) {
      EXPECT_EQ(EP_Win_set_errhandler(w.win, EP_ERRORS_RETURN), EP_SUCCESS);
    }
  } else if (f == Flavor::kDynamic || f == Flavor::kDynamicHandler) {
    w.own.resize(n);
    w.mem = w.own.data();
    MPI_Info info = MPI_INFO_NULL;
    if (f == Flavor::kDynamicHandler) {
      MPI_Info_create(&info);
      MPI_Info_set(info, "ep_shared_memory", "false");
    }
    int rc = EP_Win_create_dynamic(info, comm, &w.win);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    EXPECT_EQ(rc, EP_SUCCESS) << "EP_Win_create_dynamic: " << describe(rc);
    if (rc == EP_SUCCESS) {
      EXPECT_EQ(EP_Win_set_errhandler(w.win, EP_ERRORS_RETURN), EP_SUCCESS);
      rc = EP_Win_attach(w.win, w.mem, bytes);
      EXPECT_EQ(rc, EP_SUCCESS) << "EP_Win_attach: " << describe(rc);
    }
    int size = 0;
    EP_Comm_size(comm, &size);
    w.addr.resize(static_cast<size_t>(size));
    MPI_Aint mine = 0;
    MPI_Get_address(w.mem, &mine);
    EXPECT_EQ(EP_Allgather(&mine, 1, MPI_AINT, w.addr.data(), 1, MPI_AINT, comm), EP_SUCCESS);
  } else {
    void* b = nullptr;
    const int rc = f == Flavor::kShared
                       ? EP_Win_allocate_shared(bytes, du, MPI_INFO_NULL, comm, &b, &w.win)
                       : EP_Win_allocate(bytes, du, MPI_INFO_NULL, comm, &b, &w.win);
    EXPECT_EQ(rc, EP_SUCCESS) << "EP_Win_allocate(_shared): " << describe(rc);
    if (rc == EP_SUCCESS) {
      EXPECT_EQ(EP_Win_set_errhandler(w.win, EP_ERRORS_RETURN), EP_SUCCESS);
      w.mem = static_cast<T*>(b);
    }
  }
  if (w.mem != nullptr) init(w.mem);
  EXPECT_EQ(EP_Barrier(comm), EP_SUCCESS);
  return w;
}

// Every element = v.
template <class T>
WinOf<T> open_win_filled(Flavor f, size_t n, int du, EP_Comm comm, T v) {
  return open_win<T>(f, n, du, comm, [n, v](T* m) {
    for (size_t i = 0; i < n; ++i) m[i] = v;
  });
}

// ---- Time ----------------------------------------------------------------------------------

inline double now_s() {
  // steady_clock is CLOCK_MONOTONIC: comparable between the processes of one machine.
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

inline bool sanitized() {
#if defined(EP_SANITIZER_THREAD) || defined(EP_SANITIZER_ADDRESS) || defined(EP_SANITIZER_UNDEFINED)
  return true;
#else
  return false;
#endif
}

// The shared watchdog (tests/common/harness.h) with this directory's limits.
inline bool install_watchdog() { return ep_test::install_watchdog(90, 240); }

}  // namespace ep_rma_test

#endif  // EP_TESTS_RMA_RMA_UTIL_H_
