/*
 * comm.c - communicator and group management on an endpoints communicator: dup, idup,
 * split (key reverses the ranks), split_type, create from a group, create_group,
 * intercommunicators and their merge, compare, groups (incl, excl, range, union,
 * intersection, difference, translate, compare), names, attributes with copy and delete
 * callbacks, and a user error handler inherited by a duplicate.
 */
#include "harness.h"

static int g_copies, g_deletes; /* attribute callbacks, per process (atomic updates) */

static int copy_fn(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag) {
  (void)comm, (void)keyval, (void)extra;
#pragma omp atomic
  ++g_copies;
  *(void **)out = (char *)in + 1; /* the copy's value tells it from the original */
  *flag = 1;
  return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra) {
  (void)comm, (void)keyval, (void)value, (void)extra;
#pragma omp atomic
  ++g_deletes;
  return MPI_SUCCESS;
}

static int g_keyval;
static MPI_Errhandler g_errh;

static void on_error(MPI_Comm *comm, int *code, ...) {
  (void)comm, (void)code; /* errors.c checks the arguments; here only inheritance */
}

static void body(MPI_Comm c, int thread) {
  (void)thread;
  int r, n, res;
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));

  /* dup: congruent, same ranks, error handler and attributes carried over. */
  OK(MPI_Comm_set_errhandler(c, g_errh));
  OK(MPI_Comm_set_attr(c, g_keyval, (char *)NULL + 100 + r));
  MPI_Comm d;
  OK(MPI_Comm_dup(c, &d));
  OK(MPI_Comm_compare(c, d, &res));
  CHECK(res == MPI_CONGRUENT, "compare(c, dup) = %d", res);
  OK(MPI_Comm_compare(c, c, &res));
  CHECK(res == MPI_IDENT, "compare(c, c) = %d", res);
#ifndef PLAIN_MPI
  OK(MPI_Comm_compare(c, MPI_COMM_WORLD, &res)); /* endpoints against processes */
  CHECK(res == MPI_UNEQUAL, "compare(c, world) = %d", res);
