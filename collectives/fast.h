// fast.h - the blocking fast path of allreduce: no engine, one arrival counter per
// fragment, an MPI exchange among the fragments' last arrivals.
//
// What it is: every blocking EP_Allreduce on an intracommunicator meets here, at one
// arrival counter per fragment (no lock, no request, no operation object).  The last to
// arrive decides, from the arguments of an endpoint that knows them (engine.h,
// "Erroneous endpoints"), which way the operation goes:
//   fast     a predefined op, of at most kFastBytes or larger on a contiguous datatype:
//            it combines the fragment's inputs, exchanges with one leader per other
//            fragment over a process-level MPI communicator (`pcomm`) and releases the
//            others;
//   engine   anything else (a user op, a large non-contiguous type): it starts the
//            engine's operation for every endpoint of the fragment (collectives::arrive,
//            acting for each; each endpoint's hidden tag advances as if it had called
//            start itself), waits for it, and releases the others.
// The choice depends only on arguments MPI requires to agree at every rank (the op, the
// count and datatype - a predefined op gets the same datatype everywhere), so all
// fragments of one operation take the same way; an erroneous endpoint (a hole: no
// buffers, knows kAll or not) joins the same counter whatever its arguments, so it never
// has to guess the way; a fragment of holes that knows kAll adds zeros, one that knows
// nothing skips the exchange (engine.h).  Blocking and nonblocking collectives never
// match each other (MPI 3.1 section 5.12).  Predefined ops are commutative, so any rank
// layout may take the fast way.  Barriers do not meet here: a pcomm message left
// waiting in a barrier, where passive targets wait, slows this process's window service
// (docs/perf/collectives.md, "Why barriers stay on the engine").
//
// The exchange (pcomm.cc), on the last arrival of each fragment:
//   pcomm    one rank per fragment, in fragment order: MPI_Comm_create_group on
//            base_comm(), by the first fast operation, when every fragment lives in its
//            own process and every process has one of kMaxProcessComms left.  The
//            fragments first vote (MPI messages on base_comm(), so that no vote waits
//            for a progress thread while its process blocks in the creation): all make
//            it or none.  Freed when the fragment retires.
//   small    up to kFastBytes: recursive doubling;
//   large    above (contiguous types): a ring reduce-scatter, then a ring allgather,
//            the local combine folded in (each input read once, each output written
//            once); a helper team's waiting members take chunks of the combine;
//   fallback no pcomm (two fragments in one process - a merged intercommunicator - or a
//            refused vote or creation): runtime::frag_allgather on the reserved hidden
//            tag kFastTag.
// This process-level MPI path is the one documented exception to "only progress calls
// MPI for traffic": the last arrival posts MPI_Isend/MPI_Irecv itself and waits through
// runtime::wait_mpi, never in a blocking MPI call (which holds MPICH's global lock
// against the progress thread); only the one-off MPI_Comm_create_group blocks.
//
// Protocol and threading, per fragment (FastState): each endpoint writes its own slot
// and counts itself in `arrived`; the last arrival alone reads the slots, runs the
// exchange, writes every output, err and pcomm, then bumps `gen`, which releases the
// others.  A fragment's fast operations never overlap: an endpoint's next arrival
// follows its return from the previous one, which follows the gen increment; so
// per-pair message order keeps operations apart, on pcomm and on kFastTag.
//
// Memory ordering: an arrival writes its slot (plain stores), reads `gen` (acquire),
// then arrived.fetch_add(1, acq_rel); the fetch_adds form one release sequence, so the
// one that reaches n (the last) sees every slot.  The last stores every output and err,
// resets arrived (relaxed), then gen.fetch_add(1, release) and released.notify(); the
// others wait_until gen differs from what they read (acquire: pairs with that
// fetch_add), so they see the outputs, err and the reset; notify and sleep follow
// runtime/wait.h's Event protocol, so no wake-up is lost.
#ifndef EP_COLLECTIVES_FAST_H_
#define EP_COLLECTIVES_FAST_H_

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "collectives/engine.h"
#include "runtime/wait.h"

namespace ep::collectives {

constexpr int64_t kFastBytes = 4096;  // recursive doubling up to here, the ring above
constexpr int kFastTag = -2;          // and -3 (frag_allgather's broadcast); see runtime/exchange.h

struct FastState {
  // An endpoint's arrival: its Part and OpArgs, on its stack until it is released.  A
  // predefined op takes the same datatype and count at every rank (MPI 3.1 section
  // 5.9.2), so one informed arrival's OpArgs describe every slot.
  struct Slot {
    const Part* part = nullptr;
    const OpArgs* args = nullptr;
  };
  alignas(64) std::atomic<int> arrived{0};
  alignas(64) std::atomic<uint32_t> gen{0};
  runtime::Event released;  // notified after each increment of gen
  std::vector<Slot> slots;  // by local index; see the protocol above
  int err = 0;              // EP_* result of the last operation (published by gen)
  // Last arrivals only (operations are sequential); pcomm_tried once made or refused.
  bool pcomm_tried = false;
  MPI_Comm pcomm = MPI_COMM_NULL;
  ~FastState();  // frees pcomm (the fragment retires; no operation runs)
};

// The fast path's state of c's fragment (created on first use, freed with it; engine.cc).
FastState* fast_state(CommShared* c);

// ---- The exchange (pcomm.cc), called by the last arrival ----------------------------

// Makes fs->pcomm on the first fast operation if every fragment agrees (see above);
// sets pcomm_tried.  Every fragment's last arrival calls it in the same operation.
void make_pcomm(CommShared* c, FastState* fs);
// Recursive doubling among the n fragments on `pc` (rank = fragment `me`): `acc` holds
// this fragment's partial and receives the total; `tmp` is one more such buffer.
// Returns an MPI error code.
int exchange(MPI_Comm pc, int me, int n, void* acc, void* tmp, const OpArgs& a);
// The ring (large): combines the inputs `xs` (local rank order) with the other
// fragments' into `acc` (apart from every input) and copies the total to `outs`; `tmp`
// holds one block (ceil(count / n) elements).  Returns an MPI error code.
int ring_exchange(MPI_Comm pc, int me, int n, const std::vector<const void*>& xs, void* acc,
                  const std::vector<void*>& outs, void* tmp, const OpArgs& a);

}  // namespace ep::collectives

#endif  // EP_COLLECTIVES_FAST_H_
