// group.cc - the C entry points of groups: EP_Comm_group and the EP_Group_* calls.
//
// A group (ep_group_s, api/entry.h) is a copy of a communicator's member identities
// ({origin, rank}, fixed when EP_Comm_create_endpoints made each endpoint: see
// runtime/comm.h) and the caller's rank among them; groups compare and translate by
// identity.  Owned by the caller from EP_Comm_group until EP_Group_free.  EP_GROUP_EMPTY
// is a predefined group (api/entry.h: as_group accepts it) that EP_Group_free never
// deletes.  The calls that build groups from groups are in group_ops.cc.
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/entry.h"
#include "ep/ep.h"
#include "runtime/comm.h"

namespace {
using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers
}  // namespace

extern "C" {

int EP_Comm_group(EP_Comm comm, EP_Group* group) {
  EP_GET_COMM(ep, comm, "EP_Comm_group");
  if (group == nullptr) return handle(ep, fail(EP_ERR_ARG, "EP_Comm_group", "group is NULL"));
  auto* g = new ep_group_s;
  g->g.members = ep->comm->ids;
  g->g.my_rank = ep->rank;
  g->g.has_self = true;
  g->g.self = ep->comm->ids[ep->rank];
  *group = g;
  return EP_SUCCESS;
}

int EP_Group_size(EP_Group group, int* size) {
  EP_CHECK_INIT("EP_Group_size");
  ep_group_s* g = as_group(group);
  if (g == nullptr) return group_error(group, "EP_Group_size", "group");
  if (size == nullptr) return fail(EP_ERR_ARG, "EP_Group_size", "size is NULL");
  *size = static_cast<int>(g->g.members.size());
  return EP_SUCCESS;
}

int EP_Group_rank(EP_Group group, int* rank) {
  EP_CHECK_INIT("EP_Group_rank");
  ep_group_s* g = as_group(group);
  if (g == nullptr) return group_error(group, "EP_Group_rank", "group");
  if (rank == nullptr) return fail(EP_ERR_ARG, "EP_Group_rank", "rank is NULL");
  *rank = g->g.my_rank;
  return EP_SUCCESS;
}

int EP_Group_free(EP_Group* group) {
  EP_CHECK_INIT("EP_Group_free");
  if (group == nullptr) return fail(EP_ERR_ARG, "EP_Group_free", "group is NULL");
  if (*group == EP_GROUP_EMPTY) {  // predefined: nothing to free
    *group = EP_GROUP_NULL;
    return EP_SUCCESS;
  }
  ep_group_s* g = as_group(*group);
  if (g == nullptr) return group_error(*group, "EP_Group_free", "group");
  g->magic = 0;
  delete g;
  *group = EP_GROUP_NULL;
  return EP_SUCCESS;
}

int EP_Group_translate_ranks(EP_Group group1, int n, const int ranks1[], EP_Group group2,
                             int ranks2[]) {
  const char* call = "EP_Group_translate_ranks";
  EP_CHECK_INIT(call);
  if (as_group(group1) == nullptr) return group_error(group1, call, "group1");
  if (as_group(group2) == nullptr) return group_error(group2, call, "group2");
  if (n < 0) return fail(EP_ERR_COUNT, call, "n %d is negative", n);
  if (n > 0 && (ranks1 == nullptr || ranks2 == nullptr)) {
    return fail(EP_ERR_ARG, call, "ranks1 or ranks2 is NULL");
  }
  const auto& m1 = as_group(group1)->g.members;
  const auto& m2 = as_group(group2)->g.members;
  for (int i = 0; i < n; ++i) {
    int r = ranks1[i];
    if (r != EP_PROC_NULL && (r < 0 || r >= static_cast<int>(m1.size()))) {
      return fail(EP_ERR_RANK, call, "ranks1[%d] = %d is not a rank of group1 (size %zu)", i, r,
                  m1.size());
    }
  }
  std::unordered_map<uint64_t, std::vector<std::pair<int, int>>> index;  // origin -> (rank, pos)
  for (size_t j = 0; j < m2.size(); ++j) {
    index[m2[j].origin].push_back({m2[j].rank, static_cast<int>(j)});
  }
  for (int i = 0; i < n; ++i) {
    int r = ranks1[i];
    if (r == EP_PROC_NULL) {
      ranks2[i] = EP_PROC_NULL;
      continue;
    }
    ranks2[i] = EP_UNDEFINED;
    auto it = index.find(m1[r].origin);
    if (it == index.end()) continue;
    for (auto [orank, pos] : it->second) {
      if (orank == m1[r].rank) ranks2[i] = pos;
    }
  }
  return EP_SUCCESS;
}

}  // extern "C"
