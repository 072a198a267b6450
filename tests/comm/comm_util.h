// comm_util.h - helpers shared by the communicator tests in tests/comm:
//
//  * Layout: where every endpoint of a "world" endpoints communicator lives (process,
//    index), computed independently of libep from the per-process endpoint counts.
//  * expected_split(): the members of one colour of an EP_Comm_split, ordered by
//    (key, old rank) - MPI's rule - as old ranks.
//  * MatOp: a non-commutative user op (2x2 integer matrix product modulo a prime) on a
//    derived datatype (4 contiguous MPI_INT), with the reference product in rank order.
//  * check_intra_*: point-to-point, Barrier/Bcast/Allreduce and group checks on an
//    intracommunicator whose rank r is the world endpoint members[r].
//  * check_inter_*: the same on an intercommunicator (remote-group addressing, root
//    conventions, "other group's reduction").
//
// Every expectation is computed here from world ranks, never read back from libep.
#ifndef EP_TESTS_COMM_COMM_UTIL_H_
#define EP_TESTS_COMM_COMM_UTIL_H_

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ep/ep.h"
#include "tests/common/harness.h"
#include "tests/common/matop.h"

namespace ep_comm_test {

using ep_test::last_error;

// ---- Layout of a world endpoints communicator -------------------------------------------

struct Layout {
  std::vector<int> counts;  // endpoints of process p
  std::vector<int> base;    // world-endpoint rank of process p's first endpoint
  int total = 0;

  explicit Layout(const std::function<int(int)>& per_proc) {
    const int np = ep_test::world_size();
    for (int p = 0; p < np; ++p) {
      base.push_back(total);
      counts.push_back(per_proc(p));
      total += counts.back();
    }
  }
  int proc_of(int r) const {
    for (size_t p = 0; p < counts.size(); ++p) {
      if (r >= base[p] && r < base[p] + counts[p]) return static_cast<int>(p);
    }
    return -1;
  }
  int index_of(int r) const { return r - base[static_cast<size_t>(proc_of(r))]; }
  int nprocs() const { return static_cast<int>(counts.size()); }
};

inline Layout uneven_layout() { return Layout([](int p) { return ep_test::uneven(p); }); }
inline Layout fixed_layout(int n) { return Layout([n](int) { return n; }); }

// Old ranks of the members of colour `c`, in new-rank order: sorted by (key, old rank).
inline std::vector<int> expected_split(int old_size, const std::function<int(int)>& colour,
                                       const std::function<int(int)>& key, int c) {
  std::vector<std::pair<int, int>> v;
  for (int r = 0; r < old_size; ++r) {
    if (colour(r) == c) v.emplace_back(key(r), r);
  }
  std::sort(v.begin(), v.end());
  std::vector<int> out;
  for (auto& kv : v) out.push_back(kv.second);
  return out;
}

inline int index_in(const std::vector<int>& v, int x) {
  auto it = std::find(v.begin(), v.end(), x);
  return it == v.end() ? -1 : static_cast<int>(it - v.begin());
}

// The endpoint's rank in c (-1 if c is not a valid communicator).
inline int rank_of(EP_Comm c) {
  int r = -1;
  EP_Comm_rank(c, &r);
  return r;
}

// ---- Threads ----------------------------------------------------------------------------

inline void on_threads(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) ts.emplace_back([&, i] { fn(i); });
  for (auto& t : ts) t.join();
}

// A reusable barrier for the threads of this process (not a libep call).
class ThreadBarrier {
 public:
  explicit ThreadBarrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lk(mu_);
    const long gen = gen_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(lk, [&] { return gen_ != gen; });
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_;
  int arrived_ = 0;
  long gen_ = 0;
};

// ---- The non-commutative op ---------------------------------------------------------------

using ep_test::kPrime;
using ep_test::Mat;
using ep_test::mat_mul;

// The matrix that world endpoint `r` contributes as element `which` (0 or 1).
inline Mat mat_of(int r, int which) {
  if (which == 0) return {(r * 7 + 3) % kPrime, (r * 13 + 5) % kPrime, (r * 17 + 11) % kPrime,
                          (r * 19 + 1) % kPrime};
  return {(r * 3 + 1) % kPrime, 2, 5 + r, (r * 5 + 4) % kPrime};
}

inline Mat mat_product(const std::vector<int>& world_ranks_in_order, int which) {
  Mat acc = {1, 0, 0, 1};
  for (int r : world_ranks_in_order) acc = mat_mul(acc, mat_of(r, which));
  return acc;
}

