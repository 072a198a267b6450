#include "rma/window.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <new>
#include <random>
#include <string>
#include <unordered_map>

#include "runtime/error.h"
#include "runtime/exchange.h"
#include "runtime/runtime.h"
#include "runtime/transport.h"
#include "runtime/wait.h"

namespace ep::rma {
namespace {

using runtime::Endpoint;
using runtime::fail;
using runtime::runtime;
using runtime::WireHeader;

// Packet kinds (see "Between processes" in window.h).
enum Op : uint8_t { kPut = 1, kAcc, kGet, kGetAcc, kCas, kLock, kUnlock, kAck, kData, kGrant };

// Follows the runtime's WireHeader.  MPI handles of predefined types and ops travel
// as they are: MPICH's are compile-time constants, equal in every process of a job.
static_assert(sizeof(MPI_Datatype) == sizeof(int32_t) && sizeof(MPI_Op) == sizeof(int32_t),
              "predefined MPI handles are sent as 32-bit integers");
struct alignas(16) RmaHeader {
  WireHeader wire;  // kind kRma; ctx: the destination window id
  uint8_t op = 0;
  uint8_t exclusive = 0;                   // kLock/kUnlock
  int32_t origin_target = 0;               // the target's rank as the origin numbers it (echoed)
  uint32_t reply_id = 0;                   // the origin's window id (replies go there)
  MPI_Datatype basic = MPI_DATATYPE_NULL;  // accumulate family: element type
  MPI_Op mpi_op = MPI_OP_NULL;
  int32_t elem = 1;      // stream bytes per element
  uint32_t nblocks = 0;  // WireBlocks following the header
  int64_t pos = 0;       // stream position of this chunk (echoed)
  int64_t bytes = 0;     // payload bytes following the blocks
  uint64_t cookie = 0;   // the origin's Pending* (echoed)
};
struct WireBlock {
  int64_t off;  // from the window base
  int64_t len;
};
static_assert(sizeof(WireBlock) == 16, "blocks keep the payload 16-byte aligned");

// An operation whose replies carry data (get, get_accumulate, compare_and_swap):
// where the data goes.  Created by the origin thread before the first chunk is sent
// (the engine's command queue publishes it); then touched only by baton holders, one
// at a time, and deleted by the one that handles the last chunk's reply.
struct Pending {
  char* rbuf = nullptr;
  Layout rl;
  int remaining = 0;
};

class WinTable {
 public:
  uint32_t add(Win* w) {
    std::lock_guard<std::mutex> g(mu_);
    uint32_t id = next_++;
    map_[id] = w;
    return id;
  }
  void remove(uint32_t id) {
    std::lock_guard<std::mutex> g(mu_);
    map_.erase(id);
  }
  Win* find(uint32_t id) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(id);
    return it == map_.end() ? nullptr : it->second;
  }

 private:
  std::mutex mu_;
  uint32_t next_ = 1;                       // guarded by mu_; ids are never reused
  std::unordered_map<uint32_t, Win*> map_;  // guarded by mu_
};

WinTable& table() {
  static WinTable t;
  return t;
}

constexpr uint32_t kMaxBlocksPerChunk = 4096;

// Holds a window's accumulate lock (see "Accumulate atomicity" in window.h).
class AccGuard {
 public:
  explicit AccGuard(std::atomic<uint32_t>* lock) : lock_(lock) {
    // acquire: pairs with the release store in the previous holder's destructor.
    for (int spins = 0; lock_->exchange(1, std::memory_order_acquire) != 0; ++spins) {
      if (spins < 64) {
        runtime::cpu_relax();
      } else {
        sched_yield();  // the holder may be descheduled (2 cores, many threads)
      }
    }
  }
  ~AccGuard() { lock_->store(0, std::memory_order_release); }
  AccGuard(const AccGuard&) = delete;
  AccGuard& operator=(const AccGuard&) = delete;

 private:
  std::atomic<uint32_t>* lock_;
};

// The shared segment's header (kSegHeader bytes in front of the window memory).
struct SegHeader {
  std::atomic<uint32_t> lock{0};
  uint64_t cookie = 0;  // random; proves a mapping is the segment it should be
};
static_assert(sizeof(SegHeader) <= kSegHeader, "the header fits");

// Identifies this node: processes with equal keys may map each other's segments
// (the cookie check catches a wrong guess).
uint64_t node_key() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string id(host);
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string line;
  if (std::getline(boot, line)) id += line;
  return std::hash<std::string>()(id);
}

// ---- packets ---------------------------------------------------------------------

