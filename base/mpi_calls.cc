#include "base/mpi_calls.h"

#include <mutex>
#include <vector>

namespace ep {
namespace mpi_calls_internal {

constinit thread_local std::atomic<uint64_t>* t_counter __attribute__((tls_model("initial-exec"))) =
    nullptr;

namespace {

// The counters of live threads and the total of those that exited.  Never destroyed:
// threads may exit (and fold their count in) during static destruction.
struct Registry {
  std::mutex mu;
  std::vector<std::atomic<uint64_t>*> live;  // guarded by mu
  uint64_t exited = 0;                       // guarded by mu
  // Threads whose counter is gone (an MPI call from a later destructor of an exiting
  // thread) count here.
  std::atomic<uint64_t> late{0};
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// Unregisters this thread's counter when the thread exits (ordinary TLS: touched once,
// by register_thread).
struct Owner {
  std::atomic<uint64_t>* counter = nullptr;
  ~Owner() {
    if (counter == nullptr) return;
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.exited += counter->load(std::memory_order_relaxed);  // relaxed: see mpi_calls.h
    std::erase(r.live, counter);
    delete counter;
    t_counter = &r.late;
  }
};
thread_local Owner t_owner;

}  // namespace

std::atomic<uint64_t>* register_thread() {
  auto* c = new std::atomic<uint64_t>(0);
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.live.push_back(c);
  }
  t_owner.counter = c;
  t_counter = c;
  return c;
}

}  // namespace mpi_calls_internal

uint64_t mpi_calls_outside_engine() {
  auto& r = mpi_calls_internal::registry();
  std::lock_guard<std::mutex> lock(r.mu);
  uint64_t n = r.exited + r.late.load(std::memory_order_relaxed);  // relaxed: a count
  for (auto* c : r.live) n += c->load(std::memory_order_relaxed);  // relaxed: see mpi_calls.h
  return n;
}

}  // namespace ep
