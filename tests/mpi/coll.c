/*
 * coll.c - every collective, blocking and nonblocking, on an endpoints communicator:
 * values checked against formulas of the ranks; MPI_IN_PLACE, MPI_MAXLOC on MPI_2INT, a
 * user-defined non-commutative op, v- and w-variants; nonblocking ones completed by
 * MPI_Waitall, an MPI_Test loop and MPI_Waitsome.
 */
#include "harness.h"

enum { K = 3 };

/* Non-commutative and associative: digit strings (value, 10^length) concatenated, so
 * the result spells the ranks in the order the reduction combined them. */
static void ordered(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  long *a = in, *b = inout;
  for (int i = 0; i < *len; ++i) {
    b[2 * i] = a[2 * i] * b[2 * i + 1] + b[2 * i];
    b[2 * i + 1] = a[2 * i + 1] * b[2 * i + 1];
  }
}

static MPI_Op g_ordered;
static MPI_Datatype g_digits;

static long ordered_expect(int n) {
  long x = 0;
  for (int k = 0; k < n; ++k) x = 10 * x + k;
  return x;
}

static void blocking(MPI_Comm c, int r, int n) {
  const long sum = (long)n * (n - 1) / 2;
  OK(MPI_Barrier(c));
  int b[K] = {0};
  const int root = n - 1;
  if (r == root)
    for (int i = 0; i < K; ++i) b[i] = 7 * i + root;
  OK(MPI_Bcast(b, K, MPI_INT, root, c));
  CHECK(b[K - 1] == 7 * (K - 1) + root, "bcast %d", b[K - 1]);

  long v = r, s = -1;
  OK(MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_SUM, c));
  CHECK(s == sum, "allreduce %ld", s);
  s = r;
  OK(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_LONG, MPI_MAX, c));
  CHECK(s == n - 1, "allreduce in place %ld", s);
  struct {
    int v, rank;
  } in = {(r * 7) % n, r}, out;
  OK(MPI_Allreduce(&in, &out, 1, MPI_2INT, MPI_MAXLOC, c));
  CHECK(out.v == n - 1 || n == 1, "maxloc %d at %d", out.v, out.rank);
  long digit[2] = {r, 10}, o[2] = {-1, -1};
  OK(MPI_Reduce(digit, o, 1, g_digits, g_ordered, 0, c));
  if (r == 0) {
    CHECK(o[0] == ordered_expect(n), "ordered reduce %ld, want %ld", o[0], ordered_expect(n));
  }

  int *all = malloc(sizeof(int) * (size_t)n * K), mine[K];
  for (int i = 0; i < K; ++i) mine[i] = r * K + i;
  OK(MPI_Gather(mine, K, MPI_INT, all, K, MPI_INT, 0, c));
  if (r == 0)
    for (int i = 0; i < n * K; ++i) CHECK(all[i] == i, "gather [%d] = %d", i, all[i]);
  OK(MPI_Allgather(mine, K, MPI_INT, all, K, MPI_INT, c));
  for (int i = 0; i < n * K; ++i) CHECK(all[i] == i, "allgather [%d] = %d", i, all[i]);
  int got[K];
  OK(MPI_Scatter(all, K, MPI_INT, got, K, MPI_INT, n - 1, c));
  CHECK(got[0] == r * K, "scatter %d", got[0]);

  /* v-variants: rank i contributes i + 1 ints. */
  int *counts = malloc(sizeof(int) * (size_t)n), *displs = malloc(sizeof(int) * (size_t)n);
  int total = 0;
  for (int i = 0; i < n; ++i) {
    counts[i] = i + 1;
    displs[i] = total;
    total += i + 1;
  }
  int *vin = malloc(sizeof(int) * (size_t)(r + 1)), *vall = malloc(sizeof(int) * (size_t)total);
  for (int i = 0; i <= r; ++i) vin[i] = 1000 * r + i;
  OK(MPI_Allgatherv(vin, r + 1, MPI_INT, vall, counts, displs, MPI_INT, c));
  for (int i = 0; i < n; ++i) CHECK(vall[displs[i] + i] == 1000 * i + i, "allgatherv from %d", i);
  OK(MPI_Gatherv(vin, r + 1, MPI_INT, vall, counts, displs, MPI_INT, 0, c));
  OK(MPI_Scatterv(vall, counts, displs, MPI_INT, vin, r + 1, MPI_INT, 0, c));
  CHECK(vin[r] == 1000 * r + r, "scatterv %d", vin[r]);

  /* Alltoall(v,w): block i of rank r holds r * 100 + i. */
  int *sa = malloc(sizeof(int) * (size_t)n), *ra = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; ++i) sa[i] = r * 100 + i;
  OK(MPI_Alltoall(sa, 1, MPI_INT, ra, 1, MPI_INT, c));
  for (int i = 0; i < n; ++i) CHECK(ra[i] == i * 100 + r, "alltoall [%d] %d", i, ra[i]);
  int *ones = malloc(sizeof(int) * (size_t)n), *idx = malloc(sizeof(int) * (size_t)n);
  int *bytes = malloc(sizeof(int) * (size_t)n);
  MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)n);
  for (int i = 0; i < n; ++i) {
    ones[i] = 1;
    idx[i] = i;
    bytes[i] = i * (int)sizeof(int);
    types[i] = MPI_INT;
  }
  for (int i = 0; i < n; ++i) ra[i] = -1;
  OK(MPI_Alltoallv(sa, ones, idx, MPI_INT, ra, ones, idx, MPI_INT, c));
  for (int i = 0; i < n; ++i) CHECK(ra[i] == i * 100 + r, "alltoallv [%d] %d", i, ra[i]);
  for (int i = 0; i < n; ++i) ra[i] = -1;
  OK(MPI_Alltoallw(sa, ones, bytes, types, ra, ones, bytes, types, c));
  for (int i = 0; i < n; ++i) CHECK(ra[i] == i * 100 + r, "alltoallw [%d] %d", i, ra[i]);

  /* Reduce_scatter(_block), scans. */
  for (int i = 0; i < n; ++i) sa[i] = r + i;
  int rs = -1;
  OK(MPI_Reduce_scatter_block(sa, &rs, 1, MPI_INT, MPI_SUM, c));
  CHECK(rs == (int)sum + n * r, "reduce_scatter_block %d", rs);
  rs = -1;
  OK(MPI_Reduce_scatter(sa, &rs, ones, MPI_INT, MPI_SUM, c));
  CHECK(rs == (int)sum + n * r, "reduce_scatter %d", rs);
  long sc = -1, ex = -1;
  OK(MPI_Scan(&v, &sc, 1, MPI_LONG, MPI_SUM, c));
  CHECK(sc == (long)r * (r + 1) / 2, "scan %ld", sc);
  OK(MPI_Exscan(&v, &ex, 1, MPI_LONG, MPI_SUM, c));
  if (r > 0) CHECK(ex == (long)r * (r - 1) / 2, "exscan %ld", ex);
  free(all), free(counts), free(displs), free(vin), free(vall), free(sa), free(ra);
  free(ones), free(idx), free(bytes), free(types);
}

