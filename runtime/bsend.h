// bsend.h - the per-process buffer of EP_Buffer_attach, used by buffered sends.
//
// What it is: a first-fit allocator over the user's attached buffer.  Each buffered
// send takes its packed size plus EP_BSEND_OVERHEAD bytes until the message has left
// (its internal send completed); then release() returns the space.  detach waits
// until nothing is outstanding.
//
// Threading: all methods are thread-safe (one mutex; not on the standard send path).
//
// Memory ordering: the segments are guarded by mu_; released_ is notified after each
// release (runtime/wait.h's Event protocol), sending_ is a relaxed count (a hint for
// how long allocate_or_wait may wait, re-read after every release).
#ifndef EP_RUNTIME_BSEND_H_
#define EP_RUNTIME_BSEND_H_

#include <cstdint>
#include <map>
#include <mutex>

#include "runtime/wait.h"

namespace ep::runtime {

class BsendBuffer {
 public:
  // False if a buffer is already attached.
  bool attach(void* buf, int64_t size);
  // False if none is attached; waits until every segment was released.
  bool detach(void** buf, int64_t* size);
  // A segment able to hold `bytes` packed bytes, or nullptr (none attached / full).
  void* allocate(int64_t bytes);
  // A segment for `bytes`, waiting (runtime/wait.h) for releases while payloads are
  // leaving; nullptr once none is and none fits.
  void* allocate_or_wait(int64_t bytes);
  // `was_sending`: sending() was called for it.
  void release(void* segment, bool was_sending);
  bool attached() const;
  // A buffered message's payload started leaving (its rendezvous CTS came): its
  // segment will come back without the receiver's further help.  Until its release.
  void sending() { sending_.fetch_add(1, std::memory_order_relaxed); }  // relaxed: a count
  // Segments whose payload is leaving (see sending()).
  int leaving() const { return sending_.load(std::memory_order_relaxed); }

 private:
  mutable std::mutex mu_;
  Event released_;  // notified after each release()
  char* base_ = nullptr;  // guarded by mu_
  int64_t size_ = 0;      // guarded by mu_
  std::map<int64_t, int64_t> used_;  // offset -> length, guarded by mu_
  std::atomic<int> sending_{0};
};

}  // namespace ep::runtime

#endif  // EP_RUNTIME_BSEND_H_
