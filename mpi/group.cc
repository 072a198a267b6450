// group.cc - the group calls.  A group of libep (from an endpoints communicator or
// window) holds endpoint ranks; MPI_GROUP_EMPTY is the empty group of both libraries.
// Two groups of different libraries combine only when one is empty; otherwise the call
// is MPI_ERR_GROUP (compare answers MPI_UNEQUAL).  Groups belong to no communicator:
// errors go to MPI_COMM_WORLD's error handler, as MPICH's do.
#include <mpi.h>

#include "ep/ep.h"
#include "mpi/layer.h"

using ep::mpi::is_kind;
using ep::mpi::Kind;

namespace ep::mpi {
namespace {

bool is_group(MPI_Group g) { return is_kind<Kind::kGroup>(g); }

// libep's group for g, or false (raised) when g is neither libep's nor empty.
bool lookup(MPI_Group g, EP_Group* out, const char* call, int* err) {
  if (g == MPI_GROUP_EMPTY) {
    *out = EP_GROUP_EMPTY;
    return true;
  }
  if (is_group(g)) *out = group_of(g);
  if (!is_group(g) || *out == EP_GROUP_NULL) {
    *err = raise_plain(MPI_COMM_WORLD, MPI_ERR_GROUP, call,
                       is_group(g) ? "group %#x names no libep group (freed?)"
                                   : "group %#x is a group of MPI processes, not of endpoints",
                       static_cast<unsigned>(g));
    return false;
  }
  return true;
}

int result(int rc, EP_Group g, MPI_Group* out, const char* call) {
  if (rc != EP_SUCCESS) return raise_plain_ep(MPI_COMM_WORLD, rc, call);
  const int mrc = make_group(g, out);
  if (mrc != MPI_SUCCESS) return raise_plain(MPI_COMM_WORLD, mrc, call, "too many group handles");
  return MPI_SUCCESS;
}

int pair_op(MPI_Group a, MPI_Group b, MPI_Group* out, const char* call,
            int (*op)(EP_Group, EP_Group, EP_Group*)) {
  int err;
  EP_Group ea, eb;
  if (!lookup(a, &ea, call, &err) || !lookup(b, &eb, call, &err)) return err;
  if (out == nullptr) return raise_plain(MPI_COMM_WORLD, MPI_ERR_ARG, call, "newgroup is NULL");
  EP_Group n = EP_GROUP_NULL;
  const int rc = op(ea, eb, &n);
  return result(rc, n, out, call);
}

}  // namespace
}  // namespace ep::mpi

using namespace ep::mpi;  // NOLINT(build/namespaces): the helpers of this layer

extern "C" {

int MPI_Group_size(MPI_Group group, int* size) {
  if (!is_group(group)) return PMPI_Group_size(group, size);
  int err;
  EP_Group g;
  if (!lookup(group, &g, "MPI_Group_size", &err)) return err;
  const int rc = EP_Group_size(g, size);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise_plain_ep(MPI_COMM_WORLD, rc, "MPI_Group_size");
}

int MPI_Group_rank(MPI_Group group, int* rank) {
  if (!is_group(group)) return PMPI_Group_rank(group, rank);
  int err;
  EP_Group g;
  if (!lookup(group, &g, "MPI_Group_rank", &err)) return err;
  const int rc = EP_Group_rank(g, rank);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise_plain_ep(MPI_COMM_WORLD, rc, "MPI_Group_rank");
}

int MPI_Group_free(MPI_Group* group) {
  if (group == nullptr || !is_group(*group)) return PMPI_Group_free(group);
  int err;
  EP_Group g;
  if (!lookup(*group, &g, "MPI_Group_free", &err)) return err;
  const int rc = EP_Group_free(&g);
  if (rc != EP_SUCCESS) return raise_plain_ep(MPI_COMM_WORLD, rc, "MPI_Group_free");
  table(Kind::kGroup).release(*group);
  *group = MPI_GROUP_NULL;
  return MPI_SUCCESS;
}

int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
                              int ranks2[]) {
  const char* call = "MPI_Group_translate_ranks";
  if (!is_group(group1) && !is_group(group2)) {
    return PMPI_Group_translate_ranks(group1, n, ranks1, group2, ranks2);
  }
  int err;
  EP_Group a, b;
  if (!lookup(group1, &a, call, &err) || !lookup(group2, &b, call, &err)) return err;
  const int rc = EP_Group_translate_ranks(a, n, ranks1, b, ranks2);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise_plain_ep(MPI_COMM_WORLD, rc, call);
}