using ep_test::MatOp;

// ---- Intracommunicator checks --------------------------------------------------------------
// `members[r]` is the world endpoint rank of rank r of `comm`; `me` is this endpoint's
// world rank.

// Rank, size, and the local rank/size (position among this process's members in rank
// order) of `comm` as computed from the layout.
inline void check_intra_queries(EP_Comm comm, const std::vector<int>& members, int me,
                                const Layout& lay, const std::string& what) {
  int rank = -1, size = -1, lrank = -1, lsize = -1, inter = -1;
  ASSERT_EQ(EP_Comm_rank(comm, &rank), EP_SUCCESS) << what;
  ASSERT_EQ(EP_Comm_size(comm, &size), EP_SUCCESS) << what;
  EXPECT_EQ(size, static_cast<int>(members.size())) << what;
  EXPECT_EQ(rank, index_in(members, me)) << what << ": world endpoint " << me;
  ASSERT_EQ(EP_Comm_test_inter(comm, &inter), EP_SUCCESS) << what;
  EXPECT_EQ(inter, 0) << what;
  int my_pos = 0, here = 0;
  for (int r : members) {
    if (lay.proc_of(r) != lay.proc_of(me)) continue;
    if (r == me) my_pos = here;
    ++here;
  }
  ASSERT_EQ(EP_Comm_local_rank(comm, &lrank), EP_SUCCESS) << what;
  ASSERT_EQ(EP_Comm_local_size(comm, &lsize), EP_SUCCESS) << what;
  EXPECT_EQ(lrank, my_pos) << what << ": world endpoint " << me;
  EXPECT_EQ(lsize, here) << what;
}

// All-to-all with EP_ANY_SOURCE: 3 messages to every rank; the status names the sender's
// rank in `comm`, the payload its world rank, and each sender's messages arrive in order.
// Then one message from every rank received by explicit source in reverse rank order.
inline void check_intra_p2p(EP_Comm comm, const std::vector<int>& members, int me,
                            const std::string& what, int tag = 11) {
  const int size = static_cast<int>(members.size());
  const int my_rank = index_in(members, me);
  const int kMsgs = 3;
  std::vector<std::array<int, 3>> out(static_cast<size_t>(size * kMsgs));
  std::vector<EP_Request> sends(out.size(), EP_REQUEST_NULL);
  for (int d = 0; d < size; ++d) {
    for (int k = 0; k < kMsgs; ++k) {
      auto& m = out[static_cast<size_t>(d * kMsgs + k)];
      m = {me, k, d};
      ASSERT_EQ(EP_Isend(m.data(), 3, MPI_INT, d, tag, comm, &sends[static_cast<size_t>(d * kMsgs + k)]),
                EP_SUCCESS)
          << what;
    }
  }
  std::vector<int> next_seq(static_cast<size_t>(size), 0);
  for (int i = 0; i < size * kMsgs; ++i) {
    std::array<int, 3> in = {-1, -1, -1};
    EP_Status st;
    ASSERT_EQ(EP_Recv(in.data(), 3, MPI_INT, EP_ANY_SOURCE, tag, comm, &st), EP_SUCCESS) << what;
    const int src = st.EP_SOURCE;
    ASSERT_GE(src, 0) << what;
    ASSERT_LT(src, size) << what;
    EXPECT_EQ(st.EP_TAG, tag) << what;
    EXPECT_EQ(members[static_cast<size_t>(src)], in[0])
        << what << ": status source " << src << " but payload from world endpoint " << in[0];
    EXPECT_EQ(in[2], my_rank) << what << ": message addressed to rank " << in[2];
    EXPECT_EQ(in[1], next_seq[static_cast<size_t>(src)]) << what << ": out of order from " << src;
    next_seq[static_cast<size_t>(src)] = in[1] + 1;
  }
  ASSERT_EQ(EP_Waitall(static_cast<int>(sends.size()), sends.data(), EP_STATUSES_IGNORE), EP_SUCCESS)
      << what;
  // Explicit sources, reverse order.
  std::vector<EP_Request> s2(static_cast<size_t>(size), EP_REQUEST_NULL);
  for (int d = 0; d < size; ++d) {
    ASSERT_EQ(EP_Isend(&me, 1, MPI_INT, d, tag + 1, comm, &s2[static_cast<size_t>(d)]), EP_SUCCESS)
        << what;
  }
  for (int s = size - 1; s >= 0; --s) {
    int got = -1;
    EP_Status st;
    ASSERT_EQ(EP_Recv(&got, 1, MPI_INT, s, tag + 1, comm, &st), EP_SUCCESS) << what;
    EXPECT_EQ(got, members[static_cast<size_t>(s)]) << what << ": from rank " << s;
    EXPECT_EQ(st.EP_SOURCE, s) << what;
  }
  ASSERT_EQ(EP_Waitall(size, s2.data(), EP_STATUSES_IGNORE), EP_SUCCESS) << what;
}

