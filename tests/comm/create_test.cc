// Communicators made from groups and by type: EP_Comm_create (collective over
// the parent), EP_Comm_create_group (over the group only: disjoint groups at once, the
// same group under several tags, nested creations), EP_Comm_split_type (process, node,
// EP_UNDEFINED), and the names of communicators.
//  * conformance: on grouped, reversed and interleaved parents (EP_Comm_split with
//    keys), each new communicator has the members and rank order MPI's rules give
//    (computed here from world ranks), right local ranks and groups, and carries a
//    point-to-point ring and an EP_Allreduce with exact results;
//  * error guessing: a group that is not a subgroup, freed groups, bad tags, a caller
//    outside the group, intercommunicators, bad split types, NULL outputs.
// At 1, 2 and 3 processes with uneven endpoints per process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/comm/comm_util.h"
#include "tests/common/harness.h"

namespace {

using ep_comm_test::check_intra_group;
using ep_comm_test::check_intra_queries;
using ep_comm_test::expected_split;
using ep_comm_test::index_in;
using ep_comm_test::Layout;
using ep_test::last_error;
using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;

using ep_comm_test::rank_of;

// A ring and two reductions on `nc`, whose rank r is world endpoint members[r]; then
// queries and the group; then a barrier and the free.
void check_and_free(EP_Comm* nc, EP_Comm world, const std::vector<int>& members, int me,
                    const Layout& lay, const std::string& what) {
  ASSERT_NE(*nc, EP_COMM_NULL) << what;
  check_intra_queries(*nc, members, me, lay, what);
  check_intra_group(*nc, world, members, me, lay.total, what);
  const int n = static_cast<int>(members.size());
  const int r = index_in(members, me);
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  int got = -1;
  EP_Status st;
  ASSERT_EQ(EP_Sendrecv(&me, 1, MPI_INT, right, 41, &got, 1, MPI_INT, left, 41, *nc, &st),
            EP_SUCCESS)
      << what;
  EXPECT_EQ(got, members[static_cast<size_t>(left)]) << what << ": ring";
  EXPECT_EQ(st.EP_SOURCE, left) << what;
  int s[2] = {me + 1, me * 7 % 5}, res[2] = {-1, -1};
  ASSERT_EQ(EP_Allreduce(s, res, 2, MPI_INT, MPI_SUM, *nc), EP_SUCCESS) << what;
  int e0 = 0, e1 = 0;
  for (int m : members) {
    e0 += m + 1;
    e1 += m * 7 % 5;
  }
  EXPECT_EQ(res[0], e0) << what;
  EXPECT_EQ(res[1], e1) << what;
  // The position in rank order: a rank-ordered scan of ones.
  int one = 1, pos = -1;
  ASSERT_EQ(EP_Scan(&one, &pos, 1, MPI_INT, MPI_SUM, *nc), EP_SUCCESS) << what;
  EXPECT_EQ(pos, r + 1) << what;
  ASSERT_EQ(EP_Barrier(*nc), EP_SUCCESS) << what;
  ASSERT_EQ(EP_Comm_free(nc), EP_SUCCESS) << what;
}

// The parents: the world endpoints communicator split with one key each.
struct Parent {
  const char* name;
  std::function<int(const Layout&, int)> key;
};
const Parent kParents[] = {
    {"grouped", [](const Layout&, int r) { return r; }},
    {"reversed", [](const Layout&, int r) { return -r; }},
    {"interleaved",
     [](const Layout& lay, int r) { return lay.index_of(r) * 100 + lay.proc_of(r); }},
};

// Runs fn(parent, its members, world, me, name) on each parent layout.
void on_parents(const std::function<void(EP_Comm, const std::vector<int>&, EP_Comm, int,
                                         const std::string&)>& fn) {
  const Layout lay = ep_comm_test::uneven_layout();
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = rank_of(world);
    for (const Parent& p : kParents) {
      auto key = [&](int r) { return p.key(lay, r); };
      const std::vector<int> members = expected_split(
          lay.total, [](int) { return 0; }, key, 0);
      EP_Comm parent = EP_COMM_NULL;
      ASSERT_EQ(EP_Comm_split(world, 0, key(me), &parent), EP_SUCCESS);
      fn(parent, members, world, me, p.name);
      ASSERT_EQ(EP_Comm_free(&parent), EP_SUCCESS);
    }
  });
}

