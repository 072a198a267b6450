#include "runtime/bsend.h"

#include <sched.h>

#include "ep/ep.h"

namespace ep::runtime {

bool BsendBuffer::attach(void* buf, int64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (base_ != nullptr) return false;
  base_ = static_cast<char*>(buf);
  size_ = size;
  return true;
}

bool BsendBuffer::detach(void** buf, int64_t* size) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (base_ == nullptr) return false;
      if (used_.empty()) {
        *buf = base_;
        *size = size_;
        base_ = nullptr;
        size_ = 0;
        return true;
      }
    }
    sched_yield();  // buffered messages are still leaving (progress thread)
  }
}

bool BsendBuffer::attached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return base_ != nullptr;
}

bool BsendBuffer::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !used_.empty();
}

void* BsendBuffer::allocate(int64_t bytes) {
  int64_t need = (bytes + EP_BSEND_OVERHEAD + 15) & ~int64_t{15};
  std::lock_guard<std::mutex> lock(mu_);
  if (base_ == nullptr) return nullptr;
  int64_t at = 0;
  bool fits = false;
  for (const auto& [off, len] : used_) {
    if (off - at >= need) {
      fits = true;
      break;
    }
    at = off + len;
  }
  if (!fits && size_ - at < need) return nullptr;
  used_[at] = need;
  return base_ + at;
}

void BsendBuffer::release(void* segment) {
  std::lock_guard<std::mutex> lock(mu_);
  used_.erase(static_cast<char*>(segment) - base_);
}

}  // namespace ep::runtime
