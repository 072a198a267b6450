#include "node/ring.h"

namespace ep::node {

int Ring::resync_step(Consumer& c, uint64_t h, uint64_t frame) {
  if (c.resync && framed(h, frame)) {  // a record starts here: back in step
    c.resync = false;
    return 0;
  }
  // Never past the reservations: beyond `tail` no producer wrote, and the word is either
  // nothing (0) or garbage.  acquire: pairs with the release of `committed` (publish),
  // which follows the CAS that moved tail.
  const uint64_t t = h_->tail.load(std::memory_order_acquire);
  if (h >= t) {
    if (frame != 0) {
      ++c.rejected;
      frame_at(h).store(0, std::memory_order_relaxed);  // relaxed: nobody reserved it
    }
    c.resync = false;  // every reservation has been consumed
    return -1;
  }
  if (frame == 0) {  // (only while resynchronizing)
    // Garbage only once every reservation is published: else a producer may still be
    // writing the record that starts here.
    const uint64_t com = h_->committed.load(std::memory_order_acquire);  // pairs: publish
    const uint64_t t2 = h_->tail.load(std::memory_order_acquire);
    return com == t2 && h < com ? 8 : -1;
  }
  if (!c.resync) {
    ++c.rejected;  // one bad frame; the words stepped over after it are its own
    c.resync = true;
  }
  // relaxed: the zeroing reaches producers through head's release store (drain).
  frame_at(h).store(0, std::memory_order_relaxed);
  return 8;
}

}  // namespace ep::node