char* new_packet(uint32_t dest_id, uint8_t op, uint32_t nblocks, int64_t payload, RmaHeader** h,
                 size_t* len) {
  *len = sizeof(RmaHeader) + nblocks * sizeof(WireBlock) + static_cast<size_t>(payload);
  char* p = static_cast<char*>(std::malloc(*len));
  *h = new (p) RmaHeader;
  (*h)->wire.ctx = dest_id;
  (*h)->wire.dst_local = 0;
  (*h)->wire.kind = WireHeader::kRma;
  (*h)->op = op;
  (*h)->nblocks = nblocks;
  (*h)->bytes = payload;
  return p;
}
WireBlock* blocks_of(char* p) { return reinterpret_cast<WireBlock*>(p + sizeof(RmaHeader)); }
char* payload_of(char* p, uint32_t nblocks) {
  return p + sizeof(RmaHeader) + nblocks * sizeof(WireBlock);
}

// From an origin thread.
void send_packet(int proc, char* p, size_t len) { runtime::send_packet(proc, p, len); }

// A reply without payload (kAck, kGrant) to an origin window.  `in_pass`: sent by the
// packet handler, which runs on the progress-baton holder and so may start it at once
// (Engine::submit_from_pass); other threads queue it.
void reply(int proc, uint32_t reply_id, uint8_t op, int32_t origin_target, bool in_pass = true) {
  RmaHeader* h;
  size_t len;
  char* p = new_packet(reply_id, op, 0, 0, &h, &len);
  h->origin_target = origin_target;
  if (in_pass) {
    runtime::send_packet_from_pass(proc, p, len);
  } else {
    send_packet(proc, p, len);
  }
}

// ---- waiting ------------------------------------------------------------------------

// Waits (runtime/wait.h) until `ready`, driving the engine while it spins: the replies
// it waits for are packets.  The reply handlers notify w->event after each increment.
template <class F>
void progress_until(Win* w, F&& ready) {
  runtime::wait_until(w->event, ready, runtime::Drive::kYes);
}

void wait_acked(Win* w, int t) {
  // acquire: pairs with the release increment in the reply handler.
  progress_until(w,
                 [w, t] { return w->acked[t].load(std::memory_order_acquire) == w->issued[t]; });
}

void wait_all_acked(Win* w) {
  for (size_t t = 0; t < w->targets.size(); ++t) {
    if (w->issued[t] != 0) wait_acked(w, static_cast<int>(t));
  }
}

// ---- passive-target locks (target side) -----------------------------------------

// Grants at once (true) or queues the request.
bool lock_request(Win* t, const LockWaiter& req) {
  std::lock_guard<std::mutex> g(t->lock_mu);
  bool free = req.exclusive ? (!t->lock_excl && t->lock_shared == 0) : !t->lock_excl;
  if (free && t->lock_waiters.empty()) {
    if (req.exclusive) {
      t->lock_excl = true;
    } else {
      ++t->lock_shared;
    }
    return true;
  }
  t->lock_waiters.push_back(req);
  return false;
}

// `in_pass`: called by the packet handler (the baton holder), which may send at once.
void notify_granted(const LockWaiter& g, bool in_pass) {
  if (g.proc < 0) {
    g.granted->set();  // wakes the waiter in lock_local (Flag: release)
  } else {
    reply(g.proc, g.reply_id, kGrant, g.origin_target, in_pass);
  }
}

void lock_release(Win* t, bool exclusive, bool in_pass) {
  std::vector<LockWaiter> granted;
  {
    std::lock_guard<std::mutex> g(t->lock_mu);
    if (exclusive) {
      t->lock_excl = false;
    } else if (t->lock_shared > 0) {
      --t->lock_shared;
    }
    while (!t->lock_waiters.empty()) {
      const LockWaiter& w = t->lock_waiters.front();
      if (t->lock_excl || (w.exclusive && t->lock_shared > 0)) break;
      if (w.exclusive) {
        t->lock_excl = true;
      } else {
        ++t->lock_shared;
      }
      granted.push_back(w);
      t->lock_waiters.pop_front();
      if (t->lock_excl) break;
    }
  }
  for (const LockWaiter& w : granted) notify_granted(w, in_pass);
}

// Takes the lock of a Win of this process for the calling thread.
void lock_local(Win* t, bool exclusive) {
  runtime::Flag granted;
  LockWaiter req;
  req.exclusive = exclusive;
  req.granted = &granted;
  if (lock_request(t, req)) return;
  runtime::wait_flag(granted, runtime::Drive::kYes);
}

