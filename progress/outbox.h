// outbox.h - an endpoint's batch of small packets waiting for the progress engine.
//
// What it is: a sending endpoint appends each small packet for another process to its
// Outbox instead of queueing one engine command per packet.  The first append into an
// outbox with no flush pending asks the caller to submit one Command::kFlushOutbox;
// when the engine runs that command it takes every batch the outbox holds and sends
// each as one MPI message (a bundle, engine.h).  A stream of small
// sends thus costs one memcpy per message on the sending thread and one MPI send per
// batch - no allocation, no queue node per message - and a lone blocking send still
// leaves at once (its caller runs the flush itself, Engine::try_start_commands).
//
// Batches: the outbox fills one buffer for one destination process; a packet for
// another process, or one that does not fit, closes the buffer (it joins `ready_`) and
// opens a new one.  A packet that travels alone (a large eager packet, a rendezvous
// header) closes the buffer and joins `ready_` itself (append_alone).  A flush sends
// `ready_` in order, then the open buffer.
//
// Ordering: every packet an endpoint sends to another process goes through its
// outbox, and batches are closed and sent in append order, so one endpoint's packets
// to one process leave in send order.  (Were any packet to bypass the outbox as its
// own engine command, a packet appended after it could still leave with a flush
// submitted before it.)  Rendezvous payloads travel on the engine's data comm under
// their own tag and need no order against packets.
//
// Bursts: a nonblocking send is often one of many the thread issues back to back
// (a window of EP_Isend, then EP_Waitall).  append(..., burst=true) says so, and the
// outbox then reports itself `filling()`: the last append went into the open batch
// and nothing else is ready.  The engine holds the flush of a filling outbox back while
// its appender is still appending (engine.h), so that the burst leaves
// as one bundle instead of being taken in pieces by another thread while its owner
// writes the next packet (both would move the batch's cache lines every packet).
// appender() tells the engine which thread appended last.
//
// Lifetime: reference counted.  The endpoint holds one reference; each pending flush
// command holds one (taken by append(), dropped by the engine after the flush), so an
// endpoint may be freed while its last packets wait.
//
// Threading: append() by the endpoint's thread (one at a time), take() by the baton
// holder; both under a spin lock held for a memcpy at most.  appender() and filling()
// may be read by any thread at any time: hints, relaxed atomics written under the lock
// by the appender only when they change, on a cache line of their own, so that threads
// looking at a held flush do not take the line the appender writes every packet.
//
// Memory ordering: lock_ is taken with an acquire exchange and released with a release
// store, so the engine sees the packet bytes appended before the release.  refs_ is
// decremented with acq_rel so the last owner sees all writes before deleting.
#ifndef EP_PROGRESS_OUTBOX_H_
#define EP_PROGRESS_OUTBOX_H_

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "progress/backoff.h"
#include "progress/fast_tls.h"

namespace ep::progress {

// Identifies the calling thread (the address of a thread-local byte): compared with
// Outbox::appender().
inline const void* this_thread_mark() {
  static thread_local char mark EP_FAST_TLS;
  return &mark;
}

// A bundle is a sequence of records: [uint32 length][uint32 0][packet, padded to 8].
constexpr size_t kRecordHeader = 8;
inline size_t record_size(size_t len) { return kRecordHeader + ((len + 7) & ~size_t{7}); }
inline void write_record_header(char* at, size_t len) {
  uint32_t head[2] = {static_cast<uint32_t>(len), 0};
  std::memcpy(at, head, kRecordHeader);
}

class Outbox {
 public:
  // Bytes of one batch; packets above a quarter of it go through the engine alone.
  static constexpr size_t kBatchBytes = 16 * 1024;
  static constexpr size_t kFirstBytes = 512;   // the first allocation of a batch
  static constexpr size_t kBurstBytes = 4096;  // its first growth
  static bool fits(size_t len) { return record_size(len) <= kBatchBytes / 4; }

  struct Batch {
    int peer = -1;        // rank in MPI_COMM_WORLD
    char* buf = nullptr;  // malloc'ed; the engine frees it once sent
    size_t len = 0;
    bool bundle = true;  // records (tag kBundleTag), or one packet alone (kPacketTag)
  };