std::vector<int> pick(const std::vector<int>& of, const std::vector<int>& ranks) {
  std::vector<int> v;
  for (int r : ranks) v.push_back(of[static_cast<size_t>(r)]);
  return v;
}

// A group of `parent`'s ranks `ranks`, in that order.
EP_Group group_of(EP_Comm parent, const std::vector<int>& ranks) {
  EP_Group g = EP_GROUP_NULL, sub = EP_GROUP_NULL;
  EXPECT_EQ(EP_Comm_group(parent, &g), EP_SUCCESS);
  EXPECT_EQ(EP_Group_incl(g, static_cast<int>(ranks.size()), ranks.data(), &sub), EP_SUCCESS);
  EP_Group_free(&g);
  return sub;
}

TEST(CommCreate, MembersGetGroupOrderOthersGetNull) {
  const Layout lay = ep_comm_test::uneven_layout();
  on_parents([&](EP_Comm parent, const std::vector<int>& members, EP_Comm world, int me,
                 const std::string& name) {
    const int n = static_cast<int>(members.size());
    // Odd ranks reversed, then rank 0; then every rank reversed.
    std::vector<int> odd, all;
    for (int r = n - 1; r >= 0; --r) {
      if (r % 2 == 1) odd.push_back(r);
      all.push_back(r);
    }
    odd.push_back(0);
    for (const auto& ranks : {odd, all}) {
      const std::string what = name + " create of " + std::to_string(ranks.size()) + " ranks";
      EP_Group g = group_of(parent, ranks);
      EP_Comm nc = reinterpret_cast<EP_Comm>(0x1);
      ASSERT_EQ(EP_Comm_create(parent, g, &nc), EP_SUCCESS) << what;
      const std::vector<int> expect = pick(members, ranks);
      if (index_in(expect, me) < 0) {
        EXPECT_EQ(nc, EP_COMM_NULL) << what << ": a non-member";
      } else {
        check_and_free(&nc, world, expect, me, lay, what);
      }
      EP_Group_free(&g);
    }
  });
}

// On an intercommunicator each group passes a subset of its local group; the members get
// the intercommunicator between the two subsets; an empty subset on either side gives
// EP_COMM_NULL everywhere.
TEST(CommCreate, OnAnIntercommunicatorEachGroupPicksItsMembers) {
  const Layout lay = ep_comm_test::uneven_layout();
  std::vector<int> evens, odds;  // the two groups' world endpoints, in local rank order
  for (int r = 0; r < lay.total; ++r) (r % 2 == 0 ? evens : odds).push_back(r);
  // Even side: its local ranks reversed; odd side: its even local ranks.
  auto ranks_of = [&](int side) {
    std::vector<int> v;
    const int k = static_cast<int>((side == 0 ? evens : odds).size());
    for (int r = 0; r < k; ++r) {
      if (side == 0) v.insert(v.begin(), r);
      if (side == 1 && r % 2 == 0) v.push_back(r);
    }
    return v;
  };
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = rank_of(world);
    const int side = me % 2;
    EP_Comm half = EP_COMM_NULL, inter = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, side, me, &half), EP_SUCCESS);
    ASSERT_EQ(EP_Intercomm_create(half, 0, world, side == 0 ? 1 : 0, 4, &inter), EP_SUCCESS);
    const std::vector<int> local = pick(side == 0 ? evens : odds, ranks_of(side));
    const std::vector<int> remote = pick(side == 0 ? odds : evens, ranks_of(1 - side));
    for (int round = 0; round < 2; ++round) {
      const std::string what = "intercomm create, round " + std::to_string(round);
      EP_Group g = group_of(inter, ranks_of(side));
      EP_Comm nc = reinterpret_cast<EP_Comm>(0x1);
      ASSERT_EQ(EP_Comm_create(inter, g, &nc), EP_SUCCESS) << what;
      if (index_in(local, me) < 0) {
        EXPECT_EQ(nc, EP_COMM_NULL) << what << ": a non-member";
      } else {
        ASSERT_NE(nc, EP_COMM_NULL) << what;
        ep_comm_test::check_inter_queries(nc, local, remote, me, what);
        ep_comm_test::check_inter_group(nc, world, local, me, lay.total, what);
        ep_comm_test::check_inter_p2p(nc, local, remote, me, what);
        int sum = -1;
        ASSERT_EQ(EP_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, nc), EP_SUCCESS) << what;
        int expect = 0;
        for (int m : remote) expect += m;
        EXPECT_EQ(sum, expect) << what << ": the remote subset's sum";
        ASSERT_EQ(EP_Barrier(nc), EP_SUCCESS) << what;
        ASSERT_EQ(EP_Comm_free(&nc), EP_SUCCESS) << what;
      }
      EP_Group_free(&g);
    }
    // The odd side's subset empty: nobody gets a communicator.
    EP_Group g = EP_GROUP_EMPTY;
    if (side == 0) g = group_of(inter, ranks_of(0));
    EP_Comm nc = reinterpret_cast<EP_Comm>(0x1);
    ASSERT_EQ(EP_Comm_create(inter, g, &nc), EP_SUCCESS);
    EXPECT_EQ(nc, EP_COMM_NULL) << "the other side's subset is empty";
    EP_Group_free(&g);
    ASSERT_EQ(EP_Barrier(inter), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_free(&inter), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_free(&half), EP_SUCCESS);
  });
}