// ---- applying operations to window memory -----------------------------------------

// Applies `stream` (the chunk's payload) to the blocks, consuming it in order.
void apply_blocks(char* base, const WireBlock* blocks, uint32_t n, const char* stream, uint8_t op,
                  MPI_Datatype basic, MPI_Op mpi_op, int64_t elem) {
  for (uint32_t i = 0; i < n; ++i) {
    char* dst = base + blocks[i].off;
    if (op == kPut) {
      std::memcpy(dst, stream, static_cast<size_t>(blocks[i].len));
    } else {
      reduce(stream, dst, blocks[i].len / elem, basic, mpi_op);
    }
    stream += blocks[i].len;
  }
}

void read_blocks(const char* base, const WireBlock* blocks, uint32_t n, char* out) {
  for (uint32_t i = 0; i < n; ++i) {
    std::memcpy(out, base + blocks[i].off, static_cast<size_t>(blocks[i].len));
    out += blocks[i].len;
  }
}

// ---- the packet handler (runs on the progress-baton holder) ------------------------

void serve(Win* w, int src_proc, const RmaHeader& h, const WireBlock* blocks, const char* payload) {
  switch (h.op) {
    case kPut:
    case kAcc: {
      if (h.op == kAcc) {
        AccGuard g(w->acc_lock);
        apply_blocks(w->base, blocks, h.nblocks, payload, h.op, h.basic, h.mpi_op, h.elem);
      } else {
        apply_blocks(w->base, blocks, h.nblocks, payload, h.op, h.basic, h.mpi_op, h.elem);
      }
      reply(src_proc, h.reply_id, kAck, h.origin_target);
      return;
    }
    case kGet:
    case kGetAcc:
    case kCas: {
      int64_t bytes = 0;
      for (uint32_t i = 0; i < h.nblocks; ++i) bytes += blocks[i].len;
      RmaHeader* r;
      size_t len;
      char* p = new_packet(h.reply_id, kData, 0, bytes, &r, &len);
      r->origin_target = h.origin_target;
      r->pos = h.pos;
      r->cookie = h.cookie;
      char* out = payload_of(p, 0);
      if (h.op == kGet) {
        read_blocks(w->base, blocks, h.nblocks, out);
      } else {
        AccGuard g(w->acc_lock);
        read_blocks(w->base, blocks, h.nblocks, out);
        if (h.op == kGetAcc) {
          if (h.mpi_op != MPI_NO_OP) {
            apply_blocks(w->base, blocks, h.nblocks, payload, kAcc, h.basic, h.mpi_op, h.elem);
          }
        } else if (std::memcmp(out, payload + h.elem, static_cast<size_t>(h.elem)) == 0) {
          std::memcpy(w->base + blocks[0].off, payload, static_cast<size_t>(h.elem));
        }
      }
      runtime::send_packet_from_pass(src_proc, p, len);
      return;
    }
    case kLock: {
      LockWaiter req;
      req.exclusive = h.exclusive != 0;
      req.proc = src_proc;
      req.reply_id = h.reply_id;
      req.origin_target = h.origin_target;
      if (lock_request(w, req)) reply(src_proc, h.reply_id, kGrant, h.origin_target);
      return;
    }
    case kUnlock:
      lock_release(w, h.exclusive != 0, /*in_pass=*/true);
      reply(src_proc, h.reply_id, kAck, h.origin_target);
      return;
    // Replies, at the origin.  The window outlives the pass (win_free deletes it in a
    // later one), so the notify may follow the increment its waiter looks for.
    case kAck:
      w->acked[h.origin_target].fetch_add(1, std::memory_order_release);  // pairs: wait_acked
      w->event.notify();
      return;
    case kGrant:
      w->grants.fetch_add(1, std::memory_order_release);  // pairs: the wait in win_lock*
      w->event.notify();
      return;
    case kData: {
      auto* pend = reinterpret_cast<Pending*>(h.cookie);
      scatter(pend->rbuf, pend->rl, h.pos, h.pos + h.bytes, payload);
      if (--pend->remaining == 0) delete pend;
      w->acked[h.origin_target].fetch_add(1, std::memory_order_release);  // pairs: wait_acked
      w->event.notify();
      return;
    }
    default:
      return;
  }
}

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

// ---- origin side --------------------------------------------------------------------

