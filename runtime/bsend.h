// bsend.h - the per-process buffer of EP_Buffer_attach, used by buffered sends.
//
// What it is: a first-fit allocator over the user's attached buffer.  Each buffered
// send takes its packed size plus EP_BSEND_OVERHEAD bytes until the message has left
// (its internal send completed); then release() returns the space.  detach waits
// until nothing is outstanding.
//
// Threading: all methods are thread-safe (one mutex; not on the standard send path).
#ifndef EP_RUNTIME_BSEND_H_
#define EP_RUNTIME_BSEND_H_

#include <cstdint>
#include <map>
#include <mutex>

namespace ep::runtime {

class BsendBuffer {
 public:
  // False if a buffer is already attached.
  bool attach(void* buf, int64_t size);
  // False if none is attached; waits until every segment was released.
  bool detach(void** buf, int64_t* size);
  // A segment able to hold `bytes` packed bytes, or nullptr (none attached / full).
  void* allocate(int64_t bytes);
  void release(void* segment);
  bool attached() const;
  // True while some segment is allocated (a buffered message has not left yet).
  bool in_use() const;

 private:
  mutable std::mutex mu_;
  char* base_ = nullptr;  // guarded by mu_
  int64_t size_ = 0;      // guarded by mu_
  std::map<int64_t, int64_t> used_;  // offset -> length, guarded by mu_
};

}  // namespace ep::runtime

#endif  // EP_RUNTIME_BSEND_H_
