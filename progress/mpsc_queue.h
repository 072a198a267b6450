// mpsc_queue.h - an intrusive multi-producer single-consumer FIFO (Vyukov's queue).
//
// What it is: producers link nodes with one atomic exchange (wait-free); one consumer
// at a time pops in the order the exchanges happened - so items pushed by one thread,
// or by several threads in a happens-before chain, come out in push order.  Unlike a
// queue of per-producer sub-queues, pop() costs O(1) however many threads ever pushed.
//
// Threading: push() from any thread; pop()/empty() from one consumer at a time (the
// caller serializes consumers).  A node belongs to the queue from push() until pop()
// returns it.
//
// Memory ordering: push() exchanges `head_` (acq_rel) and then stores prev->next with
// release; pop() loads `next` with acquire, pairing with that release, so everything
// the producer wrote into the node before push() is visible to the consumer.  A pop()
// that finds a producer between its exchange and its next-store returns nullptr
// ("not yet"): the caller retries later, nothing is lost.
#ifndef EP_PROGRESS_MPSC_QUEUE_H_
#define EP_PROGRESS_MPSC_QUEUE_H_

#include <atomic>

namespace ep::progress {

struct MpscNode {
  std::atomic<MpscNode*> next{nullptr};
};

class MpscQueue {
 public:
  MpscQueue() : head_(&stub_), tail_(&stub_) {}
  MpscQueue(const MpscQueue&) = delete;
  MpscQueue& operator=(const MpscQueue&) = delete;

  // Thread-safe, wait-free.  Never allocates.
  void push(MpscNode* n) {
    n->next.store(nullptr, std::memory_order_relaxed);  // relaxed: published below
    MpscNode* prev = head_.exchange(n, std::memory_order_acq_rel);
    prev->next.store(n, std::memory_order_release);  // pairs with the acquire in pop()
  }

  // Single consumer.  Returns the oldest node, or nullptr if empty (or if the oldest
  // push is still in progress).
  MpscNode* pop() {
    MpscNode* tail = tail_;
    MpscNode* next = tail->next.load(std::memory_order_acquire);  // pairs: push()
    if (tail == &stub_) {
      if (next == nullptr) return nullptr;
      tail_ = next;
      tail = next;
      next = next->next.load(std::memory_order_acquire);  // pairs: push()
    }
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    if (tail != head_.load(std::memory_order_acquire)) return nullptr;  // push in progress
    push(&stub_);
    next = tail->next.load(std::memory_order_acquire);  // pairs: push()
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    return nullptr;
  }

 private:
  std::atomic<MpscNode*> head_;  // last pushed node (producers)
  MpscNode* tail_;               // next node to pop (consumer only)
  MpscNode stub_;
};

}  // namespace ep::progress

#endif  // EP_PROGRESS_MPSC_QUEUE_H_