// Barrier, Bcast from every root, Allreduce (MPI_SUM int/double, MPI_MAX, the matrix op).
inline void check_intra_collectives(EP_Comm comm, const std::vector<int>& members, int me,
                                    const MatOp& mop, const std::string& what) {
  const int size = static_cast<int>(members.size());
  const int my_rank = index_in(members, me);
  ASSERT_EQ(EP_Barrier(comm), EP_SUCCESS) << what;
  for (int root = 0; root < size; ++root) {
    int buf[3] = {-1, -1, -1};
    if (root == my_rank) {
      buf[0] = 1000 + root;
      buf[1] = me;
      buf[2] = 7;
    }
    ASSERT_EQ(EP_Bcast(buf, 3, MPI_INT, root, comm), EP_SUCCESS) << what << " root " << root;
    EXPECT_EQ(buf[0], 1000 + root) << what << " root " << root;
    EXPECT_EQ(buf[1], members[static_cast<size_t>(root)]) << what << " root " << root;
    EXPECT_EQ(buf[2], 7) << what << " root " << root;
  }
  {
    int s[2] = {me + 1, me * me}, r[2] = {-1, -1};
    ASSERT_EQ(EP_Allreduce(s, r, 2, MPI_INT, MPI_SUM, comm), EP_SUCCESS) << what;
    int e0 = 0, e1 = 0;
    for (int m : members) {
      e0 += m + 1;
      e1 += m * m;
    }
    EXPECT_EQ(r[0], e0) << what;
    EXPECT_EQ(r[1], e1) << what;
  }
  {
    double s = me * 0.5 + 0.25, r = -1;
    ASSERT_EQ(EP_Allreduce(&s, &r, 1, MPI_DOUBLE, MPI_SUM, comm), EP_SUCCESS) << what;
    double e = 0;
    for (int m : members) e += m * 0.5 + 0.25;
    EXPECT_DOUBLE_EQ(r, e) << what;
  }
  {
    int s = (me * 37) % 11, r = -1;
    ASSERT_EQ(EP_Allreduce(&s, &r, 1, MPI_INT, MPI_MAX, comm), EP_SUCCESS) << what;
    int e = -1;
    for (int m : members) e = std::max(e, (m * 37) % 11);
    EXPECT_EQ(r, e) << what;
  }
  {
    Mat s[2] = {mat_of(me, 0), mat_of(me, 1)};
    Mat r[2] = {{-1, -1, -1, -1}, {-1, -1, -1, -1}};
    ASSERT_EQ(EP_Allreduce(s, r, 2, mop.type, mop.op, comm), EP_SUCCESS) << what;
    EXPECT_EQ(r[0], mat_product(members, 0)) << what << ": non-commutative op not in rank order";
    EXPECT_EQ(r[1], mat_product(members, 1)) << what << ": non-commutative op not in rank order";
  }
  (void)my_rank;
}

