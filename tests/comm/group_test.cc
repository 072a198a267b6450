// Groups built from groups (MPI 3.1 section 6.3.2): EP_Group_incl, excl,
// range_incl, range_excl, union, intersection, difference, compare, and the predefined
// EP_GROUP_EMPTY as input and output.
//  * conformance: every result's members (translated to the world group, whose rank r is
//    world endpoint r) and order are those MPI's rules give, computed here from world
//    ranks; EP_Group_rank of a derived group is the producing endpoint's position in it
//    (EP_UNDEFINED if not a member);
//  * error guessing: every error code (a rank out of range or named twice, bad ranges,
//    freed, null or wrong-kind groups, negative n, NULL pointers).
// Runs on an uneven number of endpoints per process, at 1, 2 and 3 processes, on the
// world communicator and on a split that reverses it.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <vector>

#include "tests/comm/comm_util.h"
#include "tests/common/harness.h"

namespace {

using ep_comm_test::index_in;
using ep_test::last_error;
using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;

using ep_comm_test::rank_of;

// The world endpoints of `g`, in g's rank order (gw: the world communicator's group).
std::vector<int> members_of(EP_Group g, EP_Group gw) {
  int n = -1;
  EXPECT_EQ(EP_Group_size(g, &n), EP_SUCCESS);
  std::vector<int> in(static_cast<size_t>(std::max(n, 0))), out(in.size(), -2);
  for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = i;
  EXPECT_EQ(EP_Group_translate_ranks(g, n, in.data(), gw, out.data()), EP_SUCCESS);
  return out;
}

// g has exactly `expected` (world endpoints, in order) and answers EP_Group_rank for `me`.
void expect_group(EP_Group g, EP_Group gw, const std::vector<int>& expected, int me,
                  const std::string& what) {
  EXPECT_EQ(members_of(g, gw), expected) << what;
  int r = -5;
  ASSERT_EQ(EP_Group_rank(g, &r), EP_SUCCESS) << what;
  const int pos = index_in(expected, me);
  EXPECT_EQ(r, pos < 0 ? EP_UNDEFINED : pos) << what << ": EP_Group_rank at world endpoint " << me;
}

void free_group(EP_Group* g, const std::string& what) {
  EXPECT_EQ(EP_Group_free(g), EP_SUCCESS) << what;
  EXPECT_EQ(*g, EP_GROUP_NULL) << what;
}

// The ranks a range list names (MPI 3.1 section 6.3.2), computed independently.
std::vector<int> expand(const std::vector<std::array<int, 3>>& ranges) {
  std::vector<int> v;
  for (const auto& r : ranges) {
    const int n = (r[1] - r[0]) / r[2];
    for (int k = 0; k <= n; ++k) v.push_back(r[0] + k * r[2]);
  }
  return v;
}

std::vector<int> pick(const std::vector<int>& of, const std::vector<int>& ranks) {
  std::vector<int> v;
  for (int r : ranks) v.push_back(of[static_cast<size_t>(r)]);
  return v;
}

std::vector<int> without(const std::vector<int>& of, const std::vector<int>& ranks) {
  std::vector<int> v;
  for (int i = 0; i < static_cast<int>(of.size()); ++i) {
    if (index_in(ranks, i) < 0) v.push_back(of[static_cast<size_t>(i)]);
  }
  return v;
}

// The communicators the tests run on: world (rank r = world endpoint r) and a split
// that reverses it; `members` maps the communicator's ranks to world endpoints.
struct On {
  EP_Comm comm;
  std::vector<int> members;
  std::string name;
};

template <class Fn>
void on_world_and_reversed(const Fn& fn) {
  const ep_comm_test::Layout lay = ep_comm_test::uneven_layout();
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = rank_of(world);
    EP_Group gw = EP_GROUP_NULL;
    ASSERT_EQ(EP_Comm_group(world, &gw), EP_SUCCESS);
    std::vector<int> all(static_cast<size_t>(lay.total));
    for (int i = 0; i < lay.total; ++i) all[static_cast<size_t>(i)] = i;
    fn(On{world, all, "world"}, gw, me);
    EP_Comm rev = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, 0, -me, &rev), EP_SUCCESS);
    std::reverse(all.begin(), all.end());
    fn(On{rev, all, "reversed"}, gw, me);
    ASSERT_EQ(EP_Comm_free(&rev), EP_SUCCESS);
    free_group(&gw, "world group");
  });
}