// EP_PROC_NULL is a valid target that does nothing (*skip); other ranks must exist.
int check_rank(const Win* w, int rank, bool* skip, const char* call) {
  *skip = rank == kProcNull;
  const int n = static_cast<int>(w->targets.size());
  if (!*skip && (rank < 0 || rank >= n)) {
    return fail(EP_ERR_RANK, call, "rank %d is not a rank of the window (size %d)", rank, n);
  }
  return EP_SUCCESS;
}

bool in_epoch(const Win* w, int t) { return w->fence_open || w->lock_all || w->locked[t] != 0; }

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

// Checks everything that needs the window; fills the layouts.
int check_op(Win* w, const OpArgs& a, Layout* ol, Layout* rl, Layout* tl, const char* call) {
  const int n = static_cast<int>(w->targets.size());
  if (a.target < 0 || a.target >= n) {
    return fail(EP_ERR_RANK, call, "target_rank %d is not a rank of the window (size %d)", a.target,
                n);
  }
  if (!in_epoch(w, a.target)) {
    return fail(EP_ERR_RMA_SYNC, call,
                "no access epoch to target %d is open (call EP_Win_fence, EP_Win_lock or "
                "EP_Win_lock_all first)",
                a.target);
  }
  int err = check_layout(a.tcount, a.ttype, tl, call, "target_datatype");
  if (err != EP_SUCCESS) return err;
  const bool accumulate = a.accumulate();
  if (accumulate && !is_predefined_op(a.op)) {
    return fail(EP_ERR_OP, call,
                "op must be a predefined MPI_Op or MPI_REPLACE/MPI_NO_OP (MPI forbids "
                "user-defined ops in one-sided operations)");
  }
  if (a.has_origin()) {
    err = check_layout(a.ocount, a.otype, ol, call, "origin_datatype");
    if (err != EP_SUCCESS) return err;
    if (ol->bytes != tl->bytes) {
      return fail(EP_ERR_COUNT, call,
                  "the origin buffer holds %lld bytes but the target buffer %lld (type "
                  "signatures must match)",
                  static_cast<long long>(ol->bytes), static_cast<long long>(tl->bytes));
    }
    if (accumulate) {
      err = check_basic(*ol, *tl, a.op, call, "origin_datatype");
      if (err != EP_SUCCESS) return err;
    }
  }
  if (a.has_result()) {
    err = check_layout(a.rcount, a.rtype, rl, call,
                       a.kind == OpKind::kGet ? "origin_datatype" : "result_datatype");
    if (err != EP_SUCCESS) return err;
    if (rl->bytes != tl->bytes) {
      return fail(EP_ERR_COUNT, call,
                  "the %s buffer holds %lld bytes but the target buffer %lld (type signatures "
                  "must match)",
                  a.kind == OpKind::kGet ? "origin" : "result", static_cast<long long>(rl->bytes),
                  static_cast<long long>(tl->bytes));
    }
    if (accumulate) {
      err = check_basic(*rl, *tl, MPI_NO_OP, call, "result_datatype");
      if (err != EP_SUCCESS) return err;
    }
  }
  if (accumulate && tl->bytes > 0) {
    err = check_basic(*tl, *tl, a.op, call, "target_datatype");
    if (err != EP_SUCCESS) return err;
  }
  if (a.kind == OpKind::kCas && !cas_allows(tl->basic)) {
    return fail(EP_ERR_TYPE, call,
                "EP_Compare_and_swap needs an integer, logical or byte datatype");
  }
  const Target& t = w->targets[a.target];
  if (a.tdisp < 0) {
    return fail(EP_ERR_RMA_RANGE, call, "target_disp %lld is negative",
                static_cast<long long>(a.tdisp));
  }
  if (tl->bytes > 0) {
    const int64_t off = static_cast<int64_t>(a.tdisp) * t.disp_unit;
    if (off + tl->lo < 0 || off + tl->hi > t.size) {
      return fail(EP_ERR_RMA_RANGE, call,
                  "bytes [%lld, %lld) are outside target %d's window of %lld bytes "
                  "(target_disp %lld x disp_unit %d)",
                  static_cast<long long>(off + tl->lo), static_cast<long long>(off + tl->hi),
                  a.target, static_cast<long long>(t.size), static_cast<long long>(a.tdisp),
                  t.disp_unit);
    }
  }
  return EP_SUCCESS;
}

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