TEST(CommCreateGroup, DisjointGroupsCreateAtOnceUnderTheirOwnTags) {
  const Layout lay = ep_comm_test::uneven_layout();
  on_parents([&](EP_Comm parent, const std::vector<int>& members, EP_Comm world, int me,
                 const std::string& name) {
    const int n = static_cast<int>(members.size());
    const int my = rank_of(parent);
    // Even ranks in reverse order, odd ranks in order: both groups create at once.
    std::vector<int> even, odd;
    for (int r = n - 1; r >= 0; --r) {
      if (r % 2 == 0) even.push_back(r);
    }
    for (int r = 1; r < n; r += 2) odd.push_back(r);
    const std::vector<int>& mine = my % 2 == 0 ? even : odd;
    EP_Group g = group_of(parent, mine);
    const std::vector<int> expect = pick(members, mine);
    for (int tag : {my % 2 == 0 ? 10 : 11, 12 /* the same tag for both */}) {
      const std::string what = name + " create_group (parity " + std::to_string(my % 2) + ", tag " +
                               std::to_string(tag) + ")";
      EP_Comm nc = EP_COMM_NULL;
      ASSERT_EQ(EP_Comm_create_group(parent, g, tag, &nc), EP_SUCCESS) << what;
      check_and_free(&nc, world, expect, me, lay, what);
    }
    // The same group twice in a row under different tags, both kept alive, then nested:
    // a creation on the communicator the first one made, by its reversed group.
    EP_Comm a = EP_COMM_NULL, b = EP_COMM_NULL, c = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_create_group(parent, g, 20, &a), EP_SUCCESS) << name;
    ASSERT_EQ(EP_Comm_create_group(parent, g, 21, &b), EP_SUCCESS) << name;
    const int k = static_cast<int>(mine.size());
    std::vector<int> rev;
    for (int r = k - 1; r >= 0; --r) rev.push_back(r);
    EP_Group ga = group_of(a, rev);
    ASSERT_EQ(EP_Comm_create_group(a, ga, 0, &c), EP_SUCCESS) << name;
    std::vector<int> expect_rev(expect.rbegin(), expect.rend());
    check_and_free(&c, world, expect_rev, me, lay, name + " nested create_group");
    check_and_free(&b, world, expect, me, lay, name + " second of two (tag 21)");
    check_and_free(&a, world, expect, me, lay, name + " first of two (tag 20)");
    EP_Group_free(&ga);
    EP_Group_free(&g);
    // The whole parent, reversed.
    std::vector<int> all;
    for (int r = n - 1; r >= 0; --r) all.push_back(r);
    EP_Group gall = group_of(parent, all);
    EP_Comm w = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_create_group(parent, gall, 5, &w), EP_SUCCESS) << name;
    check_and_free(&w, world, pick(members, all), me, lay, name + " create_group of all");
    EP_Group_free(&gall);
  });
}

