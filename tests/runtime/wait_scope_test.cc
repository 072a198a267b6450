// WaitScope and waited_here (runtime/request.h, "Completed by its waiter"): a
// completion is a plain store only for a request the completing thread is blocked on,
// and only that thread's scope says so; each thread's cache of requests is freed
// when it exits (no MPI).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/request.h"

namespace {

using ep::runtime::Request;
using ep::runtime::request_complete;
using ep::runtime::request_new;
using ep::runtime::request_unref;
using ep::runtime::requests_live;
using ep::runtime::RequestKind;
using ep::runtime::waited_here;
using ep::runtime::WaitScope;

ep::RequestHandle handle(Request* r) { return reinterpret_cast<ep::RequestHandle>(r); }

TEST(WaitScope, OnlyTheScopesRequestsOnItsOwnThread) {
  Request* a = request_new(RequestKind::kRecv, true);
  Request* b = request_new(RequestKind::kRecv, true);
  Request* c = request_new(RequestKind::kRecv, true);
  Request* x = request_new(RequestKind::kRecv, true);
  EXPECT_FALSE(waited_here(a)) << "no scope is active";
  {
    ep::RequestHandle reqs[] = {handle(a), nullptr, handle(b), handle(c)};
    WaitScope scope(reqs, 4);
    bool other_thread_sees = true;
    std::thread([&] { other_thread_sees = waited_here(a); }).join();
    EXPECT_FALSE(other_thread_sees) << "a scope belongs to its thread";
    EXPECT_FALSE(waited_here(x)) << "not in the array";
    {
      WaitScope inner(x);  // an inner scope changes nothing
      EXPECT_FALSE(waited_here(x));
    }
    EXPECT_TRUE(waited_here(a));
    EXPECT_TRUE(waited_here(b)) << "past a null entry";
    EXPECT_TRUE(waited_here(c));
    EXPECT_FALSE(waited_here(a)) << "the cursor moved past a: it completed already";
  }
  EXPECT_FALSE(waited_here(b)) << "the scope ended";
  for (Request* r : {a, b, c, x}) {
    request_complete(r);
    request_unref(r);
  }
}

TEST(WaitScope, TheCursorLooksAFewEntriesAheadOnly) {
  Request* reqs[8];
  ep::RequestHandle handles[8];
  for (int i = 0; i < 8; ++i) {
    reqs[i] = request_new(RequestKind::kRecv, true);
    handles[i] = handle(reqs[i]);
  }
  {
    WaitScope scope(handles, 8);
    EXPECT_FALSE(waited_here(reqs[7])) << "far beyond the cursor: the RMW path";
    EXPECT_TRUE(waited_here(reqs[2]));
    EXPECT_TRUE(waited_here(reqs[5]));
    EXPECT_TRUE(waited_here(reqs[7]));
  }
  for (Request* r : reqs) {
    request_complete(r);
    request_unref(r);
  }
}

// The completion of a waited request keeps the bits the waiter set and adds its own;
// one of a request nobody in this thread waits on still wakes a sleeping waiter.
TEST(WaitScope, CompletionsInAndOutOfTheScope) {
  Request* mine = request_new(RequestKind::kRecv, true);
  mine->state.store(Request::kPendingWaited, std::memory_order_relaxed);
  {
    WaitScope scope(mine);
    request_complete(mine, /*inline_payload=*/false);
  }
  EXPECT_EQ(mine->state.load(std::memory_order_acquire),
            Request::kPendingWaited | Request::kComplete);
  request_unref(mine);

  Request* theirs = request_new(RequestKind::kRecv, true);
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    ep::runtime::request_wait(theirs);
    done.store(true, std::memory_order_release);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the waiter sleeps
  request_complete(theirs);  // no scope on this thread: the RMW, and the wake
  waiter.join();
  EXPECT_TRUE(done.load(std::memory_order_acquire));
  request_unref(theirs);
}

// Each thread's cache of Request objects is freed when the thread exits: once the
// threads are joined, as many Request objects are on the heap as before they started.
TEST(RequestCache, AThreadsCachedRequestsAreFreedWhenItExits) {
  const int64_t before = requests_live();
  for (int t = 0; t < 4; ++t) {
    int64_t cached = -1;
    std::thread([&] {
      Request* batch[100];
      for (int round = 0; round < 3; ++round) {
        for (Request*& r : batch) r = request_new(RequestKind::kRecv, true);
        for (Request* r : batch) {
          request_complete(r);
          request_unref(r);  // the first 64 go to the cache, the rest are deleted
        }
      }
      cached = requests_live() - before;
    }).join();
    EXPECT_EQ(cached, 64) << "thread " << t << ": its cache holds 64 requests before it exits";
    EXPECT_EQ(requests_live(), before) << "thread " << t << " left its cached requests behind";
  }
  // A request recycled by a thread that completes someone else's: it joins that
  // thread's cache, which the thread's exit frees.
  Request* r = nullptr;
  std::thread([&] { r = request_new(RequestKind::kRecv, true); }).join();
  EXPECT_EQ(requests_live(), before + 1);
  std::thread([&] {
    Request* own = request_new(RequestKind::kRecv, true);  // this thread's cache exists
    request_complete(own);
    request_unref(own);
    request_complete(r);
    request_unref(r);
    EXPECT_EQ(requests_live(), before + 2) << "both wait in this thread's cache";
  }).join();
  EXPECT_EQ(requests_live(), before);
}

}  // namespace
