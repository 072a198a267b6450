// ring_util.h - a ring in private memory for the node/ring tests.
#ifndef EP_TESTS_NODE_RING_UTIL_H_
#define EP_TESTS_NODE_RING_UTIL_H_

#include <cstdlib>
#include <cstring>
#include <new>

#include "node/ring.h"

namespace ep_test {

// A zeroed ring of `capacity` bytes (a power of two) owned by `owner`.
class TestRing {
 public:
  TestRing(uint32_t capacity, ep::node::Owner owner) : owner_(owner) {
    const size_t bytes = ep::node::kRingHeaderBytes + capacity;
    mem_ = static_cast<char*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096));
    std::memset(mem_, 0, bytes);
    auto* h = new (mem_) ep::node::RingHeader;
    ring_ = ep::node::Ring(h, capacity);
  }
  ~TestRing() { std::free(mem_); }
  TestRing(const TestRing&) = delete;
  TestRing& operator=(const TestRing&) = delete;
  ep::node::Ring& ring() { return ring_; }
  const ep::node::Owner& owner() const { return owner_; }
  char* data() { return mem_ + ep::node::kRingHeaderBytes; }

 private:
  char* mem_;
  ep::node::Ring ring_;
  ep::node::Owner owner_;
};

}  // namespace ep_test

#endif  // EP_TESTS_NODE_RING_UTIL_H_
