// segment.h - the node segment of one process: its rings, its doorbell and its staging
// pool, shared with the other processes of the node.
//
// What it is: one memfd (node/shm.h) per process that has node peers, of a fixed
// virtual size (sparse: pages are allocated when touched), laid out as
//   SegmentHeader  magic, layout version, random cookie, pid, the layout's offsets and
//                  sizes, and the Doorbell: the word the process's progress thread sleeps
//                  on (a shared futex), its asleep flag, and the pending bitmap - one bit
//                  per ring holding records nobody is watching;
//   directory      one word per context id: 1 + the first ring of that context's
//                  endpoints (local index i has ring first + i), 0 for none;
//   rings          kMaxRings slots of RingHeader + data (node/ring.h), `ring_capacity`
//                  bytes each;
//   staging pool   blocks a sender fills with a large payload when cross-memory attach
//                  is not allowed; the receiver copies out of its mapping of the pool;
//   cells          kMaxRings CollCells, cell i going with ring i: the owner of ring i
//                  uses it for the node collectives of the ring's communicator
//                  (runtime/node_coll.h).  A cell's counters are never reset: they keep
//                  counting across the rings' owners, and assign_rings records where
//                  each new owner starts (`base`) before it publishes the ring.
// The owner (`Segment`) assigns runs of rings to contexts (assign_rings, when a
// communicator fragment is made) and takes them back (release_rings); each assignment
// and release bumps the ring's generation, so a record addressed to an earlier owner is
// rejected.  Another process (`PeerSegment`) maps the segment, validates its header once
// and keeps its own copies of the layout (never re-read: the peer could change them),
// resolves (ctx, local) to a ring through the directory and the ring's owner fields, and
// pushes records there.  Nothing in a peer's segment is trusted beyond what is checked:
// offsets are bounded by the validated layout.
//
// Threading: Segment's assign/release and stage_* are thread-safe (one mutex, off the
// message path); PeerSegment is immutable after map() but for its head hints (atomics).
//
// Memory ordering: assign_rings writes a ring's owner fields and then the directory entry
// with release; resolve() loads the entry and the fields with acquire (pairs with it), so
// a producer that finds the entry sees the owner.  The Doorbell's protocol: a producer
// sets a pending bit with a seq_cst fetch_or and then loads `asleep` (seq_cst); the
// progress thread stores `asleep` (seq_cst), then re-reads the bitmap (seq_cst) before it
// sleeps: either it sees the bit or the producer sees it asleep and wakes it (Dekker).
// The records themselves are ordered by the ring (node/ring.h).
#ifndef EP_NODE_SEGMENT_H_
#define EP_NODE_SEGMENT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "node/ring.h"
#include "node/shm.h"

namespace ep::node {

constexpr uint64_t kSegmentMagic = 0x21656469'6f6e2d70ull;  // "p-node!e"
constexpr uint32_t kLayoutVersion = 2;
constexpr uint32_t kMaxRings = 1024;
constexpr uint32_t kDirEntries = 1u << 20;  // context ids 0 .. kDirEntries - 1
constexpr uint32_t kNoCtx = 0xffffffffu;    // a free ring's ctx

struct Doorbell {
  alignas(64) std::atomic<uint32_t> bell{0};  // futex word of the progress thread (shared)
  std::atomic<uint32_t> asleep{0};             // 1 while the progress thread sleeps on bell
  alignas(64) std::atomic<uint64_t> pending[kMaxRings / 64];