// Moves a whole stream between `local` (contiguous) and the target's blocks by
// cross-memory attach; false if the kernel refused (the target then falls back to
// handler calls for good).
bool cma_copy(Target& t, int64_t off, const Layout& tl, char* local, bool write) {
  constexpr size_t kIovMax = 1024;  // IOV_MAX on Linux
  std::vector<struct iovec> riov;
  int64_t done = 0;
  for (size_t i = 0; i < tl.blocks.size();) {
    riov.clear();
    int64_t batch = 0;
    for (; i < tl.blocks.size() && riov.size() < kIovMax; ++i) {
      const Block& b = tl.blocks[i];
      riov.push_back(
          {reinterpret_cast<void*>(t.remote_base + off + b.off), static_cast<size_t>(b.len)});
      batch += b.len;
    }
    struct iovec liov = {local + done, static_cast<size_t>(batch)};
    ssize_t n = write ? process_vm_writev(t.cma_pid, &liov, 1, riov.data(), riov.size(), 0)
                      : process_vm_readv(t.cma_pid, &liov, 1, riov.data(), riov.size(), 0);
    if (n != static_cast<ssize_t>(batch)) {
      t.cma_pid = 0;
      return false;
    }
    done += batch;
  }
  return true;
}

// The operation on another process's EP_Win_create window by cross-memory attach (see
// window.h): put and get are one copy; the accumulate family reads, combines here and
// writes back under the target's accumulate lock (mapped from its segment).  False if
// the kernel refused before anything changed (then handler calls do it).
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

void run_remote(Win* w, const Target& t, int64_t off, const OpArgs& a, const Layout& ol,
                const Layout& rl, const Layout& tl) {
  static constexpr uint8_t kOps[] = {kPut, kGet, kAcc, kGetAcc, kCas};
  const uint8_t op = kOps[static_cast<int>(a.kind)];
  const int64_t elem = (a.kind == OpKind::kPut || a.kind == OpKind::kGet) ? 1 : tl.elem;
  // A chunk's packet (header, block list, payload) fits Engine::kMaxPacketBytes.
  constexpr int64_t kMaxChunkPayload =
      static_cast<int64_t>(runtime::kMaxPacketBytes - sizeof(RmaHeader) -
                           kMaxBlocksPerChunk * sizeof(WireBlock));
  static_assert(kMaxChunkPayload >= 4096, "room for a payload beside the block list");
  int64_t limit =
      std::min<int64_t>(std::max<int64_t>(runtime()->config.eager_limit, 4096), kMaxChunkPayload);
  limit -= limit % elem;
  if (limit == 0) limit = elem;
  auto chunks = chunks_of(tl, limit);
  Pending* pend = nullptr;
  if (a.has_result()) {
    pend = new Pending;
    pend->rbuf = static_cast<char*>(a.rbuf);
    pend->rl = rl;
    pend->remaining = static_cast<int>(chunks.size());
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
    send_packet(t.proc, p, len);
  }
}

}  // namespace

void rma_init() {
  // release: pairs with the acquire load in Runtime::on_packet.
  runtime::set_rma_sink(&on_rma_packet);
}

namespace {

// The window's shared segment (a memfd): the header with the accumulate lock, then -
// for EP_Win_allocate - the window memory itself, zero-filled.
bool allocate_segment(Win* w, bool with_memory) {
  w->seg_len = kSegHeader + (with_memory ? static_cast<size_t>(w->size) : 0);
  w->memfd = memfd_create("ep-window", MFD_CLOEXEC);
  if (w->memfd < 0 || ftruncate(w->memfd, static_cast<off_t>(w->seg_len)) != 0) return false;
  void* p = mmap(nullptr, w->seg_len, PROT_READ | PROT_WRITE, MAP_SHARED, w->memfd, 0);
  if (p == MAP_FAILED) return false;
  w->seg = static_cast<char*>(p);
  auto* h = new (w->seg) SegHeader;
  h->cookie = std::random_device()() | (static_cast<uint64_t>(std::random_device()()) << 32);
  w->acc_lock = &h->lock;
  if (with_memory) {
    w->base = w->seg + kSegHeader;
    w->mem_in_seg = true;
  }
  return true;
}

// Maps another process's segment; false (and nothing mapped) if it is not the one
// announced.
bool map_segment(Target* t, int pid, int fd, size_t len, uint64_t cookie) {
  std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  int f = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (f < 0) return false;
  // A file shorter than announced is not the segment (and mapping past its end would
  // fault); one of the right length is checked by its cookie below.
  struct stat st;
  if (fstat(f, &st) != 0 || st.st_size < static_cast<off_t>(len)) {
    close(f);
    return false;
  }
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  close(f);
  if (p == MAP_FAILED) return false;
  auto* h = static_cast<SegHeader*>(p);
  if (h->cookie != cookie) {
    munmap(p, len);
    return false;
  }
  t->segment = static_cast<char*>(p);
  t->segment_len = len;
  t->mapped_lock = &h->lock;
  return true;
}

// Enables cross-memory attach to `pid` if it works and reaches the announced Win.
void probe_cma(Target* t, int pid, uint64_t cookie_at, uint64_t cookie) {
  uint64_t seen = 0;
  struct iovec local = {&seen, sizeof(seen)};
  struct iovec remote = {reinterpret_cast<void*>(cookie_at), sizeof(seen)};
  if (process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof(seen)) &&
      seen == cookie) {
    t->cma_pid = pid;
  }
}

