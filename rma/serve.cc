// serve.cc - the packet handler: serves one-sided packets (rma/wire.h) at the target,
// and counts their replies at the origin.  Runs on the progress-baton holder, one
// packet at a time per pass; every access to a Win ends before the reply that lets its
// origin go on is submitted (see "Lifetime" in rma/window.h).
#include <cstdlib>
#include <cstring>
#include <shared_mutex>

#include "rma/layout.h"
#include "rma/lock.h"
#include "rma/table.h"
#include "rma/window.h"
#include "rma/wire.h"
#include "runtime/transport.h"

namespace ep::rma {
namespace {

// Where a block offset points: from the window base (0 for a dynamic window, whose
// offsets are addresses).
inline char* at(uintptr_t base, int64_t off) {
  return reinterpret_cast<char*>(base + static_cast<uintptr_t>(off));
}

// Applies `stream` (the chunk's payload) to the blocks, consuming it in order.
void apply_blocks(uintptr_t base, const WireBlock* blocks, uint32_t n, const char* stream,
                  uint8_t op, MPI_Datatype basic, MPI_Op mpi_op, int64_t elem) {
  for (uint32_t i = 0; i < n; ++i) {
    char* dst = at(base, blocks[i].off);
    if (op == kPut) {
      std::memcpy(dst, stream, static_cast<size_t>(blocks[i].len));
    } else {
      reduce(stream, dst, blocks[i].len / elem, basic, mpi_op);
    }
    stream += blocks[i].len;
  }
}

void read_blocks(uintptr_t base, const WireBlock* blocks, uint32_t n, char* out) {
  for (uint32_t i = 0; i < n; ++i) {
    std::memcpy(out, at(base, blocks[i].off), static_cast<size_t>(blocks[i].len));
    out += blocks[i].len;
  }
}

// A dynamic window's blocks must all lie in attached regions (caller holds regions_mu).
bool blocks_attached(const Win* w, const WireBlock* blocks, uint32_t n) {
  if (w->flavor != Flavor::kDynamic) return true;
  for (uint32_t i = 0; i < n; ++i) {
    if (!attached(w, static_cast<uintptr_t>(blocks[i].off), static_cast<uint64_t>(blocks[i].len))) {
      return false;
    }
  }
  return true;
}

// kPut, kAcc: writes the payload into the window, then acks.  A dynamic window's
// regions stay attached meanwhile (shared lock; see Win::regions_mu).
void serve_write(Win* w, int src_proc, const RmaHeader& h, const WireBlock* blocks,
                 const char* payload) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(w->base);
  bool ok = true;
  {
    std::shared_lock<std::shared_mutex> regions(w->regions_mu, std::defer_lock);
    if (w->flavor == Flavor::kDynamic) regions.lock();
    ok = blocks_attached(w, blocks, h.nblocks);
    if (ok && h.op == kAcc) {
      AccGuard g(w->acc_lock);
      apply_blocks(base, blocks, h.nblocks, payload, h.op, h.basic, h.mpi_op, h.elem);
    } else if (ok) {
      apply_blocks(base, blocks, h.nblocks, payload, h.op, h.basic, h.mpi_op, h.elem);
    }
  }
  reply(src_proc, h.reply_id, kAck, h.origin_target, /*in_pass=*/true, /*range_error=*/!ok);
}

// kGetAcc, kCas under the accumulate lock: reads the old contents into `out`, then
// combines or swaps.
void read_modify(Win* w, const RmaHeader& h, const WireBlock* blocks, const char* payload,
                 char* out) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(w->base);
  AccGuard g(w->acc_lock);
  read_blocks(base, blocks, h.nblocks, out);
  if (h.op == kGetAcc) {
    if (h.mpi_op != MPI_NO_OP) {
      apply_blocks(base, blocks, h.nblocks, payload, kAcc, h.basic, h.mpi_op, h.elem);
    }
  } else if (std::memcmp(out, payload + h.elem, static_cast<size_t>(h.elem)) == 0) {
    std::memcpy(at(base, blocks[0].off), payload, static_cast<size_t>(h.elem));
  }
}

