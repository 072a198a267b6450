/*
 * probe.c - probes: MPI_Probe/MPI_Iprobe with wildcards sizing a receive by
 * MPI_Get_count, matched probes (MPI_Mprobe/MPI_Mrecv, MPI_Improbe/MPI_Imrecv), probes of
 * MPI_PROC_NULL (MPI_MESSAGE_NO_PROC), and a cancelled receive.
 */
#include "harness.h"

static void body(MPI_Comm c, int thread) {
  (void)thread;
  int r, n;
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  MPI_Status st;

  /* Four messages to the right neighbour: lengths left+1.. tell them apart. */
  int out[4][8];
  MPI_Request sr[4];
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 8; ++i) out[k][i] = r * 100 + k * 10 + i;
    OK(MPI_Isend(out[k], 1 + (r + k) % 8, MPI_INT, right, 20 + k, c, &sr[k]));
  }

  /* 1: Probe, then a receive of exactly the probed size. */
  OK(MPI_Probe(MPI_ANY_SOURCE, 20, c, &st));
  int len = -1;
  OK(MPI_Get_count(&st, MPI_INT, &len));
  CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 20 && len == 1 + left % 8, "probe: %d %d %d",
        st.MPI_SOURCE, st.MPI_TAG, len);
  int *in = malloc(sizeof(int) * (size_t)len);
  OK(MPI_Recv(in, len, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, c, MPI_STATUS_IGNORE));
  CHECK(in[len - 1] == left * 100 + len - 1, "probe: last %d", in[len - 1]);
  free(in);

  /* 2: Iprobe with a wildcard tag until it sees tag 21. */
  int flag = 0;
  while (!flag) OK(MPI_Iprobe(left, 21, c, &flag, &st));
  OK(MPI_Get_count(&st, MPI_INT, &len));
  CHECK(st.MPI_TAG == 21 && len == 1 + (left + 1) % 8, "iprobe: tag %d len %d", st.MPI_TAG, len);
  int buf[8];
  OK(MPI_Recv(buf, 8, MPI_INT, left, 21, c, &st));
  CHECK(buf[0] == left * 100 + 10, "iprobe: %d", buf[0]);

  /* 3: Mprobe/Mrecv: the matched message, no one else can take it. */
  MPI_Message msg = MPI_MESSAGE_NULL;
  OK(MPI_Mprobe(MPI_ANY_SOURCE, 22, c, &msg, &st));
  CHECK(msg != MPI_MESSAGE_NULL && st.MPI_SOURCE == left, "mprobe: source %d", st.MPI_SOURCE);
  OK(MPI_Get_count(&st, MPI_INT, &len));
  OK(MPI_Mrecv(buf, len, MPI_INT, &msg, &st));
  CHECK(msg == MPI_MESSAGE_NULL, "mrecv left the message handle");
  CHECK(buf[len - 1] == left * 100 + 20 + len - 1 && st.MPI_TAG == 22, "mrecv: %d", buf[len - 1]);

  /* 4: Improbe/Imrecv. */
  flag = 0;
  while (!flag) OK(MPI_Improbe(left, MPI_ANY_TAG, c, &flag, &msg, &st));
  CHECK(st.MPI_TAG == 23, "improbe: tag %d", st.MPI_TAG);
  MPI_Request rq;
  OK(MPI_Imrecv(buf, 8, MPI_INT, &msg, &rq));
  OK(MPI_Wait(&rq, &st));
  OK(MPI_Get_count(&st, MPI_INT, &len));
  CHECK(len == 1 + (left + 3) % 8 && buf[0] == left * 100 + 30, "imrecv: %d %d", len, buf[0]);
  OK(MPI_Waitall(4, sr, MPI_STATUSES_IGNORE));

  /* 5: MPI_PROC_NULL. */
  OK(MPI_Probe(MPI_PROC_NULL, 0, c, &st));
  OK(MPI_Get_count(&st, MPI_INT, &len));
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && len == 0,
        "probe of MPI_PROC_NULL: %d %d %d", st.MPI_SOURCE, st.MPI_TAG, len);
  OK(MPI_Mprobe(MPI_PROC_NULL, 0, c, &msg, &st));
  CHECK(msg == MPI_MESSAGE_NO_PROC, "mprobe of MPI_PROC_NULL gave %x", (unsigned)msg);
  OK(MPI_Mrecv(buf, 1, MPI_INT, &msg, &st));
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL && msg == MPI_MESSAGE_NULL, "mrecv of no proc");

  /* 6: a receive nobody matches, cancelled. */
  OK(MPI_Irecv(buf, 1, MPI_INT, left, 99, c, &rq));
  OK(MPI_Cancel(&rq));
  OK(MPI_Wait(&rq, &st));
  int cancelled = 0;
  OK(MPI_Test_cancelled(&st, &cancelled));
  CHECK(cancelled, "receive not cancelled");
  OK(MPI_Barrier(c));
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  const int nt = my_threads();
  MPI_Comm comms[3];
  make_comms(nt, comms);
  run_threads(nt, comms, body);
  for (int i = 0; i < nt; ++i) OK(MPI_Comm_free(&comms[i]));
  pass("probe");
  return 0;
}
