// layout.h - where the bytes of (count, datatype) lie, for one-sided operations.
//
// What it is: a Layout flattens (count, datatype) into its contiguous byte blocks in
// type-map order (adjacent blocks merged), relative to the buffer address.  The
// concatenation of the blocks is the operation's *stream*; an operation moves a
// stream from the origin's layout to the target's (put, accumulate) or back (get).
// Streams are raw memory bytes (this is a homogeneous runtime), so no MPI_Pack is
// involved and no datatype handle has to survive the call: the target and the
// progress thread only ever see blocks.  Each predefined element counts its true
// extent (equal to its size except for the pair types with a hole, such as
// MPI_SHORT_INT, whose padding travels along), so both sides of an operation agree.
//
// Supported constructors: named, dup, contiguous, vector, hvector, indexed,
// hindexed, indexed_block, hindexed_block, struct and resized.  Subarray and darray
// types are EP_ERR_TYPE.
//
// Accumulate checks: `basic` is the one predefined type every element has
// (MPI_DATATYPE_NULL if they differ), and op_allows() says whether MPI defines a
// predefined op on it (MPI 3.1 section 5.9.2; MPI_REPLACE and MPI_NO_OP take any).
//
// Threading: pure functions; thread-safe (layout_of only queries MPI about datatypes).
//
// Memory ordering: none of its own: the functions read and write only the memory they
// are given, on the calling thread.  A caller that copies into or combines window
// memory that other threads or processes may access orders those accesses itself (the
// accumulate lock, rma/lock.h, or the epoch's synchronization, rma/window.h).
#ifndef EP_RMA_LAYOUT_H_
#define EP_RMA_LAYOUT_H_

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace ep::rma {

struct Block {
  int64_t off = 0;  // bytes from the buffer address
  int64_t len = 0;
  int64_t pos = 0;  // where the block starts in the stream
};

struct Layout {
  std::vector<Block> blocks;
  int64_t bytes = 0;       // stream length
  int64_t lo = 0, hi = 0;  // lowest and one-past-highest byte touched (0, 0 if none)
  MPI_Datatype basic = MPI_DATATYPE_NULL;  // the single predefined element type
  int64_t elem = 1;                        // its stream size (true extent)
};

// Returns false (with *why) for a constructor libep cannot flatten.
bool layout_of(int count, MPI_Datatype type, Layout* out, const char** why);

// Copies stream bytes [a, b) of `base` laid out as `l` to `out`, and back.
void gather(const char* base, const Layout& l, int64_t a, int64_t b, char* out);
void scatter(char* base, const Layout& l, int64_t a, int64_t b, const char* in);
// Copies a whole stream from one layout to another (same stream length).
void copy(const char* src, const Layout& sl, char* dst, const Layout& dl);

// The pieces of stream range [a, b): (offset from base, length), in stream order.
void pieces(const Layout& l, int64_t a, int64_t b, std::vector<Block>* out);

// True if `op` is one of MPI's predefined ops (user ops are not allowed in RMA).
bool is_predefined_op(MPI_Op op);
// True if MPI defines predefined `op` on predefined `type`.
bool op_allows(MPI_Op op, MPI_Datatype type);
// True for the types MPI allows in MPI_Compare_and_swap (integer, logical, byte).
bool cas_allows(MPI_Datatype type);
// target = target (op) in, for `n` elements of `basic`; MPI_REPLACE copies and
// MPI_NO_OP leaves the target alone.  Integer and float/double elements are combined by
// libep's own loops (no MPI call, so no MPICH lock in the progress engine's handler, and
// ThreadSanitizer sees the accesses); other types by MPI_Reduce_local.
void reduce(const char* in, char* target, int64_t n, MPI_Datatype basic, MPI_Op op);
// The same on two streams of `bytes` bytes (elements `elem` stream bytes apart).
void reduce_stream(const char* in, char* inout, int64_t bytes, int64_t elem, MPI_Datatype basic,
                   MPI_Op op);

}  // namespace ep::rma

#endif  // EP_RMA_LAYOUT_H_