void release_memory(Win* w) {
  for (Target& t : w->targets) {
    if (t.segment != nullptr) munmap(t.segment, t.segment_len);
    t.segment = t.mapped = nullptr;
  }
  if (w->allocated && !w->mem_in_seg) std::free(w->base);
  if (w->seg != nullptr) munmap(w->seg, w->seg_len);
  if (w->memfd >= 0) close(w->memfd);
  w->seg = nullptr;
  w->memfd = -1;
}

}  // namespace

int win_create(Endpoint* ep, void* base, MPI_Aint size, int disp_unit, bool allocate,
               bool node_paths, int local_error, Win** out, const char* call) {
  auto* w = new Win;
  w->size = size;
  w->disp_unit = disp_unit;
  w->allocated = allocate;
  if (!allocate) w->base = static_cast<char*>(base);
  if (local_error == EP_SUCCESS && !(node_paths && allocate_segment(w, allocate))) {
    // No segment (e.g. out of file descriptors): private memory and lock; the node's
    // other processes will use handler calls.
    release_memory(w);
    w->acc_lock = &w->own_lock;
    if (allocate) {
      w->base = static_cast<char*>(std::calloc(1, static_cast<size_t>(size > 0 ? size : 1)));
      if (w->base == nullptr) {
        local_error =
            fail(EP_ERR_ARG, call, "cannot allocate %lld bytes", static_cast<long long>(size));
      }
    }
  }
  w->id = table().add(w);
  // One exchange carries every endpoint's verdict and window: nobody hangs on a bad call.
  static const uint64_t kNode = node_key();
  runtime::BlobWriter bw;
  bw.put<int32_t>(local_error);
  bw.put<uint32_t>(w->id);
  bw.put<int64_t>(size);
  bw.put<int32_t>(disp_unit);
  bw.put<uint64_t>(kNode);
  bw.put<int32_t>(static_cast<int32_t>(getpid()));
  bw.put<int32_t>(w->memfd);
  bw.put<uint64_t>(w->seg_len);
  bw.put<uint64_t>(w->seg != nullptr ? reinterpret_cast<SegHeader*>(w->seg)->cookie : 0);
  w->cookie = std::random_device()() | (static_cast<uint64_t>(std::random_device()()) << 32);
  bw.put<uint64_t>(reinterpret_cast<uint64_t>(&w->cookie));
  bw.put<uint64_t>(w->cookie);
  bw.put<uint64_t>(reinterpret_cast<uint64_t>(w->base));
  bw.put<uint8_t>(w->mem_in_seg);
  bw.put<uint8_t>(node_paths);
  std::vector<std::string> all = runtime::allgather(ep, bw.take());
  const int n = static_cast<int>(all.size());
  const int me = runtime()->world_rank;
  // The verdicts first: after a failure nobody maps anything (the owners release
  // their segments at once, and a closed descriptor's number may be reused).
  int bad_rank = -1;
  for (int r = 0; r < n && bad_rank < 0; ++r) {
    runtime::BlobReader rd(all[r]);
    if (rd.get<int32_t>() != EP_SUCCESS) bad_rank = r;
  }
  w->targets.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    runtime::BlobReader rd(all[r]);
    rd.get<int32_t>();  // the verdict
    Target& t = w->targets[r];
    t.proc = ep->comm->addr[r].proc;
    t.id = rd.get<uint32_t>();
    t.size = rd.get<int64_t>();
    t.disp_unit = rd.get<int32_t>();
    const uint64_t node = rd.get<uint64_t>();
    const int pid = rd.get<int32_t>(), fd = rd.get<int32_t>();
    const uint64_t len = rd.get<uint64_t>(), cookie = rd.get<uint64_t>();
    const uint64_t win_cookie_at = rd.get<uint64_t>(), win_cookie = rd.get<uint64_t>();
    t.remote_base = rd.get<uint64_t>();
    const bool mem_in_seg = rd.get<uint8_t>() != 0;
    const bool target_node_paths = rd.get<uint8_t>() != 0;
    if (t.proc == me) {
      t.local = table().find(t.id);  // registered before the exchange
    } else if (node == kNode && bad_rank < 0 && target_node_paths) {
      // What fails falls back to remote handler calls.
      if (fd >= 0 && map_segment(&t, pid, fd, len, cookie) && mem_in_seg) {
        t.mapped = t.segment + kSegHeader;  // EP_Win_allocate: the memory is shared
      } else {
        probe_cma(&t, pid, win_cookie_at, win_cookie);
      }
    }
  }
  if (bad_rank >= 0) {
    table().remove(w->id);
    release_memory(w);
    delete w;
    if (local_error != EP_SUCCESS) return local_error;
    return fail(EP_ERR_ARG, call, "endpoint %d passed an invalid argument; no window was created",
                bad_rank);
  }
  int err = runtime::comm_dup(ep, &w->ep);
  if (err != EP_SUCCESS) {
    table().remove(w->id);
    release_memory(w);
    delete w;
    return err;
  }
  // The dup completed, so every endpoint has entered it, after mapping: the segment's
  // file descriptor is no longer needed (the mappings keep the memory).
  if (w->memfd >= 0) {
    close(w->memfd);
    w->memfd = -1;
  }
  w->issued.assign(static_cast<size_t>(n), 0);
  w->acked.reset(new std::atomic<uint64_t>[static_cast<size_t>(n)]());
  w->locked.assign(static_cast<size_t>(n), 0);
  *out = w;
  return EP_SUCCESS;
}