#endif
  int dr;
  OK(MPI_Comm_rank(d, &dr));
  CHECK(dr == r, "dup rank %d", dr);
  MPI_Errhandler eh;
  OK(MPI_Comm_get_errhandler(d, &eh));
  CHECK(eh == g_errh, "dup's error handler");
  OK(MPI_Errhandler_free(&eh));
  void *val = NULL;
  int flag = 0;
  OK(MPI_Comm_get_attr(d, g_keyval, &val, &flag));
  CHECK(flag && val == (char *)NULL + 101 + r, "dup's attribute %p", val);
  int *ub = NULL;
  OK(MPI_Comm_get_attr(d, MPI_TAG_UB, &ub, &flag));
  CHECK(flag && *ub >= 32767, "tag ub");
  OK(MPI_Comm_delete_attr(d, g_keyval));
  OK(MPI_Comm_get_attr(d, g_keyval, &val, &flag));
  CHECK(!flag, "deleted attribute still there");
  OK(MPI_Comm_set_name(d, "the duplicate"));
  char name[MPI_MAX_OBJECT_NAME];
  int len = 0;
  OK(MPI_Comm_get_name(d, name, &len));
  CHECK(strcmp(name, "the duplicate") == 0 && len == 13, "name '%s'", name);
  OK(MPI_Comm_free(&d));
  CHECK(d == MPI_COMM_NULL, "freed dup not null");

  /* idup, used once complete. */
  MPI_Request rq;
  OK(MPI_Comm_idup(c, &d, &rq));
  OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  long s = -1, v = r;
  OK(MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_SUM, d));
  CHECK(s == (long)n * (n - 1) / 2, "allreduce on idup %ld", s);
  OK(MPI_Comm_free(&d));

  /* split by parity, key reversing the order. */
  MPI_Comm half;
  OK(MPI_Comm_split(c, r % 2, n - r, &half));
  int hr, hn;
  OK(MPI_Comm_rank(half, &hr));
  OK(MPI_Comm_size(half, &hn));
  const int mates = (n - r % 2 + 1) / 2;
  CHECK(hn == mates, "half of %d", hn);
  CHECK(hr == (mates - 1) - r / 2, "split rank %d of %d for %d", hr, hn, r);
  MPI_Comm none;
  OK(MPI_Comm_split(c, MPI_UNDEFINED, 0, &none));
  CHECK(none == MPI_COMM_NULL, "MPI_UNDEFINED colour gave a communicator");

  /* split_type: everything runs on this node. */
  MPI_Comm node;
  OK(MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, r, MPI_INFO_NULL, &node));
  OK(MPI_Comm_size(node, &res));
  CHECK(res == n, "node has %d of %d", res, n);
  OK(MPI_Comm_free(&node));

  /* Groups. */
  MPI_Group g, evens, odds, u, x, diff;
  OK(MPI_Comm_group(c, &g));
  OK(MPI_Group_size(g, &res));
  CHECK(res == n, "group size %d", res);
  OK(MPI_Group_rank(g, &res));
  CHECK(res == r, "group rank %d", res);
  int ranges[1][3] = {{0, n - 1, 2}};
  OK(MPI_Group_range_incl(g, 1, ranges, &evens));
  OK(MPI_Group_range_excl(g, 1, ranges, &odds));
  OK(MPI_Group_union(evens, odds, &u));
  OK(MPI_Group_compare(u, g, &res));
  CHECK(res == MPI_SIMILAR || res == MPI_IDENT, "union vs group %d", res);
  OK(MPI_Group_intersection(evens, odds, &x));
  OK(MPI_Group_size(x, &res));
  CHECK(res == 0, "evens and odds meet in %d", res);
  OK(MPI_Group_difference(g, odds, &diff));
  OK(MPI_Group_compare(diff, evens, &res));
  CHECK(res == MPI_IDENT, "group minus odds vs evens %d", res);
  int zero = 0, back = -1;
  OK(MPI_Group_translate_ranks(evens, 1, &zero, g, &back));
  CHECK(back == 0, "evens' rank 0 is %d", back);
  int excl_one = 0;
  MPI_Group rest;
  OK(MPI_Group_excl(g, 1, &excl_one, &rest));
  OK(MPI_Group_size(rest, &res));
  CHECK(res == n - 1, "excl size %d", res);

  /* create (collective over c) and create_group (over the odd ranks only). */
  MPI_Comm ec;
  OK(MPI_Comm_create(c, evens, &ec));
  if (r % 2 == 0) {
    OK(MPI_Comm_rank(ec, &res));
    CHECK(res == r / 2, "create rank %d", res);
    OK(MPI_Barrier(ec));
    OK(MPI_Comm_free(&ec));
  } else {
    CHECK(ec == MPI_COMM_NULL, "non-member got a communicator");
    MPI_Comm oc;
    OK(MPI_Comm_create_group(c, odds, 9, &oc));
    OK(MPI_Comm_rank(oc, &res));
    CHECK(res == r / 2, "create_group rank %d", res);
    OK(MPI_Comm_free(&oc));
  }

  /* Intercommunicator between the two halves (2 endpoints or more), merged back. */
  if (n >= 2) {
    MPI_Comm inter, merged;
    /* Each half's leader (its rank 0) is its highest rank in c (key n - r). */
    const int top_even = (n - 1) % 2 == 0 ? n - 1 : n - 2, top_odd = (n - 1) % 2 ? n - 1 : n - 2;
    OK(MPI_Intercomm_create(half, 0, c, r % 2 == 0 ? top_odd : top_even, 17, &inter));
    int is_inter = 0, rsize = 0;
    OK(MPI_Comm_test_inter(inter, &is_inter));
    OK(MPI_Comm_remote_size(inter, &rsize));
    CHECK(is_inter && rsize == n - mates, "inter %d remote %d", is_inter, rsize);
    long mine = r, theirs = -1;
    OK(MPI_Allreduce(&mine, &theirs, 1, MPI_LONG, MPI_SUM, inter));
    long other = 0;
    for (int i = 0; i < n; ++i)
      if (i % 2 != r % 2) other += i;
    CHECK(theirs == other, "intercomm allreduce %ld, want %ld", theirs, other);
    OK(MPI_Intercomm_merge(inter, r % 2, &merged));
    OK(MPI_Comm_size(merged, &res));
    CHECK(res == n, "merged size %d", res);
    OK(MPI_Comm_rank(merged, &res));
    CHECK(res == (r % 2 == 0 ? 0 : (n + 1) / 2) + hr, "merged rank %d", res);
    OK(MPI_Comm_free(&merged));
    OK(MPI_Comm_free(&inter));
  }
  OK(MPI_Comm_free(&half));
  MPI_Group *gs[] = {&g, &evens, &odds, &u, &x, &diff, &rest};
  for (int i = 0; i < 7; ++i) OK(MPI_Group_free(gs[i]));
  CHECK(g == MPI_GROUP_NULL, "freed group not null");
  OK(MPI_Comm_delete_attr(c, g_keyval));
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &g_keyval, NULL));
  OK(MPI_Comm_create_errhandler(on_error, &g_errh));
  const int nt = my_threads();
  MPI_Comm comms[3];
  make_comms(nt, comms);
  run_threads(nt, comms, body);
  /* Every thread: a copy for dup and one for idup, their deletes and its own value's. */
  CHECK(g_copies == 2 * nt && g_deletes == 3 * nt, "copies %d deletes %d", g_copies, g_deletes);
  for (int i = 0; i < nt; ++i) OK(MPI_Comm_free(&comms[i]));
  OK(MPI_Comm_free_keyval(&g_keyval));
  OK(MPI_Errhandler_free(&g_errh));
  pass("comm");
  return 0;
}
