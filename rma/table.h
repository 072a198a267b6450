// table.h - this process's window table: window id -> Win (internal to rma).
//
// What it is: a window id names an endpoint's Win in its process; packets are addressed
// (process, window id), and the packet handler finds the Win here.  A Win is added
// before the creation exchange announces its id, and removed in win_free after the
// barrier that ends every use by other endpoints (or when its creation fails).  Ids are
// never reused, so a stale id finds nothing.
//
// Threading: concurrent; every call takes the table's mutex.  Callers are the
// endpoints' threads (create, free) and the baton holder (the packet handler).
//
// Memory ordering: what a Win's creator wrote before add() (its memory and locks)
// happens-before any find() that returns the Win (the mutex).  What the creator writes
// later (targets, counters) the handler reads only when it handles a reply to this
// Win's own packets, which the creator's thread sent afterwards (the engine's command
// queue publishes them).  A Win found by the handler stays alive for the rest of its
// pass: win_free deletes it in a later pass (runtime::run_in_pass).
#ifndef EP_RMA_TABLE_H_
#define EP_RMA_TABLE_H_

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "rma/window.h"

namespace ep::rma {

class WinTable {
 public:
  uint32_t add(Win* w) {
    std::lock_guard<std::mutex> g(mu_);
    uint32_t id = next_++;
    map_[id] = w;
    return id;
  }
  void remove(uint32_t id) {
    std::lock_guard<std::mutex> g(mu_);
    map_.erase(id);
  }
  Win* find(uint32_t id) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(id);
    return it == map_.end() ? nullptr : it->second;
  }

 private:
  std::mutex mu_;
  uint32_t next_ = 1;                       // guarded by mu_; ids are never reused
  std::unordered_map<uint32_t, Win*> map_;  // guarded by mu_
};

// The process's table.
inline WinTable& table() {
  static WinTable t;
  return t;
}

}  // namespace ep::rma

#endif  // EP_RMA_TABLE_H_
