#include "rma/lock.h"

#include <mutex>
#include <vector>

#include "rma/wire.h"

namespace ep::rma {
namespace {

// Tells a waiter its request was granted.  `in_pass`: on the baton holder.
void notify_granted(const LockWaiter& g, bool in_pass) {
  if (g.proc < 0) {
    g.granted->set();  // wakes the waiter in lock_local (Flag: release)
  } else {
    reply(g.proc, g.reply_id, kGrant, g.origin_target, in_pass);
  }
}

}  // namespace

bool lock_request(Win* t, const LockWaiter& req) {
  std::lock_guard<std::mutex> g(t->lock_mu);
  bool free = req.exclusive ? (!t->lock_excl && t->lock_shared == 0) : !t->lock_excl;
  if (free && t->lock_waiters.empty()) {
    if (req.exclusive) {
      t->lock_excl = true;
    } else {
      ++t->lock_shared;
    }
    return true;
  }
  t->lock_waiters.push_back(req);
  return false;
}

void lock_release(Win* t, bool exclusive, bool in_pass) {
  std::vector<LockWaiter> granted;
  {
    std::lock_guard<std::mutex> g(t->lock_mu);
    if (exclusive) {
      t->lock_excl = false;
    } else if (t->lock_shared > 0) {
      --t->lock_shared;
    }
    while (!t->lock_waiters.empty()) {
      const LockWaiter& w = t->lock_waiters.front();
      if (t->lock_excl || (w.exclusive && t->lock_shared > 0)) break;
      if (w.exclusive) {
        t->lock_excl = true;
      } else {
        ++t->lock_shared;
      }
      granted.push_back(w);
      t->lock_waiters.pop_front();
      if (t->lock_excl) break;
    }
  }
  for (const LockWaiter& w : granted) notify_granted(w, in_pass);
}

void lock_local(Win* t, bool exclusive) {
  runtime::Flag granted;
  LockWaiter req;
  req.exclusive = exclusive;
  req.granted = &granted;
  if (lock_request(t, req)) return;
  runtime::wait_flag(granted, runtime::Drive::kYes);
}

}  // namespace ep::rma