// EP_Comm_group of `comm`: size, rank, and translation of every rank to `world` (whose
// rank r is world endpoint r) and back.
inline void check_intra_group(EP_Comm comm, EP_Comm world, const std::vector<int>& members,
                              int me, int world_size, const std::string& what) {
  const int size = static_cast<int>(members.size());
  EP_Group g = EP_GROUP_NULL, gw = EP_GROUP_NULL;
  ASSERT_EQ(EP_Comm_group(comm, &g), EP_SUCCESS) << what;
  ASSERT_EQ(EP_Comm_group(world, &gw), EP_SUCCESS) << what;
  int gsize = -1, grank = -1;
  EXPECT_EQ(EP_Group_size(g, &gsize), EP_SUCCESS);
  EXPECT_EQ(gsize, size) << what;
  EXPECT_EQ(EP_Group_rank(g, &grank), EP_SUCCESS);
  EXPECT_EQ(grank, index_in(members, me)) << what;
  std::vector<int> in(static_cast<size_t>(size)), out(static_cast<size_t>(size), -7);
  std::iota(in.begin(), in.end(), 0);
  if (size > 0) {
    ASSERT_EQ(EP_Group_translate_ranks(g, size, in.data(), gw, out.data()), EP_SUCCESS) << what;
    EXPECT_EQ(out, members) << what;
  }
  std::vector<int> win(static_cast<size_t>(world_size)), wout(static_cast<size_t>(world_size), -7);
  std::iota(win.begin(), win.end(), 0);
  ASSERT_EQ(EP_Group_translate_ranks(gw, world_size, win.data(), g, wout.data()), EP_SUCCESS)
      << what;
  for (int r = 0; r < world_size; ++r) {
    const int pos = index_in(members, r);
    EXPECT_EQ(wout[static_cast<size_t>(r)], pos < 0 ? EP_UNDEFINED : pos)
        << what << ": world endpoint " << r;
  }
  EXPECT_EQ(EP_Group_free(&g), EP_SUCCESS);
  EXPECT_EQ(g, EP_GROUP_NULL);
  EXPECT_EQ(EP_Group_free(&gw), EP_SUCCESS);
}

// ---- Intercommunicator checks --------------------------------------------------------------
// `local[r]` / `remote[r]`: world endpoint of local-group / remote-group rank r.

inline void check_inter_queries(EP_Comm ic, const std::vector<int>& local,
                                const std::vector<int>& remote, int me, const std::string& what) {
  int flag = -1, size = -1, rsize = -1, rank = -1;
  ASSERT_EQ(EP_Comm_test_inter(ic, &flag), EP_SUCCESS) << what;
  EXPECT_EQ(flag, 1) << what;
  ASSERT_EQ(EP_Comm_size(ic, &size), EP_SUCCESS) << what;
  EXPECT_EQ(size, static_cast<int>(local.size())) << what;
  ASSERT_EQ(EP_Comm_remote_size(ic, &rsize), EP_SUCCESS) << what;
  EXPECT_EQ(rsize, static_cast<int>(remote.size())) << what;
  ASSERT_EQ(EP_Comm_rank(ic, &rank), EP_SUCCESS) << what;
  EXPECT_EQ(rank, index_in(local, me)) << what << ": world endpoint " << me;
}

// The group of an intercommunicator is its local group.
inline void check_inter_group(EP_Comm ic, EP_Comm world, const std::vector<int>& local, int me,
                              int world_size, const std::string& what) {
  check_intra_group(ic, world, local, me, world_size, what + " (local group)");
}

// Every endpoint sends 3 messages to every remote rank; receives with EP_ANY_SOURCE report
// the sender's rank in the remote group, and each sender's messages arrive in order.
// Then one message per remote rank received by explicit source in reverse order.
inline void check_inter_p2p(EP_Comm ic, const std::vector<int>& local,
                            const std::vector<int>& remote, int me, const std::string& what,
                            int tag = 21) {
  const int rsize = static_cast<int>(remote.size());
  const int my_rank = index_in(local, me);
  const int kMsgs = 3;
  std::vector<std::array<int, 3>> out(static_cast<size_t>(rsize * kMsgs));
  std::vector<EP_Request> sends(out.size(), EP_REQUEST_NULL);
  for (int d = 0; d < rsize; ++d) {
    for (int k = 0; k < kMsgs; ++k) {
      auto& m = out[static_cast<size_t>(d * kMsgs + k)];
      m = {me, k, d};
      ASSERT_EQ(EP_Isend(m.data(), 3, MPI_INT, d, tag, ic, &sends[static_cast<size_t>(d * kMsgs + k)]),
                EP_SUCCESS)
          << what;
    }
  }
  std::vector<int> next_seq(static_cast<size_t>(rsize), 0);
  for (int i = 0; i < rsize * kMsgs; ++i) {
    std::array<int, 3> in = {-1, -1, -1};
    EP_Status st;
    ASSERT_EQ(EP_Recv(in.data(), 3, MPI_INT, EP_ANY_SOURCE, tag, ic, &st), EP_SUCCESS) << what;
    const int src = st.EP_SOURCE;
    ASSERT_GE(src, 0) << what;
    ASSERT_LT(src, rsize) << what << ": source must be a remote-group rank";
    EXPECT_EQ(remote[static_cast<size_t>(src)], in[0])
        << what << ": status source " << src << " (remote group) but payload from world endpoint "
        << in[0];
    EXPECT_EQ(in[2], my_rank) << what << ": message addressed to local rank " << in[2];
    EXPECT_EQ(in[1], next_seq[static_cast<size_t>(src)]) << what << ": out of order from " << src;
    next_seq[static_cast<size_t>(src)] = in[1] + 1;
  }
  ASSERT_EQ(EP_Waitall(static_cast<int>(sends.size()), sends.data(), EP_STATUSES_IGNORE), EP_SUCCESS)
      << what;
  std::vector<EP_Request> s2(static_cast<size_t>(rsize), EP_REQUEST_NULL);
  for (int d = 0; d < rsize; ++d) {
    ASSERT_EQ(EP_Isend(&me, 1, MPI_INT, d, tag + 1, ic, &s2[static_cast<size_t>(d)]), EP_SUCCESS)
        << what;
  }
  for (int s = rsize - 1; s >= 0; --s) {
    int got = -1;
    EP_Status st;
    ASSERT_EQ(EP_Recv(&got, 1, MPI_INT, s, tag + 1, ic, &st), EP_SUCCESS) << what;
    EXPECT_EQ(got, remote[static_cast<size_t>(s)]) << what << ": from remote rank " << s;
    EXPECT_EQ(st.EP_SOURCE, s) << what;
  }
  ASSERT_EQ(EP_Waitall(rsize, s2.data(), EP_STATUSES_IGNORE), EP_SUCCESS) << what;
}