TEST(GroupIncl, PicksTheNamedRanksInTheGivenOrder) {
  on_world_and_reversed([](const On& on, EP_Group gw, int me) {
    const int n = static_cast<int>(on.members.size());
    EP_Group g = EP_GROUP_NULL;
    ASSERT_EQ(EP_Comm_group(on.comm, &g), EP_SUCCESS);
    expect_group(g, gw, on.members, me, on.name + " group");
    // Odd ranks in reverse order, then rank 0.
    std::vector<int> ranks;
    for (int r = n - 1; r >= 0; --r) {
      if (r % 2 == 1) ranks.push_back(r);
    }
    ranks.push_back(0);
    EP_Group in = EP_GROUP_NULL, ex = EP_GROUP_NULL;
    ASSERT_EQ(EP_Group_incl(g, static_cast<int>(ranks.size()), ranks.data(), &in), EP_SUCCESS);
    expect_group(in, gw, pick(on.members, ranks), me, on.name + " incl");
    ASSERT_EQ(EP_Group_excl(g, static_cast<int>(ranks.size()), ranks.data(), &ex), EP_SUCCESS);
    expect_group(ex, gw, without(on.members, ranks), me, on.name + " excl");
    // A group of a group: incl of the incl (its last two ranks, swapped).
    const int k = static_cast<int>(ranks.size());
    if (k >= 2) {
      const int two[2] = {k - 1, k - 2};
      EP_Group in2 = EP_GROUP_NULL;
      ASSERT_EQ(EP_Group_incl(in, 2, two, &in2), EP_SUCCESS);
      expect_group(in2, gw, pick(pick(on.members, ranks), {k - 1, k - 2}), me, on.name + " incl2");
      free_group(&in2, "incl2");
    }
    // excl of nothing is the whole group; excl of everything is EP_GROUP_EMPTY.
    EP_Group all = EP_GROUP_NULL, none = EP_GROUP_NULL;
    ASSERT_EQ(EP_Group_excl(g, 0, nullptr, &all), EP_SUCCESS);
    expect_group(all, gw, on.members, me, on.name + " excl of nothing");
    std::vector<int> every(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) every[static_cast<size_t>(i)] = i;
    ASSERT_EQ(EP_Group_excl(g, n, every.data(), &none), EP_SUCCESS);
    EXPECT_EQ(none, EP_GROUP_EMPTY) << on.name;
    ASSERT_EQ(EP_Group_incl(g, 0, nullptr, &none), EP_SUCCESS);
    EXPECT_EQ(none, EP_GROUP_EMPTY) << on.name;
    for (EP_Group* h : {&g, &in, &ex, &all}) free_group(h, on.name);
  });
}

TEST(GroupRanges, FollowFirstLastStrideWithNegativeStridesAndSingletons) {
  on_world_and_reversed([](const On& on, EP_Group gw, int me) {
    const int n = static_cast<int>(on.members.size());
    ASSERT_GE(n, 3);
    EP_Group g = EP_GROUP_NULL;
    ASSERT_EQ(EP_Comm_group(on.comm, &g), EP_SUCCESS);
    // Ranks of parity (n - 1) % 2 downwards, then the other parity upwards from 1 - that
    // parity, then nothing else: every rank once.
    const int p = (n - 1) % 2;
    std::vector<std::array<int, 3>> lists[] = {
        {{n - 1, 0, -2}, {1 - p, n - 1, 2}},
        {{0, n - 1, 3}},
        {{n - 2, n - 2, 5}, {n - 1, 0, -n}},  // a singleton; a stride past the group's end
    };
    for (const auto& l : lists) {
      std::vector<int> flat;
      for (const auto& r : l) flat.insert(flat.end(), r.begin(), r.end());
      auto* ranges = reinterpret_cast<int(*)[3]>(flat.data());
      const std::vector<int> ranks = expand(l);
      const std::string what = on.name + " ranges starting " + std::to_string(l[0][0]);
      EP_Group in = EP_GROUP_NULL, ex = EP_GROUP_NULL;
      ASSERT_EQ(EP_Group_range_incl(g, static_cast<int>(l.size()), ranges, &in), EP_SUCCESS)
          << what << ": " << last_error(EP_ERR_ARG);
      ASSERT_EQ(EP_Group_range_excl(g, static_cast<int>(l.size()), ranges, &ex), EP_SUCCESS)
          << what;
      expect_group(in, gw, pick(on.members, ranks), me, what + " (incl)");
      if (static_cast<int>(ranks.size()) == n) {
        EXPECT_EQ(ex, EP_GROUP_EMPTY) << what << ": everything excluded";
      } else {
        expect_group(ex, gw, without(on.members, ranks), me, what + " (excl)");
      }
      free_group(&in, what);
      free_group(&ex, what);
    }
    free_group(&g, "group");
  });
}

