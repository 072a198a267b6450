// cross_process.h - order that runs through another process, made visible to
// ThreadSanitizer.
//
// What it is: a thread of this process may act on what another process sent it, which
// that process sent after hearing from a third thread of this process: the target's
// progress thread writes a put into a window and acknowledges it through MPI, the origin
// then signals the target's endpoint through a node ring, and the endpoint reads the
// window.  The happens-before runs through the other process (its acquire and release of
// MPI's and the rings' shared memory), where ThreadSanitizer, which sees one process,
// cannot follow it.  So every place where a thread of libep hands something to another
// process calls cross_process_release() first, and every place where a thread takes
// something from another process calls cross_process_acquire() after: an MPI send or
// receive of the engine, a record pushed to or drained from a node ring.
//
// Under TSAN (EP_SANITIZER_THREAD) the pair is a release and an acquire of one object per
// process: everything a thread did before it sent anything happens before everything a
// thread does after it received anything - the conservative reading (any reply may
// depend on any earlier message), which hides only the orders TSAN cannot judge.  In
// other builds they are empty.
//
// Threading: any thread.  Memory ordering: none in normal builds (the real order comes
// from MPI and node/ring.h); under TSAN, __tsan_release/__tsan_acquire of the token.
#ifndef EP_BASE_CROSS_PROCESS_H_
#define EP_BASE_CROSS_PROCESS_H_

#if defined(EP_SANITIZER_THREAD)
#include <sanitizer/tsan_interface.h>
#endif

namespace ep::base {

#if defined(EP_SANITIZER_THREAD)
inline char cross_process_token;
inline void cross_process_release() { __tsan_release(&cross_process_token); }
inline void cross_process_acquire() { __tsan_acquire(&cross_process_token); }
#else
inline void cross_process_release() {}
inline void cross_process_acquire() {}
#endif

}  // namespace ep::base

#endif  // EP_BASE_CROSS_PROCESS_H_
