// pcomm.cc - the fast path's exchange among fragments (fast.h): the process-level
// communicator, its vote and creation, recursive doubling and the ring.  The only file
// of the collectives that sends MPI messages itself; every wait is runtime::wait_mpi.
#include <algorithm>
#include <vector>

#include "base/mpi_calls.h"
#include "collectives/fast.h"
#include "collectives/reduce_util.h"
#include "runtime/wait.h"

namespace ep::collectives {
namespace {

// The MPI rank in base_comm() of every fragment's process, by fragment.
std::vector<int> fragment_procs(const CommShared* c) {
  const int n = static_cast<int>(c->frag_leaders.size());
  std::vector<int> procs(static_cast<size_t>(n));
  for (int f = 0; f < n; ++f) procs[f] = c->addr[c->frag_leaders[f]].proc;
  return procs;
}

bool all_distinct(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return std::adjacent_find(v.begin(), v.end()) == v.end();
}

// The tag of c's vote and creation: it tells concurrent creations apart (other
// communicators' first operations on other threads).  Fragment 0's context id is
// unique in its process among live communicators, and every member knows it.
int pcomm_tag(const CommShared* c) {
  int world = 1, *tag_ub = nullptr, flag = 0;
  EP_MPI(MPI_Comm_size(base_comm(), &world));
  EP_MPI(MPI_Comm_get_attr(base_comm(), MPI_TAG_UB, &tag_ub, &flag));
  const int64_t ub = flag != 0 ? *tag_ub : 32767;
  const runtime::EpAddr& first = c->addr[c->frag_leaders[0]];
  return static_cast<int>((static_cast<int64_t>(first.ctx / 2) * world + first.proc) % ub);
}

// All fragments make the communicator or none (a creation some process skipped would
// hang): each sends its vote (`mine_ok`) to every other and learns theirs.  The votes
// are MPI messages on the base communicator, not libep messages: a process whose vote
// is complete enters the blocking MPI_Comm_create_group, which keeps MPICH's global
// lock from its progress thread, so a vote still waiting in the engine for that thread
// would wait until MPICH let the lock go.
bool vote_on_pcomm(const CommShared* c, const std::vector<int>& procs, int tag, char mine_ok) {
  const int n = static_cast<int>(procs.size());
  std::vector<char> votes(static_cast<size_t>(n), 0);
  std::vector<MPI_Request> reqs;
  reqs.reserve(2 * static_cast<size_t>(n));
  for (int f = 0; f < n; ++f) {
    if (f == c->my_frag) continue;
    reqs.emplace_back();
    EP_MPI(MPI_Irecv(&votes[f], 1, MPI_CHAR, procs[f], tag, base_comm(), &reqs.back()));
    reqs.emplace_back();
    EP_MPI(MPI_Isend(&mine_ok, 1, MPI_CHAR, procs[f], tag, base_comm(), &reqs.back()));
  }
  votes[c->my_frag] = mine_ok;
  return runtime::wait_mpi(reqs.data(), static_cast<int>(reqs.size())) == MPI_SUCCESS &&
         std::all_of(votes.begin(), votes.end(), [](char v) { return v == 1; });
}

// MPI_Comm_create_group over `procs` (in fragment order) on the base communicator;
// MPI_COMM_NULL if MPI refused.
MPI_Comm create_pcomm(const std::vector<int>& procs, int tag) {
  MPI_Group all = MPI_GROUP_NULL, mine = MPI_GROUP_NULL;
  EP_MPI(MPI_Comm_group(base_comm(), &all));
  EP_MPI(MPI_Group_incl(all, static_cast<int>(procs.size()), procs.data(), &mine));
  MPI_Comm pcomm = MPI_COMM_NULL;
  if (EP_MPI(MPI_Comm_create_group(base_comm(), mine, tag, &pcomm)) == MPI_SUCCESS) {
    EP_MPI(MPI_Comm_set_errhandler(pcomm, MPI_ERRORS_RETURN));
  } else {
    pcomm = MPI_COMM_NULL;
  }
  EP_MPI(MPI_Group_free(&mine));
  EP_MPI(MPI_Group_free(&all));
  return pcomm;
}

}  // namespace

FastState::~FastState() {
  // The fragment retires (no operation runs); MPICH frees a communicator locally.
  if (pcomm != MPI_COMM_NULL) {
    EP_MPI(MPI_Comm_free(&pcomm));
    release_process_comm();
  }
}

// One rank per fragment, in fragment order, when every fragment is in its own process.
// Every fragment's last arrival calls this in the same operation, so the vote and the
// collective MPI_Comm_create_group match.
void make_pcomm(CommShared* c, FastState* fs) {
  fs->pcomm_tried = true;
  const std::vector<int> procs = fragment_procs(c);
  if (!all_distinct(procs)) return;  // fragments share a process
  const int tag = pcomm_tag(c);
  const char mine_ok = reserve_process_comm() ? 1 : 0;
  if (!vote_on_pcomm(c, procs, tag, mine_ok)) {
    if (mine_ok) release_process_comm();
    return;
  }
  fs->pcomm = create_pcomm(procs, tag);
  if (fs->pcomm == MPI_COMM_NULL) release_process_comm();
}

// Recursive doubling for a commutative op (every predefined op is), any number of
// fragments: the first 2*rem (rem = n minus the largest power of two in n) fold into
// pairs before and get the result after.  Point-to-point instead of MPI_Allreduce:
// MPICH's blocking collectives hold its global lock against the progress thread for
// the whole wait, and these waits (runtime::wait_mpi) serve the engine.  Tags tell the
// steps apart; one fragment's operations are sequential and per-pair order keeps
// operations apart.
int exchange(MPI_Comm pc, int me, int n, void* acc, void* tmp, const OpArgs& a) {
  constexpr int kPreTag = 1, kPostTag = 2, kRoundTag = 8;
  // Sends `sbuf` and/or receives into `rbuf` (either may be NULL with count 0, so
  // whether to send and receive are told apart from the buffers).
  enum Dir { kSend = 1, kRecv = 2, kBoth = 3 };
  auto step = [&](int peer, int tag, Dir dir, const void* sbuf, void* rbuf) {
    MPI_Request r[2];
    int k = 0;
    if ((dir & kRecv) != 0) EP_MPI(MPI_Irecv(rbuf, a.count, a.type, peer, tag, pc, &r[k++]));
    if ((dir & kSend) != 0) EP_MPI(MPI_Isend(sbuf, a.count, a.type, peer, tag, pc, &r[k++]));
    return runtime::wait_mpi(r, k);
  };
  int pof2 = 1;
  while (pof2 * 2 <= n) pof2 *= 2;
  const int rem = n - pof2;
  int err = MPI_SUCCESS;
  int newrank = me - rem;
  if (me < 2 * rem) {
    if (me % 2 == 0) {
      err = step(me + 1, kPreTag, kSend, acc, nullptr);
      newrank = -1;
    } else {
      err = step(me - 1, kPreTag, kRecv, nullptr, tmp);
      reduce_into(tmp, acc, a.count, a);
      newrank = me / 2;
    }
  }
  for (int mask = 1, round = 0; newrank >= 0 && mask < pof2 && err == MPI_SUCCESS;
       mask <<= 1, ++round) {
    const int pn = newrank ^ mask;
    const int peer = pn < rem ? pn * 2 + 1 : pn + rem;
    err = step(peer, kRoundTag + round, kBoth, acc, tmp);
    reduce_into(tmp, acc, a.count, a);
  }
  if (me < 2 * rem && err == MPI_SUCCESS) {
    err = me % 2 != 0 ? step(me - 1, kPostTag, kSend, acc, nullptr)
                      : step(me + 1, kPostTag, kRecv, nullptr, acc);
  }
  return err;
}

// The ring among the n fragments on `pc` (rank = fragment), the local combine folded
// in.  The vector is cut into n blocks; in reduce-scatter step s a fragment sends block
// me-s to its right neighbour and receives block me-s-1 from its left one; after n-1
// steps it holds the total of block me+1, and the allgather's n-1 steps pass the totals
// around.  Each fragment combines its endpoints' inputs for a block only when the block
// first goes out or comes in (block me before step 0; every other block together with
// the partial received for it), in cache-sized pieces, and writes a block to the other
// outputs as soon as it holds the block's total - so each input is read once, each
// output written once, and (n-1)/n of the vector travels each way twice instead of all
// of it once.
//   xs    the inputs, local rank order        acc   the output that combines (apart
//   outs  every other output                        from every input)
//   tmp   scratch of one block
// Every block's total is computed by one fragment and copied to the rest, so all
// endpoints get the same bits.  Tags kRingTag + step; one fragment's operations are
// sequential and per-pair order keeps operations apart.
constexpr int64_t kPieceBytes = 16 * 1024;  // a piece of a block (fits L1 with its inputs)

int ring_exchange(MPI_Comm pc, int me, int n, const std::vector<const void*>& xs, void* acc,
                  const std::vector<void*>& outs, void* tmp, const OpArgs& a) {
  constexpr int kRingTag = 64;
  const TypeInfo& ti = a.ti;
  auto off = [&](int j) { return static_cast<int64_t>(a.count) * j / n; };
  auto len = [&](int j) { return static_cast<int>(off(j + 1) - off(j)); };
  auto blk = [&](int j) { return ((j % n) + n) % n; };
  // acc[block j] = x0 op (x1 op ...) [op extra], then, if `total`, copied to outs;
  // piece by piece so that each piece is still in cache for the next pass over it.
  auto combine = [&](int j, const void* extra, bool total) {
    const int64_t j0 = off(j);
    const int64_t piece = std::max<int64_t>(1, kPieceBytes / ti.extent);
    reduction_chunks(len(j), a, [&](int64_t b, int64_t e) {
      std::vector<const void*> px(xs.size());
      for (int64_t p = b; p < e; p += piece) {
        const int k = static_cast<int>(std::min(e, p + piece) - p);
        for (size_t i = 0; i < xs.size(); ++i) px[i] = elem(xs[i], j0 + p, ti);
        void* target = elem(acc, j0 + p, ti);
        reduce_all(px, target, k, a);
        if (extra != nullptr) reduce_into(elem(extra, p, ti), target, k, a);
        if (total) {
          for (void* o : outs) copy_n(target, elem(o, j0 + p, ti), k, a);
        }
      }
    });
  };
  auto swap = [&](int tag, int sj, int rj, void* rbuf) {
    MPI_Request r[2];
    EP_MPI(MPI_Irecv(rbuf, len(rj), a.type, blk(me - 1), tag, pc, &r[0]));
    EP_MPI(MPI_Isend(elem(acc, off(sj), ti), len(sj), a.type, blk(me + 1), tag, pc, &r[1]));
    return runtime::wait_mpi(r, 2);
  };
  combine(me, nullptr, false);
  for (int s = 0; s < n - 1; ++s) {  // reduce-scatter
    const int rj = blk(me - s - 1);
    if (int err = swap(kRingTag + s, blk(me - s), rj, tmp); err != MPI_SUCCESS) return err;
    combine(rj, tmp, s == n - 2);
  }
  for (int s = 0; s < n - 1; ++s) {  // allgather
    const int rj = blk(me - s);
    void* target = elem(acc, off(rj), ti);
    if (int err = swap(kRingTag + n + s, blk(me + 1 - s), rj, target); err != MPI_SUCCESS) {
      return err;
    }
    for (void* o : outs) copy_n(target, elem(o, off(rj), ti), len(rj), a);
  }
  return MPI_SUCCESS;
}

}  // namespace ep::collectives
