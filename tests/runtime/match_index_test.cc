// The matcher's keyed indexes (runtime/match_index.h) through a Matcher alone (no MPI,
// one thread): a receive deep in the posted list, wildcards posted earlier or later than
// specific receives, probes, mprobe and cancels on deep lists, and unexpected messages
// taken in MPI's order by specific and wildcard receives.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <vector>

#include "runtime/matching.h"
#include "runtime/request.h"
#include "tests/runtime/matcher_util.h"

namespace {

using ep::runtime::Envelope;
using ep::runtime::Matcher;
using ep::runtime::MatchOp;
using ep::runtime::Request;
using ep::runtime::RecvTarget;

constexpr int kAnySource = ep::kAnySource;
constexpr int kAnyTag = ep::kAnyTag;

// Receive id (Request::count) -> message id (Envelope::bytes), in delivery order.
std::vector<std::pair<int64_t, int64_t>>* g_got = nullptr;

void deliver_fn(Request* r, const RecvTarget&, Envelope* e) {
  g_got->push_back({r->count, e->bytes});
  if (e->owned) std::free(e->block);
}

class MatchIndexTest : public ::testing::Test {
 protected:
  MatchIndexTest() : m_(deliver_fn, ep_test::materialize_fn) { g_got = &got_; }
  ~MatchIndexTest() override {
    g_got = nullptr;
    for (Request* r : reqs_) delete r;
  }

  // Posts receive `id` with criteria (source, tag).
  Request* post(int64_t id, int source, int tag) {
    Request* r = new Request;
    reqs_.push_back(r);
    r->count = static_cast<int>(id);
    r->op.kind = MatchOp::kRecv;
    r->op.source = source;
    r->op.tag = tag;
    r->op.req = r;
    m_.post(&r->op);
    return r;
  }
  // Message `id` from `src` with `tag` arrives (matched in place: nobody else matches).
  void arrive(int64_t id, int src, int tag) {
    Envelope e;
    e.kind = Envelope::kEager;
    e.owned = false;
    e.src_rank = src;
    e.tag = tag;
    e.bytes = id;
    ASSERT_TRUE(m_.try_deliver_direct(&e));
  }
  bool cancel(Request* r) {
    MatchOp op;
    op.kind = MatchOp::kCancel;
    op.req = r;
    m_.post(&op);
    EXPECT_TRUE(op.done.is_set());  // one thread: answered in place
    return op.found;
  }
  // Probe (or mprobe: the envelope is taken) for (source, tag): the message id, or -1.
  int64_t probe(int source, int tag, bool take = false) {
    MatchOp op;
    op.kind = take ? MatchOp::kMprobe : MatchOp::kProbe;
    op.source = source;
    op.tag = tag;
    m_.post(&op);
    EXPECT_TRUE(op.done.is_set());
    if (!op.found) return -1;
    EXPECT_EQ(op.status.ep_bytes_, take ? op.env->bytes : op.status.ep_bytes_);
    const int64_t id = op.status.ep_bytes_;
    if (take) std::free(op.env->block);
    return id;
  }
  // The receive id that took message `msg`, or -1.
  int64_t taker(int64_t msg) const {
    for (const auto& [r, mm] : got_)
      if (mm == msg) return r;
    return -1;
  }