// Bcast with each group as root group and every root in it; Allreduce gives the reduction
// of the other group's contributions (sum int/double, the matrix product in the other
// group's rank order).  `first_group` says whether this endpoint is in the group whose
// roots are tried first (the two groups must disagree).
inline void check_inter_collectives(EP_Comm ic, const std::vector<int>& local,
                                    const std::vector<int>& remote, int me, bool first_group,
                                    const MatOp& mop, const std::string& what) {
  const int my_rank = index_in(local, me);
  ASSERT_EQ(EP_Barrier(ic), EP_SUCCESS) << what;
  for (int g = 0; g < 2; ++g) {
    const bool root_group = (g == 0) == first_group;
    const int gsize = static_cast<int>(root_group ? local.size() : remote.size());
    for (int k = 0; k < gsize; ++k) {
      int buf[2] = {-1, -1};
      int root;
      if (root_group) {
        root = (k == my_rank) ? EP_ROOT : EP_PROC_NULL;
        if (k == my_rank) {
          buf[0] = 500 + 10 * g + k;
          buf[1] = me;
        }
      } else {
        root = k;
      }
      ASSERT_EQ(EP_Bcast(buf, 2, MPI_INT, root, ic), EP_SUCCESS)
          << what << ": root group " << g << " root " << k;
      if (!root_group) {
        EXPECT_EQ(buf[0], 500 + 10 * g + k) << what << ": root group " << g << " root " << k;
        EXPECT_EQ(buf[1], remote[static_cast<size_t>(k)]) << what;
      } else if (k == my_rank) {
        EXPECT_EQ(buf[0], 500 + 10 * g + k) << what << ": the root's buffer changed";
      } else {
        EXPECT_EQ(buf[0], -1) << what << ": EP_PROC_NULL member's buffer was written";
        EXPECT_EQ(buf[1], -1) << what;
      }
    }
  }
  {
    int s[2] = {me + 1, me * me}, r[2] = {-1, -1};
    ASSERT_EQ(EP_Allreduce(s, r, 2, MPI_INT, MPI_SUM, ic), EP_SUCCESS) << what;
    int e0 = 0, e1 = 0;
    for (int m : remote) {
      e0 += m + 1;
      e1 += m * m;
    }
    EXPECT_EQ(r[0], e0) << what << ": Allreduce must give the OTHER group's sum";
    EXPECT_EQ(r[1], e1) << what;
  }
  {
    double s = me * 0.5 + 0.25, r = -1;
    ASSERT_EQ(EP_Allreduce(&s, &r, 1, MPI_DOUBLE, MPI_SUM, ic), EP_SUCCESS) << what;
    double e = 0;
    for (int m : remote) e += m * 0.5 + 0.25;
    EXPECT_DOUBLE_EQ(r, e) << what;
  }
  {
    Mat s[2] = {mat_of(me, 0), mat_of(me, 1)};
    Mat r[2] = {{-1, -1, -1, -1}, {-1, -1, -1, -1}};
    ASSERT_EQ(EP_Allreduce(s, r, 2, mop.type, mop.op, ic), EP_SUCCESS) << what;
    EXPECT_EQ(r[0], mat_product(remote, 0))
        << what << ": the other group's product in its rank order";
    EXPECT_EQ(r[1], mat_product(remote, 1)) << what;
  }
}

