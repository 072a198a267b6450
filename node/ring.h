// ring.h - a multi-producer, single-consumer queue of variable-length records in shared
// memory: one per receiving endpoint, written by any thread of any process of the node.
//
// What it is: a power-of-two byte area and three cache lines (RingHeader): the
// producers' (`tail`, `committed`), the consumer's (`head`, `attentive`) and the owner's
// identity (`ctx`, `local`, `generation`, which the owning process writes when it
// assigns the ring to an endpoint).  Positions grow forever (64 bits); a position's byte
// is at data[pos & (capacity - 1)].  A record is 8-byte aligned and starts with its
// frame word: its length and kind in the low 32 bits, a check of (length, kind,
// position) in the high 32 bits - nonzero, and never equal to a stale or foreign word
// by chance.  Every record but a pad continues with a RecordHeader: the kind again and
// the destination's owner fields, which the consumer compares with its own.
//   push     a producer reserves [t, t + len) by CAS on `tail` once `t + len - head`
//            fits the capacity; a record that would cross the end is preceded by a pad
//            record reaching the end (reserved and published alone, so a record of up
//            to max_record() always fits eventually).  It writes the record, stores the
//            frame word with release (the ready mark), then adds len to `committed`.
//            A full ring returns kFull at once: the producer never waits (the caller
//            keeps the record: runtime's backlog).
//   drain    the consumer (one thread at a time: the caller holds the ring's drain
//            lock) loads the frame at its head with acquire; 0 means not ready (a
//            producer is still writing: stop, try later).  Each valid record goes to the
//            caller's function; then its bytes are zeroed and, after the batch, `head`
//            is stored with release.  So every byte outside reserved records reads 0.
// Rejection.  A record whose frame is malformed (check, length, crossing the end) or
// whose RecordHeader disagrees with the frame or with the consumer's owner fields (a
// record for a ring that was freed and assigned again, a foreign write) is counted in
// Consumer::rejected and skipped, never passed on.  A record with a good frame is skipped
// whole.  After a bad frame the consumer cannot know where the next record starts: it
// resynchronizes - zeroes and steps over 8-byte words until a word is a valid frame for
// its position, treating a zero word as garbage only once every reservation is published
// (`committed == tail`), so a record still being written is never skipped.
// FIFO per producer, and only per producer: one thread's records are in its push order.
//
// Threading: push from any thread of any process; drain by the consumer alone (one
// thread at a time: it also owns the ring's bytes between head and the records it reads).
//
// Memory ordering: a producer writes the record and then stores its frame with release;
// the consumer's acquire load of the frame pairs with it (it sees the record).  The
// consumer zeroes consumed bytes and then stores `head` with release; a producer's
// acquire load of `head` (or of a head hint republished with release: push's
// `head_hint`) pairs with it, so its writes into reused bytes follow the zeroing.  The
// CAS on `tail` is relaxed: it only divides positions, the bytes' order comes from
// `head`.  `committed` is added with release and read with acquire during
// resynchronization only.  `attentive` is the consumer's: runtime's Dekker pairing
// with producers (seq_cst fences on both sides) decides who drains (runtime/node.h).
#ifndef EP_NODE_RING_H_
#define EP_NODE_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ep::node {

// The shared part of a ring, at the start of its slot in a segment (node/segment.h); the
// data area follows at kRingHeaderBytes.
struct RingHeader {
  // Producers' line.
  alignas(64) std::atomic<uint64_t> tail{0};       // next position to reserve
  std::atomic<uint64_t> committed{0};              // bytes whose frames were stored
  // Consumer's line: producers read it for room (head) and after each record (attentive).
  alignas(64) std::atomic<uint64_t> head{0};       // first position not yet consumed
  std::atomic<uint32_t> attentive{0};              // the owner's waiters that drain it
  // The owner's line: written by the owning process when it (re)assigns the ring.
  alignas(64) std::atomic<uint32_t> ctx{0};
  std::atomic<uint32_t> local{0};
  std::atomic<uint32_t> generation{0};
};
constexpr size_t kRingHeaderBytes = 256;
static_assert(sizeof(RingHeader) <= kRingHeaderBytes, "the ring header fits its slot");

