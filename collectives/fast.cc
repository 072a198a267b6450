// fast.cc - the blocking fast path of allreduce (fast.h): who takes it, the arrival
// protocol, and the last arrival's combine around the exchange (pcomm.cc).
#include "collectives/fast.h"

#include <memory>
#include <string>
#include <vector>

#include "base/types.h"
#include "collectives/coll.h"
#include "collectives/internal.h"
#include "collectives/reduce_util.h"
#include "runtime/error.h"
#include "runtime/exchange.h"
#include "runtime/team.h"
#include "runtime/wait.h"

namespace ep::collectives {
namespace {

// The predefined ops a collective reduction may use (MPI_REPLACE and MPI_NO_OP are for
// accumulates only); all of them are commutative.
bool predefined_op(MPI_Op op) {
  for (MPI_Op p : {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_BAND, MPI_LOR, MPI_BOR,
                   MPI_LXOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC}) {
    if (op == p) return true;
  }
  return false;
}

// A scratch buffer of the op's count and type, made at the first get(): on the stack
// when a contiguous type fits kFastBytes, else a TypedBuffer.
class FastScratch {
 public:
  explicit FastScratch(const OpArgs& a) : a_(a) {}
  void* get() {
    if (ptr_ != nullptr) return ptr_;
    if (a_.ti.contiguous && a_.ti.true_lb == 0 && a_.ti.extent == a_.ti.size &&
        a_.ti.size * a_.count <= kFastBytes) {
      ptr_ = stack_;
    } else {
      heap_ = std::make_unique<TypedBuffer>(a_.count, a_.ti);
      ptr_ = heap_->get();
    }
    return ptr_;
  }

 private:
  const OpArgs& a_;
  alignas(64) char stack_[kFastBytes];
  std::unique_ptr<TypedBuffer> heap_;
  void* ptr_ = nullptr;
};

// Where the last arrival combines the fragment's partial and then the result: the
// output buffer of an endpoint that did not pass EP_IN_PLACE (combining needs a target
// apart from every input), else scratch.  A lone endpoint's buffers serve as they are.
void* combine_target(const std::vector<FastState::Slot>& slots, FastScratch& scratch) {
  if (slots.size() == 1) return slots[0].out;
  for (const FastState::Slot& s : slots) {
    if (s.in != s.out) return s.out;
  }
  return scratch.get();  // every endpoint passed EP_IN_PLACE
}

// The ring (large, on pcomm): combines the inputs `xs`, exchanges and writes every
// output.  Returns an EP_* code.
int run_ring(CommShared* c, FastState* fs, const std::vector<const void*>& xs, void* acc,
             const OpArgs& a) {
  const int nfrag = static_cast<int>(c->frag_leaders.size());
  std::vector<void*> outs;
  for (const FastState::Slot& s : fs->slots) {
    if (s.out != acc) outs.push_back(s.out);
  }
  // One block of scratch: the largest block has ceil(count / nfrag) elements.
  TypedBuffer block((a.count + nfrag - 1) / nfrag, a.ti);
  return runtime::from_mpi(
      ring_exchange(fs->pcomm, c->my_frag, nfrag, xs, acc, outs, block.get(), a));
}

// The fallback exchange (no pcomm): every fragment's partial `in` through
// frag_allgather on kFastTag, combined in fragment order into `acc`.
void run_fallback(CommShared* c, const void* in, void* acc, FastScratch& tmp, const OpArgs& a) {
  const int nfrag = static_cast<int>(c->frag_leaders.size());
  std::vector<std::string> blobs = runtime::frag_allgather(c, kFastTag, pack_n(in, a.count, a.ti));
  unpack_n(blobs[nfrag - 1], acc, a.count, a.ti);
  for (int f = nfrag - 2; f >= 0; --f) {
    unpack_n(blobs[f], tmp.get(), a.count, a.ti);
    reduce_into(tmp.get(), acc, a.count, a);
  }
}

// The last arrival's work: every slot has arrived.  Returns an EP_* code.
int fast_last(CommShared* c, FastState* fs, const OpArgs& a) {
  const int nfrag = static_cast<int>(c->frag_leaders.size());
  if (nfrag > 1 && !fs->pcomm_tried) make_pcomm(c, fs);
  const std::vector<FastState::Slot>& slots = fs->slots;
  FastScratch scratch(a), tmp(a);
  void* acc = combine_target(slots, scratch);  // the partial, then the result
  const bool ring = nfrag > 1 && fs->pcomm != MPI_COMM_NULL && a.ti.size * a.count > kFastBytes;
  std::vector<const void*> xs;  // the inputs, when something combines them
  if (slots.size() > 1 || ring) {
    for (const FastState::Slot& s : slots) xs.push_back(s.in);
  }
  if (ring) return run_ring(c, fs, xs, acc, a);
  const void* in = slots[0].in;
  if (slots.size() > 1) {
    reduce_all(xs, acc, a.count, a);
    in = acc;
  }
  int err = EP_SUCCESS;
  if (nfrag > 1 && fs->pcomm != MPI_COMM_NULL) {
    if (in != acc) copy_n(in, acc, a.count, a);
    err = runtime::from_mpi(exchange(fs->pcomm, c->my_frag, nfrag, acc, tmp.get(), a));
  } else if (nfrag > 1) {
    run_fallback(c, in, acc, tmp, a);
  } else if (in != acc) {
    copy_n(in, acc, a.count, a);
  }
  for (const FastState::Slot& s : slots) {
    if (s.out != acc) copy_n(acc, s.out, a.count, a);
  }
  return err;
}

}  // namespace

bool run_fast(Endpoint* ep, Kind kind, const Part& part, const OpArgs& a, int* err) {
  // Barriers and intercommunicators stay on the engine's path (fast.h).
  if (kind != Kind::kAllreduce || ep->comm->inter || !predefined_op(a.op) ||
      (a.ti.size * a.count > kFastBytes && !a.ti.contiguous)) {
    return false;
  }
  CommShared* c = ep->comm;
  FastState* fs = fast_state(c);
  FastState::Slot& slot = fs->slots[static_cast<size_t>(ep->local_index)];
  slot.in = input_of(part);
  slot.out = part.rbuf;
  const uint32_t gen = fs->gen.load(std::memory_order_acquire);  // pairs: fetch_add below
  const int n = static_cast<int>(fs->slots.size());
  // acq_rel: releases our slot; the last acquires every slot (one release sequence).
  if (fs->arrived.fetch_add(1, std::memory_order_acq_rel) == n - 1) {
    // A helper team's waiting members take chunks of a large combine (runtime/team.h),
    // as on the engine's path; the reference keeps the team while they may run them.
    OpArgs la = a;
    if (a.ti.size * a.count > kFastBytes && (la.team = runtime::current_team()) != nullptr) {
      la.team->ref();
    }
    fs->err = fast_last(c, fs, la);
    if (la.team != nullptr) la.team->unref();
    *err = fs->err;
    fs->arrived.store(0, std::memory_order_relaxed);  // published by the fetch_add below
    fs->gen.fetch_add(1, std::memory_order_release);  // publishes outputs, err, the reset
    fs->released.notify();
    return true;
  }
  // acquire: pairs with the last arrival's release increment.
  runtime::wait_until(
      fs->released, [fs, gen] { return fs->gen.load(std::memory_order_acquire) != gen; },
      runtime::Drive::kNo, runtime::Crowd::kYes);
  *err = fs->err;
  return true;
}

}  // namespace ep::collectives