// kGet, kGetAcc, kCas: answers with the blocks' old contents (kData); the accumulate
// family then combines or swaps under the accumulate lock.  Blocks of a dynamic window
// that are not all attached: a kData without payload and with range_error.
void serve_read(Win* w, int src_proc, const RmaHeader& h, const WireBlock* blocks,
                const char* payload) {
  std::shared_lock<std::shared_mutex> regions(w->regions_mu, std::defer_lock);
  if (w->flavor == Flavor::kDynamic) regions.lock();
  const bool ok = blocks_attached(w, blocks, h.nblocks);
  int64_t bytes = 0;
  for (uint32_t i = 0; ok && i < h.nblocks; ++i) bytes += blocks[i].len;
  RmaHeader* r;
  size_t len;
  char* p = new_packet(h.reply_id, kData, 0, bytes, &r, &len);
  r->origin_target = h.origin_target;
  r->pos = h.pos;
  r->cookie = h.cookie;
  r->range_error = !ok;
  char* out = payload_of(p, 0);
  if (ok && h.op == kGet) {
    read_blocks(reinterpret_cast<uintptr_t>(w->base), blocks, h.nblocks, out);
  } else if (ok) {
    read_modify(w, h, blocks, payload, out);
  }
  if (regions.owns_lock()) regions.unlock();
  runtime::send_packet_from_pass(src_proc, p, len);
}

// kLock: grants now (kGrant) or queues the request (lock_release grants it later).
void serve_lock(Win* w, int src_proc, const RmaHeader& h) {
  LockWaiter req;
  req.exclusive = h.exclusive != 0;
  req.proc = src_proc;
  req.reply_id = h.reply_id;
  req.origin_target = h.origin_target;
  if (lock_request(w, req)) reply(src_proc, h.reply_id, kGrant, h.origin_target);
}

// Replies, at the origin.  The window outlives the pass (win_free deletes it in a later
// one), so the notify may follow the increment its waiter looks for.
void count_reply(Win* w, const RmaHeader& h, const char* payload) {
  switch (h.op) {
    case kAck:
      if (h.range_error)
        w->remote_error[h.origin_target].store(EP_ERR_RMA_RANGE, std::memory_order_relaxed);
      w->acked[h.origin_target].fetch_add(1, std::memory_order_release);  // pairs: wait_acked
      break;
    case kGrant:
      w->grants.fetch_add(1, std::memory_order_release);  // pairs: the wait in win_lock*
      break;
    case kData: {
      auto* pend = reinterpret_cast<Pending*>(h.cookie);
      runtime::Request* done = nullptr;
      if (h.range_error) {
        w->remote_error[h.origin_target].store(EP_ERR_RMA_RANGE, std::memory_order_relaxed);
      } else {
        scatter(pend->rbuf, pend->rl, h.pos, h.pos + h.bytes, payload);
      }
      if (--pend->remaining == 0) {
        done = pend->req;
        delete pend;
      }
      // release: pairs with the acquire loads in wait_acked / wait_reads_acked.
      w->acked_reads[h.origin_target].fetch_add(1, std::memory_order_release);
      w->acked[h.origin_target].fetch_add(1, std::memory_order_release);
      if (done != nullptr) runtime::request_complete(done);  // the data is in rbuf
      break;
    }
    default:
      return;
  }
  w->event.notify();
}

void serve(Win* w, int src_proc, const RmaHeader& h, const WireBlock* blocks, const char* payload) {
  switch (h.op) {
    case kPut:
    case kAcc:
      serve_write(w, src_proc, h, blocks, payload);
      return;
    case kGet:
    case kGetAcc:
    case kCas:
      serve_read(w, src_proc, h, blocks, payload);
      return;
    case kLock:
      serve_lock(w, src_proc, h);
      return;
    case kUnlock:
      lock_release(w, h.exclusive != 0, /*in_pass=*/true);
      reply(src_proc, h.reply_id, kAck, h.origin_target);
      return;
    default:
      count_reply(w, h, payload);
      return;
  }
}

// The RMA sink (runtime/transport.h): drops a packet that is truncated or addresses no
// window of this process.
void on_rma_packet(int src_proc, char* block, size_t len) {
  char* p = block + runtime::kPacketHeadroom;
  RmaHeader h;
  Win* w = nullptr;
  if (len >= sizeof(RmaHeader)) {
    std::memcpy(&h, p, sizeof(h));
    if (len >= sizeof(RmaHeader) + h.nblocks * sizeof(WireBlock) + static_cast<size_t>(h.bytes)) {
      w = table().find(h.wire.ctx);
    }
  }
  if (w != nullptr) serve(w, src_proc, h, blocks_of(p), payload_of(p, h.nblocks));
  std::free(block);
}

}  // namespace

void rma_init() {
  // release: pairs with the acquire load in Runtime::on_packet.
  runtime::set_rma_sink(&on_rma_packet);
}

}  // namespace ep::rma
