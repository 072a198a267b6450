// datatype_decode.h - the first description of a datatype: what MPI says of it, once.
//
// What it is: describe_new() asks MPI about a committed datatype and builds its
// TypeDesc (runtime/datatype.h): the combiner tree read with MPI_Type_get_envelope and
// MPI_Type_get_contents, recursively, turned into typemap nodes (runtime/typemap.h);
// the size and bounds from MPI_Type_size_x, MPI_Type_get_extent_x and
// MPI_Type_get_true_extent_x.  A darray, an unknown combiner, and any decoding whose
// size or true bounds disagree with MPI's are flattened instead: MPI_Pack of one
// element of a scratch buffer whose bytes hold their own positions (one pass per byte
// of the position) says where each packed byte comes from, in MPI_Pack's order.
// Internal to datatype.cc, which calls it for a handle it has not described.
//
// Threading: any thread; it touches only its arguments (and MPI).
//
// Memory ordering: none (the caller publishes the result).
#ifndef EP_RUNTIME_DATATYPE_DECODE_H_
#define EP_RUNTIME_DATATYPE_DECODE_H_

#include <mpi.h>

#include "runtime/datatype.h"

namespace ep::runtime {

// False if `type` is not a valid committed datatype (uncommitted: the MPI_Pack of 0
// elements on `check_comm`, which must return errors, fails) or cannot be described.
// Fills d->info (with info.desc = d when the type is not contiguous), true_extent and
// root.
bool describe_new(MPI_Datatype type, MPI_Comm check_comm, TypeDesc* d);

// The description of `type` built from MPI_Pack alone (the flattening above), or
// nullptr if its true extent is too large to probe.  Tests compare it with decoding.
NodePtr probe_typemap(MPI_Datatype type, MPI_Comm comm);

}  // namespace ep::runtime

#endif  // EP_RUNTIME_DATATYPE_DECODE_H_