int win_free_prepare(Win* w, const char* call) {
  if (w->lock_all || w->nlocked > 0) {
    return fail(EP_ERR_RMA_SYNC, call, "a passive-target epoch is still open (unlock first)");
  }
  return EP_SUCCESS;
}

namespace {
// Runs in a pass, after every pass that may still hold w (a reply handler notifying
// w->event) has ended.
void delete_window(void* arg) {
  Win* w = static_cast<Win*>(arg);
  release_memory(w);
  delete w;
}
}  // namespace

void win_free(Win* w) {
  wait_all_acked(w);
  runtime::barrier(w->ep);  // nobody addresses this window after this
  table().remove(w->id);
  runtime::comm_free(w->ep);
  w->magic = 0;
  runtime::run_in_pass(&delete_window, w);
}

int win_fence(Win* w, int assert_flags, const char* call) {
  if (w->lock_all || w->nlocked > 0) {
    return fail(EP_ERR_RMA_SYNC, call, "EP_Win_fence inside a passive-target epoch");
  }
  wait_all_acked(w);
  runtime::barrier(w->ep);
  w->fence_open = (assert_flags & MPI_MODE_NOSUCCEED) == 0;
  return EP_SUCCESS;
}

int win_lock(Win* w, int lock_type, int rank, int assert_flags, const char* call) {
  bool skip = false;
  int err = check_rank(w, rank, &skip, call);
  if (err != EP_SUCCESS || skip) return err;
  if (w->lock_all) {
    return fail(EP_ERR_RMA_SYNC, call, "EP_Win_lock of target %d inside EP_Win_lock_all", rank);
  }
  if (w->locked[rank] != 0) {
    return fail(EP_ERR_RMA_SYNC, call, "target %d is already locked by this endpoint", rank);
  }
  const bool exclusive = lock_type == MPI_LOCK_EXCLUSIVE;
  const bool nocheck = (assert_flags & MPI_MODE_NOCHECK) != 0;
  w->locked[rank] =
      Win::kLocked | (nocheck ? Win::kNocheck : 0) | (exclusive ? Win::kExclusive : 0);
  ++w->nlocked;
  if (nocheck) return EP_SUCCESS;
  const Target& t = w->targets[rank];
  if (t.local != nullptr) {
    lock_local(t.local, exclusive);
    return EP_SUCCESS;
  }
  // acquire: grants to earlier requests were all awaited; pairs with the handler's release.
  const uint64_t want = w->grants.load(std::memory_order_acquire) + 1;
  RmaHeader* h;
  size_t len;
  char* p = new_packet(t.id, kLock, 0, 0, &h, &len);
  h->exclusive = exclusive;
  h->origin_target = rank;
  h->reply_id = w->id;
  send_packet(t.proc, p, len);
  progress_until(w, [w, want] { return w->grants.load(std::memory_order_acquire) >= want; });
  return EP_SUCCESS;
}

