// coll.h - collectives over endpoints communicators.
//
// What it is: EP_Barrier, EP_Bcast and EP_Allreduce on intra- and
// intercommunicators.  Arguments are checked by api/; these functions implement the
// semantics.
//
// How: two levels (runtime/exchange.h).  The endpoints of one fragment (normally:
// of one process) meet in shared memory; their leader exchanges with the other
// fragments' leaders over hidden point-to-point.  Which layouts take which path:
// every layout (grouped by process, reversed, interleaved, several fragments per
// process after a merge) takes the same path, because data always travels tagged
// with its rank:
//   Barrier    gather to fragment 0 and release (binomial tree).
//   Bcast      binomial tree over the fragments, rooted at the root's fragment.
//   Allreduce  every contribution reaches every fragment, whose leader applies the
//              op once per fragment in rank order (x0 op (x1 op (... op x(n-1))))
//              with MPI_Reduce_local - correct for user ops, non-commutative ops and
//              any datatype.  The traffic grows with the number of endpoints times
//              the count: the hierarchical fast path for large payloads is the
//              collectives issue's work.
// On an intercommunicator each group works on its hidden local_comm, and the two
// rank-0 endpoints exchange across the intercommunicator.
//
// Threading: collective over the endpoints of the communicator, one thread each.
#ifndef EP_COLLECTIVES_COLL_H_
#define EP_COLLECTIVES_COLL_H_

#include <mpi.h>

#include "runtime/comm.h"
#include "runtime/datatype.h"

namespace ep::collectives {

using runtime::Endpoint;
using runtime::TypeInfo;

int barrier(Endpoint* ep);
int bcast(Endpoint* ep, void* buf, int count, MPI_Datatype type, const TypeInfo& ti, int root);
// sbuf may be EP_IN_PLACE (intracommunicators only; api/ checks).
int allreduce(Endpoint* ep, const void* sbuf, void* rbuf, int count, MPI_Datatype type,
              const TypeInfo& ti, MPI_Op op);

}  // namespace ep::collectives

#endif  // EP_COLLECTIVES_COLL_H_