// Who a ring belongs to: a record must name them all to be taken.
struct Owner {
  uint32_t ctx = 0;
  uint16_t local = 0;
  uint32_t generation = 0;
};

// The header of every record but a pad (24 bytes; the caller's body follows).
struct RecordHeader {
  uint64_t frame;  // the ready mark (see above); written atomically, std::atomic_ref
  uint16_t kind;   // the frame's kind again
  uint16_t local;  // the destination's owner fields
  uint32_t ctx;
  uint32_t generation;
  uint32_t aux;  // the caller's (runtime: an eager message's byte count)
};
static_assert(sizeof(RecordHeader) == 24, "records start with 24 bytes");

// The consumer's private state (in its process's memory), guarded by its drain lock.
struct Consumer {
  uint64_t head = 0;      // = RingHeader::head when no drain runs
  bool resync = false;    // stepping over a bad frame's garbage (see "Rejection")
  uint64_t rejected = 0;  // records (and garbage words) refused
};

class Ring {
 public:
  // Record kinds: kPad is the ring's own; kinds 2..7 are the caller's.
  static constexpr uint8_t kPad = 1, kMaxKind = 7;
  static constexpr uint32_t kMinCapacity = 4096;
  enum class Push { kOk, kFull, kTooBig };

  Ring() = default;
  // A view of the ring at `h` (its data follows at kRingHeaderBytes); `capacity` is a
  // power of two of at least kMinCapacity.
  Ring(RingHeader* h, uint32_t capacity)
      : h_(h), data_(reinterpret_cast<char*>(h) + kRingHeaderBytes), mask_(capacity - 1) {}
  bool valid() const { return h_ != nullptr; }
  RingHeader* header() const { return h_; }
  uint32_t capacity() const { return mask_ + 1; }
  // The longest record push() takes (half the capacity: a pad before it always fits).
  uint32_t max_record() const { return capacity() / 2; }
  // A record's length for a body of `body` bytes.
  static uint32_t record_len(uint64_t body) {
    return static_cast<uint32_t>((sizeof(RecordHeader) + body + 7) & ~uint64_t{7});
  }

  // Producer: appends a record of kind `kind` (2..kMaxKind) for `dest` with `body`
  // bytes, which fill(char* body) writes.  `head_hint`: a producer-side copy of `head`
  // (relaxed atomics are not enough, see "Memory ordering": acquire/release), which
  // saves most loads of the consumer's line.  Never waits; kFull: no room now.
  template <class Fill>
  Push push(uint8_t kind, const Owner& dest, uint32_t aux, uint64_t body, Fill&& fill,
            std::atomic<uint64_t>& head_hint) {
    if (sizeof(RecordHeader) + body > max_record()) return Push::kTooBig;
    const uint32_t len = record_len(body);
    const uint64_t cap = capacity();
    for (;;) {
      // relaxed: the CAS below checks it; the record's bytes are ordered by head.
      const uint64_t t = h_->tail.load(std::memory_order_relaxed);
      const uint64_t off = t & mask_;
      const bool wraps = off + len > cap;
      const uint64_t want = wraps ? cap - off : len;  // a pad to the end first
      if (!room(t, want, head_hint)) return Push::kFull;
      // relaxed: see "Memory ordering" (positions only).
      uint64_t expected = t;
      if (!h_->tail.compare_exchange_weak(expected, t + want, std::memory_order_relaxed,
                                          std::memory_order_relaxed)) {
        continue;
      }
      if (wraps) {
        publish(t, static_cast<uint32_t>(want), kPad);
        continue;
      }
      auto* r = reinterpret_cast<RecordHeader*>(data_ + off);
      r->kind = kind;
      r->local = dest.local;
      r->ctx = dest.ctx;
      r->generation = dest.generation;
      r->aux = aux;
      fill(reinterpret_cast<char*>(r + 1));
      publish(t, len, kind);
      return Push::kOk;
    }
  }

