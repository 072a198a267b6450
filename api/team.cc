// team.cc - the C entry points of helper teams (MPI 12.4.4 draft); the team itself and
// how its waiting members help is runtime/team.h.
#include "runtime/team.h"

#include <strings.h>

#include <cstring>

#include "api/entry.h"
#include "base/mpi_calls.h"
#include "ep/ep.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers
using ep::runtime::Team;

Team* as_team(EP_Team t) {
  auto* team = reinterpret_cast<Team*>(t);
  return (plausible_handle(team) && team->magic == Team::kMagic) ? team : nullptr;
}

#define EP_GET_TEAM(team, handle, call)                                                 \
  EP_CHECK_INIT(call);                                                                  \
  Team* team = as_team(handle);                                                         \
  if (team == nullptr) {                                                                \
    return fail(EP_ERR_TEAM, call, "team is %s",                                        \
                (handle) == EP_TEAM_NULL ? "EP_TEAM_NULL" : "not a valid team handle"); \
  }

// The "balanced" info key: "true" (any case) promises that every member leaves.
int read_balanced(MPI_Info info, bool* balanced, const char* call) {
  *balanced = false;
  if (info == MPI_INFO_NULL) return EP_SUCCESS;
  char value[16] = {0};
  int flag = 0;
  if (EP_MPI(MPI_Info_get(info, "balanced", static_cast<int>(sizeof(value)) - 1, value, &flag)) !=
      MPI_SUCCESS) {
    return fail(EP_ERR_ARG, call, "info is not a valid MPI_Info");
  }
  *balanced = flag != 0 && strcasecmp(value, "true") == 0;
  return EP_SUCCESS;
}

}  // namespace

extern "C" {

int EP_Team_create(int maxsize, MPI_Info info, EP_Team* team) {
  const char* call = "EP_Team_create";
  EP_CHECK_INIT(call);
  if (team == nullptr) return fail(EP_ERR_ARG, call, "team is NULL");
  if (maxsize < 1) return fail(EP_ERR_ARG, call, "maxsize %d is below 1", maxsize);
  bool balanced = false;
  int err = read_balanced(info, &balanced, call);
  if (err != EP_SUCCESS) return err;
  *team = reinterpret_cast<EP_Team>(new Team(maxsize, balanced));
  return EP_SUCCESS;
}

int EP_Team_free(EP_Team* team) {
  const char* call = "EP_Team_free";
  EP_CHECK_INIT(call);
  if (team == nullptr) return fail(EP_ERR_ARG, call, "team is NULL");
  EP_GET_TEAM(t, *team, call);
  int err = t->release_handle(call);
  if (err == EP_SUCCESS) *team = EP_TEAM_NULL;
  return err;
}

int EP_Team_join(int teamsize, EP_Team team) {
  EP_GET_TEAM(t, team, "EP_Team_join");
  return t->join(teamsize, "EP_Team_join");
}

int EP_Team_leave(EP_Team team) {
  EP_GET_TEAM(t, team, "EP_Team_leave");
  return t->leave("EP_Team_leave");
}

int EP_Team_sync(EP_Team team) {
  EP_GET_TEAM(t, team, "EP_Team_sync");
  return t->sync("EP_Team_sync");
}

int EP_Team_break(EP_Team team) {
  EP_GET_TEAM(t, team, "EP_Team_break");
  return t->brk("EP_Team_break");
}

}  // extern "C"