// Merges `ic` with `high`; returns the merged communicator and its members (world ranks
// in merged-rank order) as every member sees them (via an Allreduce on the merged comm).
// Checks: the result is an intracomm of size |local|+|remote|; the table is a
// permutation; each group is contiguous and in its local-rank order; if `expect_local_first`
// is 1/0 the local group must come first/second (-1: either).  A ring of messages then
// confirms every member agrees on the table.
inline EP_Comm merge_and_check(EP_Comm ic, const std::vector<int>& local,
                               const std::vector<int>& remote, int me, int world_total, int high,
                               int expect_local_first, std::vector<int>* members_out,
                               const std::string& what) {
  EP_Comm m = EP_COMM_NULL;
  int rc = EP_Intercomm_merge(ic, high, &m);
  EXPECT_EQ(rc, EP_SUCCESS) << what << ": " << last_error(rc);
  if (rc != EP_SUCCESS) return EP_COMM_NULL;
  const int n = static_cast<int>(local.size() + remote.size());
  int size = -1, rank = -1, inter = -1;
  EXPECT_EQ(EP_Comm_size(m, &size), EP_SUCCESS);
  EXPECT_EQ(size, n) << what;
  EXPECT_EQ(EP_Comm_rank(m, &rank), EP_SUCCESS);
  EXPECT_EQ(EP_Comm_test_inter(m, &inter), EP_SUCCESS);
  EXPECT_EQ(inter, 0) << what;
  // Table world endpoint -> merged rank + 1 (0 = not a member).
  std::vector<int> mine(static_cast<size_t>(world_total), 0), table(mine.size(), -1);
  mine[static_cast<size_t>(me)] = rank + 1;
  EXPECT_EQ(EP_Allreduce(mine.data(), table.data(), world_total, MPI_INT, MPI_SUM, m), EP_SUCCESS)
      << what;
  std::vector<int> members(static_cast<size_t>(n), -1);
  bool perm = true;
  for (int w = 0; w < world_total; ++w) {
    const int r = table[static_cast<size_t>(w)] - 1;
    const bool member = index_in(local, w) >= 0 || index_in(remote, w) >= 0;
    if (!member) {
      EXPECT_EQ(r, -1) << what << ": world endpoint " << w << " is not a member";
      continue;
    }
    if (r < 0 || r >= n || members[static_cast<size_t>(r)] != -1) {
      perm = false;
      ADD_FAILURE() << what << ": merged rank " << r << " of world endpoint " << w
                    << " is out of range or taken twice";
      continue;
    }
    members[static_cast<size_t>(r)] = w;
  }
  EXPECT_TRUE(perm) << what;
  // Contiguity and local order.
  std::vector<int> lo(members.begin(), members.begin() + static_cast<long>(local.size()));
  std::vector<int> hi(members.begin() + static_cast<long>(local.size()), members.end());
  std::vector<int> lo2(members.begin(), members.begin() + static_cast<long>(remote.size()));
  std::vector<int> hi2(members.begin() + static_cast<long>(remote.size()), members.end());
  const bool local_first = (lo == local && hi == remote);
  const bool remote_first = (lo2 == remote && hi2 == local);
  EXPECT_TRUE(local_first || remote_first)
      << what << ": merged order is not [group][group] in local-rank order";
  if (expect_local_first == 1) {
    EXPECT_TRUE(local_first) << what << ": local group must come first";
  }
  if (expect_local_first == 0) {
    EXPECT_TRUE(remote_first) << what << ": remote group must come first";
  }
  // Ring: the message from rank-1 must come from the endpoint the table says.
  if (perm && n > 0) {
    int to = (rank + 1) % n, from = (rank + n - 1) % n, got = -1;
    EP_Status st;
    EXPECT_EQ(EP_Sendrecv(&me, 1, MPI_INT, to, 31, &got, 1, MPI_INT, from, 31, m, &st), EP_SUCCESS)
        << what;
    EXPECT_EQ(got, members[static_cast<size_t>(from)]) << what << ": ring disagrees with table";
  }
  if (members_out) *members_out = members;
  return m;
}

}  // namespace ep_comm_test

#endif  // EP_TESTS_COMM_COMM_UTIL_H_
