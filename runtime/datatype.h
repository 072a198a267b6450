// datatype.h - what libep needs to know about an MPI_Datatype, and copying with it.
//
// What it is: describe() gives a TypeInfo - size, extent, contiguity and, for a
// non-contiguous type, its TypeDesc: the type's typemap as libep's own engine walks it
// (runtime/typemap.h).  pack/unpack/copy move data between a (buf, count, type) triple
// and its packed bytes - MPI_Pack's representation, which libep carries in messages -
// with memcpy, from the description alone: after a type's first description no MPI
// call is made for it.
//
// The first description of a derived type asks MPI once: the commit check (MPI_Pack of
// 0 elements on a private communicator that returns errors: MPI has no "is committed"
// query; an uncommitted type is refused and not remembered), the type's constructor,
// recursively (MPI_Type_get_envelope/MPI_Type_get_contents for every MPI 3.1 combiner;
// a darray, and anything whose decoding disagrees with MPI's size and bounds, is
// flattened from MPI_Pack of byte positions instead), and its bounds.  The result is
// remembered process-wide, keyed by the handle, and tied to the type's life: each
// described derived type carries an attribute of libep's keyval whose delete callback
// - run by MPI_Type_free before the handle can name another type - retires the entry.
// The keyval's copy callback copies nothing, so MPI_Type_dup's result gets its own.
// Builtin types live in a table of their own (g_builtin, below) and never die.
//
// Lifetime of a TypeDesc: reference counted.  The process-wide table holds one
// reference while the type lives (dropped by the delete callback); each thread's
// cache of recent lookups (64 sets of 2) holds one per entry.  A TypeInfo from
// describe() borrows its desc: the table keeps it while the type lives, the calling
// thread's cache after MPI_Type_free until that thread describes two other types of
// the same set or the same handle again - so for the rest of the libep call that
// described it, which is all a blocking call needs (a call that frees a type while
// another thread's call is still passing it in races with it, under MPI too).  What
// keeps a TypeInfo beyond its call - a nonblocking or persistent request, a
// rendezvous sender's request, a collective's arguments - holds a reference of its own
// (TypeRef, type_hold), so a type freed while an operation that uses it is pending
// keeps working.  A TypeInfo whose desc is nullptr (builtin and contiguous types)
// needs no reference.
//
// Lookups take no lock: the builtin table and the per-thread cache are read with
// plain loads and one acquire load of the table entry that validates the cached
// reference; a thread's first lookup of a known type takes its reference with a CAS
// (never from 0).  Only first descriptions (one per type, which call MPI anyway) and
// retirements take the table's mutexes.  Retired descriptions are freed when their
// last reference goes, and never while a lookup may still be about to take one.
//
// Threading: all functions are thread-safe (MPI_THREAD_MULTIPLE).
//
// Memory ordering: a builtin type's slot is claimed with a relaxed CAS, filled, and
// published with a release store of kReady; described_builtin loads it with acquire.
// A TypeDesc is built, then published with a release store into its table entry, which
// lookups load with acquire.  Reference counts: acq_rel decrements (the last one frees,
// after every holder's reads); increments need no order beyond the entry's acquire.  A
// thread taking its first reference counts itself in `takers` (seq_cst) before it
// loads the entry (seq_cst); the freeing side unlinks (seq_cst store) before it reads
// takers (seq_cst): if it reads 0, no taker can still load what it frees
// (datatype.cc, take_reference).
#ifndef EP_RUNTIME_DATATYPE_H_
#define EP_RUNTIME_DATATYPE_H_

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "runtime/typemap.h"

