// cma.h - cross-memory attach: one kernel copy between this process and another of the
// node (process_vm_readv / process_vm_writev).
//
// What it is: the kernel copies straight between two address spaces when the caller
// may ptrace-read (or -write) the other process: the job's own processes, unless
// /proc/sys/kernel/yama/ptrace_scope, a seccomp filter or a container forbids it.
// cma_probe() tells beforehand, by reading a value the other process announced.
//
// Threading: every function is thread-safe.
//
// Memory ordering: none.  The kernel's copy is ordered with the other process's
// accesses by whatever protocol told the caller that the memory is ready (a ring
// record's release store, node/ring.h; a window epoch, rma/segment.h).
#ifndef EP_NODE_CMA_H_
#define EP_NODE_CMA_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace ep::node {

// True if this process may read process `pid`'s memory and the uint64_t at address `at`
// there equals `cookie` (proves the permission and that `pid` is the announced process).
bool cma_probe(int pid, uint64_t at, uint64_t cookie);
// Reads `n` bytes at address `remote` of process `pid` into `local`.  True once all
// arrived; false with *err set to errno (EFAULT, ESRCH: the process is gone, EPERM) or
// EIO for a copy that stopped short.
bool cma_read(int pid, uint64_t remote, void* local, size_t n, int* err);
// Moves `n` bytes between contiguous `local` and `n_remote` blocks of process `pid`
// (`write`: to the process), IOV_MAX blocks per call.  False if the kernel refused or
// stopped short.
bool cma_transfer(int pid, bool write, char* local, const struct iovec* remote, size_t n_remote);

}  // namespace ep::node

#endif  // EP_NODE_CMA_H_
