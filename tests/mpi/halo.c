/*
 * halo.c - a halo exchange with derived datatypes: every endpoint owns an N x N tile of a
 * periodic row of tiles (global column = rank * N + j) and swaps its edge columns (an
 * MPI_Type_vector) with its neighbours by MPI_Irecv/MPI_Isend/MPI_Waitall, then a struct
 * datatype round trip, resized and subarray types through MPI_Sendrecv, and MPI_Pack on
 * the communicator.
 */
#include "harness.h"

enum { N = 8, kIters = 4 };

static double value(int gcol, int row, int iter) { return iter * 10000.0 + row * 100.0 + gcol; }

struct Particle {
  int id;
  double pos[3];
  char tag;
};

static void body(MPI_Comm c, int thread) {
  (void)thread;
  int r, n;
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  const int ncols = n * N;

  /* Tile with one halo column on each side: (N) rows x (N + 2) columns, row-major. */
  double tile[N][N + 2];
  MPI_Datatype column;
  OK(MPI_Type_vector(N, 1, N + 2, MPI_DOUBLE, &column));
  OK(MPI_Type_commit(&column));
  for (int it = 0; it < kIters; ++it) {
    for (int i = 0; i < N; ++i) {
      for (int j = 0; j < N; ++j) tile[i][j + 1] = value(r * N + j, i, it);
      tile[i][0] = tile[i][N + 1] = -1;
    }
    MPI_Request rq[4];
    /* Tags by direction (with 2 ranks, left and right are the same neighbour). */
    OK(MPI_Irecv(&tile[0][0], 1, column, left, 2 * it + 1, c, &rq[0]));
    OK(MPI_Irecv(&tile[0][N + 1], 1, column, right, 2 * it, c, &rq[1]));
    OK(MPI_Isend(&tile[0][1], 1, column, left, 2 * it, c, &rq[2]));
    OK(MPI_Isend(&tile[0][N], 1, column, right, 2 * it + 1, c, &rq[3]));
    MPI_Status st[4];
    OK(MPI_Waitall(4, rq, st));
    int elems = 0;
    OK(MPI_Get_elements(&st[0], MPI_DOUBLE, &elems));
    CHECK(elems == N, "column of %d doubles", elems);
    for (int i = 0; i < N; ++i) {
      const double wl = value((r * N - 1 + ncols) % ncols, i, it);
      const double wr = value((r * N + N) % ncols, i, it);
      CHECK(tile[i][0] == wl && tile[i][N + 1] == wr, "iter %d row %d: halo %g %g, want %g %g", it,
            i, tile[i][0], tile[i][N + 1], wl, wr);
    }
  }
  OK(MPI_Type_free(&column));

  /* A struct type. */
  struct Particle p[2], q[2];
  int bl[3] = {1, 3, 1};
  MPI_Aint disp[3], base;
  OK(MPI_Get_address(&p[0], &base));
  OK(MPI_Get_address(&p[0].id, &disp[0]));
  OK(MPI_Get_address(&p[0].pos, &disp[1]));
  OK(MPI_Get_address(&p[0].tag, &disp[2]));
  for (int i = 0; i < 3; ++i) disp[i] -= base;
  MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, ptype, ptype_r;
  OK(MPI_Type_create_struct(3, bl, disp, types, &ptype));
  OK(MPI_Type_create_resized(ptype, 0, sizeof(struct Particle), &ptype_r));
  OK(MPI_Type_commit(&ptype_r));
  for (int k = 0; k < 2; ++k) {
    p[k].id = r * 10 + k;
    p[k].pos[0] = r + 0.5;
    p[k].pos[1] = k;
    p[k].pos[2] = -r;
    p[k].tag = (char)('a' + r % 26);
  }
  memset(q, 0, sizeof q);
  OK(MPI_Sendrecv(p, 2, ptype_r, right, 50, q, 2, ptype_r, left, 50, c, MPI_STATUS_IGNORE));
  for (int k = 0; k < 2; ++k) {
    CHECK(q[k].id == left * 10 + k && q[k].pos[0] == left + 0.5 && q[k].pos[2] == -left &&
              q[k].tag == (char)('a' + left % 26),
          "particle %d from %d: id %d", k, left, q[k].id);
  }
  OK(MPI_Type_free(&ptype));
  OK(MPI_Type_free(&ptype_r));

  /* A subarray: the interior 2 x 3 block of a 4 x 5 array. */
  int a[4][5], b[2][3];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) a[i][j] = r * 100 + i * 5 + j;
  int sizes[2] = {4, 5}, sub[2] = {2, 3}, starts[2] = {1, 1};
  MPI_Datatype block;
  OK(MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &block));
  OK(MPI_Type_commit(&block));
  OK(MPI_Sendrecv(a, 1, block, right, 51, b, 6, MPI_INT, left, 51, c, MPI_STATUS_IGNORE));
  CHECK(b[0][0] == left * 100 + 6 && b[1][2] == left * 100 + 13, "subarray %d %d", b[0][0],
        b[1][2]);
  OK(MPI_Type_free(&block));

  /* MPI_Pack/MPI_Unpack naming the endpoints communicator. */
  char packed[64];
  int pos = 0, size = 0, x[3] = {r, r + 1, r + 2}, y[3];
  OK(MPI_Pack_size(3, MPI_INT, c, &size));
  CHECK(size >= 12 && size <= 64, "pack size %d", size);
  OK(MPI_Pack(x, 3, MPI_INT, packed, sizeof packed, &pos, c));
  OK(MPI_Sendrecv_replace(packed, pos, MPI_PACKED, right, 52, left, 52, c, MPI_STATUS_IGNORE));
  int upos = 0;
  OK(MPI_Unpack(packed, sizeof packed, &upos, y, 3, MPI_INT, c));
  CHECK(y[0] == left && y[2] == left + 2, "unpacked %d %d", y[0], y[2]);
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  const int nt = my_threads();
  MPI_Comm comms[3];
  make_comms(nt, comms);
  run_threads(nt, comms, body);
  for (int i = 0; i < nt; ++i) OK(MPI_Comm_free(&comms[i]));
  pass("halo");
  return 0;
}