  Matcher m_;
  std::vector<Request*> reqs_;
  std::vector<std::pair<int64_t, int64_t>> got_;
};

TEST_F(MatchIndexTest, ReceivePostedLastOfManyMatchesItsMessage) {
  constexpr int kDeep = 2000;
  for (int i = 0; i < kDeep; ++i) post(i, 0, i);
  arrive(100, 0, kDeep - 1);
  arrive(101, 0, 0);
  arrive(102, 0, kDeep / 2);
  ASSERT_EQ(got_.size(), 3u);
  EXPECT_EQ(taker(100), kDeep - 1);
  EXPECT_EQ(taker(101), 0);
  EXPECT_EQ(taker(102), kDeep / 2);
  for (int i = 1; i < kDeep - 1; ++i) {
    if (i != kDeep / 2) {
      EXPECT_TRUE(cancel(reqs_[static_cast<size_t>(i)]));
    }
  }
  arrive(103, 0, 5);  // nothing is posted any more: unexpected
  EXPECT_EQ(got_.size(), 3u);
  EXPECT_EQ(probe(0, 5), 103);
}

TEST_F(MatchIndexTest, SameCriteriaMatchInPostOrderBehindOtherReceives) {
  for (int i = 0; i < 500; ++i) post(i, 1, 1000 + i);  // never matched
  for (int i = 0; i < 10; ++i) post(500 + i, 2, 7);
  for (int i = 0; i < 10; ++i) arrive(i, 2, 7);
  ASSERT_EQ(got_.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(got_[static_cast<size_t>(i)].first, 500 + i);
    EXPECT_EQ(got_[static_cast<size_t>(i)].second, i);
  }
}

TEST_F(MatchIndexTest, EarliestPostedOfSpecificAndWildcardReceivesWins) {
  post(0, 3, 99);  // the head: never matched, so the rest is in the index
  post(1, kAnySource, 5);
  post(2, 1, 5);
  post(3, 1, kAnyTag);
  post(4, kAnySource, kAnyTag);
  post(5, 1, 5);
  for (int i = 0; i < 5; ++i) arrive(10 + i, 1, 5);
  ASSERT_EQ(got_.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(taker(10 + i), 1 + i) << "message " << 10 + i;
}

TEST_F(MatchIndexTest, WildcardPostedBeforeASpecificReceiveTakesItsMessage) {
  post(0, 3, 99);
  post(1, 0, 1);
  post(2, kAnySource, kAnyTag);
  post(3, 1, 5);
  arrive(10, 1, 5);  // receive 2 was posted before receive 3
  arrive(11, 1, 5);
  arrive(12, 0, 1);
  EXPECT_EQ(taker(10), 2);
  EXPECT_EQ(taker(11), 3);
  EXPECT_EQ(taker(12), 1);
}

TEST_F(MatchIndexTest, AnyTagReceivesLeaveNegativeTagsAlone) {
  post(0, 3, 99);
  post(1, kAnySource, kAnyTag);
  post(2, 1, kAnyTag);
  post(3, 1, -7);
  arrive(10, 1, -7);
  EXPECT_EQ(taker(10), 3);
  arrive(11, 1, -8);  // nobody takes it
  EXPECT_EQ(taker(11), -1);
  EXPECT_EQ(probe(1, -8), 11);
  EXPECT_EQ(probe(kAnySource, kAnyTag), -1);  // wildcards never see negative tags
}

TEST_F(MatchIndexTest, CancelInsideABinKeepsTheOthersInOrder) {
  post(0, 3, 99);
  Request* a = post(1, 2, 4);
  Request* b = post(2, 2, 4);
  Request* c = post(3, 2, 4);
  EXPECT_TRUE(cancel(b));   // the middle of its bin
  EXPECT_FALSE(cancel(b));  // not posted any more
  EXPECT_TRUE(cancel(c));   // the last of its bin
  Request* d = post(4, 2, 4);
  arrive(10, 2, 4);
  arrive(11, 2, 4);
  arrive(12, 2, 4);
  EXPECT_EQ(taker(10), 1);
  EXPECT_EQ(taker(11), 4);
  EXPECT_EQ(taker(12), -1);
  EXPECT_FALSE(cancel(a));  // matched
  EXPECT_FALSE(cancel(d));
  EXPECT_TRUE(cancel(reqs_[0]));  // the head
  arrive(13, 3, 99);
  EXPECT_EQ(taker(13), -1);
}

TEST_F(MatchIndexTest, UnexpectedMessagesGoToReceivesInArrivalOrder) {
  arrive(0, 0, 1);
  arrive(1, 1, 2);
  arrive(2, 0, 1);
  arrive(3, 2, 1);
  arrive(4, 1, 1);
  arrive(5, 0, -3);
  EXPECT_TRUE(got_.empty());
  EXPECT_EQ(probe(kAnySource, 1), 0);
  EXPECT_EQ(probe(1, kAnyTag), 1);
  EXPECT_EQ(probe(kAnySource, kAnyTag), 0);
  EXPECT_EQ(probe(0, -3), 5);
  post(100, 2, 1);  // a specific receive behind older messages of other keys
  post(101, kAnySource, kAnyTag);
  post(102, kAnySource, 1);
  post(103, 1, kAnyTag);
  post(104, kAnySource, kAnyTag);
  EXPECT_EQ(taker(3), 100);
  EXPECT_EQ(taker(0), 101);
  EXPECT_EQ(taker(2), 102);
  EXPECT_EQ(taker(1), 103);
  EXPECT_EQ(taker(4), 104);
  EXPECT_EQ(probe(kAnySource, kAnyTag), -1);
  EXPECT_EQ(probe(0, -3, /*take=*/true), 5);  // mprobe takes it
  EXPECT_EQ(probe(0, -3), -1);
}

TEST_F(MatchIndexTest, ManyUnexpectedKeysStayInOrderForWildcards) {
  constexpr int kMsgs = 3000;
  for (int i = 0; i < kMsgs; ++i) arrive(i, i % 7, i % 13);
  // A wildcard on the tag of source 3 takes source 3's messages in arrival order.
  for (int i = 3; i < 200; i += 7) {
    post(10000 + i, 3, kAnyTag);
    EXPECT_EQ(taker(i), 10000 + i);
  }
  // Then everything else, in arrival order, by full wildcards.
  for (int i = 0; i < kMsgs; ++i) {
    if (i % 7 == 3 && i < 200) continue;
    post(20000 + i, kAnySource, kAnyTag);
    EXPECT_EQ(taker(i), 20000 + i);
  }
  EXPECT_EQ(probe(kAnySource, kAnyTag), -1);
}

}  // namespace
