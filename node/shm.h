// shm.h - memfd segments shared by the processes of one node, and their mapping by peers.
//
// What it is: a segment is an anonymous memory file (memfd_create, never a name in
// /dev/shm), mode 0600, mapped MAP_SHARED by the process that made it.  Another process
// of the job maps it by opening /proc/<pid>/fd/<fd> of the owner - which the kernel
// allows only to processes that may ptrace-read the owner (the job's own, same user) -
// and checks a random cookie the owner wrote at an announced offset, so a wrong process
// or a reused descriptor number is never trusted.  The memory lives while any process
// maps it: nothing outlives the job, whether it ends normally or is killed.
// node_key() tells whether two processes share a node (a guess the cookie confirms).
//
// Threading: every function is thread-safe (system calls on the caller's descriptors).
//
// Memory ordering: none of its own.  What processes share through a segment is ordered
// by the atomics its users place in it (node/ring.h, node/segment.h).
#ifndef EP_NODE_SHM_H_
#define EP_NODE_SHM_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace ep::node {

// A random 64-bit value (segment and window cookies).
uint64_t random_cookie();
// Identifies this node: processes with equal keys may map each other's segments.
// Computed once.
uint64_t node_key();

// A memfd mapped shared in this process.
struct Memfd {
  int fd = -1;
  char* base = nullptr;
  size_t len = 0;
};
// memfd_create(name, MFD_CLOEXEC), fchmod 0600, ftruncate to `len` (sparse: pages are
// allocated when touched), mmap shared, zero-filled.  False, with nothing left behind
// and *error naming the failed call (if error is not null), on failure.
bool create_memfd(const char* name, size_t len, Memfd* out, std::string* error = nullptr);
// Closes the descriptor (the mapping stays); peers can no longer map the segment.
void close_memfd_fd(Memfd* m);
// Unmaps and closes whatever of m is left.
void destroy_memfd(Memfd* m);

// Maps `len` bytes of process `pid`'s memfd `fd` read-write; nullptr unless the file is
// at least that long and the uint64_t at `cookie_offset` equals `cookie` (then nothing
// stays mapped).  Unmap with unmap_peer.
char* map_peer(int pid, int fd, size_t len, size_t cookie_offset, uint64_t cookie);
void unmap_peer(char* base, size_t len);

}  // namespace ep::node

#endif  // EP_NODE_SHM_H_
