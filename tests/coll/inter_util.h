// inter_util.h - the intercommunicators the collective tests run on: two groups of the
// world endpoints communicator (uneven endpoints per process) joined by
// EP_Intercomm_create, in four shapes:
//   SharedGrouped, SharedInterleaved  groups by world endpoint parity: with 2 or more
//                                     endpoints, a process has endpoints in both groups;
//                                     ranks within a group by world number, or alternating
//                                     between processes;
//   ProcsGrouped, ProcsReversed       groups by process parity (disjoint processes when
//                                     there are 2 or more; parity of the endpoint with
//                                     one process); ranks by world number or reversed.
// Expected memberships are computed from world numbers and MPI's split rule alone.
#ifndef EP_TESTS_COLL_INTER_UTIL_H_
#define EP_TESTS_COLL_INTER_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ep/ep.h"
#include "tests/coll/coll_util.h"
#include "tests/common/harness.h"

namespace ep_coll_test {

enum class Shape { kSharedGrouped, kSharedInterleaved, kProcsGrouped, kProcsReversed };

inline const char* shape_name(Shape s) {
  switch (s) {
    case Shape::kSharedGrouped:
      return "SharedGrouped";
    case Shape::kSharedInterleaved:
      return "SharedInterleaved";
    case Shape::kProcsGrouped:
      return "ProcsGrouped";
    case Shape::kProcsReversed:
      return "ProcsReversed";
  }
  return "?";
}

inline int colour_of(Shape s, const World& wd, int w) {
  const bool by_proc = s == Shape::kProcsGrouped || s == Shape::kProcsReversed;
  return by_proc && wd.counts.size() >= 2 ? wd.proc_of(w) % 2 : w % 2;
}

inline int key_of(Shape s, const World& wd, int w) {
  switch (s) {
    case Shape::kSharedInterleaved:
      return wd.index_of(w) * 1000 + wd.proc_of(w);
    case Shape::kProcsReversed:
      return -w;
    default:
      return w;
  }
}

// The world endpoints of group g, by rank (MPI: sort by (key, old rank)).
inline std::vector<int> group_members(Shape s, const World& wd, int g) {
  std::vector<std::pair<int, int>> v;
  for (int w = 0; w < wd.total; ++w) {
    if (colour_of(s, wd, w) == g) v.emplace_back(key_of(s, wd, w), w);
  }
  std::sort(v.begin(), v.end());
  std::vector<int> out;
  for (auto& kv : v) out.push_back(kv.second);
  return out;
}

struct IC {
  EP_Comm world = EP_COMM_NULL, local = EP_COMM_NULL, inter = EP_COMM_NULL;
  int me = -1, colour = -1, lrank = -1, lsize = 0, rsize = 0;
  std::vector<int> lmem, rmem;  // world endpoints by local / remote rank
  std::string what;
  int lw(int r) const { return lmem[static_cast<size_t>(r)]; }
  int rw(int r) const { return rmem[static_cast<size_t>(r)]; }
  // The root argument of a collective rooted at rank rr of group g.
  int root_arg(int g, int rr) const {
    if (colour != g) return rr;
    return lrank == rr ? EP_ROOT : EP_PROC_NULL;
  }
  // Members of group g by rank, seen from here.
  const std::vector<int>& group(int g) const { return colour == g ? lmem : rmem; }
};

// Builds the intercommunicator of shape `s` and runs fn on every endpoint's thread.
inline void run_inter(Shape s, const std::function<void(const IC&)>& fn) {
  const World wd;
  const int p = ep_test::world_rank();
  ep_test::run_endpoints(wd.counts[static_cast<size_t>(p)], [&](EP_Comm world, int idx) {
    IC c;
    c.world = world;
    c.me = wd.base[static_cast<size_t>(p)] + idx;
    c.colour = colour_of(s, wd, c.me);
    c.lmem = group_members(s, wd, c.colour);
    c.rmem = group_members(s, wd, 1 - c.colour);
    c.lrank = index_in(c.lmem, c.me);
    c.lsize = static_cast<int>(c.lmem.size());
    c.rsize = static_cast<int>(c.rmem.size());
    c.what = std::string(shape_name(s)) + " endpoint " + std::to_string(c.me);
    ASSERT_GT(c.rsize, 0);
    int rc = EP_Comm_split(world, c.colour, key_of(s, wd, c.me), &c.local);
    ASSERT_EQ(rc, EP_SUCCESS) << ep_test::last_error(rc);
    rc = EP_Intercomm_create(c.local, 0, world, c.rmem[0], 77, &c.inter);
    ASSERT_EQ(rc, EP_SUCCESS) << ep_test::last_error(rc);
    int r = -1, n = -1, rn = -1;
    ASSERT_EQ(EP_Comm_rank(c.inter, &r), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_size(c.inter, &n), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_remote_size(c.inter, &rn), EP_SUCCESS);
    ASSERT_EQ(r, c.lrank) << c.what;
    ASSERT_EQ(n, c.lsize) << c.what;
    ASSERT_EQ(rn, c.rsize) << c.what;
    fn(c);
    ep_test::ep_barrier(world);
    EXPECT_EQ(EP_Comm_free(&c.inter), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&c.local), EP_SUCCESS);
  });
}

}  // namespace ep_coll_test

#endif  // EP_TESTS_COLL_INTER_UTIL_H_
