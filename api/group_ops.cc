// group_ops.cc - the C entry points that build groups from groups (MPI 3.1 section
// 6.3.2): incl, excl, range_incl, range_excl, union, intersection, difference, and
// EP_Group_compare.
//
// Groups hold member identities (runtime/comm.h), so these calls are pure set and
// sequence operations on them; they take no endpoint and are thread-safe (groups are
// process objects, never written after their creation).  A new group keeps `self` of
// its first input that has one (group1's for the two-group calls), so EP_Group_rank
// answers for the endpoint that produced the inputs (API.md, Clarifications).  An
// empty result is EP_GROUP_EMPTY (nothing allocated); any other result is a new group
// the caller frees with EP_Group_free.
//
// Errors: a null or invalid group EP_ERR_GROUP; a negative n EP_ERR_COUNT; a NULL
// array or output pointer EP_ERR_ARG; a rank outside the group, or a rank named twice
// (by ranks[] or by the ranges together), EP_ERR_RANK; a range with stride 0, or whose
// stride leads away from its last rank, EP_ERR_ARG.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "api/entry.h"
#include "ep/ep.h"
#include "runtime/comm.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers
using ep::runtime::Group;
using ep::runtime::Identity;

using IdKey = std::pair<uint64_t, int>;
IdKey key_of(const Identity& id) { return {id.origin, id.rank}; }

// Positions of a group's members by identity.
std::map<IdKey, int> index_of(const std::vector<Identity>& members) {
  std::map<IdKey, int> idx;
  for (size_t i = 0; i < members.size(); ++i) idx.emplace(key_of(members[i]), static_cast<int>(i));
  return idx;
}

// A group of `members` that answers for `from`'s self (or, if it has none, `alt`'s).
EP_Group make_group(std::vector<Identity> members, const Group& from, const Group* alt) {
  if (members.empty()) return EP_GROUP_EMPTY;
  auto* g = new ep_group_s;
  const Group* src = from.has_self ? &from : (alt != nullptr && alt->has_self ? alt : nullptr);
  if (src != nullptr) {
    g->g.has_self = true;
    g->g.self = src->self;
    for (size_t i = 0; i < members.size(); ++i) {
      if (members[i] == src->self) g->g.my_rank = static_cast<int>(i);
    }
  }
  g->g.members = std::move(members);
  return g;
}

// Checks a rank list against a group of `size`: every rank in range, none twice.
int check_ranks(const char* call, int size, int n, const int ranks[]) {
  std::vector<char> seen(static_cast<size_t>(size), 0);
  for (int i = 0; i < n; ++i) {
    const int r = ranks[i];
    if (r < 0 || r >= size) {
      return fail(EP_ERR_RANK, call, "ranks[%d] = %d is not a rank of group (size %d)", i, r, size);
    }
    if (seen[static_cast<size_t>(r)]++) {
      return fail(EP_ERR_RANK, call, "ranks[%d] = %d names a rank a second time", i, r);
    }
  }
  return EP_SUCCESS;
}

// The ranks `ranges` name, in order (first, first + stride, ... up to last).  Each is
// checked while it is produced, so the work is bounded by the group's size.
int expand_ranges(const char* call, int size, int n, int ranges[][3], std::vector<int>* out) {
  std::vector<char> seen(static_cast<size_t>(size), 0);
  for (int i = 0; i < n; ++i) {
    const int64_t first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
    if (stride == 0) return fail(EP_ERR_ARG, call, "ranges[%d] has stride 0", i);
    if ((stride > 0 && first > last) || (stride < 0 && first < last)) {
      return fail(EP_ERR_ARG, call,
                  "ranges[%d] = (%lld, %lld, %lld): the stride leads away from the last rank", i,
                  static_cast<long long>(first), static_cast<long long>(last),
                  static_cast<long long>(stride));
    }
    for (int64_t r = first; stride > 0 ? r <= last : r >= last; r += stride) {
      if (r < 0 || r >= size) {
        return fail(EP_ERR_RANK, call, "ranges[%d] names rank %lld, not a rank of group (size %d)",
                    i, static_cast<long long>(r), size);
      }
      if (seen[static_cast<size_t>(r)]++) {
        return fail(EP_ERR_RANK, call, "ranges[%d] names rank %lld a second time", i,
                    static_cast<long long>(r));
      }
      out->push_back(static_cast<int>(r));
    }
  }
  return EP_SUCCESS;
}

// The checks every one-group call makes first; *g is the group's object.
int check_one(const char* call, EP_Group group, int n, const void* arr, const char* arr_name,
              EP_Group* newgroup, ep_group_s** g) {
  EP_CHECK_INIT(call);
  *g = as_group(group);
  if (*g == nullptr) return group_error(group, call, "group");
  if (n < 0) return fail(EP_ERR_COUNT, call, "n %d is negative", n);
  if (n > 0 && arr == nullptr) return fail(EP_ERR_ARG, call, "%s is NULL but n is %d", arr_name, n);
  if (newgroup == nullptr) return fail(EP_ERR_ARG, call, "newgroup is NULL");
  return EP_SUCCESS;
}

// The members at `ranks`, in that order.
std::vector<Identity> pick(const Group& g, const std::vector<int>& ranks) {
  std::vector<Identity> v;
  v.reserve(ranks.size());
  for (int r : ranks) v.push_back(g.members[static_cast<size_t>(r)]);
  return v;
}