  Outbox() = default;
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Appends one packet of `len` bytes for `peer`; fill(char* at) writes it.  Returns
  // true if the caller must now submit Command::kFlushOutbox for this outbox (the
  // reference for that command is already taken).  `burst`: a nonblocking send, which
  // more may follow (engine.h).
  template <class Fill>
  bool append(int peer, size_t len, Fill&& fill, bool burst = false) {
    const size_t need = record_size(len);
    lock();
    if (open_.buf != nullptr && (open_.peer != peer || open_.len + need > kBatchBytes)) {
      close_open();
    }
    note_append(burst && ready_.empty());
    if (open_.buf == nullptr) {
      cap_ = kFirstBytes;
      open_ = Batch{peer, static_cast<char*>(std::malloc(cap_)), 0, true};
    }
    // A batch starts small (a lone packet stays in the allocator's thread cache); once
    // a burst outgrows that it jumps to kBurstBytes, then doubles.
    while (open_.len + need > cap_) {
      cap_ = cap_ < kBurstBytes ? kBurstBytes : cap_ * 2;
      open_.buf = static_cast<char*>(std::realloc(open_.buf, cap_));
    }
    char* at = open_.buf + open_.len;
    write_record_header(at, len);
    fill(at + kRecordHeader);
    open_.len += need;
    return queue_flush_and_unlock();
  }

  // Queues a packet that travels alone (too large for a batch, or a rendezvous
  // header): it keeps its place among this endpoint's packets.  Takes ownership of
  // the malloc'ed `packet`.  Returns what append() returns.
  bool append_alone(int peer, char* packet, size_t len) {
    lock();
    close_open();
    note_append(false);
    ready_.push_back(Batch{peer, packet, len, false});
    return queue_flush_and_unlock();
  }

  // The engine, running a flush command: appends every batch to *out, in order, and
  // marks no flush pending.  The caller then drops the command's reference (unref).
  void take(std::vector<Batch>* out) {
    lock();
    out->insert(out->end(), ready_.begin(), ready_.end());
    ready_.clear();
    if (open_.buf != nullptr) out->push_back(open_);
    open_ = Batch{};
    flush_queued_ = false;
    unlock();
  }

  // True if no packet of this outbox waits (none open, none ready, no flush owed).
  // Only for the baton holder, and only when it is also the appending thread (see
  // Engine::try_send_alone): take() runs only under the baton and append() only on
  // the appender's thread, so neither can change the answer meanwhile; the baton's
  // acquire orders the last take()'s writes before these reads.
  bool idle_for_appender() const {
    return open_.buf == nullptr && ready_.empty() && !flush_queued_;
  }

  // Hints for the engine (engine.h); relaxed loads: a stale value only moves a
  // flush by one pass.
  const void* appender() const { return hints_.appender.load(std::memory_order_relaxed); }
  bool filling() const { return hints_.filling.load(std::memory_order_relaxed); }

  void unref() {
    // acq_rel: the last owner sees every other owner's writes before deleting.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  ~Outbox() {
    for (const Batch& b : ready_) std::free(b.buf);
    std::free(open_.buf);
  }
  void close_open() {  // requires lock_
    if (open_.buf == nullptr) return;
    ready_.push_back(open_);
    open_ = Batch{};
  }
  bool queue_flush_and_unlock() {
    const bool submit = !flush_queued_;
    flush_queued_ = true;
    if (submit) refs_.fetch_add(1, std::memory_order_relaxed);  // relaxed: we hold a ref
    unlock();
    return submit;
  }
  void note_append(bool filling) {  // requires lock_
    // relaxed: hints (see appender()).  Stored only when they change: a burst leaves
    // the line shared with the threads that look at it.
    const void* me = this_thread_mark();
    if (hints_.appender.load(std::memory_order_relaxed) != me) {
      hints_.appender.store(me, std::memory_order_relaxed);
    }
    if (hints_.filling.load(std::memory_order_relaxed) != filling) {
      hints_.filling.store(filling, std::memory_order_relaxed);
    }
  }
  void lock() {
    // acquire: pairs with the release in unlock() of the previous holder.
    while (lock_.exchange(true, std::memory_order_acquire)) cpu_relax();
  }
  void unlock() { lock_.store(false, std::memory_order_release); }

  struct alignas(64) Hints {  // written under lock_ by the appender, read by anyone
    std::atomic<const void*> appender{nullptr};
    std::atomic<bool> filling{false};
  };
  Hints hints_;
  alignas(64) std::atomic<bool> lock_{false};
  std::atomic<int> refs_{1};
  bool flush_queued_ = false;  // guarded by lock_
  Batch open_;                 // guarded by lock_; buf == nullptr: none open
  size_t cap_ = 0;             // guarded by lock_; bytes allocated at open_.buf
  std::vector<Batch> ready_;   // guarded by lock_
};

}  // namespace ep::progress

#endif  // EP_PROGRESS_OUTBOX_H_