namespace ep::runtime {

struct TypeDesc;

struct TypeInfo {
  int64_t size = 0;     // bytes of data in one element (MPI_Type_size)
  int64_t extent = 0;   // MPI_Type_get_extent
  int64_t true_lb = 0;  // MPI_Type_get_true_extent
  // The typemap of a type that is not contiguous (borrowed or held: see "Lifetime").
  const TypeDesc* desc = nullptr;
  // One run of `size` bytes at true_lb, and elements `size` bytes apart.
  bool contiguous = false;
  bool named = false;  // a predefined type (MPI_COMBINER_NAMED)
};

// A described type that is not contiguous: its info (info.desc == this), its true
// extent and its element's typemap.  Immutable but for `refs`.
struct TypeDesc {
  mutable std::atomic<int64_t> refs{1};  // see "Lifetime"; starts as the table's
  TypeInfo info;
  int64_t true_extent = 0;
  NodePtr root;
};

// EP_Init/EP_Finalize: set up and release the commit check of describe(); the keyval
// is created once per process and kept (types outlive EP_Finalize).
void datatype_init();
void datatype_finalize();
inline bool is_builtin_type(MPI_Datatype type) {
#ifdef MPICH
  // MPICH encodes builtin datatypes in the handle (HANDLE_KIND_BUILTIN); they are
  // never freed, so caching them is safe.
  return (static_cast<unsigned>(type) & 0xc0000000u) == 0x40000000u;
#else
  (void)type;
  return false;
#endif
}

// What every thread learned of builtin types, process-wide: a slot per value of the
// handle's low byte (MPICH numbers its builtin types there), each filled once - the
// first thread to claim it writes type and info, then publishes them - and read-only
// afterwards.  A type whose slot holds another type, or is being filled, is queried.
// Only contiguous types are kept here (every builtin type but the pair types with a
// hole, which are described as derived types are).
struct BuiltinSlot {
  static constexpr uint32_t kEmpty = 0, kFilling = 1, kReady = 2;
  std::atomic<uint32_t> state{kEmpty};
  MPI_Datatype type = MPI_DATATYPE_NULL;  // written once, before kReady
  TypeInfo info;                          // written once, before kReady
};
extern BuiltinSlot g_builtin[256];

// describe() of anything but a builtin type already in the table.
bool describe_slow(MPI_Datatype type, TypeInfo* info);
// The TypeInfo of a builtin type already in the table, else nullptr (then describe).
inline const TypeInfo* described_builtin(MPI_Datatype type) {
  if (!is_builtin_type(type)) return nullptr;
  const BuiltinSlot& s = g_builtin[static_cast<unsigned>(type) & 255];
  // acquire: pairs with describe_slow's release store of kReady (type, info written).
  if (s.state.load(std::memory_order_acquire) != BuiltinSlot::kReady || s.type != type) {
    return nullptr;
  }
  return &s.info;
}
// False if `type` is not a valid committed datatype.  Inline: a builtin type is one
// table lookup, made twice per message.
inline bool describe(MPI_Datatype type, TypeInfo* info) {
  if (const TypeInfo* known = described_builtin(type)) {
    *info = *known;
    return true;
  }
  return describe_slow(type, info);
}

// References (see "Lifetime"): nothing to do for a TypeInfo without desc.
inline void type_hold(const TypeInfo& ti) {
  // relaxed: the holder already reads the desc safely (borrowed or held); a new
  // reference orders nothing.
  if (ti.desc != nullptr) ti.desc->refs.fetch_add(1, std::memory_order_relaxed);
}
void type_release_desc(const TypeDesc* d);
inline void type_release(const TypeInfo& ti) {
  if (ti.desc != nullptr) type_release_desc(ti.desc);
}
// A TypeInfo with a reference of its own: what long-lived objects keep.
class TypeRef {
 public:
  TypeRef() = default;
  explicit TypeRef(const TypeInfo& ti) : ti_(ti) { type_hold(ti_); }
  TypeRef(const TypeRef& o) : ti_(o.ti_) { type_hold(ti_); }
  TypeRef& operator=(const TypeRef& o) {
    if (this != &o) {
      type_hold(o.ti_);
      type_release(ti_);
      ti_ = o.ti_;
    }
    return *this;
  }
  TypeRef& operator=(const TypeInfo& ti) { return *this = TypeRef(ti); }
  ~TypeRef() { type_release(ti_); }
  const TypeInfo& get() const { return ti_; }
  operator const TypeInfo&() const { return ti_; }  // NOLINT: a held TypeInfo is one
  const TypeInfo* operator->() const { return &ti_; }

 private:
  TypeInfo ti_;
};

// The true extent (MPI_Type_get_true_extent) of one element.
inline int64_t true_extent(const TypeInfo& ti) {
  return ti.desc != nullptr ? ti.desc->true_extent : ti.size;
}

// Packs `count` elements at `buf` into `out` (which holds at least count*size bytes).
void pack(const void* buf, int count, const TypeInfo& ti, void* out);
// Unpacks `bytes` packed bytes into `buf` (which holds `count` elements); copies
// whole elements only, at most `count` of them.
void unpack(const void* in, int64_t bytes, void* buf, int count, const TypeInfo& ti);
// memcpy for the message paths, where most copies are a few bytes (an 8-byte payload):
// up to 32 bytes it moves two overlapping words of a fixed size, which the compiler
// inlines, instead of calling into the C library, whose call costs more than such a
// copy (docs/perf/runtime.md).  The ranges must not overlap, as for memcpy.
__attribute__((always_inline)) inline void copy_bytes(void* dst, const void* src, size_t n) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  auto two = [&](auto word) {  // the first and the last sizeof(word) bytes
    constexpr size_t w = sizeof(word);
    decltype(word) a, b;
    std::memcpy(&a, s, w);
    std::memcpy(&b, s + n - w, w);
    std::memcpy(d, &a, w);
    std::memcpy(d + n - w, &b, w);
  };
  struct Half {
    uint64_t x[2];
  };
  if (n > 32) {
    std::memcpy(d, s, n);
  } else if (n >= 16) {
    two(Half{});
  } else if (n >= 8) {
    two(uint64_t{});
  } else if (n >= 4) {
    two(uint32_t{});
  } else if (n >= 2) {
    two(uint16_t{});
  } else if (n == 1) {
    *d = *s;
  }
}

// Copies the packed form of (sbuf, scount, sti) into (rbuf, rcount, rti), at most
// `bytes` bytes (the smaller of both sides; whole receive elements only, as unpack).
// One copy when either side is contiguous.
void copy(const void* sbuf, int scount, const TypeInfo& sti, void* rbuf, int rcount,
          const TypeInfo& rti, int64_t bytes);

// Tests: the description of `type` held by the calling thread's cache, or nullptr if
// it has none (never described there, or freed since); and the number of descriptions
// alive (retired ones not yet freed included).
const TypeDesc* cached_desc(MPI_Datatype type);
int64_t live_descs();

}  // namespace ep::runtime

#endif  // EP_RUNTIME_DATATYPE_H_
