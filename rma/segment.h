// segment.h - the node paths: shared segments, their mappings, and cross-memory attach
// (internal to rma).
//
// What it is: each endpoint's window may have a shared segment, a memfd holding a
// kSegHeader-byte header (the accumulate lock and a random cookie) and then, for
// EP_Win_allocate windows, the window memory itself.  At creation every process of the
// node maps the segments of the others (open /proc/<pid>/fd/<fd>, checked against the
// cookie, so a segment of the wrong node or process is never used), and operations to
// an EP_Win_allocate target are done by the origin thread in the mapping, like local
// ones: complete when the call returns, no target involvement.
//
// EP_Win_create windows expose user memory, which cannot be mapped, but their segment
// still holds the accumulate lock: to another process of the node, put and get are one
// process_vm_writev/readv by the origin thread (cross-memory attach: a kernel copy,
// complete when the call returns), and the accumulate family reads, combines and
// writes back the same way while holding the target's lock through the mapping.
// Cross-memory attach is enabled per target at creation by reading the target Win's
// random cookie through it, which proves the permission and that the process is the one
// announced.  Whatever fails (another node, no permission, no descriptors) leaves the
// target to remote handler calls (rma/wire.h).  The memfd, the mapping through /proc and
// the kernel copies are node/'s (node/shm.h, node/cma.h); this file adds the windows'
// header and targets.
//
// Threading: allocate_segment, map_segment and probe_cma run on the creating endpoint's
// thread; cma_copy on the origin endpoint's thread, which owns its Target;
// release_memory on whichever thread deletes the Win (the creator after a failed
// creation, else a baton holder in a later pass).
//
// Memory ordering: a segment and the memory behind cross-memory attach are shared with
// other processes.  The accumulate family orders its accesses by the accumulate lock
// (rma/lock.h).  Puts and gets by another process are ordered with the target's own
// accesses by the epoch's synchronization: a fence's barrier, or the kUnlock packet,
// which the origin sends after its copies completed and MPI delivers to the target.
#ifndef EP_RMA_SEGMENT_H_
#define EP_RMA_SEGMENT_H_

#include <cstddef>
#include <cstdint>

#include "node/shm.h"
#include "rma/window.h"

namespace ep::rma {

// The header in front of the memory in a shared segment.
constexpr size_t kSegHeader = 64;

// Creates w's shared segment: the header with the accumulate lock (w->acc_lock points
// there), then - `with_memory`, for EP_Win_allocate - the window memory itself,
// zero-filled (w->base points there).  False if the segment could not be made (what
// was made stays in w for release_memory).
// `extra`: bytes after the header before the memory (a dynamic window's RegionTable).
bool allocate_segment(Win* w, bool with_memory, size_t extra = 0);
// The cookie in w's segment header (0 without a segment).
uint64_t segment_cookie(const Win* w);

// Maps another process's segment (its `fd`, `len` bytes) into t; false (and nothing
// mapped) if it is not the one announced by `cookie`.
bool map_segment(Target* t, int pid, int fd, size_t len, uint64_t cookie);
// Enables cross-memory attach to `pid` (t->cma_pid) if it works and reaches the
// announced Win: the uint64_t at address `cookie_at` there equals `cookie`.
void probe_cma(Target* t, int pid, uint64_t cookie_at, uint64_t cookie);
// Moves a whole stream between `local` (contiguous) and target t's blocks `tl` at
// displacement `off` by cross-memory attach (`write`: to the target); false if the
// kernel refused (t->cma_pid is then 0: the target falls back to handler calls for good).
bool cma_copy(Target& t, int64_t off, const Layout& tl, char* local, bool write);

// Unmaps the other processes' segments and releases w's own memory and segment.
void release_memory(Win* w);

}  // namespace ep::rma

#endif  // EP_RMA_SEGMENT_H_