static void nonblocking(MPI_Comm c, int r, int n) {
  const long sum = (long)n * (n - 1) / 2;
  long v = r, s1 = -1, s2 = -1, sc = -1;
  int b = r == 0 ? 42 : 0;
  int *all = malloc(sizeof(int) * (size_t)n);
  MPI_Request rq[6];
  OK(MPI_Ibarrier(c, &rq[0]));
  OK(MPI_Ibcast(&b, 1, MPI_INT, 0, c, &rq[1]));
  OK(MPI_Iallreduce(&v, &s1, 1, MPI_LONG, MPI_SUM, c, &rq[2]));
  OK(MPI_Ireduce(&v, &s2, 1, MPI_LONG, MPI_SUM, n - 1, c, &rq[3]));
  OK(MPI_Iallgather(&r, 1, MPI_INT, all, 1, MPI_INT, c, &rq[4]));
  OK(MPI_Iscan(&v, &sc, 1, MPI_LONG, MPI_SUM, c, &rq[5]));
  OK(MPI_Waitall(6, rq, MPI_STATUSES_IGNORE));
  CHECK(b == 42 && s1 == sum && (r != n - 1 || s2 == sum), "ibcast %d iallreduce %ld ireduce %ld",
        b, s1, s2);
  CHECK(sc == (long)r * (r + 1) / 2, "iscan %ld", sc);
  for (int i = 0; i < n; ++i) CHECK(all[i] == i, "iallgather [%d] %d", i, all[i]);

  /* Completed by a Test loop. */
  int flag = 0;
  long ex = -1;
  MPI_Request one;
  OK(MPI_Iexscan(&v, &ex, 1, MPI_LONG, MPI_SUM, c, &one));
  while (!flag) OK(MPI_Test(&one, &flag, MPI_STATUS_IGNORE));
  CHECK(one == MPI_REQUEST_NULL, "tested request not released");
  if (r > 0) CHECK(ex == (long)r * (r - 1) / 2, "iexscan %ld", ex);

  /* Completed by Waitsome. */
  int *sa = malloc(sizeof(int) * (size_t)n), *ra = malloc(sizeof(int) * (size_t)n), g = -1, rs = -1;
  for (int i = 0; i < n; ++i) sa[i] = r * 100 + i;
  OK(MPI_Ialltoall(sa, 1, MPI_INT, ra, 1, MPI_INT, c, &rq[0]));
  OK(MPI_Iscatter(sa, 1, MPI_INT, &g, 1, MPI_INT, 0, c, &rq[1]));
  OK(MPI_Ireduce_scatter_block(sa, &rs, 1, MPI_INT, MPI_SUM, c, &rq[2]));
  int done = 0;
  while (done < 3) {
    int outcount = 0, indices[3];
    OK(MPI_Waitsome(3, rq, &outcount, indices, MPI_STATUSES_IGNORE));
    CHECK(outcount > 0, "waitsome returned %d", outcount);
    done += outcount;
  }
  for (int i = 0; i < n; ++i) CHECK(ra[i] == i * 100 + r, "ialltoall [%d] %d", i, ra[i]);
  CHECK(g == r, "iscatter %d", g);
  CHECK(rs == 100 * (int)sum + n * r, "ireduce_scatter_block %d", rs);
  free(all), free(sa), free(ra);
}

static void body(MPI_Comm c, int thread) {
  (void)thread;
  int r, n;
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));
  for (int rep = 0; rep < 2; ++rep) {
    blocking(c, r, n);
    nonblocking(c, r, n);
  }
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  OK(MPI_Op_create(ordered, 0, &g_ordered));
  OK(MPI_Type_contiguous(2, MPI_LONG, &g_digits));
  OK(MPI_Type_commit(&g_digits));
  const int nt = my_threads();
  MPI_Comm comms[3];
  make_comms(nt, comms);
  run_threads(nt, comms, body);
  for (int i = 0; i < nt; ++i) OK(MPI_Comm_free(&comms[i]));
  OK(MPI_Op_free(&g_ordered));
  OK(MPI_Type_free(&g_digits));
  pass("coll");
  return 0;
}
