// lock.h - a window's two locks at the target: the accumulate lock and the
// passive-target lock (internal to rma).
//
// Accumulate lock (AccGuard).  Every accumulate-family operation on a Win - by a local
// origin thread, by an origin of another process of the node through the mapping, or by
// the baton holder serving a remote one - runs under the target's accumulate lock, a
// spin word that can live in the shared segment (which a std::mutex cannot).  MPI
// guarantees atomicity only among accumulates, so put and get do not take it.
//
// Passive-target lock.  Each Win has a lock word (shared holders, exclusive flag) and a
// FIFO of waiters (LockWaiter, rma/window.h), under `lock_mu`.  A request is granted at
// once if compatible and nobody waits; otherwise it queues, and each release grants from
// the front: one exclusive, or every shared request up to the next exclusive one.  A
// waiter is a remote origin (granted with a kGrant packet, rma/wire.h) or a thread of
// this process (granted by setting its Flag).  EP_MODE_NOCHECK skips the lock.
//
// Threading: lock_request and lock_release run on the baton holder (serving kLock and
// kUnlock) or on an origin thread of this process; lock_mu serializes them.  lock_local
// runs on the locking endpoint's thread and blocks until granted.  AccGuard may be held
// by any thread of any process that maps the word; it spins, then yields.
//
// Memory ordering: the accumulate lock is taken with an acquire exchange and released
// with a release store, so everything a holder did under it happens-before whatever the
// next holder does under it (the word is a lock-free atomic, so this holds across
// processes that map it).  The passive-target state is read and written under lock_mu.
// A local waiter's Flag is set (release) by the granting thread after it updated the
// state, and the waiter's acquire load sees it; a remote waiter learns of its grant
// from the kGrant packet.
#ifndef EP_RMA_LOCK_H_
#define EP_RMA_LOCK_H_

#include <sched.h>

#include <atomic>
#include <cstdint>

#include "rma/window.h"
#include "runtime/wait.h"

namespace ep::rma {

// Holds an accumulate lock for its scope.
class AccGuard {
 public:
  explicit AccGuard(std::atomic<uint32_t>* lock) : lock_(lock) {
    // acquire: pairs with the release store in the previous holder's destructor.
    for (int spins = 0; lock_->exchange(1, std::memory_order_acquire) != 0; ++spins) {
      if (spins < 64) {
        runtime::cpu_relax();
      } else {
        sched_yield();  // the holder may be descheduled (more threads than cores)
      }
    }
  }
  // release: pairs with the acquire exchange of the next holder's constructor.
  ~AccGuard() { lock_->store(0, std::memory_order_release); }
  AccGuard(const AccGuard&) = delete;
  AccGuard& operator=(const AccGuard&) = delete;

 private:
  std::atomic<uint32_t>* lock_;
};

// Grants `req` at once (true) or queues it (false).
bool lock_request(Win* t, const LockWaiter& req);
// Releases one hold (`exclusive` or shared) and grants from the front of the queue.
// `in_pass`: called by the packet handler (the baton holder), which may send at once.
void lock_release(Win* t, bool exclusive, bool in_pass);
// Takes the lock of a Win of this process for the calling thread; returns when granted.
void lock_local(Win* t, bool exclusive);

}  // namespace ep::rma

#endif  // EP_RMA_LOCK_H_
