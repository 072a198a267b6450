// handles.h - the MPI handles that name libep's objects, and the lock-free tables
// behind them.
//
// What it is: an endpoint, a request, a group, a window or a matched message of libep
// reaches the application as an ordinary MPICH handle (a 32-bit int).  MPICH's valid
// handles have a nonzero kind in bits 30-31 (builtin, direct, indirect); kind 0
// ("invalid") is used only by its null handles, whose low 26 bits are zero.  libep's
// handles are kind 0 with object type 15 in bits 26-29 (no MPICH object type), the
// libep object kind in bits 23-25 and a table index (>= 1) in bits 0-22:
//
//     0x3C000000 | kind << 23 | index
//
// so that `is_ep(h)` and `is_kind<K>(h)` are one mask compare, and a handle of the wrong
// kind, a null handle or a stray value falls through to MPICH, whose own checks answer
// it with the error class MPI names.
//
// A Table maps the indexes of one kind to the objects (void *): chunks of 4096 slots
// installed once and never freed, so a lookup is two loads and never touches freed
// memory.  Indexes are handed out and taken back through a per-thread cache (up to
// kCacheMax indexes of each kind, last in first out: a thread's hot slots stay in its
// cache lines) and a global lock-free stack (a Treiber stack whose head carries a 32-bit
// tag against ABA); fresh indexes come from a bump counter.  Requests are made and freed
// at message rate: acquiring and releasing an index takes no lock and, in the common
// case, no atomic read-modify-write (make, release_slot and the cache are inline).
//
// Threading: every function is thread-safe.  A slot is written by the thread that
// acquired its index, before the handle is published to the application; it is read by
// any thread the application hands the handle to (the application's own
// synchronization orders the two, as for any MPI handle).  Using a handle after it was
// freed is erroneous (as in MPI): the lookup then gives null, or the object that now
// owns the recycled index.
//
// Memory ordering: a slot's `obj` is stored with release and loaded with acquire, so
// that a thread that finds the object also sees the slot's `owner` and `aux`, written
// before it (relaxed); chunk pointers are installed with a release CAS and read with
// acquire.  The free stack's CAS is acq_rel: a pop sees the `next` link written before
// the push that published the index.
#ifndef EP_MPI_HANDLES_H_
#define EP_MPI_HANDLES_H_

#include <atomic>
#include <cstdint>

namespace ep::mpi {

enum class Kind : uint32_t { kComm = 0, kRequest = 1, kGroup = 2, kWin = 3, kMessage = 4 };
constexpr int kKinds = 5;

constexpr uint32_t kEpPattern = 0x3C000000u;  // kind 0, object type 15
constexpr uint32_t kEpMask = 0xFC000000u;     // bits 26-31
constexpr uint32_t kKindShift = 23;
constexpr uint32_t kKindMask = 0xFF800000u;  // bits 23-31
constexpr uint32_t kIndexBits = 23;
constexpr uint32_t kMaxIndex = (1u << kIndexBits) - 1;

// True for any libep handle.
inline bool is_ep(int h) { return (static_cast<uint32_t>(h) & kEpMask) == kEpPattern; }

// True for a libep handle of kind K.
template <Kind K>
inline bool is_kind(int h) {
  return (static_cast<uint32_t>(h) & kKindMask) ==
         (kEpPattern | (static_cast<uint32_t>(K) << kKindShift));
}

inline int encode(Kind k, uint32_t index) {
  return static_cast<int>(kEpPattern | (static_cast<uint32_t>(k) << kKindShift) | index);
}

inline uint32_t index_of(int h) { return static_cast<uint32_t>(h) & kMaxIndex; }

struct Slot {
  std::atomic<void*> obj{nullptr};  // the libep object; null while the index is free
  std::atomic<int> owner{0};        // the MPI handle of the communicator or window it came from
  std::atomic<void*> aux{nullptr};  // storage that lives as long as the object (layer.h, Keep)
  std::atomic<uint32_t> next{0};    // the free stack's link while the index is free
};

constexpr uint32_t kCacheMax = 256;   // free indexes a thread keeps per kind
constexpr uint32_t kCacheBatch = 64;  // moved to or from the global stack at once

// A thread's free indexes of every kind.  Created at the thread's first use (handles.cc)
// and reached through an initial-exec TLS pointer (the object itself is too large for the
// static TLS reserve of a dlopen'ed library); null again once the thread exits.
struct IndexCache {
  uint32_t n[kKinds] = {};
  uint32_t idx[kKinds][kCacheMax];
};
extern __thread IndexCache* t_index_cache __attribute__((tls_model("initial-exec")));

class Table {
 public:
  static constexpr uint32_t kChunkBits = 12;
  static constexpr uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr uint32_t kMaxChunks = (kMaxIndex + 1) >> kChunkBits;