TEST(GroupSetOps, UnionIntersectionDifferenceKeepMpiOrder) {
  on_world_and_reversed([](const On& on, EP_Group gw, int me) {
    const int n = static_cast<int>(on.members.size());
    EP_Group g = EP_GROUP_NULL;
    ASSERT_EQ(EP_Comm_group(on.comm, &g), EP_SUCCESS);
    // a: ranks 0..n-2 reversed (n - 2 first); b: every other rank from n - 1 down.
    std::vector<int> ra, rb;
    for (int r = n - 2; r >= 0; --r) ra.push_back(r);
    for (int r = n - 1; r >= 0; r -= 2) rb.push_back(r);
    EP_Group a = EP_GROUP_NULL, b = EP_GROUP_NULL;
    ASSERT_EQ(EP_Group_incl(g, static_cast<int>(ra.size()), ra.data(), &a), EP_SUCCESS);
    ASSERT_EQ(EP_Group_incl(g, static_cast<int>(rb.size()), rb.data(), &b), EP_SUCCESS);
    const std::vector<int> wa = pick(on.members, ra), wb = pick(on.members, rb);
    // The expected results, from world endpoints.
    std::vector<int> uni = wa, inter, diff, uni_ba = wb;
    for (int x : wb) {
      if (index_in(wa, x) < 0) uni.push_back(x);
    }
    for (int x : wa) {
      if (index_in(wb, x) < 0) uni_ba.push_back(x);
    }
    for (int x : wa) (index_in(wb, x) >= 0 ? inter : diff).push_back(x);
    struct Case {
      int (*fn)(EP_Group, EP_Group, EP_Group*);
      EP_Group x, y;
      std::vector<int> expected;
      const char* name;
    };
    const Case cases[] = {
        {EP_Group_union, a, b, uni, "union(a, b)"},
        {EP_Group_union, b, a, uni_ba, "union(b, a)"},
        {EP_Group_intersection, a, b, inter, "intersection(a, b)"},
        {EP_Group_difference, a, b, diff, "difference(a, b)"},
        {EP_Group_union, a, EP_GROUP_EMPTY, wa, "union(a, empty)"},
        {EP_Group_union, EP_GROUP_EMPTY, b, wb, "union(empty, b)"},
        {EP_Group_difference, a, EP_GROUP_EMPTY, wa, "difference(a, empty)"},
    };
    for (const Case& c : cases) {
      EP_Group out = EP_GROUP_NULL;
      ASSERT_EQ(c.fn(c.x, c.y, &out), EP_SUCCESS) << on.name << " " << c.name;
      if (c.expected.empty()) {
        EXPECT_EQ(out, EP_GROUP_EMPTY) << on.name << " " << c.name;
      } else {
        expect_group(out, gw, c.expected, me, on.name + " " + c.name);
      }
      free_group(&out, c.name);
    }
    // Empty results are EP_GROUP_EMPTY.
    for (auto fn : {EP_Group_intersection, EP_Group_difference}) {
      EP_Group out = EP_GROUP_NULL;
      ASSERT_EQ(fn(EP_GROUP_EMPTY, a, &out), EP_SUCCESS);
      EXPECT_EQ(out, EP_GROUP_EMPTY) << on.name;
      ASSERT_EQ(fn(a, a, &out), EP_SUCCESS);
      if (fn == EP_Group_difference) {
        EXPECT_EQ(out, EP_GROUP_EMPTY) << on.name << ": difference(a, a)";
      } else {
        expect_group(out, gw, wa, me, on.name + " intersection(a, a)");
        free_group(&out, "a^a");
      }
    }
    EP_Group e = EP_GROUP_NULL;
    ASSERT_EQ(EP_Group_intersection(a, EP_GROUP_EMPTY, &e), EP_SUCCESS);
    EXPECT_EQ(e, EP_GROUP_EMPTY);
    for (EP_Group* h : {&a, &b, &g}) free_group(h, on.name);
  });
}