  // A producer: ring i holds a record nobody watches.  True if the caller must wake the
  // progress thread (bell += 1, futex wake, shared): the bit was clear and it sleeps.
  bool mark(uint32_t i) {
    const uint64_t bit = uint64_t{1} << (i % 64);
    // seq_cst: the Dekker pairing with the sleeper (see "Memory ordering").
    if ((pending[i / 64].fetch_or(bit, std::memory_order_seq_cst) & bit) != 0) return false;
    return asleep.load(std::memory_order_seq_cst) != 0;
  }
  // The consumer (a progress pass): takes word w's bits.  acquire: pairs with the
  // fetch_or of mark (the records it announces were published before it).
  uint64_t take(uint32_t w) {
    if (pending[w].load(std::memory_order_relaxed) == 0) return 0;  // relaxed: a hint
    return pending[w].exchange(0, std::memory_order_acquire);
  }
  // Some bit is set (the sleeper's re-check; seq_cst, see "Memory ordering").
  bool any() const {
    for (const auto& p : pending) {
      if (p.load(std::memory_order_seq_cst) != 0) return true;
    }
    return false;
  }
};

// One communicator fragment's place in the node collectives (runtime/node_coll.h says
// who writes what and the ordering): its operation counters, the futex its waiting
// thread sleeps on, and two data slots (operation k uses slot k % 2).
constexpr uint32_t kCellData = 32768;
struct CollCell {
  alignas(64) std::atomic<uint64_t> arrive{0};  // operations the owner arrived at
  std::atomic<uint64_t> base{0};  // `arrive` when the ring was last assigned
  alignas(64) std::atomic<uint64_t> done{0};    // operations whose slots it finished reading
  alignas(64) std::atomic<uint32_t> bell{0};    // futex word of the owner's waiter (shared)
  std::atomic<uint32_t> asleep{0};              // owner's waiters asleep on bell
  alignas(64) char data[2][kCellData];
};

struct SegmentHeader {
  uint64_t magic;
  uint32_t version;
  int32_t pid;
  uint64_t cookie;
  uint64_t length;  // the whole segment
  uint32_t ring_count;
  uint32_t ring_capacity;  // bytes of each ring's data (a power of two)
  uint64_t ring_stride;    // bytes between two rings' headers
  uint64_t dir_offset;
  uint64_t rings_offset;
  uint64_t staging_offset;
  uint64_t staging_length;
  uint64_t cells_offset;  // ring_count CollCells, sizeof(CollCell) apart
  Doorbell doorbell;
};
constexpr size_t kHeaderBytes = 4096;
static_assert(sizeof(SegmentHeader) <= kHeaderBytes, "the header fits its page");

// A ring's capacity for messages of up to `eager_limit` bytes: max(64 KiB, twice the
// largest eager record), rounded up to a power of two.
uint32_t ring_capacity_for(int64_t eager_limit);

// This process's segment.
class Segment {
 public:
  Segment() = default;
  ~Segment() { destroy(); }
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Makes the segment: rings of `ring_capacity` bytes, a staging pool of `staging_bytes`.
  // False with *error naming the failed system call.
  bool create(uint32_t ring_capacity, uint64_t staging_bytes, std::string* error);
  // The peers have mapped it: the descriptor goes (the mappings keep the memory).
  void close_fd() { close_memfd_fd(&mem_); }
  void destroy();

  int fd() const { return mem_.fd; }
  size_t length() const { return mem_.len; }
  uint64_t cookie() const { return header()->cookie; }
  // The address of the cookie in this process (for peers' cross-memory attach probe).
  uint64_t cookie_address() const { return reinterpret_cast<uint64_t>(&header()->cookie); }
  SegmentHeader* header() const { return reinterpret_cast<SegmentHeader*>(mem_.base); }
  Doorbell& doorbell() const { return header()->doorbell; }

  // n consecutive rings for context `ctx` (local index i takes first + i), published in
  // the directory; the first index, or -1 (none free, or ctx beyond the directory).
  int assign_rings(uint32_t ctx, int n) { return assign(ctx, n, /*publish=*/true); }
  // One ring for a private use of the owner's (owner ctx `ctx`, which must be at least
  // kDirEntries: no context's), announced to producers by the owner itself.
  int assign_private(uint32_t ctx) { return assign(ctx, 1, /*publish=*/false); }
  // Takes them back: the directory entry is cleared, the owners changed.
  void release_rings(uint32_t ctx, int first, int n);
  uint32_t ring_count() const { return header()->ring_count; }
  Ring ring(int i) const {
    return Ring(reinterpret_cast<RingHeader*>(mem_.base + header()->rings_offset +
                                              static_cast<uint64_t>(i) * header()->ring_stride),
                header()->ring_capacity);
  }
  // Ring i's owner as this process assigned it (its own copy, not the shared one).
  Owner owner(int i) const;
  // Ring i's collective cell.
  CollCell* cell(int i) const {
    return reinterpret_cast<CollCell*>(mem_.base + header()->cells_offset) + i;
  }

