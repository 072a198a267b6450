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
void* combine_target(const std::vector<const void*>& xs, const std::vector<void*>& outs,
                     FastScratch& scratch) {
  if (outs.size() == 1) return outs[0];
  for (size_t i = 0; i < outs.size(); ++i) {
    if (xs[i] != outs[i]) return outs[i];
  }
  return scratch.get();  // every endpoint passed EP_IN_PLACE
}

// The ring (large, on pcomm): combines the inputs `xs`, exchanges and writes every
// output but `acc`.  Returns an EP_* code.
int run_ring(CommShared* c, FastState* fs, const std::vector<const void*>& xs, void* acc,
             const std::vector<void*>& all_outs, const OpArgs& a) {
  const int nfrag = static_cast<int>(c->frag_leaders.size());
  std::vector<void*> outs;
  for (void* o : all_outs) {
    if (o != acc) outs.push_back(o);
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

// The fast way, on the last arrival: every slot has arrived; `a` describes them.
// Returns an EP_* code.
int fast_last(CommShared* c, FastState* fs, const OpArgs& a) {
  const int nfrag = static_cast<int>(c->frag_leaders.size());
  if (nfrag > 1 && !fs->pcomm_tried) make_pcomm(c, fs);
  // The inputs and outputs of the endpoints that are not holes.
  std::vector<const void*> xs;
  std::vector<void*> outs;
  for (const FastState::Slot& s : fs->slots) {
    if (s.part->hole) continue;
    xs.push_back(input_of(*s.part));
    outs.push_back(s.part->rbuf);
  }
  FastScratch scratch(a), tmp(a);
  if (outs.empty()) {
    // A fragment of holes that knows the arguments adds zeros (what a hole contributes
    // is unspecified) so that the other fragments' exchange goes on.
    void* z = scratch.get();
    unpack_n(std::string(static_cast<size_t>(a.ti.size * a.count), '\0'), z, a.count, a.ti);
    xs.push_back(z);
  }
  void* acc = outs.empty() ? tmp.get() : combine_target(xs, outs, scratch);  // partial, result
  const bool ring = nfrag > 1 && fs->pcomm != MPI_COMM_NULL && a.ti.size * a.count > kFastBytes;
  if (ring) return run_ring(c, fs, xs, acc, outs, a);
  const void* in = xs[0];
  if (xs.size() > 1) {
    reduce_all(xs, acc, a.count, a);
    in = acc;
  }
  int err = EP_SUCCESS;
  if (nfrag > 1 && fs->pcomm != MPI_COMM_NULL) {
    if (in != acc) copy_n(in, acc, a.count, a);
    FastScratch other(a);
    err = runtime::from_mpi(exchange(fs->pcomm, c->my_frag, nfrag, acc, other.get(), a));
  } else if (nfrag > 1) {
    FastScratch other(a);
    run_fallback(c, in, acc, other, a);
  } else if (in != acc) {
    copy_n(in, acc, a.count, a);
  }
  for (void* o : outs) {
    if (o != acc) copy_n(acc, o, a.count, a);
  }
  return err;
}

// The engine way, on the last arrival: the engine's operation for every endpoint of the
// fragment (each endpoint's arrival as if it had called start), then a wait for all of
// them.  Returns the code of an endpoint that is not a hole (EP_SUCCESS if all are).
int engine_last(CommShared* c, FastState* fs, const OpArgs& a) {
  const size_t n = fs->slots.size();
  std::vector<Request*> reqs(n);
  for (size_t i = 0; i < n; ++i) {
    const FastState::Slot& s = fs->slots[i];
    reqs[i] = start(c->local[i].get(), Kind::kAllreduce, *s.part, s.part->knows == Knows::kAll ? *s.args : a);
  }
  int err = EP_SUCCESS;
  for (size_t i = 0; i < n; ++i) {
    runtime::request_wait(reqs[i]);
    if (!fs->slots[i].part->hole) {
      if (err == EP_SUCCESS) err = reqs[i]->status.EP_ERROR;
      if (reqs[i]->mpi_error != MPI_SUCCESS) {
        err = runtime::report_mpi_failure(reqs[i], "EP_Allreduce");
      }
    }
    runtime::request_unref(reqs[i]);
  }
  return err;
}

// The last arrival's work: every slot has arrived.  Returns an EP_* code.
int run_last(CommShared* c, FastState* fs, runtime::Team* team) {
  const OpArgs* informed = nullptr;
  for (const FastState::Slot& s : fs->slots) {
    if (s.part->knows == Knows::kAll) {
      informed = s.args;
      break;
    }
  }
  // A fragment of holes that knows nothing skips the exchange (engine.h).
  if (informed == nullptr) return EP_SUCCESS;
  const OpArgs& a = *informed;
  if (!predefined_op(a.op) || (a.ti.size * a.count > kFastBytes && !a.ti.contiguous)) {
    return engine_last(c, fs, a);
  }
  // A helper team's waiting members take chunks of a large combine (runtime/team.h), as
  // on the engine's path; the reference keeps the team while they may run them.
  OpArgs la = a;
  if (a.ti.size * a.count > kFastBytes && (la.team = team) != nullptr) la.team->ref();
  const int err = fast_last(c, fs, la);
  if (la.team != nullptr) la.team->unref();
  return err;
}

}  // namespace

bool run_fast(Endpoint* ep, Kind kind, const Part& part, const OpArgs& a, int* err) {
  // Barriers and intercommunicators stay on the engine's path (fast.h).
  if (kind != Kind::kAllreduce || ep->comm->inter) return false;
  CommShared* c = ep->comm;
  FastState* fs = fast_state(c);
  FastState::Slot& slot = fs->slots[static_cast<size_t>(ep->local_index)];
  slot.part = &part;
  slot.args = &a;
  const uint32_t gen = fs->gen.load(std::memory_order_acquire);  // pairs: fetch_add below
  const int n = static_cast<int>(fs->slots.size());
  // acq_rel: releases our slot; the last acquires every slot (one release sequence).
  if (fs->arrived.fetch_add(1, std::memory_order_acq_rel) == n - 1) {
    fs->err = run_last(c, fs, runtime::current_team());
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
