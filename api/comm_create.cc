// comm_create.cc - the C entry points of communicator creation from groups and by
// type (EP_Comm_create, EP_Comm_create_group, EP_Comm_split_type) and of names
// (EP_Comm_set_name, EP_Comm_get_name).
//
// EP_Comm_create and EP_Comm_split_type are EP_Comm_split with a colour and key each
// endpoint computes (runtime/comm.h), EP_Comm_create on an intercommunicator a split of
// each local group and a swap of the new groups; EP_Comm_create_group is collective over the
// group's members only (runtime/comm_create.cc).  Every check that can fail before
// the exchange depends only on arguments all participants pass alike, so all fail
// together and none waits; a NULL newcomm (one endpoint's own mistake) still takes part
// and fails afterwards, as EP_Comm_split does.  New communicators take the parent
// handle's error handler.
//
// Names belong to one endpoint's handle (each endpoint names its own, as each MPI
// process does); the default is the empty string.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "api/entry.h"
#include "ep/ep.h"
#include "runtime/comm.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers
using ep::runtime::Identity;

// The checks of a group argument on ep's communicator: a valid group whose members
// all belong to the communicator.  *pos is ep's rank in the group (-1: not a member).
int check_subgroup(Endpoint* ep, EP_Group group, const char* call, int* pos) {
  ep_group_s* g = as_group(group);
  if (g == nullptr) return group_error(group, call, "group");
  const std::vector<Identity>& ids = ep->comm->ids;
  const std::vector<Identity>& members = g->g.members;
  *pos = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    if (std::find(ids.begin(), ids.end(), members[i]) == ids.end()) {
      return fail(EP_ERR_GROUP, call, "rank %zu of group is not a member of comm%s", i,
                  ep->comm->inter ? "'s local group" : "");
    }
    if (members[i] == ids[static_cast<size_t>(ep->rank)]) *pos = static_cast<int>(i);
  }
  return EP_SUCCESS;
}

// EP_Comm_split's last step for the calls built on it: a NULL newcomm fails after the
// exchange (freeing what was made); else *newcomm is the result or EP_COMM_NULL.
int split_into(Endpoint* ep, int color, int key, EP_Comm* newcomm, const char* call) {
  Endpoint* n = nullptr;
  int err = ep::runtime::comm_split(ep, color, key, &n);
  if (err == EP_SUCCESS && newcomm == nullptr) {
    if (n != nullptr) ep::runtime::comm_free(n);
    err = fail(EP_ERR_ARG, call, "newcomm is NULL");
  }
  if (err == EP_SUCCESS) *newcomm = n == nullptr ? EP_COMM_NULL : reinterpret_cast<EP_Comm>(n);
  return err;
}

}  // namespace

extern "C" {

int EP_Comm_create(EP_Comm comm, EP_Group group, EP_Comm* newcomm) {
  const char* call = "EP_Comm_create";
  EP_GET_COMM(ep, comm, call);
  int pos = -1;
  int err = check_subgroup(ep, group, call, &pos);
  if (err != EP_SUCCESS) return handle(ep, err);
  if (ep->comm->inter) {  // group: a subset of the local group; the result: an intercomm
    Endpoint* n = nullptr;
    err = ep::runtime::intercomm_create_from_group(ep, as_group(group)->g.members, pos, &n);
    if (err == EP_SUCCESS && newcomm == nullptr) {
      if (n != nullptr) ep::runtime::comm_free(n);
      err = fail(EP_ERR_ARG, call, "newcomm is NULL");
    }
    if (err == EP_SUCCESS) *newcomm = n == nullptr ? EP_COMM_NULL : reinterpret_cast<EP_Comm>(n);
    return handle(ep, err);
  }
  // Members get colour 0 and their group rank as key: the new ranks are group order.
  return handle(ep, split_into(ep, pos >= 0 ? 0 : EP_UNDEFINED, pos, newcomm, call));
}

int EP_Comm_create_group(EP_Comm comm, EP_Group group, int tag, EP_Comm* newcomm) {
  const char* call = "EP_Comm_create_group";
  EP_GET_COMM(ep, comm, call);
  if (ep->comm->inter) {
    return handle(ep, fail(EP_ERR_COMM, call, "comm is an intercommunicator (not supported)"));
  }
  int pos = -1;
  int err = check_subgroup(ep, group, call, &pos);
  if (err != EP_SUCCESS) return handle(ep, err);
  if (tag < 0 || tag > ep->comm->tag_ub) {
    return handle(ep, fail(EP_ERR_TAG, call, "tag %d is not in 0..EP_Comm_tag_ub (%d)", tag,
                           ep->comm->tag_ub));
  }
  if (pos < 0) {
    return handle(ep, fail(EP_ERR_GROUP, call,
                           "the calling endpoint (rank %d of comm) is not a "
                           "member of group",
                           ep->rank));
  }
  Endpoint* n = nullptr;
  err = ep::runtime::comm_create_group(ep, as_group(group)->g.members, tag, &n);
  if (err == EP_SUCCESS && newcomm == nullptr) {
    ep::runtime::comm_free(n);
    err = fail(EP_ERR_ARG, call, "newcomm is NULL");
  }
  if (err == EP_SUCCESS) *newcomm = reinterpret_cast<EP_Comm>(n);
  return handle(ep, err);
}

int EP_Comm_split_type(EP_Comm comm, int split_type, int key, MPI_Info info, EP_Comm* newcomm) {
  (void)info;
  const char* call = "EP_Comm_split_type";
  EP_GET_COMM(ep, comm, call);
  if (ep->comm->inter) {
    return handle(ep, fail(EP_ERR_COMM, call, "comm is an intercommunicator (not supported)"));
  }
  // The colour: the node (its lowest world rank) or the process (its world rank).  An
  // invalid split_type becomes an invalid colour, so every endpoint fails together.
  int color = -1;
  if (split_type == EP_COMM_TYPE_SHARED) color = runtime()->node_id;
  if (split_type == EP_COMM_TYPE_PROCESS) color = runtime()->world_rank;
  if (split_type == EP_UNDEFINED) color = EP_UNDEFINED;
  int err = split_into(ep, color, key, newcomm, call);
  if (err == EP_ERR_ARG && color == -1) {
    err = fail(EP_ERR_ARG, call,
               "split_type %d is not EP_COMM_TYPE_SHARED, EP_COMM_TYPE_PROCESS or EP_UNDEFINED",
               split_type);
  } else if (err == EP_ERR_ARG && newcomm != nullptr) {
    err = fail(EP_ERR_ARG, call, "another endpoint of comm passed an invalid split_type");
  }
  return handle(ep, err);
}

int EP_Comm_set_name(EP_Comm comm, const char* name) {
  EP_GET_COMM(ep, comm, "EP_Comm_set_name");
  if (name == nullptr) return handle(ep, fail(EP_ERR_ARG, "EP_Comm_set_name", "name is NULL"));
  ep->name.assign(name, strnlen(name, EP_MAX_OBJECT_NAME - 1));
  return EP_SUCCESS;
}

int EP_Comm_get_name(EP_Comm comm, char* name, int* resultlen) {
  const char* call = "EP_Comm_get_name";
  EP_GET_COMM(ep, comm, call);
  if (name == nullptr) return handle(ep, fail(EP_ERR_ARG, call, "name is NULL"));
  if (resultlen == nullptr) return handle(ep, fail(EP_ERR_ARG, call, "resultlen is NULL"));
  std::memcpy(name, ep->name.c_str(), ep->name.size() + 1);
  *resultlen = static_cast<int>(ep->name.size());
  return EP_SUCCESS;
}

}  // extern "C"