  // Consumer: takes up to `max` ready records in order.  For each valid one calls
  // fn(kind, aux, body, body_len) - body valid during the call only - which returns
  // false to reject it (counted).  Returns the number of records taken or rejected.
  template <class Fn>
  int drain(Consumer& c, const Owner& me, Fn&& fn, int max = 256) {
    uint64_t h = c.head;
    int n = 0;
    while (n < max) {
      // acquire: pairs with the producer's release store of the frame (publish).
      const uint64_t frame = frame_at(h).load(std::memory_order_acquire);
      if (c.resync || !framed(h, frame)) {
        if (frame == 0 && !c.resync) break;  // not ready yet
        const int step = resync_step(c, h, frame);
        if (step < 0) break;
        h += static_cast<uint64_t>(step);
        ++n;
        continue;
      }
      const uint32_t len = frame_len(frame);
      const uint8_t kind = frame_kind(frame);
      char* at = data_ + (h & mask_);
      if (kind != kPad) {
        const auto* r = reinterpret_cast<const RecordHeader*>(at);
        const bool ours = r->kind == kind && r->ctx == me.ctx && r->local == me.local &&
                          r->generation == me.generation;
        if (!ours || !fn(kind, r->aux, at + sizeof(RecordHeader),
                         static_cast<uint32_t>(len - sizeof(RecordHeader)))) {
          ++c.rejected;
        }
        std::memset(at + sizeof(uint64_t), 0, len - sizeof(uint64_t));
      }
      // relaxed: the bytes reach producers through head's release store below.
      frame_at(h).store(0, std::memory_order_relaxed);
      h += len;
      ++n;
    }
    if (h != c.head) {
      c.head = h;
      h_->head.store(h, std::memory_order_release);  // pairs with producers' acquire (room)
    }
    return n;
  }

  // The frame word of a record of `len` bytes and kind `kind` at position `pos`.
  static uint64_t make_frame(uint64_t pos, uint32_t len, uint8_t kind) {
    const uint32_t lk = len | kind;
    return static_cast<uint64_t>(check(pos, lk)) << 32 | lk;
  }

 private:
  static uint32_t check(uint64_t pos, uint32_t lk) {
    uint64_t x = (pos ^ (static_cast<uint64_t>(lk) << 40)) * 0x9e3779b97f4a7c15ull;
    return static_cast<uint32_t>(x >> 32) ^ 0x5bd1e995u;
  }
  static uint32_t frame_len(uint64_t frame) { return static_cast<uint32_t>(frame) & ~7u; }
  static uint8_t frame_kind(uint64_t frame) { return static_cast<uint8_t>(frame & 7); }
  // A well-formed frame for position `pos`: its check, a kind, a length that is at least
  // a RecordHeader (8 bytes for a pad) and does not cross the end.
  bool framed(uint64_t pos, uint64_t frame) const {
    const uint32_t lk = static_cast<uint32_t>(frame);
    const uint32_t len = frame_len(frame);
    const uint8_t kind = frame_kind(frame);
    return frame != 0 && static_cast<uint32_t>(frame >> 32) == check(pos, lk) && kind != 0 &&
           len >= (kind == kPad ? 8u : sizeof(RecordHeader)) && (pos & mask_) + len <= capacity();
  }
  std::atomic_ref<uint64_t> frame_at(uint64_t pos) const {
    return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(data_ + (pos & mask_)));
  }
  bool room(uint64_t t, uint64_t len, std::atomic<uint64_t>& head_hint) const {
    // acquire: pairs with the release store of the hint (below) or of head (drain).
    if (t + len <= head_hint.load(std::memory_order_acquire) + capacity()) return true;
    const uint64_t h = h_->head.load(std::memory_order_acquire);  // pairs: drain's release
    head_hint.store(h, std::memory_order_release);  // pairs with the acquire above
    return t + len <= h + capacity();
  }
  void publish(uint64_t pos, uint32_t len, uint8_t kind) {
    // release: pairs with the consumer's acquire load of the frame (drain).
    frame_at(pos).store(make_frame(pos, len, kind), std::memory_order_release);
    // release: pairs with the acquire load in resync_step.
    h_->committed.fetch_add(len, std::memory_order_release);
  }
  // A bad frame, or garbage while resynchronizing, at position h (ring.cc): the bytes to
  // step over, or -1 to stop for now.
  int resync_step(Consumer& c, uint64_t h, uint64_t frame);

  RingHeader* h_ = nullptr;
  char* data_ = nullptr;
  uint32_t mask_ = 0;
};

}  // namespace ep::node

#endif  // EP_NODE_RING_H_
