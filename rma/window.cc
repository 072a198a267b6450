// window.cc - a window's life and epochs at the origin: creation (the exchange that
// picks each target's path), free, fence, lock/unlock and flush.  Runs on the
// endpoint's thread; the waits drive the progress engine (runtime/wait.h).
#include "rma/window.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "node/shm.h"
#include "rma/lock.h"
#include "rma/segment.h"
#include "rma/table.h"
#include "rma/wire.h"
#include "runtime/error.h"
#include "runtime/exchange.h"
#include "runtime/runtime.h"
#include "runtime/transport.h"
#include "runtime/wait.h"

namespace ep::rma {
namespace {

using runtime::Endpoint;
using runtime::fail;

// ---- waiting ------------------------------------------------------------------------

// Waits (runtime/wait.h) until `ready`, driving the engine while it spins: the replies
// it waits for are packets.  The reply handlers notify w->event after each increment.
template <class F>
void progress_until(Win* w, F&& ready) {
  runtime::wait_until(w->event, ready, runtime::Drive::kYes);
}

void wait_acked(Win* w, int t) {
  // acquire: pairs with the release increment in the reply handler.
  progress_until(w, [w, t] { return w->acked[t].load(std::memory_order_acquire) == w->issued[t]; });
}

void wait_all_acked(Win* w) {
  for (size_t t = 0; t < w->targets.size(); ++t) {
    if (w->issued[t] != 0) wait_acked(w, static_cast<int>(t));
  }
}

void wait_reads_acked(Win* w, int t) {
  // acquire: pairs with the release increment in the kData reply handler.
  progress_until(w, [w, t] {
    return w->acked_reads[t].load(std::memory_order_acquire) == w->issued_reads[t];
  });
}

// The error a target's handler reported for our operations since the last look (after
// the wait that saw their replies; see Win::remote_error).
int take_remote_error(Win* w, int t, const char* call) {
  const int e = w->remote_error[t].exchange(0, std::memory_order_relaxed);
  if (e == EP_SUCCESS) return EP_SUCCESS;
  return fail(e, call,
              "an operation to target %d accessed memory that is not attached there (nothing "
              "was written)",
              t);
}

int take_all_remote_errors(Win* w, const char* call) {
  int first = EP_SUCCESS;
  for (size_t t = 0; t < w->targets.size(); ++t) {
    const int e = take_remote_error(w, static_cast<int>(t), call);
    if (first == EP_SUCCESS) first = e;
  }
  return first;
}

// EP_PROC_NULL is a valid target that does nothing (*skip); other ranks must exist.
int check_rank(const Win* w, int rank, bool* skip, const char* call) {
  *skip = rank == kProcNull;
  const int n = static_cast<int>(w->targets.size());
  if (!*skip && (rank < 0 || rank >= n)) {
    return fail(EP_ERR_RANK, call, "rank %d is not a rank of the window (size %d)", rank, n);
  }
  return EP_SUCCESS;
}

// ---- creation -----------------------------------------------------------------------

// Gives w its memory and accumulate lock: a shared segment if `node_paths` allows,
// else private ones.  Returns local_error, or the allocation failure.
int prepare_memory(Win* w, void* base, bool allocate, bool node_paths, int local_error,
                   const char* call) {
  if (!allocate) w->base = static_cast<char*>(base);
  const bool dynamic = w->flavor == Flavor::kDynamic;
  if (local_error != EP_SUCCESS ||
      (node_paths && allocate_segment(w, allocate, dynamic ? sizeof(RegionTable) : 0))) {
    if (local_error == EP_SUCCESS && dynamic) {
      w->published = new (w->seg + kSegHeader) RegionTable;
    }
    return local_error;
  }
  // No segment (e.g. out of file descriptors): private memory and lock; the node's
  // other processes will use handler calls.
  release_memory(w);
  w->acc_lock = &w->own_lock;
  if (allocate) {
    w->base = static_cast<char*>(std::calloc(1, static_cast<size_t>(w->size > 0 ? w->size : 1)));
    if (w->base == nullptr) {
      return fail(EP_ERR_ARG, call, "cannot allocate %lld bytes", static_cast<long long>(w->size));
    }
  }
  return local_error;
}

// This endpoint's entry in the creation exchange (read back by connect_target).
std::string describe(Win* w, int local_error, bool node_paths) {
  runtime::BlobWriter bw;
  bw.put<int32_t>(local_error);
  bw.put<uint32_t>(w->id);
  bw.put<int64_t>(w->size);
  bw.put<int32_t>(w->disp_unit);
  bw.put<uint64_t>(node::node_key());
  bw.put<int32_t>(static_cast<int32_t>(getpid()));
  bw.put<int32_t>(w->memfd);
  bw.put<uint64_t>(w->seg_len);
  bw.put<uint64_t>(segment_cookie(w));
  w->cookie = node::random_cookie();
  bw.put<uint64_t>(reinterpret_cast<uint64_t>(&w->cookie));
  bw.put<uint64_t>(w->cookie);
  bw.put<uint64_t>(reinterpret_cast<uint64_t>(w->base));
  bw.put<uint8_t>(w->mem_in_seg);
  bw.put<uint8_t>(node_paths);
  return bw.take();
}

// The first rank whose verdict is an error, or -1.
int first_bad_rank(const std::vector<std::string>& all) {
  for (size_t r = 0; r < all.size(); ++r) {
    runtime::BlobReader rd(all[r]);
    if (rd.get<int32_t>() != EP_SUCCESS) return static_cast<int>(r);
  }
  return -1;
}

// Fills t from its endpoint's entry and picks its path: this process, a mapping of its
// segment, cross-memory attach, or (what fails falls back to) remote handler calls.
// Nothing is mapped if `map` is false (some endpoint failed).
void connect_target(Target& t, const std::string& entry, bool map, bool dynamic) {
  runtime::BlobReader rd(entry);
  rd.get<int32_t>();  // the verdict
  t.id = rd.get<uint32_t>();
  t.size = rd.get<int64_t>();
  t.disp_unit = rd.get<int32_t>();
  const uint64_t key = rd.get<uint64_t>();
  const int pid = rd.get<int32_t>(), fd = rd.get<int32_t>();
  const uint64_t len = rd.get<uint64_t>(), cookie = rd.get<uint64_t>();
  const uint64_t win_cookie_at = rd.get<uint64_t>(), win_cookie = rd.get<uint64_t>();
  t.remote_base = rd.get<uint64_t>();
  const bool mem_in_seg = rd.get<uint8_t>() != 0;
  const bool target_node_paths = rd.get<uint8_t>() != 0;
  if (t.proc == runtime::runtime()->world_rank) {
    t.local = table().find(t.id);  // registered before the exchange
  } else if (key == node::node_key() && map && target_node_paths) {
    const bool seg = fd >= 0 && map_segment(&t, pid, fd, len, cookie);
    if (seg && mem_in_seg) {
      t.mapped = t.segment + kSegHeader;  // EP_Win_allocate: the memory is shared
    } else {
      probe_cma(&t, pid, win_cookie_at, win_cookie);
    }
    if (seg && dynamic && len >= kSegHeader + sizeof(RegionTable)) {
      t.regions = reinterpret_cast<const RegionTable*>(t.segment + kSegHeader);
    }
  }
}

// Undoes a creation that did not complete.
void discard(Win* w) {
  table().remove(w->id);
  release_memory(w);
  delete w;
}

// Runs in a pass, after every pass that may still hold w (a reply handler notifying
// w->event) has ended.
void delete_window(void* arg) {
  Win* w = static_cast<Win*>(arg);
  release_memory(w);
  delete w;
}

// ---- passive-target epochs ----------------------------------------------------------

// Sends kLock or kUnlock for target `rank` (a rank of another process).
void send_lock_packet(const Win* w, int rank, uint8_t op, bool exclusive) {
  const Target& t = w->targets[rank];
  RmaHeader* h;
  size_t len;
  char* p = new_packet(t.id, op, 0, 0, &h, &len);
  h->exclusive = exclusive;
  h->origin_target = rank;
  h->reply_id = w->id;
  runtime::send_packet(t.proc, p, len);
}

// Waits until `want` kGrant replies have been counted.
void wait_grants(Win* w, uint64_t want) {
  // acquire: pairs with the release increment in the reply handler.
  progress_until(w, [w, want] { return w->grants.load(std::memory_order_acquire) >= want; });
}

// Sends the release of target `rank`'s lock (or releases a local one).
void release(Win* w, int rank, bool exclusive) {
  const Target& t = w->targets[rank];
  if (t.local != nullptr) {
    lock_release(t.local, exclusive, /*in_pass=*/false);
    return;
  }
  ++w->issued[rank];
  send_lock_packet(w, rank, kUnlock, exclusive);
}

}  // namespace

int win_create(Endpoint* ep, void* base, MPI_Aint size, int disp_unit, Flavor flavor,
               bool node_paths, int local_error, Win** out, const char* call) {
  const bool allocate = flavor == Flavor::kAllocate;
  auto* w = new Win;
  w->flavor = flavor;
  w->size = size;
  w->disp_unit = disp_unit;
  w->allocated = allocate;
  local_error = prepare_memory(w, base, allocate, node_paths, local_error, call);
  w->id = table().add(w);
  // One exchange carries every endpoint's verdict and window: nobody hangs on a bad call.
  std::vector<std::string> all = runtime::allgather(ep, describe(w, local_error, node_paths));
  const int n = static_cast<int>(all.size());
  // The verdicts first: after a failure nobody maps anything (the owners release
  // their segments at once, and a closed descriptor's number may be reused).
  const int bad_rank = first_bad_rank(all);
  w->targets.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    w->targets[r].proc = ep->comm->addr[r].proc;
    connect_target(w->targets[r], all[r], /*map=*/bad_rank < 0, flavor == Flavor::kDynamic);
  }
  if (bad_rank >= 0) {
    discard(w);
    if (local_error != EP_SUCCESS) return local_error;
    return fail(EP_ERR_ARG, call, "endpoint %d passed an invalid argument; no window was created",
                bad_rank);
  }
  int err = runtime::comm_dup(ep, &w->ep);
  if (err != EP_SUCCESS) {
    discard(w);
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
  w->issued_reads.assign(static_cast<size_t>(n), 0);
  w->acked_reads.reset(new std::atomic<uint64_t>[static_cast<size_t>(n)]());
  w->remote_error.reset(new std::atomic<int>[static_cast<size_t>(n)]());
  w->in_start.assign(static_cast<size_t>(n), 0);
  *out = w;
  return EP_SUCCESS;
}

int win_free_prepare(Win* w, const char* call) {
  if (w->lock_all || w->nlocked > 0) {
    return fail(EP_ERR_RMA_SYNC, call, "a passive-target epoch is still open (unlock first)");
  }
  if (w->started || w->posted) {
    return fail(EP_ERR_RMA_SYNC, call, "an EP_Win_%s epoch is still open",
                w->started ? "start" : "post");
  }
  return EP_SUCCESS;
}

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
  if (w->started || w->posted) {
    return fail(EP_ERR_RMA_SYNC, call, "EP_Win_fence inside an EP_Win_%s epoch",
                w->started ? "start" : "post");
  }
  wait_all_acked(w);
  runtime::barrier(w->ep);
  w->fence_open = (assert_flags & MPI_MODE_NOSUCCEED) == 0;
  return take_all_remote_errors(w, call);
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
  send_lock_packet(w, rank, kLock, exclusive);
  wait_grants(w, want);
  return EP_SUCCESS;
}

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
  return take_remote_error(w, rank, call);
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
    if (w->targets[r].local != nullptr) continue;
    send_lock_packet(w, static_cast<int>(r), kLock, /*exclusive=*/false);
    ++remote;
  }
  for (const Target& t : w->targets) {
    if (t.local != nullptr) lock_local(t.local, /*exclusive=*/false);
  }
  wait_grants(w, base + remote);
  return EP_SUCCESS;
}

