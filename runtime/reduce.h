// reduce.h - libep's own element-wise reductions for MPI's predefined ops and types.
//
// What it is: target[i] = in[i] (op) target[i] for the common predefined ops (SUM,
// PROD, MAX, MIN, the logical and bitwise ops) on the predefined integer and
// float/double types, in libep's own loops: no MPI call (no MPICH lock, which matters
// inside the progress engine's handlers), visible to ThreadSanitizer, and vectorized
// (MPICH's MPI_Reduce_local is a scalar loop behind a lock).  Everything else -
// MAXLOC/MINLOC, complex and long double elements, user ops, derived types - is left
// to MPI_Reduce_local: reduce_builtin returns false.  Used by the one-sided layer
// (accumulates) and by collective reductions.
//
// The classification helpers say which predefined family an MPI type belongs to.
//
// Threading: pure functions.  Buffers need not be aligned.
//
// Memory ordering: none (no shared state).
#ifndef EP_RUNTIME_REDUCE_H_
#define EP_RUNTIME_REDUCE_H_

#include <mpi.h>

#include <cstdint>
#include <initializer_list>

namespace ep::runtime {

bool one_of(MPI_Datatype t, std::initializer_list<MPI_Datatype> list);
bool is_integer(MPI_Datatype t);   // C and fixed-width integers, MPI_AINT/OFFSET/COUNT
bool is_floating(MPI_Datatype t);  // float, double, long double
bool is_logical(MPI_Datatype t);   // MPI_C_BOOL, MPI_CXX_BOOL
bool is_complex(MPI_Datatype t);   // the C complex types
bool is_pair(MPI_Datatype t);      // the MAXLOC/MINLOC pair types

// target[i] = in[i] (op) target[i] for i < n elements of predefined `t`; false (and
// nothing written) when op or t is not one libep's loops cover.  With n == 0 nothing
// is touched: a cheap check whether the loops cover op and t.
bool reduce_builtin(const void* in, void* target, int64_t n, MPI_Datatype t, MPI_Op op);
// out[i] = a[i] (op) b[i] (one pass instead of a copy and a reduction); `out` must not
// overlap `a` or `b`.  False, as above, for what the loops do not cover.
bool reduce_builtin3(const void* a, const void* b, void* out, int64_t n, MPI_Datatype t, MPI_Op op);

}  // namespace ep::runtime

#endif  // EP_RUNTIME_REDUCE_H_
