// fast.h - the blocking barrier, bcast, reduce and allreduce of an intracommunicator:
// the endpoints of a fragment meet on a combining tree (tree.h); its completer
// exchanges with the other fragments.
//
// What it is: every blocking EP_Barrier, EP_Bcast, EP_Reduce and EP_Allreduce on an
// intracommunicator meets here, on its fragment's tree (no lock, no request, no
// operation object in the fragment).  Round 1: every endpoint arrives with what it
// passed; the round's completer decides, from the arguments of the best-informed
// arrival (engine.h, "Erroneous endpoints"), what happens next, and the members follow
// its plan:
//   by value   a reduction of at most kTreeInline bytes on a dense type (contiguous,
//              lower bound 0) - any op, user ops in MPI_Reduce_local - when the
//              communicator has one fragment, or a predefined op when it has several;
//              a bcast of at most kTreeInline packed bytes in one fragment.  Each input
//              (the bcast's root's data, packed) goes into its endpoint's slot and the
//              tree combines them on the way up, in rank order, into the release's
//              `data`; the completer runs the exchange on it (several fragments), and
//              each endpoint takes its result from there;
//   shares     a larger reduction (or one on another type) in one fragment, or an
//              allreduce with a predefined op on a contiguous type (any type up to
//              kFastBytes) when there are several: the valid endpoints split the vector
//              into shares, each combines its share reading every input directly (one
//              address space), then - allreduce - copies the shares it did not compute
//              from their owners' outputs, or - several fragments - the completer of
//              round 2 exchanges the fragment's partial (`acc`: an output not passed
//              EP_IN_PLACE, else scratch) and each endpoint copies the total (a lone
//              valid endpoint's input goes to the exchange as it is, in round 1).
//              Rounds 2 and 3 keep buffers that others read alive until they are done;
//              a large bcast: each endpoint copies from the root's buffer, then round 2;
//   node       several fragments, each in its own process of this node: see "The node
//              way" below (barrier, bcast, reduce by value, allreduce on dense types);
//   engine     several fragments and anything else - every other barrier, bcast and
//              reduce, an allreduce with a user op or a large non-contiguous type: round 1's
//              completer starts one engine operation for the whole fragment
//              (start_fragment, coll.h; each endpoint's hidden tag advances as if it had
//              called start itself); it writes every output, and whichever thread
//              finishes it (a waiting member, the progress thread) releases round 1.
//              The members that can tell this way from their arguments run the
//              engine's passes while they wait.
// The choice depends only on arguments MPI requires to agree at every rank (the op, the
// count and datatype - a predefined op gets the same datatype everywhere - and the
// root), so every member, and every fragment, takes the same way; an erroneous endpoint
// (a hole) contributes and receives nothing and follows the plan; a fragment of holes
// that knows the arguments adds zeros to the exchange, one that knows nothing skips it
// (engine.h).  Blocking and nonblocking collectives never match each other (MPI 3.1
// section 5.12).  Several fragments off the node way keep barriers, bcasts and
// reductions on the engine's hidden messages: a pcomm message left waiting in a barrier,
// where passive targets wait, slows this process's window service (docs/perf/collectives.md, "Why barriers
// stay on the engine").
//
// The node way (runtime/node_coll.h): when every fragment lives in its own process of
// this node (node transport on), the first operation's completers make a NodeGroup;
// from then on a barrier among fragments is one arrival at the group, and the exchange
// of an allreduce on a dense type passes slot-sized pieces of each fragment's partial
// through the cells, each fragment combining them in fragment order - no MPI call, no
// engine message, no pcomm.  A bcast passes the root's packed data the same way (its
// fragment found by a header in every slot, so a fragment that knows nothing follows);
// a reduce by value whose group an earlier operation made (so that every member
// contributed by value knowing it) goes as an allreduce whose result the root takes.
// Other types and larger reductions keep the ways below.
// The exchange of an allreduce among fragments otherwise (pcomm.cc), on round 1's
// completer (by value) or round 2's (shares):
//   pcomm    one rank per fragment, in fragment order: MPI_Comm_create_group on
//            base_comm(), by the first such operation, when every fragment lives in its
//            own process and every process has one of kMaxProcessComms left.  The
//            fragments first vote (MPI messages on base_comm(), so that no vote waits
//            for a progress thread while its process blocks in the creation): all make
//            it or none.  Freed when the fragment retires.
//   small    up to kFastBytes: recursive doubling;
//   large    above (contiguous types): a ring reduce-scatter, then a ring allgather;
//            a helper team's waiting members take chunks of its combine steps;
//   fallback no pcomm (two fragments in one process - a merged intercommunicator - or a
//            refused vote or creation): runtime::frag_allgather on the reserved hidden
//            tag kFastTag.
// This process-level MPI path is the one documented exception to "only progress calls
// MPI for traffic": the completer posts MPI_Isend/MPI_Irecv itself and waits through
// runtime::wait_mpi, never in a blocking MPI call (which holds MPICH's global lock
// against the progress thread); only the one-off MPI_Comm_create_group blocks.
//
// Ownership: a fragment's FastState belongs to its collective state (engine.cc,
// FragState), made on the fragment's first collective and freed when the fragment
// retires (which frees pcomm).  A Member entry is its endpoint's (written before it
// arrives) but for sub_args and sub_knows (its node's completer's) and share (round
// 1's completer's); the plan fields, `acc` and `scratch` are round completers'; buffers
// named by a Part stay the caller's, which returns only after the last round of its
// operation.
//
// Threading: one thread per endpoint (any thread).  A fragment's blocking operations
// never overlap: an endpoint's next arrival follows its return from the previous one,
// and a round completes only when every endpoint arrived; so the plan, `acc` and the
// scratch are written by one completer at a time, and per-pair message order keeps
// operations apart on pcomm and on kFastTag.
//
// Memory ordering: tree.h's.  An endpoint writes its Member entry and its slot before
// it arrives; round completers read them (through the tree's release sequences) and
// write the plan fields and the release before tree_release; members read them after
// tree_wait.  On the engine way the completer's writes reach the finisher through the
// engine's own order (the fragment's mutex, engine.h), and the finisher's
// tree_release publishes them with the outputs.  Endpoints read other endpoints'
// buffers (shares) only between the release of one round and their arrival at the next,
// and write only their own share regions or outputs; the round after a phase orders
// every read of a buffer before its owner may return.
#ifndef EP_COLLECTIVES_FAST_H_
#define EP_COLLECTIVES_FAST_H_

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/engine.h"
#include "collectives/reduce_util.h"
#include "collectives/tree.h"
#include "runtime/node_coll.h"