// Disjoint groups create and free communicators again and again while their members
// also exchange user messages on the parent: creation traffic and user traffic never
// match each other, and no creation takes another's messages.
TEST(CommCreateGroup, RepeatedDisjointCreationsBesideUserTrafficOnTheParent) {
  const Layout lay = ep_comm_test::uneven_layout();
  const int rounds = ep_test::scaled(40);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = rank_of(world);
    std::vector<int> mine;
    for (int r = me % 2; r < lay.total; r += 2) mine.push_back(r);
    const int k = static_cast<int>(mine.size());
    const int i = index_in(mine, me);
    EP_Group g = group_of(world, mine);
    for (int round = 0; round < rounds; ++round) {
      const std::string what = "round " + std::to_string(round);
      EP_Comm nc = EP_COMM_NULL;
      ASSERT_EQ(EP_Comm_create_group(world, g, (me % 2) * 1000 + round % 3, &nc), EP_SUCCESS)
          << what;
      const int out[2] = {me, round};
      int in[2] = {-1, -1};
      ASSERT_EQ(
          EP_Sendrecv(out, 2, MPI_INT, mine[static_cast<size_t>((i + 1) % k)], 5, in, 2, MPI_INT,
                      mine[static_cast<size_t>((i + k - 1) % k)], 5, world, EP_STATUS_IGNORE),
          EP_SUCCESS)
          << what;
      EXPECT_EQ(in[0], mine[static_cast<size_t>((i + k - 1) % k)]) << what;
      EXPECT_EQ(in[1], round) << what;
      int sum = -1, rank = -1;
      ASSERT_EQ(EP_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, nc), EP_SUCCESS) << what;
      int expect = 0;
      for (int m : mine) expect += m;
      EXPECT_EQ(sum, expect) << what;
      EXPECT_EQ(EP_Comm_rank(nc, &rank), EP_SUCCESS);
      EXPECT_EQ(rank, i) << what;
      ASSERT_EQ(EP_Barrier(nc), EP_SUCCESS) << what;
      ASSERT_EQ(EP_Comm_free(&nc), EP_SUCCESS) << what;
    }
    EP_Group_free(&g);
  });
}

// Each process's node: the lowest world rank of the processes sharing its memory.
std::vector<int> node_of_process() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int lowest = -1, me = world_rank();
  MPI_Allreduce(&me, &lowest, 1, MPI_INT, MPI_MIN, node);
  MPI_Comm_free(&node);
  std::vector<int> all(static_cast<size_t>(ep_test::world_size()));
  MPI_Allgather(&lowest, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  return all;
}

TEST(CommSplitType, ProcessAndSharedOrderByKeyUndefinedGivesNull) {
  const Layout lay = ep_comm_test::uneven_layout();
  const std::vector<int> node = node_of_process();
  on_parents([&](EP_Comm parent, const std::vector<int>& members, EP_Comm world, int me,
                 const std::string& name) {
    const int n = static_cast<int>(members.size());
    const int my = rank_of(parent);
    auto proc = [&](int r) { return lay.proc_of(members[static_cast<size_t>(r)]); };
    struct Case {
      int type;
      std::function<int(int)> colour, key;
      const char* what;
    } cases[] = {
        {EP_COMM_TYPE_PROCESS, proc, [](int r) { return -r; }, "process, reversed keys"},
        {EP_COMM_TYPE_SHARED, [&](int r) { return node[static_cast<size_t>(proc(r))]; },
         [](int r) { return r % 2; }, "shared, keys with ties"},
    };
    for (const Case& c : cases) {
      const std::string what = name + " split_type " + c.what;
      EP_Comm nc = EP_COMM_NULL;
      ASSERT_EQ(EP_Comm_split_type(parent, c.type, c.key(my), MPI_INFO_NULL, &nc), EP_SUCCESS)
          << what << ": " << last_error(EP_ERR_ARG);
      check_and_free(&nc, world, pick(members, expected_split(n, c.colour, c.key, c.colour(my))),
                     me, lay, what);
    }
    // EP_UNDEFINED at every other rank; the rest split by process.
    EP_Comm nc = reinterpret_cast<EP_Comm>(0x1);
    const int type = my % 2 == 1 ? EP_UNDEFINED : EP_COMM_TYPE_PROCESS;
    ASSERT_EQ(EP_Comm_split_type(parent, type, 0, MPI_INFO_NULL, &nc), EP_SUCCESS) << name;
    if (type == EP_UNDEFINED) {
      EXPECT_EQ(nc, EP_COMM_NULL) << name;
    } else {
      auto colour = [&](int r) { return r % 2 == 1 ? EP_UNDEFINED : proc(r); };
      check_and_free(&nc, world,
                     pick(members, expected_split(
                                       n, colour, [](int) { return 0; }, proc(my))),
                     me, lay, name + " split_type with EP_UNDEFINED");
    }
  });
}

