// ops.cc - the operations at the origin (rma_op): the checks that need the window,
// then one of three paths chosen by what the origin thread can reach (rma/window.h):
// the target's memory itself (run_direct), cross-memory attach (run_cma), or packets to
// the target's handler (run_remote).  Runs on the origin endpoint's thread.
#include <sys/types.h>

#include <algorithm>
#include <cstring>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "rma/layout.h"
#include "rma/lock.h"
#include "rma/segment.h"
#include "rma/window.h"
#include "rma/wire.h"
#include "runtime/error.h"
#include "runtime/runtime.h"
#include "runtime/transport.h"

namespace ep::rma {
namespace {

using runtime::fail;

// ---- checks -------------------------------------------------------------------------

bool in_epoch(const Win* w, int t) {
  return w->fence_open || w->lock_all || w->locked[t] != 0 || (w->started && w->in_start[t] != 0);
}
bool in_passive_epoch(const Win* w, int t) { return w->lock_all || w->locked[t] != 0; }

int check_layout(int count, MPI_Datatype type, Layout* l, const char* call, const char* arg) {
  const char* why = "";
  if (!layout_of(count, type, l, &why)) return fail(EP_ERR_TYPE, call, "%s %s", arg, why);
  return EP_SUCCESS;
}

int check_basic(const Layout& l, const Layout& tl, MPI_Op op, const char* call, const char* arg) {
  if (l.bytes == 0) return EP_SUCCESS;
  if (l.basic == MPI_DATATYPE_NULL || l.basic != tl.basic) {
    return fail(EP_ERR_TYPE, call,
                "%s and target_datatype must be built from one and the same predefined type "
                "for accumulate operations",
                arg);
  }
  if (!op_allows(op, l.basic)) {
    return fail(EP_ERR_OP, call, "the op is not defined on the element type of %s", arg);
  }
  return EP_SUCCESS;
}

// The target rank exists and an access epoch to it is open.
int check_target(const Win* w, const OpArgs& a, const char* call) {
  const int n = static_cast<int>(w->targets.size());
  if (a.target < 0 || a.target >= n) {
    return fail(EP_ERR_RANK, call, "target_rank %d is not a rank of the window (size %d)", a.target,
                n);
  }
  if (!in_epoch(w, a.target)) {
    return fail(EP_ERR_RMA_SYNC, call,
                "no access epoch to target %d is open (call EP_Win_fence, EP_Win_start, "
                "EP_Win_lock or EP_Win_lock_all first)",
                a.target);
  }
  return EP_SUCCESS;
}

// The origin buffer: its layout (*ol), its length against the target's, its elements.
int check_origin(const OpArgs& a, const Layout& tl, Layout* ol, const char* call) {
  int err = check_layout(a.ocount, a.otype, ol, call, "origin_datatype");
  if (err != EP_SUCCESS) return err;
  if (ol->bytes != tl.bytes) {
    return fail(EP_ERR_COUNT, call,
                "the origin buffer holds %lld bytes but the target buffer %lld (type "
                "signatures must match)",
                static_cast<long long>(ol->bytes), static_cast<long long>(tl.bytes));
  }
  if (a.accumulate()) return check_basic(*ol, tl, a.op, call, "origin_datatype");
  return EP_SUCCESS;
}

// The buffer that receives data (get: the origin buffer; else the result buffer).
int check_result(const OpArgs& a, const Layout& tl, Layout* rl, const char* call) {
  int err = check_layout(a.rcount, a.rtype, rl, call,
                         a.kind == OpKind::kGet ? "origin_datatype" : "result_datatype");
  if (err != EP_SUCCESS) return err;
  if (rl->bytes != tl.bytes) {
    return fail(EP_ERR_COUNT, call,
                "the %s buffer holds %lld bytes but the target buffer %lld (type signatures "
                "must match)",
                a.kind == OpKind::kGet ? "origin" : "result", static_cast<long long>(rl->bytes),
                static_cast<long long>(tl.bytes));
  }
  if (a.accumulate()) return check_basic(*rl, tl, MPI_NO_OP, call, "result_datatype");
  return EP_SUCCESS;
}

// The bytes touched lie inside the target's window (a dynamic window's regions are
// checked where the access happens: rma_op, or the target's handler).
int check_range(const Win* w, const OpArgs& a, const Layout& tl, const char* call) {
  const Target& t = w->targets[a.target];
  if (a.tdisp < 0) {
    return fail(EP_ERR_RMA_RANGE, call, "target_disp %lld is negative",
                static_cast<long long>(a.tdisp));
  }
  if (tl.bytes > 0 && w->flavor != Flavor::kDynamic) {
    const int64_t off = static_cast<int64_t>(a.tdisp) * t.disp_unit;
    if (off + tl.lo < 0 || off + tl.hi > t.size) {
      return fail(EP_ERR_RMA_RANGE, call,
                  "bytes [%lld, %lld) are outside target %d's window of %lld bytes "
                  "(target_disp %lld x disp_unit %d)",
                  static_cast<long long>(off + tl.lo), static_cast<long long>(off + tl.hi),
                  a.target, static_cast<long long>(t.size), static_cast<long long>(a.tdisp),
                  t.disp_unit);
    }
  }
  return EP_SUCCESS;
}

// Checks everything that needs the window; fills the layouts.
int check_op(const Win* w, const OpArgs& a, Layout* ol, Layout* rl, Layout* tl, const char* call) {
  int err = check_target(w, a, call);
  if (err != EP_SUCCESS) return err;
  err = check_layout(a.tcount, a.ttype, tl, call, "target_datatype");
  if (err != EP_SUCCESS) return err;
  const bool accumulate = a.accumulate();
  if (accumulate && !is_predefined_op(a.op)) {
    return fail(EP_ERR_OP, call,
                "op must be a predefined MPI_Op or MPI_REPLACE/MPI_NO_OP (MPI forbids "
                "user-defined ops in one-sided operations)");
  }
  if (a.has_origin()) {
    err = check_origin(a, *tl, ol, call);
    if (err != EP_SUCCESS) return err;
  }
  if (a.has_result()) {
    err = check_result(a, *tl, rl, call);
    if (err != EP_SUCCESS) return err;
  }
  if (accumulate && tl->bytes > 0) {
    err = check_basic(*tl, *tl, a.op, call, "target_datatype");
    if (err != EP_SUCCESS) return err;
  }
  if (a.kind == OpKind::kCas && !cas_allows(tl->basic)) {
    return fail(EP_ERR_TYPE, call,
                "EP_Compare_and_swap needs an integer, logical or byte datatype");
  }
  return check_range(w, a, *tl, call);
}

// ---- the three paths ----------------------------------------------------------------

// The operation on memory this thread can address - a window of this process, or a
// mapped segment of another process of the node - done by the calling thread.
// `base` is the target address (window base + displacement).
void run_direct(char* base, std::atomic<uint32_t>* acc_lock, const OpArgs& a, const Layout& ol,
                const Layout& rl, const Layout& tl) {
  switch (a.kind) {
    case OpKind::kPut:
      copy(static_cast<const char*>(a.obuf), ol, base, tl);
      return;
    case OpKind::kGet:
      copy(base, tl, static_cast<char*>(a.rbuf), rl);
      return;
    default:
      break;
  }
  std::string in;
  if (a.has_origin()) {
    in.resize(static_cast<size_t>(ol.bytes));
    gather(static_cast<const char*>(a.obuf), ol, 0, ol.bytes, in.data());
  }
  AccGuard g(acc_lock);
  if (a.kind != OpKind::kAcc) {
    std::string old(static_cast<size_t>(tl.bytes), '\0');
    gather(base, tl, 0, tl.bytes, old.data());
    scatter(static_cast<char*>(a.rbuf), rl, 0, rl.bytes, old.data());
    if (a.kind == OpKind::kCas) {
      if (std::memcmp(old.data(), a.cbuf, static_cast<size_t>(tl.elem)) == 0) {
        scatter(base, tl, 0, tl.bytes, in.data());
      }
      return;
    }
    if (a.op == MPI_NO_OP) return;
  }
  std::vector<Block> ps;
  pieces(tl, 0, tl.bytes, &ps);
  for (const Block& p : ps)
    reduce(in.data() + p.pos, base + p.off, p.len / tl.elem, tl.basic, a.op);
}

// The operation on another process's EP_Win_create window by cross-memory attach
// (rma/segment.h): put and get are one copy; the accumulate family reads, combines here
// and writes back under the target's accumulate lock (mapped from its segment).  False
// if the kernel refused before anything changed (then handler calls do it).
bool run_cma(Target& t, int64_t off, const OpArgs& a, const Layout& ol, const Layout& rl,
             const Layout& tl) {
  std::string in;  // the origin's stream
  const bool has_origin = a.has_origin();
  if (has_origin) {
    if (a.kind == OpKind::kPut && ol.blocks.size() == 1) {
      char* src = const_cast<char*>(static_cast<const char*>(a.obuf)) + ol.blocks[0].off;
      return cma_copy(t, off, tl, src, true);
    }
    in.resize(static_cast<size_t>(ol.bytes));
    gather(static_cast<const char*>(a.obuf), ol, 0, ol.bytes, in.data());
    if (a.kind == OpKind::kPut) return cma_copy(t, off, tl, in.data(), true);
  }
  if (a.kind == OpKind::kGet) {
    char* dst = static_cast<char*>(a.rbuf);
    if (rl.blocks.size() == 1) return cma_copy(t, off, tl, dst + rl.blocks[0].off, false);
    std::string got(static_cast<size_t>(tl.bytes), '\0');
    if (!cma_copy(t, off, tl, got.data(), false)) return false;
    scatter(dst, rl, 0, rl.bytes, got.data());
    return true;
  }
  std::string old(static_cast<size_t>(tl.bytes), '\0');
  AccGuard g(t.mapped_lock);
  if (!cma_copy(t, off, tl, old.data(), false)) return false;
  if (a.kind != OpKind::kAcc) scatter(static_cast<char*>(a.rbuf), rl, 0, rl.bytes, old.data());
  if (a.kind == OpKind::kCas) {
    if (std::memcmp(old.data(), a.cbuf, static_cast<size_t>(tl.elem)) == 0) {
      cma_copy(t, off, tl, in.data(), true);
    }
    return true;
  }
  if (!has_origin) return true;  // MPI_NO_OP: an atomic read
  reduce_stream(in.data(), old.data(), tl.bytes, tl.elem, tl.basic, a.op);
  cma_copy(t, off, tl, old.data(), true);
  return true;
}

// The payload limit of a chunk: EP_EAGER_LIMIT (at least 4096) within the packet bound,
// in whole elements of `elem` bytes.
int64_t chunk_limit(int64_t elem) {
  int64_t limit = std::min<int64_t>(std::max<int64_t>(runtime::runtime()->config.eager_limit, 4096),
                                    kMaxChunkPayload);
  limit -= limit % elem;
  return limit == 0 ? elem : limit;
}

// Cuts [0, tl.bytes) into chunks: at most `limit` payload bytes (whole elements) and
// kMaxBlocksPerChunk blocks each.
std::vector<std::pair<int64_t, int64_t>> chunks_of(const Layout& tl, int64_t limit) {
  std::vector<std::pair<int64_t, int64_t>> out;
  std::vector<Block> ps;
  for (int64_t a = 0; a < tl.bytes;) {
    int64_t b = std::min(tl.bytes, a + limit);
    ps.clear();
    pieces(tl, a, b, &ps);
    if (ps.size() > kMaxBlocksPerChunk)
      b = ps[kMaxBlocksPerChunk - 1].pos + ps[kMaxBlocksPerChunk - 1].len;
    out.emplace_back(a, b);
    a = b;
  }
  return out;
}

// The operation as handler calls: one packet per chunk of the target's stream, each
// counted in w->issued and answered by one reply (rma/wire.h).
void run_remote(Win* w, const Target& t, int64_t off, const OpArgs& a, const Layout& ol,
                const Layout& rl, const Layout& tl, runtime::Request* req) {
  static constexpr uint8_t kOps[] = {kPut, kGet, kAcc, kGetAcc, kCas};
  const uint8_t op = kOps[static_cast<int>(a.kind)];
  const int64_t elem = (a.kind == OpKind::kPut || a.kind == OpKind::kGet) ? 1 : tl.elem;
  auto chunks = chunks_of(tl, chunk_limit(elem));
  Pending* pend = nullptr;
  if (a.has_result()) {
    pend = new Pending;
    pend->rbuf = static_cast<char*>(a.rbuf);
    pend->rl = rl;
    pend->remaining = static_cast<int>(chunks.size());
    pend->req = req;
    w->issued_reads[a.target] += chunks.size();
  }
  const bool carries_origin = a.has_origin();
  std::vector<Block> ps;
  for (const auto& [lo, hi] : chunks) {
    ps.clear();
    pieces(tl, lo, hi, &ps);
    int64_t payload = carries_origin ? (hi - lo) : 0;
    if (a.kind == OpKind::kCas) payload = 2 * elem;
    RmaHeader* h;
    size_t len;
    char* p = new_packet(t.id, op, static_cast<uint32_t>(ps.size()), payload, &h, &len);
    h->origin_target = a.target;
    h->reply_id = w->id;
    h->basic = tl.basic;
    h->mpi_op = a.op;
    h->elem = static_cast<int32_t>(elem);
    h->pos = lo;
    h->cookie = reinterpret_cast<uint64_t>(pend);
    WireBlock* wb = blocks_of(p);
    for (size_t i = 0; i < ps.size(); ++i) wb[i] = WireBlock{off + ps[i].off, ps[i].len};
    char* data = payload_of(p, h->nblocks);
    if (a.kind == OpKind::kCas) {
      gather(static_cast<const char*>(a.obuf), ol, 0, elem, data);
      std::memcpy(data + elem, a.cbuf, static_cast<size_t>(elem));
    } else if (carries_origin) {
      gather(static_cast<const char*>(a.obuf), ol, lo, hi, data);
    }
    ++w->issued[a.target];
    runtime::send_packet(t.proc, p, len);
  }
}

// A request-based operation needs a passive-target epoch (API.md); PROC_NULL: any.
int check_request_epoch(const Win* w, int target, const char* call) {
  const bool ok = target == kProcNull
                      ? (w->lock_all || w->nlocked > 0)
                      : (target < 0 || target >= static_cast<int>(w->targets.size()) ||
                         in_passive_epoch(w, target));
  if (ok) return EP_SUCCESS;
  return fail(EP_ERR_RMA_SYNC, call,
              "request-based operations need a passive-target epoch (EP_Win_lock or "
              "EP_Win_lock_all) to target %d",
              target);
}

// The request of a remote operation whose result travels: completed by the last reply.
runtime::Request* travelling_request(const Win* w) {
  runtime::Request* r = runtime::request_new(runtime::RequestKind::kRma, /*user_handle=*/true);
  r->needs_engine = true;  // the replies are packets: a waiter drives the engine
  runtime::errhandler_assign(&r->errhandler, w->errhandler);
  return r;
}

// A dynamic window's target of this process: the range check and the access under the
// target's shared region lock, so that a detach waits for it.
int run_dynamic_local(Win* target, const OpArgs& a, const Layout& ol, const Layout& rl,
                      const Layout& tl, const char* call) {
  const uintptr_t addr = static_cast<uintptr_t>(a.tdisp);
  std::shared_lock<std::shared_mutex> g(target->regions_mu);
  if (!attached(target, addr + static_cast<uintptr_t>(tl.lo),
                static_cast<uint64_t>(tl.hi - tl.lo))) {
    return fail(EP_ERR_RMA_RANGE, call,
                "bytes [%#llx, %#llx) of target %d are not inside one attached region",
                static_cast<unsigned long long>(addr + tl.lo),
                static_cast<unsigned long long>(addr + tl.hi), a.target);
  }
  run_direct(reinterpret_cast<char*>(addr), target->acc_lock, a, ol, rl, tl);
  return EP_SUCCESS;
}

// A dynamic window's target of another process of this node: the range check in its
// published regions, then a cross-memory copy (*done).  Not done (no error): the
// target's handler must serve it (no node path, an overflowed table, a refused copy).
int run_dynamic_node(Target& t, const OpArgs& a, const Layout& ol, const Layout& rl,
                     const Layout& tl, bool* done, const char* call) {
  *done = false;
  if (t.regions == nullptr || t.cma_pid == 0) return EP_SUCCESS;
  const uintptr_t addr = static_cast<uintptr_t>(a.tdisp);
  const int in = attached_published(t.regions, addr + static_cast<uintptr_t>(tl.lo),
                                    static_cast<uint64_t>(tl.hi - tl.lo));
  if (in == 0) {
    return fail(EP_ERR_RMA_RANGE, call,
                "bytes [%#llx, %#llx) of target %d are not inside one attached region",
                static_cast<unsigned long long>(addr + tl.lo),
                static_cast<unsigned long long>(addr + tl.hi), a.target);
  }
  *done = in == 1 && run_cma(t, static_cast<int64_t>(a.tdisp), a, ol, rl, tl);
  return EP_SUCCESS;
}

}  // namespace

int rma_op(Win* w, const OpArgs& a, const char* call, runtime::Request** req) {
  if (req != nullptr) {
    int err = check_request_epoch(w, a.target, call);
    if (err != EP_SUCCESS) return err;
    *req = runtime::completed_send_request();  // replaced below if the result travels
  }
  if (a.target == kProcNull) {
    if (!w->fence_open && !w->lock_all && w->nlocked == 0 && !w->started) {
      return fail(EP_ERR_RMA_SYNC, call, "no access epoch is open");
    }
    return EP_SUCCESS;
  }
  Layout ol, rl, tl;
  int err = check_op(w, a, &ol, &rl, &tl, call);
  if (err != EP_SUCCESS || tl.bytes == 0) return err;
  Target& t = w->targets[a.target];
  const int64_t off = static_cast<int64_t>(a.tdisp) * t.disp_unit;
  const bool copy_only = a.kind == OpKind::kPut || a.kind == OpKind::kGet;
  if (w->flavor == Flavor::kDynamic) {
    if (t.local != nullptr) return run_dynamic_local(t.local, a, ol, rl, tl, call);
    bool done = false;
    err = run_dynamic_node(t, a, ol, rl, tl, &done, call);
    if (err != EP_SUCCESS || done) return err;
  } else if (t.local != nullptr) {
    run_direct(t.local->base + off, t.local->acc_lock, a, ol, rl, tl);
    return EP_SUCCESS;
  } else if (t.mapped != nullptr) {
    run_direct(t.mapped + off, t.mapped_lock, a, ol, rl, tl);
    return EP_SUCCESS;
  } else if (t.cma_pid != 0 && (copy_only || t.mapped_lock != nullptr) &&
             run_cma(t, off, a, ol, rl, tl)) {
    return EP_SUCCESS;  // a kernel copy, complete now
  }
  runtime::Request* r = nullptr;
  if (req != nullptr && a.has_result()) *req = r = travelling_request(w);
  run_remote(w, t, off, a, ol, rl, tl, r);
  return EP_SUCCESS;
}

}  // namespace ep::rma