namespace {

// Sends the release of target `rank`'s lock (or releases a local one).
void release(Win* w, int rank, bool exclusive) {
  const Target& t = w->targets[rank];
  if (t.local != nullptr) {
    lock_release(t.local, exclusive, /*in_pass=*/false);
    return;
  }
  RmaHeader* h;
  size_t len;
  char* p = new_packet(t.id, kUnlock, 0, 0, &h, &len);
  h->exclusive = exclusive;
  h->origin_target = rank;
  h->reply_id = w->id;
  ++w->issued[rank];
  send_packet(t.proc, p, len);
}

}  // namespace

int win_unlock(Win* w, int rank, const char* call) {
  bool skip = false;
  int err = check_rank(w, rank, &skip, call);
  if (err != EP_SUCCESS || skip) return err;
  const uint8_t state = w->locked[rank];
  if (state == 0) {
    return fail(EP_ERR_RMA_SYNC, call, "target %d is not locked by this endpoint%s", rank,
                w->lock_all ? " (it holds EP_Win_lock_all: use EP_Win_unlock_all)" : "");
  }
  if ((state & Win::kNocheck) == 0) release(w, rank, (state & Win::kExclusive) != 0);
  wait_acked(w, rank);
  w->locked[rank] = 0;
  --w->nlocked;
  return EP_SUCCESS;
}

int win_lock_all(Win* w, int assert_flags, const char* call) {
  if (w->lock_all || w->nlocked > 0) {
    return fail(EP_ERR_RMA_SYNC, call, "EP_Win_lock_all inside a passive-target epoch");
  }
  w->lock_all = true;
  w->lock_all_nocheck = (assert_flags & MPI_MODE_NOCHECK) != 0;
  if (w->lock_all_nocheck) return EP_SUCCESS;
  // acquire: pairs with the handler's release (see win_lock).
  const uint64_t base = w->grants.load(std::memory_order_acquire);
  uint64_t remote = 0;
  for (size_t r = 0; r < w->targets.size(); ++r) {
    const Target& t = w->targets[r];
    if (t.local != nullptr) continue;
    RmaHeader* h;
    size_t len;
    char* p = new_packet(t.id, kLock, 0, 0, &h, &len);
    h->origin_target = static_cast<int32_t>(r);
    h->reply_id = w->id;
    send_packet(t.proc, p, len);
    ++remote;
  }
  for (const Target& t : w->targets) {
    if (t.local != nullptr) lock_local(t.local, /*exclusive=*/false);
  }
  const uint64_t want = base + remote;
  progress_until(w, [w, want] { return w->grants.load(std::memory_order_acquire) >= want; });
  return EP_SUCCESS;
}

int win_unlock_all(Win* w, const char* call) {
  if (!w->lock_all) return fail(EP_ERR_RMA_SYNC, call, "no EP_Win_lock_all epoch is open");
  if (!w->lock_all_nocheck) {
    for (size_t r = 0; r < w->targets.size(); ++r) release(w, static_cast<int>(r), false);
  }
  wait_all_acked(w);
  w->lock_all = false;
  return EP_SUCCESS;
}

int win_flush(Win* w, int rank, const char* call) {
  bool skip = false;
  int err = check_rank(w, rank, &skip, call);
  if (err != EP_SUCCESS || skip) return err;
  if (!w->lock_all && w->locked[rank] == 0) {
    return fail(EP_ERR_RMA_SYNC, call, "no passive-target epoch to target %d is open", rank);
  }
  wait_acked(w, rank);
  return EP_SUCCESS;
}

int win_flush_all(Win* w, const char* call) {
  if (!w->lock_all && w->nlocked == 0) {
    return fail(EP_ERR_RMA_SYNC, call, "no passive-target epoch is open");
  }
  wait_all_acked(w);
  return EP_SUCCESS;
}

int rma_op(Win* w, const OpArgs& a, const char* call) {
  if (a.target == kProcNull) {
    if (!w->fence_open && !w->lock_all && w->nlocked == 0) {
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
  if (t.local != nullptr) {
    run_direct(t.local->base + off, t.local->acc_lock, a, ol, rl, tl);
  } else if (t.mapped != nullptr) {
    run_direct(t.mapped + off, t.mapped_lock, a, ol, rl, tl);
  } else if (t.cma_pid != 0 && (copy_only || t.mapped_lock != nullptr) &&
             run_cma(t, off, a, ol, rl, tl)) {
    // done: a kernel copy, complete now
  } else {
    run_remote(w, t, off, a, ol, rl, tl);
  }
  return EP_SUCCESS;
}

}  // namespace ep::rma