TEST(CommName, EachHandleHasItsOwnNameEmptyByDefaultTruncated) {
  run_endpoints(uneven(world_rank()), [](EP_Comm world, int) {
    const int me = rank_of(world);
    char buf[EP_MAX_OBJECT_NAME];
    int len = -1;
    std::memset(buf, 'x', sizeof(buf));
    ASSERT_EQ(EP_Comm_get_name(world, buf, &len), EP_SUCCESS);
    EXPECT_EQ(len, 0);
    EXPECT_STREQ(buf, "");
    const std::string name = "endpoint " + std::to_string(me);
    ASSERT_EQ(EP_Comm_set_name(world, name.c_str()), EP_SUCCESS);
    ASSERT_EQ(EP_Barrier(world), EP_SUCCESS);  // every endpoint named its own handle
    ASSERT_EQ(EP_Comm_get_name(world, buf, &len), EP_SUCCESS);
    EXPECT_EQ(std::string(buf), name);
    EXPECT_EQ(len, static_cast<int>(name.size()));
    // A dup starts unnamed.
    EP_Comm d = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(world, &d), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_get_name(d, buf, &len), EP_SUCCESS);
    EXPECT_EQ(len, 0);
    // Too long: the first EP_MAX_OBJECT_NAME - 1 characters are kept.
    const std::string longname(EP_MAX_OBJECT_NAME + 20, 'q');
    ASSERT_EQ(EP_Comm_set_name(d, longname.c_str()), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_get_name(d, buf, &len), EP_SUCCESS);
    EXPECT_EQ(len, EP_MAX_OBJECT_NAME - 1);
    EXPECT_EQ(std::string(buf), longname.substr(0, EP_MAX_OBJECT_NAME - 1));
    EXPECT_EQ(EP_Comm_set_name(d, nullptr), EP_ERR_ARG);
    EXPECT_EQ(EP_Comm_get_name(d, nullptr, &len), EP_ERR_ARG);
    EXPECT_EQ(EP_Comm_get_name(d, buf, nullptr), EP_ERR_ARG);
    EXPECT_EQ(EP_Comm_set_name(EP_COMM_NULL, "x"), EP_ERR_COMM);
    EXPECT_EQ(EP_Comm_get_name(EP_COMM_NULL, buf, &len), EP_ERR_COMM);
    ASSERT_EQ(EP_Comm_get_name(world, buf, &len), EP_SUCCESS);
    EXPECT_EQ(std::string(buf), name) << "the dup's name changed the parent's";
    ASSERT_EQ(EP_Comm_free(&d), EP_SUCCESS);
  });
}

