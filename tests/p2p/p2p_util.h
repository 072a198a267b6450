// p2p_util.h - what the point-to-point tests share: where a rank lives under the uneven
// layout {3,1,2}, the sender/receiver pairs to test, and rank/size queries.
#ifndef EP_TESTS_P2P_P2P_UTIL_H_
#define EP_TESTS_P2P_P2P_UTIL_H_

#include <vector>

#include "ep/ep.h"
#include "tests/common/harness.h"

namespace ep_p2p_test {

// Process that holds endpoint rank r under the uneven layout {3,1,2}.
inline int proc_of(int r) {
  for (int p = 0; p < ep_test::world_size(); ++p) {
    if (r < ep_test::uneven(p)) return p;
    r -= ep_test::uneven(p);
  }
  return -1;
}

// Sender/receiver pairs: within process 0, and across processes when there are two.
struct Pair {
  int a, b;
  const char* what;
};
inline std::vector<Pair> pairs(int size) {
  std::vector<Pair> v = {{0, 1, "same process"}};
  if (proc_of(size - 1) != proc_of(0)) v.push_back({0, size - 1, "across processes"});
  return v;
}

inline int size_of(EP_Comm c) {
  int s = 0;
  EP_Comm_size(c, &s);
  return s;
}
inline int rank_of(EP_Comm c) {
  int r = 0;
  EP_Comm_rank(c, &r);
  return r;
}

}  // namespace ep_p2p_test

#endif  // EP_TESTS_P2P_P2P_UTIL_H_
