// coll_util.h - helpers shared by the collective tests in tests/coll:
//
//  * World: where every endpoint of the world endpoints communicator lives (process,
//    index within the process), computed from ep_test::uneven(p) alone, never asked of
//    libep.
//  * Lay / layout_members(): the three rank layouts built with EP_Comm_split(world, 0,
//    key): grouped (key = world rank), reversed (key = -world rank) and interleaved
//    (key = index * 1000 + process, so consecutive new ranks alternate between
//    processes).  members[r] is the world endpoint that has new rank r, derived here
//    from MPI's split rule (sort by key, ties by old rank).
//  * run_layout(): creates the world communicator (uneven endpoints), splits it into a
//    layout and runs fn(ctx) on one thread per endpoint.
//  * Mat / MatOp: a non-commutative user op, the 2x2 integer matrix product modulo a
//    prime, on a contiguous derived type of 4 MPI_INT; mat_product() is the reference
//    product in rank order.
//  * A watchdog: a test that runs longer than kTestLimitS (a hang, e.g. an endpoint that
//    failed a collective its peers still wait in) prints its name and aborts the job, so
//    the log says which test hung instead of ending in the wrapper's global timeout.
#ifndef EP_TESTS_COLL_COLL_UTIL_H_
#define EP_TESTS_COLL_COLL_UTIL_H_

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ep/ep.h"
#include "tests/common/harness.h"
#include "tests/common/matop.h"

namespace ep_coll_test {

// ---- The world endpoints communicator ----------------------------------------------------

struct World {
  std::vector<int> counts;  // endpoints of process p
  std::vector<int> base;    // world rank of process p's first endpoint
  int total = 0;
  World() {
    const int np = ep_test::world_size();
    for (int p = 0; p < np; ++p) {
      base.push_back(total);
      counts.push_back(ep_test::uneven(p));
      total += counts.back();
    }
  }
  int proc_of(int w) const {
    for (size_t p = 0; p < counts.size(); ++p) {
      if (w >= base[p] && w < base[p] + counts[p]) return static_cast<int>(p);
    }
    return -1;
  }
  int index_of(int w) const { return w - base[static_cast<size_t>(proc_of(w))]; }
};

// ---- Layouts ------------------------------------------------------------------------------

enum class Lay { kGrouped, kReversed, kInterleaved };

inline const char* lay_name(Lay l) {
  switch (l) {
    case Lay::kGrouped:
      return "Grouped";
    case Lay::kReversed:
      return "Reversed";
    case Lay::kInterleaved:
      return "Interleaved";
  }
  return "?";
}

inline int layout_key(Lay l, const World& wd, int w) {
  switch (l) {
    case Lay::kGrouped:
      return w;
    case Lay::kReversed:
      return -w;
    case Lay::kInterleaved:
      return wd.index_of(w) * 1000 + wd.proc_of(w);
  }
  return 0;
}

// members[r] = world endpoint with new rank r (MPI: sort by (key, old rank)).
inline std::vector<int> layout_members(Lay l, const World& wd) {
  std::vector<std::pair<int, int>> v;
  for (int w = 0; w < wd.total; ++w) v.emplace_back(layout_key(l, wd, w), w);
  std::sort(v.begin(), v.end());
  std::vector<int> out;
  for (auto& kv : v) out.push_back(kv.second);
  return out;
}

inline int index_in(const std::vector<int>& v, int x) {
  auto it = std::find(v.begin(), v.end(), x);
  return it == v.end() ? -1 : static_cast<int>(it - v.begin());
}

struct Ctx {
  EP_Comm world = EP_COMM_NULL;  // the world endpoints communicator (rank = world endpoint)
  EP_Comm comm = EP_COMM_NULL;   // the layout communicator
  int rank = -1;                 // my rank in comm (derived, checked against libep)
  int size = 0;
  int me = -1;                   // my world endpoint
  std::vector<int> members;      // members[r]: world endpoint of rank r
  const World* wd = nullptr;
  std::string what;              // layout name for messages
  int w(int r) const { return members[static_cast<size_t>(r)]; }
};

// Creates the world endpoints communicator (uneven endpoints per process), splits it
// into layout `l` and runs fn on every endpoint's thread; frees both afterwards.
inline void run_layout(Lay l, const std::function<void(const Ctx&)>& fn) {
  const World wd;
  const std::vector<int> members = layout_members(l, wd);
  const int p = ep_test::world_rank();
  ep_test::run_endpoints(wd.counts[static_cast<size_t>(p)], [&](EP_Comm world, int idx) {
    Ctx c;
    c.world = world;
    c.me = wd.base[static_cast<size_t>(p)] + idx;
    c.members = members;
    c.size = static_cast<int>(members.size());
    c.rank = index_in(members, c.me);
    c.wd = &wd;
    c.what = lay_name(l);
    int wr = -1;
    ASSERT_EQ(EP_Comm_rank(world, &wr), EP_SUCCESS);
    ASSERT_EQ(wr, c.me) << "world rank of endpoint " << idx << " of process " << p;
    int rc = EP_Comm_split(world, 0, layout_key(l, wd, c.me), &c.comm);
    ASSERT_EQ(rc, EP_SUCCESS) << ep_test::last_error(rc);
    int r = -1, s = -1;
    ASSERT_EQ(EP_Comm_rank(c.comm, &r), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_size(c.comm, &s), EP_SUCCESS);
    ASSERT_EQ(r, c.rank) << c.what << ": split gave an unexpected rank";
    ASSERT_EQ(s, c.size);
    fn(c);
    // Point-to-point barrier (not the code under test) before freeing.
    ep_test::ep_barrier(c.comm);
    EXPECT_EQ(EP_Comm_free(&c.comm), EP_SUCCESS);
  });
}

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

inline bool sanitized() {
#if defined(EP_SANITIZER_THREAD) || defined(EP_SANITIZER_ADDRESS) || \
    defined(EP_SANITIZER_UNDEFINED)
  return true;
#else
  return false;
#endif
}

// ---- The non-commutative op ---------------------------------------------------------------

using ep_test::kPrime;
using ep_test::Mat;
using ep_test::mat_mul;

// The matrix world endpoint `w` contributes as element `k` (salt varies it per test).
inline Mat mat_in(int w, int k, int salt = 0) {
  return {(w * 7 + 3 + k * 11 + salt) % kPrime, (w * 13 + 5 + k * 3 + 2 * salt) % kPrime,
          (w * 17 + 11 + k + 3 * salt) % kPrime, (w * 19 + 1 + k * 5 + salt * salt) % kPrime};
}

// Product of element k over the given world endpoints, in the given (rank) order.
inline Mat mat_product(const std::vector<int>& ws, int k, int salt = 0) {
  Mat acc = {1, 0, 0, 1};
  for (int w : ws) acc = mat_mul(acc, mat_in(w, k, salt));
  return acc;
}

using ep_test::MatOp;

inline std::vector<int> prefix(const std::vector<int>& v, int n) {
  return std::vector<int>(v.begin(), v.begin() + n);
}

// The shared watchdog (tests/common/harness.h) with this directory's limits.
inline bool install_watchdog() { return ep_test::install_watchdog(100, 180); }

}  // namespace ep_coll_test

#endif  // EP_TESTS_COLL_COLL_UTIL_H_