TEST(CommCreateErrors, EveryBadArgumentHasItsCodeAndNobodyHangs) {
  run_endpoints(uneven(world_rank()), [](EP_Comm world, int) {
    const int me = rank_of(world);
    EP_Comm half = EP_COMM_NULL, inter = EP_COMM_NULL, nc = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_split(world, me % 2, me, &half), EP_SUCCESS);
    ASSERT_EQ(EP_Intercomm_create(half, 0, world, me % 2 == 0 ? 1 : 0, 3, &inter), EP_SUCCESS);
    EP_Group gw = EP_GROUP_NULL, gh = EP_GROUP_NULL, freed = EP_GROUP_NULL;
    ASSERT_EQ(EP_Comm_group(world, &gw), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_group(half, &gh), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_group(half, &freed), EP_SUCCESS);
    ASSERT_EQ(EP_Group_free(&freed), EP_SUCCESS);
    // Not a subgroup of half: the world group.
    EXPECT_EQ(EP_Comm_create(half, gw, &nc), EP_ERR_GROUP);
    EXPECT_EQ(EP_Comm_create_group(half, gw, 1, &nc), EP_ERR_GROUP);
    EXPECT_NE(last_error(EP_ERR_GROUP).find("EP_Comm_create_group:"), std::string::npos);
    for (EP_Group bad : {freed, reinterpret_cast<EP_Group>(world)}) {
      EXPECT_EQ(EP_Comm_create(half, bad, &nc), EP_ERR_GROUP);
      EXPECT_EQ(EP_Comm_create_group(half, bad, 1, &nc), EP_ERR_GROUP);
    }
    int ub = 0;
    ASSERT_EQ(EP_Comm_tag_ub(half, &ub), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_create_group(half, gh, -1, &nc), EP_ERR_TAG);
    EXPECT_EQ(EP_Comm_create_group(half, gh, ub + 1, &nc), EP_ERR_TAG);
    EXPECT_EQ(EP_Comm_create_group(half, gh, EP_ANY_TAG, &nc), EP_ERR_TAG);
    // A caller outside the group: every world rank but 0 (rank 0 creates alone).
    const int zero = 0;
    EP_Group g0 = EP_GROUP_NULL;
    ASSERT_EQ(EP_Group_incl(gw, 1, &zero, &g0), EP_SUCCESS);
    if (me == 0) {
      ASSERT_EQ(EP_Comm_create_group(world, g0, 9, &nc), EP_SUCCESS);
      int size = -1;
      EXPECT_EQ(EP_Comm_size(nc, &size), EP_SUCCESS);
      EXPECT_EQ(size, 1);
      EXPECT_EQ(EP_Comm_free(&nc), EP_SUCCESS);
    } else {
      EXPECT_EQ(EP_Comm_create_group(world, g0, 9, &nc), EP_ERR_GROUP);
    }
    EXPECT_EQ(EP_Comm_create_group(world, EP_GROUP_EMPTY, 9, &nc), EP_ERR_GROUP);
    // Intercommunicators: refused by create_group and split_type.
    EXPECT_EQ(EP_Comm_create(inter, gw, &nc), EP_ERR_GROUP);  // not the local group's
    EXPECT_EQ(EP_Comm_create_group(inter, gh, 1, &nc), EP_ERR_COMM);
    EXPECT_EQ(EP_Comm_split_type(inter, EP_COMM_TYPE_PROCESS, 0, MPI_INFO_NULL, &nc), EP_ERR_COMM);
    EXPECT_EQ(EP_Comm_create(EP_COMM_NULL, gh, &nc), EP_ERR_COMM);
    EXPECT_EQ(EP_Comm_create_group(EP_COMM_NULL, gh, 1, &nc), EP_ERR_COMM);
    EXPECT_EQ(EP_Comm_split_type(EP_COMM_NULL, EP_COMM_TYPE_PROCESS, 0, MPI_INFO_NULL, &nc),
              EP_ERR_COMM);
    // A bad split type: every endpoint fails.
    EXPECT_EQ(EP_Comm_split_type(half, 12345, 0, MPI_INFO_NULL, &nc), EP_ERR_ARG);
    EXPECT_NE(last_error(EP_ERR_ARG).find("EP_Comm_split_type: split_type 12345"),
              std::string::npos)
        << last_error(EP_ERR_ARG);
    EXPECT_EQ(nc, EP_COMM_NULL) << "a failed call wrote newcomm";
    // NULL newcomm: every participant still takes part, then fails.
    EXPECT_EQ(EP_Comm_create(half, gh, nullptr), EP_ERR_ARG);
    EXPECT_EQ(EP_Comm_create_group(half, gh, 2, nullptr), EP_ERR_ARG);
    EXPECT_EQ(EP_Comm_split_type(half, EP_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, nullptr), EP_ERR_ARG);
    // The parent still works.
    int one = 1, sum = 0, size = 0;
    ASSERT_EQ(EP_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, half), EP_SUCCESS);
    EP_Comm_size(half, &size);
    EXPECT_EQ(sum, size);
    for (EP_Group* g : {&gw, &gh, &g0}) EXPECT_EQ(EP_Group_free(g), EP_SUCCESS);
    ASSERT_EQ(EP_Barrier(world), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&inter), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_free(&half), EP_SUCCESS);
  });
}

}  // namespace