// The members not at `ranks`, in group order.
std::vector<Identity> drop(const Group& g, const std::vector<int>& ranks) {
  std::vector<char> gone(g.members.size(), 0);
  for (int r : ranks) gone[static_cast<size_t>(r)] = 1;
  std::vector<Identity> v;
  for (size_t i = 0; i < g.members.size(); ++i) {
    if (!gone[i]) v.push_back(g.members[i]);
  }
  return v;
}

// The checks of the two-group calls; *a and *b are the groups' objects.
int check_two(const char* call, EP_Group group1, EP_Group group2, const void* out,
              const char* out_name, ep_group_s** a, ep_group_s** b) {
  EP_CHECK_INIT(call);
  *a = as_group(group1);
  *b = as_group(group2);
  if (*a == nullptr) return group_error(group1, call, "group1");
  if (*b == nullptr) return group_error(group2, call, "group2");
  if (out == nullptr) return fail(EP_ERR_ARG, call, "%s is NULL", out_name);
  return EP_SUCCESS;
}

// Members of `from` that are (keep_in) or are not (!keep_in) in `other`, in `from`'s order.
std::vector<Identity> filter(const Group& from, const Group& other, bool keep_in) {
  const std::map<IdKey, int> idx = index_of(other.members);
  std::vector<Identity> v;
  for (const Identity& id : from.members) {
    if ((idx.count(key_of(id)) != 0) == keep_in) v.push_back(id);
  }
  return v;
}

// The incl/excl family: the ranks listed (`ranks`, or the triplets of `ranges` when it is
// not null), checked; the new group holds the members at those ranks in list order
// (keep) or the other members in group order.
int subset(const char* call, EP_Group group, int n, const int ranks[], int ranges[][3],
           bool keep, EP_Group* newgroup) {
  ep_group_s* g = nullptr;
  int err = ranges != nullptr ? check_one(call, group, n, ranges, "ranges", newgroup, &g)
                              : check_one(call, group, n, ranks, "ranks", newgroup, &g);
  if (err != EP_SUCCESS) return err;
  const int size = static_cast<int>(g->g.members.size());
  std::vector<int> list;
  if (ranges != nullptr) {
    err = expand_ranges(call, size, n, ranges, &list);
  } else {
    err = check_ranks(call, size, n, ranks);
    if (err == EP_SUCCESS) list.assign(ranks, ranks + n);
  }
  if (err != EP_SUCCESS) return err;
  *newgroup = make_group(keep ? pick(g->g, list) : drop(g->g, list), g->g, nullptr);
  return EP_SUCCESS;
}

}  // namespace

extern "C" {

int EP_Group_incl(EP_Group group, int n, const int ranks[], EP_Group* newgroup) {
  return subset("EP_Group_incl", group, n, ranks, nullptr, true, newgroup);
}

int EP_Group_excl(EP_Group group, int n, const int ranks[], EP_Group* newgroup) {
  return subset("EP_Group_excl", group, n, ranks, nullptr, false, newgroup);
}

int EP_Group_range_incl(EP_Group group, int n, int ranges[][3], EP_Group* newgroup) {
  return subset("EP_Group_range_incl", group, n, nullptr, ranges, true, newgroup);
}

int EP_Group_range_excl(EP_Group group, int n, int ranges[][3], EP_Group* newgroup) {
  return subset("EP_Group_range_excl", group, n, nullptr, ranges, false, newgroup);
}

// group1's members in order, then group2's that are not in group1, in group2's order.
int EP_Group_union(EP_Group group1, EP_Group group2, EP_Group* newgroup) {
  ep_group_s *a = nullptr, *b = nullptr;
  int err = check_two("EP_Group_union", group1, group2, newgroup, "newgroup", &a, &b);
  if (err != EP_SUCCESS) return err;
  std::vector<Identity> v = a->g.members;
  for (const Identity& id : filter(b->g, a->g, false)) v.push_back(id);
  *newgroup = make_group(std::move(v), a->g, &b->g);
  return EP_SUCCESS;
}

// group1's members that are in group2, in group1's order.
int EP_Group_intersection(EP_Group group1, EP_Group group2, EP_Group* newgroup) {
  ep_group_s *a = nullptr, *b = nullptr;
  int err = check_two("EP_Group_intersection", group1, group2, newgroup, "newgroup", &a, &b);
  if (err != EP_SUCCESS) return err;
  *newgroup = make_group(filter(a->g, b->g, true), a->g, &b->g);
  return EP_SUCCESS;
}

// group1's members that are not in group2, in group1's order.
int EP_Group_difference(EP_Group group1, EP_Group group2, EP_Group* newgroup) {
  ep_group_s *a = nullptr, *b = nullptr;
  int err = check_two("EP_Group_difference", group1, group2, newgroup, "newgroup", &a, &b);
  if (err != EP_SUCCESS) return err;
  *newgroup = make_group(filter(a->g, b->g, false), a->g, &b->g);
  return EP_SUCCESS;
}

// EP_IDENT: the same members in the same order; EP_SIMILAR: the same members in another
// order; EP_UNEQUAL otherwise.
int EP_Group_compare(EP_Group group1, EP_Group group2, int* result) {
  ep_group_s *a = nullptr, *b = nullptr;
  int err = check_two("EP_Group_compare", group1, group2, result, "result", &a, &b);
  if (err != EP_SUCCESS) return err;
  const std::vector<Identity>& p = a->g.members;
  const std::vector<Identity>& q = b->g.members;
  if (p == q) {
    *result = EP_IDENT;
  } else if (p.size() == q.size() && filter(a->g, b->g, true).size() == p.size()) {
    *result = EP_SIMILAR;
  } else {
    *result = EP_UNEQUAL;
  }
  return EP_SUCCESS;
}

}  // extern "C"
