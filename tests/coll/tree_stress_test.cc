// The combining tree (collectives/tree.h) alone, under stress: n threads (1 to 13, more
// than this machine's cores) meet for many rounds, each arriving after a random delay
// (none, a spin, a yield, a short sleep), so that every node is completed by changing
// threads and waiters both spin and sleep.  Each member contributes a summary of the
// ordered list of members it stands for; every combine checks that its items are
// contiguous ranges in rank order, covering each member once; the completer checks
// the whole list (exactly once, in order, for this round), that every node was
// combined exactly once in the round, and publishes the round's result, which every
// member checks after its release.  Plain-synchronization rounds (tree_sync) are mixed
// in, and rounds whose completer hands the release to another thread and waits.  The
// round counter starts just below its wrap-around.  No sleep may have needed its safety
// timeout (runtime::lost_wakeups).
// No MPI; seeded: LIBEP_STRESS_SEED=<n> replays a run.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "collectives/tree.h"
#include "runtime/wait.h"
#include "tests/common/harness.h"

namespace {

using ep::collectives::kTreeData;
using ep::collectives::kTreeInAcc;
using ep::collectives::TreeRelease;
using ep::collectives::TreeSlot;
using ep::collectives::TreeTable;

constexpr uint64_t kMul = 1000003;

int watch_limit_s() {
#if defined(EP_SANITIZER_THREAD) || defined(EP_SANITIZER_ADDRESS) || defined(EP_SANITIZER_UNDEFINED)
  return 400;
#else
  return 100;
#endif
}

// The ordered list of members [first, first + count) of one round, as a hash.
struct Summary {
  uint32_t round;
  uint32_t first;
  uint32_t count;
  uint32_t pad;
  uint64_t mask;  // the members, one bit each
  uint64_t hash;  // h = h * kMul + (member + 1), in list order
};
static_assert(sizeof(Summary) <= ep::collectives::kTreeInline, "a summary fits a slot");

uint64_t pow_mul(uint32_t k) {
  uint64_t p = 1;
  for (uint32_t i = 0; i < k; ++i) p *= kMul;
  return p;
}

uint64_t expected_hash(int n) {
  uint64_t h = 0;
  for (int i = 0; i < n; ++i) h = h * kMul + static_cast<uint64_t>(i + 1);
  return h;
}

// One group: the tree's storage, what the test records, the checks' failures.
struct Group {
  explicit Group(int n, uint32_t start_round)
      : slots(new TreeSlot[static_cast<size_t>(n)]),
        addr(static_cast<size_t>(n)),
        combined(static_cast<size_t>(n), 0) {
    for (int i = 0; i < n; ++i) addr[static_cast<size_t>(i)] = &slots[i];
    release.round.store(start_round, std::memory_order_relaxed);  // before the threads
    table.n = n;
    table.slot = addr.data();
    table.release = &release;
    table.crowd = n > static_cast<int>(std::thread::hardware_concurrency())
                      ? ep::runtime::Crowd::kYes
                      : ep::runtime::Crowd::kNo;
  }
  std::unique_ptr<TreeSlot[]> slots;
  std::vector<TreeSlot*> addr;
  TreeRelease release;
  TreeTable table;
  std::vector<uint64_t> combined;  // per node: combines so far (the combining thread's)
  uint64_t syncs = 0;              // tree_sync rounds completed (their completers')
  std::atomic<int> failures{0};
  void fail() { failures.fetch_add(1, std::memory_order_relaxed); }
};

const Summary& summary_at(const unsigned char* p) { return *reinterpret_cast<const Summary*>(p); }

// Combines node `node` of round `round`: its member's summary, then its children's, in
// increasing order, each of which must continue the list.
void combine(Group& g, int node, uint32_t round) {
  TreeSlot& s = g.slots[node];
  if ((s.own & kTreeData) == 0) g.fail();
  Summary acc = summary_at(s.in);
  if (acc.round != round || acc.first != static_cast<uint32_t>(node) || acc.count != 1) g.fail();
  ep::collectives::tree_for_children(node, g.table.n, [&](int ch) {
    const TreeSlot& cs = g.slots[ch];
    if ((cs.sub & kTreeData) == 0) g.fail();
    const Summary& c = summary_at((cs.sub & kTreeInAcc) != 0 ? cs.acc : cs.in);
    if (c.round != round || c.first != acc.first + acc.count || (c.mask & acc.mask) != 0) g.fail();
    acc.hash = acc.hash * pow_mul(c.count) + c.hash;
    acc.count += c.count;
    acc.mask |= c.mask;
  });
  ++g.combined[static_cast<size_t>(node)];
  if (ep::collectives::tree_children(node, g.table.n) == 0) {
    s.sub = kTreeData;  // a leaf's summary stays in `in`
  } else {
    std::memcpy(s.acc, &acc, sizeof acc);
    s.sub = kTreeData | kTreeInAcc;
  }
}

void random_delay(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0:
    case 1:
    case 2:
      return;
    case 3:
    case 4:
      for (int i = static_cast<int>(rng() % 2000); i > 0; --i) ep::runtime::cpu_relax();
      return;
    case 5:
    case 6:
      sched_yield();
      return;
    default:
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
  }
}