TEST(GroupCompare, IdentSimilarUnequal) {
  on_world_and_reversed([](const On& on, EP_Group, int) {
    const int n = static_cast<int>(on.members.size());
    EP_Group g = EP_GROUP_NULL, g2 = EP_GROUP_NULL, rev = EP_GROUP_NULL, sub = EP_GROUP_NULL;
    ASSERT_EQ(EP_Comm_group(on.comm, &g), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_group(on.comm, &g2), EP_SUCCESS);
    std::vector<int> r(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) r[static_cast<size_t>(i)] = n - 1 - i;
    ASSERT_EQ(EP_Group_incl(g, n, r.data(), &rev), EP_SUCCESS);
    ASSERT_EQ(EP_Group_incl(g, n - 1, r.data(), &sub), EP_SUCCESS);
    struct Case {
      EP_Group x, y;
      int expected;
      const char* name;
    } cases[] = {
        {g, g, EP_IDENT, "g, g"},
        {g, g2, EP_IDENT, "two groups of one communicator"},
        {g, rev, EP_SIMILAR, "g, reversed"},
        {rev, sub, EP_UNEQUAL, "reversed, a subset"},
        {sub, g, EP_UNEQUAL, "a subset, g"},
        {EP_GROUP_EMPTY, EP_GROUP_EMPTY, EP_IDENT, "empty, empty"},
        {g, EP_GROUP_EMPTY, EP_UNEQUAL, "g, empty"},
    };
    for (const Case& c : cases) {
      int res = -1;
      ASSERT_EQ(EP_Group_compare(c.x, c.y, &res), EP_SUCCESS) << c.name;
      EXPECT_EQ(res, c.expected) << on.name << ": " << c.name;
    }
    for (EP_Group* h : {&g, &g2, &rev, &sub}) free_group(h, on.name);
  });
}

TEST(GroupEmpty, IsAValidGroupOfSizeZeroEverywhere) {
  run_endpoints(uneven(world_rank()), [](EP_Comm world, int) {
    EP_Group e = EP_GROUP_EMPTY;
    int v = -5;
    ASSERT_EQ(EP_Group_size(e, &v), EP_SUCCESS);
    EXPECT_EQ(v, 0);
    ASSERT_EQ(EP_Group_rank(e, &v), EP_SUCCESS);
    EXPECT_EQ(v, EP_UNDEFINED);
    EP_Group out = EP_GROUP_NULL;
    int ranges[1][3] = {{0, 0, 1}};
    ASSERT_EQ(EP_Group_incl(e, 0, nullptr, &out), EP_SUCCESS);
    EXPECT_EQ(out, EP_GROUP_EMPTY);
    ASSERT_EQ(EP_Group_excl(e, 0, nullptr, &out), EP_SUCCESS);
    EXPECT_EQ(out, EP_GROUP_EMPTY);
    ASSERT_EQ(EP_Group_range_incl(e, 0, ranges, &out), EP_SUCCESS);
    EXPECT_EQ(out, EP_GROUP_EMPTY);
    ASSERT_EQ(EP_Group_range_excl(e, 0, ranges, &out), EP_SUCCESS);
    EXPECT_EQ(out, EP_GROUP_EMPTY);
    const int zero = 0;
    EXPECT_EQ(EP_Group_incl(e, 1, &zero, &out), EP_ERR_RANK);
    EXPECT_EQ(EP_Group_range_incl(e, 1, ranges, &out), EP_ERR_RANK);
    ASSERT_EQ(EP_Group_translate_ranks(e, 0, nullptr, e, nullptr), EP_SUCCESS);
    EP_Group gw = EP_GROUP_NULL;
    ASSERT_EQ(EP_Comm_group(world, &gw), EP_SUCCESS);
    int tr = -5;
    ASSERT_EQ(EP_Group_translate_ranks(gw, 1, &zero, e, &tr), EP_SUCCESS);
    EXPECT_EQ(tr, EP_UNDEFINED);
    // Freeing it resets the handle and frees nothing: it stays usable.
    ASSERT_EQ(EP_Group_free(&e), EP_SUCCESS);
    EXPECT_EQ(e, EP_GROUP_NULL);
    ASSERT_EQ(EP_Group_size(EP_GROUP_EMPTY, &v), EP_SUCCESS);
    EXPECT_EQ(v, 0);
    // EP_Comm_create with the empty group: EP_COMM_NULL everywhere.
    EP_Comm nc = reinterpret_cast<EP_Comm>(0x1);
    ASSERT_EQ(EP_Comm_create(world, EP_GROUP_EMPTY, &nc), EP_SUCCESS);
    EXPECT_EQ(nc, EP_COMM_NULL);
    free_group(&gw, "world group");
  });
}