int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int* result) {
  const char* call = "MPI_Group_compare";
  if (!is_group(group1) && !is_group(group2)) return PMPI_Group_compare(group1, group2, result);
  if (result == nullptr) return raise_plain(MPI_COMM_WORLD, MPI_ERR_ARG, call, "result is NULL");
  // An MPI group against a libep group: different members (unless both are empty).
  const bool mixed = is_group(group1) != is_group(group2) &&
                     (is_group(group1) ? group2 : group1) != MPI_GROUP_EMPTY;
  int err;
  EP_Group a = EP_GROUP_EMPTY, b = EP_GROUP_EMPTY;
  if (is_group(group1) && !lookup(group1, &a, call, &err)) return err;
  if (is_group(group2) && !lookup(group2, &b, call, &err)) return err;
  if (mixed) {
    int size = 0;
    const int prc = PMPI_Group_size(is_group(group1) ? group2 : group1, &size);
    if (prc != MPI_SUCCESS) return prc;
    *result = MPI_UNEQUAL;
    return MPI_SUCCESS;
  }
  const int rc = EP_Group_compare(a, b, result);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise_plain_ep(MPI_COMM_WORLD, rc, call);
}

int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
  if (!is_group(group1) && !is_group(group2)) return PMPI_Group_union(group1, group2, newgroup);
  return pair_op(group1, group2, newgroup, "MPI_Group_union", EP_Group_union);
}

int MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
  if (!is_group(group1) && !is_group(group2)) {
    return PMPI_Group_intersection(group1, group2, newgroup);
  }
  return pair_op(group1, group2, newgroup, "MPI_Group_intersection", EP_Group_intersection);
}

int MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
  if (!is_group(group1) && !is_group(group2)) {
    return PMPI_Group_difference(group1, group2, newgroup);
  }
  return pair_op(group1, group2, newgroup, "MPI_Group_difference", EP_Group_difference);
}

int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup) {
  if (!is_group(group)) return PMPI_Group_incl(group, n, ranks, newgroup);
  int err;
  EP_Group g, out = EP_GROUP_NULL;
  if (!lookup(group, &g, "MPI_Group_incl", &err)) return err;
  if (newgroup == nullptr) {
    return raise_plain(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_incl", "newgroup is NULL");
  }
  const int rc = EP_Group_incl(g, n, ranks, &out);
  return result(rc, out, newgroup, "MPI_Group_incl");
}

int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup) {
  if (!is_group(group)) return PMPI_Group_excl(group, n, ranks, newgroup);
  int err;
  EP_Group g, out = EP_GROUP_NULL;
  if (!lookup(group, &g, "MPI_Group_excl", &err)) return err;
  if (newgroup == nullptr) {
    return raise_plain(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_excl", "newgroup is NULL");
  }
  const int rc = EP_Group_excl(g, n, ranks, &out);
  return result(rc, out, newgroup, "MPI_Group_excl");
}

int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup) {
  if (!is_group(group)) return PMPI_Group_range_incl(group, n, ranges, newgroup);
  int err;
  EP_Group g, out = EP_GROUP_NULL;
  if (!lookup(group, &g, "MPI_Group_range_incl", &err)) return err;
  if (newgroup == nullptr) {
    return raise_plain(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_range_incl", "newgroup is NULL");
  }
  const int rc = EP_Group_range_incl(g, n, ranges, &out);
  return result(rc, out, newgroup, "MPI_Group_range_incl");
}

int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup) {
  if (!is_group(group)) return PMPI_Group_range_excl(group, n, ranges, newgroup);
  int err;
  EP_Group g, out = EP_GROUP_NULL;
  if (!lookup(group, &g, "MPI_Group_range_excl", &err)) return err;
  if (newgroup == nullptr) {
    return raise_plain(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_range_excl", "newgroup is NULL");
  }
  const int rc = EP_Group_range_excl(g, n, ranges, &out);
  return result(rc, out, newgroup, "MPI_Group_range_excl");
}

}  // extern "C"