  // A staging block of `bytes` (64-byte aligned): its offset in the pool, or -1 if no
  // room now.  stage_at: its address here.
  int64_t stage_alloc(uint64_t bytes);
  void stage_free(int64_t offset);
  char* stage_at(int64_t offset) const {
    return mem_.base + header()->staging_offset + static_cast<uint64_t>(offset);
  }
  uint64_t staging_length() const { return header()->staging_length; }

 private:
  int assign(uint32_t ctx, int n, bool publish);
  Memfd mem_;
  std::mutex mu_;
  std::vector<uint8_t> used_;      // guarded by mu_: rings assigned
  std::vector<Owner> owners_;      // guarded by mu_ (read under it by owner())
  std::vector<uint32_t> gen_;      // guarded by mu_: each ring's generation
  std::map<uint64_t, uint64_t> staged_;  // guarded by mu_: offset -> length
};

// Another process's segment, mapped here.
class PeerSegment {
 public:
  PeerSegment() = default;
  ~PeerSegment() { unmap(); }
  PeerSegment(const PeerSegment&) = delete;
  PeerSegment& operator=(const PeerSegment&) = delete;

  // Maps process pid's segment (its fd, `length` bytes) and validates its header against
  // what the process announced.  False (nothing mapped) if anything disagrees.
  bool map(int pid, int fd, uint64_t length, uint64_t cookie);
  void unmap();
  int pid() const { return pid_; }

  // The ring of endpoint `local` of context `ctx` there: its index and *generation, or
  // -1 if that context has no rings (or the ring belongs to someone else now).
  int resolve(uint32_t ctx, uint16_t local, uint32_t* generation) const;
  uint32_t ring_count() const { return ring_count_; }
  Ring ring(int i) const {
    return Ring(reinterpret_cast<RingHeader*>(base_ + rings_offset_ +
                                              static_cast<uint64_t>(i) * ring_stride_),
                ring_capacity_);
  }
  uint32_t max_record() const { return ring_capacity_ / 2; }
  // Ring i's collective cell (i < ring_count()).
  CollCell* cell(int i) const { return reinterpret_cast<CollCell*>(base_ + cells_offset_) + i; }
  // This process's copy of ring i's head (see Ring::push).
  std::atomic<uint64_t>& head_hint(int i) const { return hints_[i]; }
  // A lock per ring for this process's producers, for a caller whose pushes to one ring
  // must take turns (runtime/node.cc, under ThreadSanitizer); unused otherwise.
  std::atomic<bool>& turn(int i) const { return turns_[i]; }
  Doorbell& doorbell() const { return reinterpret_cast<SegmentHeader*>(base_)->doorbell; }
  // Bytes [offset, offset + bytes) of its staging pool here, or nullptr if they are not
  // all inside it.
  const char* staged(uint64_t offset, uint64_t bytes) const {
    if (offset > staging_length_ || bytes > staging_length_ - offset) return nullptr;
    return base_ + staging_offset_ + offset;
  }

 private:
  char* base_ = nullptr;
  uint64_t length_ = 0;
  int pid_ = 0;
  uint32_t ring_count_ = 0, ring_capacity_ = 0;
  uint64_t ring_stride_ = 0, rings_offset_ = 0, dir_offset_ = 0;
  uint64_t staging_offset_ = 0, staging_length_ = 0, cells_offset_ = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> hints_;
  std::unique_ptr<std::atomic<bool>[]> turns_;
};

}  // namespace ep::node

#endif  // EP_NODE_SEGMENT_H_
