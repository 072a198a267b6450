// datatype.h - what libep needs to know about an MPI_Datatype, and copying with it.
//
// What it is: TypeInfo is the size, extent and contiguity of a datatype, computed by
// describe() (builtin types are cached process-wide; derived types are queried each
// time because their handles can be freed and reused).  pack/unpack/copy move data
// between a (buf, count, type) triple and its packed bytes - the representation
// libep carries in messages - with memcpy when the type is contiguous and
// MPI_Pack/MPI_Unpack otherwise.
//
// Threading: all functions are thread-safe (MPI_THREAD_MULTIPLE).
//
// Memory ordering: a builtin type's slot is claimed with a relaxed CAS, filled, and
// published with a release store of kReady; described_builtin loads it with acquire.
#ifndef EP_RUNTIME_DATATYPE_H_
#define EP_RUNTIME_DATATYPE_H_

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstring>

namespace ep::runtime {

struct TypeInfo {
  int64_t size = 0;     // bytes of data in one element (MPI_Type_size)
  int64_t extent = 0;   // MPI_Type_get_extent
  int64_t true_lb = 0;  // MPI_Type_get_true_extent
  bool contiguous = false;
};

// EP_Init/EP_Finalize: set up and release the commit check of describe().
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

// Packs `count` elements at `buf` into `out` (which holds at least count*size bytes).
void pack(const void* buf, int count, MPI_Datatype type, const TypeInfo& ti, void* out);
// Unpacks `bytes` packed bytes into `buf` (which holds `count` elements); copies
// whole elements only, at most `count` of them.
void unpack(const void* in, int64_t bytes, void* buf, int count, MPI_Datatype type,
            const TypeInfo& ti);
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

// Copies the packed form of (sbuf, scount, stype) into (rbuf, rcount, rtype), at most
// `bytes` bytes (the smaller of both sides).  One copy when either side is contiguous.
void copy(const void* sbuf, int scount, MPI_Datatype stype, const TypeInfo& sti, void* rbuf,
          int rcount, MPI_Datatype rtype, const TypeInfo& rti, int64_t bytes);

}  // namespace ep::runtime

#endif  // EP_RUNTIME_DATATYPE_H_