TEST(GroupErrors, EveryBadArgumentHasItsCode) {
  run_endpoints(uneven(world_rank()), [](EP_Comm world, int) {
    EP_Group g = EP_GROUP_NULL, freed = EP_GROUP_NULL, out = EP_GROUP_NULL;
    ASSERT_EQ(EP_Comm_group(world, &g), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_group(world, &freed), EP_SUCCESS);
    ASSERT_EQ(EP_Group_free(&freed), EP_SUCCESS);  // now EP_GROUP_NULL
    int n = 0;
    EP_Group_size(g, &n);
    const int ok[2] = {0, n - 1};
    const int dup[3] = {0, n - 1, 0};
    const int out_hi[1] = {n};
    const int out_lo[1] = {-1};
    int good_range[1][3] = {{0, n - 1, 1}};
    const auto bad_group = reinterpret_cast<EP_Group>(world);  // a communicator handle
    for (EP_Group bad : {freed, EP_GROUP_NULL, bad_group}) {
      EXPECT_EQ(EP_Group_incl(bad, 2, ok, &out), EP_ERR_GROUP);
      EXPECT_EQ(EP_Group_excl(bad, 2, ok, &out), EP_ERR_GROUP);
      EXPECT_EQ(EP_Group_range_incl(bad, 1, good_range, &out), EP_ERR_GROUP);
      EXPECT_EQ(EP_Group_range_excl(bad, 1, good_range, &out), EP_ERR_GROUP);
      for (auto fn : {EP_Group_union, EP_Group_intersection, EP_Group_difference}) {
        EXPECT_EQ(fn(bad, g, &out), EP_ERR_GROUP);
        EXPECT_EQ(fn(g, bad, &out), EP_ERR_GROUP);
      }
      int res = 0;
      EXPECT_EQ(EP_Group_compare(bad, g, &res), EP_ERR_GROUP);
      EXPECT_EQ(EP_Group_compare(g, bad, &res), EP_ERR_GROUP);
      EP_Group h = bad;
      EXPECT_EQ(EP_Group_free(&h), EP_ERR_GROUP);
    }
    // Ranks: out of range, named twice.
    for (auto fn : {EP_Group_incl, EP_Group_excl}) {
      EXPECT_EQ(fn(g, 3, dup, &out), EP_ERR_RANK);
      EXPECT_EQ(fn(g, 1, out_hi, &out), EP_ERR_RANK);
      EXPECT_EQ(fn(g, 1, out_lo, &out), EP_ERR_RANK);
      EXPECT_EQ(fn(g, -1, ok, &out), EP_ERR_COUNT);
      EXPECT_EQ(fn(g, 2, nullptr, &out), EP_ERR_ARG);
      EXPECT_EQ(fn(g, 2, ok, nullptr), EP_ERR_ARG);
    }
    // Ranges: stride 0 and a stride away from `last` are bad ranges (EP_ERR_ARG); a range
    // that runs out of the group or names a rank twice names bad ranks (EP_ERR_RANK).
    int stride0[1][3] = {{0, n - 1, 0}};
    int away[1][3] = {{n - 1, 0, 1}};
    int away_neg[1][3] = {{0, n - 1, -1}};
    int past_end[1][3] = {{0, n, 1}};
    int below[1][3] = {{0, -1, -1}};
    int overlap[2][3] = {{0, n - 1, 1}, {n - 1, n - 1, 1}};
    int self_dup[1][3] = {{0, 0, 1}};
    int twice[2][3] = {{0, 0, 1}, {0, 0, 1}};
    for (auto fn : {EP_Group_range_incl, EP_Group_range_excl}) {
      EXPECT_EQ(fn(g, 1, stride0, &out), EP_ERR_ARG);
      EXPECT_EQ(fn(g, 1, away, &out), EP_ERR_ARG);  // n >= 3 on every layout here
      EXPECT_EQ(fn(g, 1, away_neg, &out), EP_ERR_ARG);
      EXPECT_EQ(fn(g, 1, past_end, &out), EP_ERR_RANK);
      EXPECT_EQ(fn(g, 1, below, &out), EP_ERR_RANK);
      EXPECT_EQ(fn(g, 2, overlap, &out), EP_ERR_RANK);
      EXPECT_EQ(fn(g, 2, twice, &out), EP_ERR_RANK);
      EXPECT_EQ(fn(g, -1, self_dup, &out), EP_ERR_COUNT);
      EXPECT_EQ(fn(g, 1, nullptr, &out), EP_ERR_ARG);
      EXPECT_EQ(fn(g, 1, self_dup, nullptr), EP_ERR_ARG);
    }
    const std::string msg = last_error(EP_ERR_ARG);
    EXPECT_NE(msg.find("EP_Group_range_excl:"), std::string::npos) << msg;
    for (auto fn : {EP_Group_union, EP_Group_intersection, EP_Group_difference}) {
      EXPECT_EQ(fn(g, g, nullptr), EP_ERR_ARG);
    }
    EXPECT_EQ(EP_Group_compare(g, g, nullptr), EP_ERR_ARG);
    EXPECT_EQ(out, EP_GROUP_NULL) << "a failed call wrote its output";
    free_group(&g, "world group");
  });
}

}  // namespace
