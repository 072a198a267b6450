#include "runtime/bsend.h"

#include "base/types.h"

namespace ep::runtime {

bool BsendBuffer::attach(void* buf, int64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (base_ != nullptr) return false;
  base_ = static_cast<char*>(buf);
  size_ = size;
  return true;
}

bool BsendBuffer::detach(void** buf, int64_t* size) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (base_ == nullptr) return false;
  }
  // Buffered messages may still be leaving: wait (runtime/wait.h) until release() has
  // given back every segment, progressing their transfers meanwhile.
  wait_until(
      released_,
      [this] {
        std::lock_guard<std::mutex> lock(mu_);
        return used_.empty();
      },
      Drive::kYes);
  std::lock_guard<std::mutex> lock(mu_);
  *buf = base_;
  *size = size_;
  base_ = nullptr;
  size_ = 0;
  return true;
}

bool BsendBuffer::attached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return base_ != nullptr;
}

void* BsendBuffer::allocate(int64_t bytes) {
  int64_t need = (bytes + kBsendOverhead + 15) & ~int64_t{15};
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

void BsendBuffer::release(void* segment, bool was_sending) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    used_.erase(static_cast<char*>(segment) - base_);
  }
  if (was_sending) sending_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: a count
  released_.notify();
}

void* BsendBuffer::allocate_or_wait(int64_t bytes) {
  void* segment = nullptr;
  // Until a segment fits, or no payload is leaving any more (then one more try).
  wait_until(
      released_,
      [&] { return (segment = allocate(bytes)) != nullptr || leaving() == 0; },
      Drive::kYes);
  return segment != nullptr ? segment : allocate(bytes);
}

}  // namespace ep::runtime