int win_unlock_all(Win* w, const char* call) {
  if (!w->lock_all) return fail(EP_ERR_RMA_SYNC, call, "no EP_Win_lock_all epoch is open");
  if (!w->lock_all_nocheck) {
    for (size_t r = 0; r < w->targets.size(); ++r) release(w, static_cast<int>(r), false);
  }
  wait_all_acked(w);
  w->lock_all = false;
  return take_all_remote_errors(w, call);
}

int win_flush(Win* w, int rank, const char* call) {
  bool skip = false;
  int err = check_rank(w, rank, &skip, call);
  if (err != EP_SUCCESS || skip) return err;
  if (!w->lock_all && w->locked[rank] == 0) {
    return fail(EP_ERR_RMA_SYNC, call, "no passive-target epoch to target %d is open", rank);
  }
  wait_acked(w, rank);
  return take_remote_error(w, rank, call);
}

int win_flush_all(Win* w, const char* call) {
  if (!w->lock_all && w->nlocked == 0) {
    return fail(EP_ERR_RMA_SYNC, call, "no passive-target epoch is open");
  }
  wait_all_acked(w);
  return take_all_remote_errors(w, call);
}

int win_flush_local(Win* w, int rank, const char* call) {
  bool skip = false;
  int err = check_rank(w, rank, &skip, call);
  if (err != EP_SUCCESS || skip) return err;
  if (!w->lock_all && w->locked[rank] == 0) {
    return fail(EP_ERR_RMA_SYNC, call, "no passive-target epoch to target %d is open", rank);
  }
  wait_reads_acked(w, rank);
  return EP_SUCCESS;
}

int win_flush_local_all(Win* w, const char* call) {
  if (!w->lock_all && w->nlocked == 0) {
    return fail(EP_ERR_RMA_SYNC, call, "no passive-target epoch is open");
  }
  for (size_t t = 0; t < w->targets.size(); ++t) {
    if (w->issued_reads[t] != 0) wait_reads_acked(w, static_cast<int>(t));
  }
  return EP_SUCCESS;
}

}  // namespace ep::rma