  explicit constexpr Table(Kind kind) : kind_(kind) {}

  // The slot of index i, or null if no index that high was ever handed out.
  Slot* slot(uint32_t i) const {
    Slot* c = chunks_[i >> kChunkBits].load(std::memory_order_acquire);  // acquire: pairs
    // with the release CAS in install_chunk()
    return c == nullptr ? nullptr : &c[i & (kChunkSize - 1)];
  }
  // The object behind handle h (of this table's kind), or null.
  void* get(int h) const {
    Slot* s = slot(index_of(h));
    return s == nullptr ? nullptr : s->obj.load(std::memory_order_acquire);  // acquire: pairs
    // with the release store in make()
  }
  // Makes a handle for obj (owner and aux as in Slot); 0 when the table is full.  Never
  // blocks; allocates only when a new chunk of slots is needed.
  int make(void* obj, int owner, void* aux = nullptr) {
    const uint32_t i = acquire_index();
    if (i == 0) return 0;
    Slot* s = slot(i);
    // relaxed: published by the release store of obj.
    s->owner.store(owner, std::memory_order_relaxed);
    s->aux.store(aux, std::memory_order_relaxed);
    s->obj.store(obj, std::memory_order_release);  // release: pairs with the acquire in get()
    return encode(kind_, i);
  }
  // Frees handle h's index (its slot must hold an object).  Never blocks.
  void release(int h) { release_slot(slot(index_of(h)), index_of(h)); }
  void release_slot(Slot* s, uint32_t i) {
    // relaxed: the index is reused only after release_index, whose stack CAS (or this
    // thread's own cache) orders these stores before the next owner's writes.
    s->aux.store(nullptr, std::memory_order_relaxed);
    s->obj.store(nullptr, std::memory_order_relaxed);
    release_index(i);
  }

  // Index bookkeeping (public for the stress test): the thread's cache, else the slow
  // paths (global stack, fresh indexes).
  uint32_t acquire_index() {
    IndexCache* c = t_index_cache;
    const int k = static_cast<int>(kind_);
    if (c != nullptr && c->n[k] != 0) return c->idx[k][--c->n[k]];
    return acquire_slow();
  }
  void release_index(uint32_t i) {
    IndexCache* c = t_index_cache;
    const int k = static_cast<int>(kind_);
    if (c != nullptr && c->n[k] < kCacheMax) {
      c->idx[k][c->n[k]++] = i;
      return;
    }
    release_slow(i);
  }

 private:
  uint32_t acquire_slow();
  void release_slow(uint32_t i);
  bool install_chunk(uint32_t chunk);
  void push(uint32_t first, uint32_t last);  // a chain first..last linked through next
  uint32_t pop();

  Kind kind_;
  std::atomic<Slot*> chunks_[kMaxChunks] = {};
  std::atomic<uint64_t> free_head_{0};  // tag << 32 | index (0: empty)
  std::atomic<uint32_t> fresh_{1};      // the next never-used index (0 is never valid)
};

// The table of each kind (static storage, trivially destructible: valid until exit).
extern Table g_tables[kKinds];
inline Table& table(Kind k) { return g_tables[static_cast<int>(k)]; }

}  // namespace ep::mpi

#endif  // EP_MPI_HANDLES_H_