// Aborts the program, naming the group, if it is still running after `limit_s` (a
// member that never gets released hangs otherwise).
class Watch {
 public:
  Watch(int n, int limit_s)
      : th_([this, n, limit_s] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!cv_.wait_for(lock, std::chrono::seconds(limit_s), [this] { return done_; })) {
            std::fprintf(stderr, "tree_stress_test: a group of %d still runs after %d s (hang)\n",
                         n, limit_s);
            std::abort();
          }
        }) {}
  ~Watch() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    th_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;  // guarded by mu_
  std::thread th_;
};

// Runs `rounds` rounds of n members from `start`; returns the failures seen.
int run_group(int n, int rounds, uint32_t start, uint64_t seed) {
  const Watch watch(n, watch_limit_s());
  Group g(n, start);
  std::vector<std::thread> threads;
  for (int me = 0; me < n; ++me) {
    threads.emplace_back([&g, me, n, rounds, seed] {
      std::mt19937_64 rng(seed * 131 + static_cast<uint64_t>(me));
      std::mt19937_64 shared(seed);  // the same draws at every member: which rounds sync
      uint64_t syncs_seen = 0;
      for (int r = 0; r < rounds; ++r) {
        random_delay(rng);
        const uint32_t round = ep::collectives::tree_round(g.table);
        const uint64_t draw = shared();
        const bool sync = draw % 5 == 0;
        // Some rounds' completers hand the release to another thread, which releases
        // after a delay while the completer waits like the others (fast.h's engine way).
        const bool handed = draw % 7 == 1;
        if (sync) {
          ep::collectives::tree_sync(g.table, me, [&g] { ++g.syncs; });
          ++syncs_seen;
          if (g.syncs != syncs_seen) g.fail();  // released after its completer counted it
          continue;
        }
        TreeSlot& s = g.slots[me];
        const Summary mine{round, static_cast<uint32_t>(me), 1,
                           0,     uint64_t{1} << me,         static_cast<uint64_t>(me + 1)};
        std::memcpy(s.in, &mine, sizeof mine);
        s.own = kTreeData;
        if (ep::collectives::tree_arrive(g.table, me,
                                         [&g, round](int node) { combine(g, node, round); })) {
          const Summary& all = summary_at(n > 1 ? g.slots[0].acc : g.slots[0].in);
          const uint64_t done = static_cast<uint64_t>(r + 1) - syncs_seen;
          for (int k = 0; k < n; ++k) {
            if (g.combined[static_cast<size_t>(k)] != done) g.fail();  // once per round
          }
          if (all.round != round || all.first != 0 || all.count != static_cast<uint32_t>(n) ||
              all.hash != expected_hash(n) || all.mask != (n == 64 ? ~0ull : (1ull << n) - 1)) {
            g.fail();
          }
          std::memcpy(g.release.data, &all, sizeof all);
          g.release.plan = round;
          if (handed) {
            const int delay_us = static_cast<int>(rng() % 400);
            std::thread finisher([&g, round, delay_us] {
              std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
              ep::collectives::tree_release(g.table, round);
            });
            ep::collectives::tree_wait(g.table, round);
            finisher.join();
          } else {
            ep::collectives::tree_release(g.table, round);
          }
        } else {
          ep::collectives::tree_wait(g.table, round);
        }
        // Every member sees this round's result, released once.
        const Summary& got = summary_at(g.release.data);
        if (g.release.plan != round || got.round != round || got.hash != expected_hash(n)) {
          g.fail();
        }
        if (ep::collectives::tree_round(g.table) != round + 1) g.fail();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (g.release.round.load() != start + static_cast<uint32_t>(rounds)) g.fail();
  return g.failures.load();
}

class TreeStress : public ::testing::TestWithParam<int> {};

// Exactly once, in rank order, every round, through the round counter's wrap-around.
TEST_P(TreeStress, EveryRoundCombinesEachMemberOnceInRankOrder) {
  const uint64_t seed = ep_test::stress_seed("tree_stress_test");
  const int n = GetParam();
  const int rounds = ep_test::scaled(24000 / (n + 2));
  const uint64_t lost_before = ep::runtime::lost_wakeups();
  const uint32_t start = UINT32_MAX - static_cast<uint32_t>(rounds / 2);
  EXPECT_EQ(run_group(n, rounds, start, seed + static_cast<uint64_t>(n)), 0) << "n = " << n;
  EXPECT_EQ(ep::runtime::lost_wakeups(), lost_before) << "a wake-up was lost";
}

// Two groups at once on the same threads' cores: their trees are independent.
TEST(TreeStress, TwoGroupsAtOnceStayApart) {
  const uint64_t seed = ep_test::stress_seed("tree_stress_test");
  const int rounds = ep_test::scaled(3000);
  int f1 = -1, f2 = -1;
  std::thread a([&] { f1 = run_group(3, rounds, 7, seed ^ 1); });
  std::thread b([&] { f2 = run_group(4, rounds, UINT32_MAX - 5, seed ^ 2); });
  a.join();
  b.join();
  EXPECT_EQ(f1, 0);
  EXPECT_EQ(f2, 0);
}

// The shape: parents, children in increasing order, subtrees as contiguous ranges.
TEST(TreeShape, SubtreesAreContiguousRanksInOrder) {
  for (int n = 1; n <= 40; ++n) {
    std::vector<int> seen(static_cast<size_t>(n), 0);
    // The members below node i, walked in the order combine takes them.
    std::function<void(int, std::vector<int>&)> walk = [&](int i, std::vector<int>& out) {
      out.push_back(i);
      ep::collectives::tree_for_children(i, n, [&](int ch) {
        EXPECT_EQ(ep::collectives::tree_parent(ch), i) << "n " << n << " child " << ch;
        walk(ch, out);
      });
    };
    std::vector<int> order;
    walk(0, order);
    ASSERT_EQ(static_cast<int>(order.size()), n) << "n " << n;
    for (int i = 0; i < n; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i) << "n " << n;
    int root_children = ep::collectives::tree_children(0, n), depth_bound = 0;
    while ((1 << depth_bound) < n) ++depth_bound;
    EXPECT_EQ(root_children, depth_bound) << "n " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Members, TreeStress, ::testing::Values(1, 2, 3, 4, 5, 6, 8, 13),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "n" + std::to_string(i.param);
                         });

}  // namespace