namespace ep::collectives {

constexpr int64_t kFastBytes = 4096;  // recursive doubling up to here, the ring above
constexpr int kFastTag = -2;          // and -3 (frag_allgather's broadcast); see runtime/exchange.h

struct FastState {
  explicit FastState(int n);
  ~FastState();  // frees pcomm (the fragment retires; no operation runs)
  FastState(const FastState&) = delete;
  FastState& operator=(const FastState&) = delete;

  // Same-process only: what an endpoint passed (written by it before it arrives) and
  // what its node's completer learned of the subtree (before it arrives at the parent).
  struct alignas(64) Member {
    const Part* part = nullptr;
    const OpArgs* args = nullptr;
    const OpArgs* sub_args = nullptr;  // the best-informed arrival in the subtree
    Knows sub_knows = Knows::kNothing;
    int share = -1;  // shares: this endpoint's share, -1 for a hole (round 1's completer)
  };

  // The tree (tree.h), one slot per endpoint by local index.
  std::unique_ptr<TreeSlot[]> slots;
  std::vector<TreeSlot*> slot_addr;
  TreeRelease release;
  TreeTable table;
  std::unique_ptr<Member[]> members;

  // The plan of the operation in progress: written by round 1's completer, read by the
  // members after its release (see Threading).
  const OpArgs* plan_args = nullptr;     // the best-informed arrival's arguments
  int shares = 0;                        // shares: valid endpoints
  int root_local = 0;                    // bcast/reduce: the root's local index
  uint32_t engine_round = 0;             // the round an engine operation's finisher releases
  void* acc = nullptr;                   // shares among fragments: the fragment's partial
  std::unique_ptr<TypedBuffer> scratch;  // acc when no output may hold it
  // Completers only; pcomm_tried once made or refused.
  bool pcomm_tried = false;
  MPI_Comm pcomm = MPI_COMM_NULL;
  // Completers only: the node way (runtime/node_coll.h), tried by the first operation
  // of a fragment among several (node_tried once made or refused).
  bool node_tried = false;
  std::unique_ptr<runtime::NodeGroup> node;
  // Set once `node` is made, for the members' engine_way guess (any thread); release:
  // pairs with its acquire load, after which `node` reads as made.
  std::atomic<bool> node_on{false};
  std::string node_buf;  // kNodeBcast's data (round 1's completer; read by the members)
};

// The tree state of c's fragment (created on first use, freed with it; engine.cc).
FastState* fast_state(CommShared* c);

// ---- The exchange (pcomm.cc), called by a completer ---------------------------------

// Makes fs->pcomm on the first fast operation if every fragment agrees (see above);
// sets pcomm_tried.  Every fragment's completer calls it in the same operation.
void make_pcomm(CommShared* c, FastState* fs);
// Recursive doubling among the n fragments on `pc` (rank = fragment `me`): `acc` holds
// this fragment's partial and receives the total; `tmp` is one more such buffer.
// Returns an MPI error code.
int exchange(MPI_Comm pc, int me, int n, void* acc, void* tmp, const OpArgs& a);
// The ring (large): combines the inputs `xs` (local rank order) with the other
// fragments' into `acc` (apart from every input, or the one input itself) and copies
// the total to `outs`; `tmp` holds one block (ceil(count / n) elements).  Returns an
// MPI error code.
int ring_exchange(MPI_Comm pc, int me, int n, const std::vector<const void*>& xs, void* acc,
                  const std::vector<void*>& outs, void* tmp, const OpArgs& a);

}  // namespace ep::collectives

#endif  // EP_COLLECTIVES_FAST_H_
