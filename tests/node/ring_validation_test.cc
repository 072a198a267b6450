// node::Ring never trusts a record it did not check: a record whose kind disagrees with
// its frame, one for another owner (a ring freed and assigned again: an older
// generation; another context or endpoint), one the caller refuses, a frame with a bad
// length or check, a length past the ring's end, garbage where no record was reserved -
// each is rejected and counted, nothing of it reaches the caller, and the records after
// it are delivered.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "node/ring.h"
#include "tests/node/ring_util.h"

namespace {

using ep::node::Consumer;
using ep::node::Owner;
using ep::node::RecordHeader;
using ep::node::Ring;

constexpr Owner kMe{7, 2, 5};

class RingValidation : public ::testing::Test {
 protected:
  RingValidation() : tr_(4096, kMe) {}
  Ring& ring() { return tr_.ring(); }
  // Pushes a record of kind 2 for `to` carrying `text`; returns its position.
  uint64_t push(const std::string& text, Owner to = kMe, uint8_t kind = 2) {
    const uint64_t at = ring().header()->tail.load();
    const Ring::Push r = ring().push(
        kind, to, static_cast<uint32_t>(text.size()), text.size(),
        [&](char* body) { std::memcpy(body, text.data(), text.size()); }, hint_);
    EXPECT_EQ(r, Ring::Push::kOk);
    return at;
  }
  char* at(uint64_t pos) { return tr_.data() + (pos & (ring().capacity() - 1)); }
  // Drains everything ready; returns the texts the caller was given.
  std::vector<std::string> drain(bool (*accept)(uint8_t) = nullptr) {
    std::vector<std::string> got;
    for (int i = 0; i < 16; ++i) {
      ring().drain(c_, kMe, [&](uint8_t kind, uint32_t aux, const char* body, uint32_t len) {
        if (accept != nullptr && !accept(kind)) return false;
        EXPECT_LE(aux, len);
        got.emplace_back(body, aux);
        return true;
      });
    }
    return got;
  }
  ep_test::TestRing tr_;
  Consumer c_;
  std::atomic<uint64_t> hint_{0};
};

TEST_F(RingValidation, GoodRecordsPassInOrder) {
  push("one");
  push("two");
  EXPECT_EQ(drain(), (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(c_.rejected, 0u);
}

TEST_F(RingValidation, KindThatDisagreesWithTheFrameIsRejected) {
  const uint64_t p = push("bad");
  push("after");
  reinterpret_cast<RecordHeader*>(at(p))->kind = 3;  // the frame says 2
  EXPECT_EQ(drain(), (std::vector<std::string>{"after"}));
  EXPECT_EQ(c_.rejected, 1u);
}

TEST_F(RingValidation, RecordForAnotherOwnerIsRejected) {
  push("old generation", Owner{kMe.ctx, kMe.local, kMe.generation - 1});
  push("other context", Owner{kMe.ctx + 1, kMe.local, kMe.generation});
  push("other endpoint", Owner{kMe.ctx, static_cast<uint16_t>(kMe.local + 1), kMe.generation});
  push("mine");
  EXPECT_EQ(drain(), (std::vector<std::string>{"mine"}));
  EXPECT_EQ(c_.rejected, 3u);
}

TEST_F(RingValidation, RecordTheCallerRefusesIsCounted) {
  push("unknown kind", kMe, 6);
  push("known");
  EXPECT_EQ(drain([](uint8_t kind) { return kind == 2; }), (std::vector<std::string>{"known"}));
  EXPECT_EQ(c_.rejected, 1u);
}

TEST_F(RingValidation, BadLengthIsRejectedAndTheRingResynchronizes) {
  const uint64_t p = push(std::string(40, 'x'));
  push("next");
  push("and next");
  uint64_t frame;
  std::memcpy(&frame, at(p), 8);
  frame += 8;  // the length grows by 8: the check no longer matches
  std::memcpy(at(p), &frame, 8);
  EXPECT_EQ(drain(), (std::vector<std::string>{"next", "and next"}));
  EXPECT_EQ(c_.rejected, 1u);
  // The ring goes on: a later record arrives, and all bytes are zero again.
  push("later");
  EXPECT_EQ(drain(), (std::vector<std::string>{"later"}));
  EXPECT_EQ(ring().header()->head.load(), ring().header()->tail.load());
}

TEST_F(RingValidation, LengthPastTheEndIsRejected) {
  const uint64_t p = push("long");
  push("next");
  // A well-checked frame whose length runs past the ring's end.
  const uint32_t len = ring().capacity() - static_cast<uint32_t>(p & (ring().capacity() - 1)) + 64;
  const uint64_t frame = Ring::make_frame(p, len, 2);
  std::memcpy(at(p), &frame, 8);
  EXPECT_EQ(drain(), (std::vector<std::string>{"next"}));
  EXPECT_EQ(c_.rejected, 1u);
}

TEST_F(RingValidation, BodyOfZerosAfterABadFrameIsSteppedOver) {
  const uint64_t p = push(std::string(64, '\0'));  // a body that reads as "not ready"
  push("next");
  uint64_t frame = 0x1234;  // garbage
  std::memcpy(at(p), &frame, 8);
  EXPECT_EQ(drain(), (std::vector<std::string>{"next"}));
  EXPECT_EQ(c_.rejected, 1u);
}

TEST_F(RingValidation, GarbageWhereNothingWasReservedIsRejected) {
  push("first");
  EXPECT_EQ(drain(), (std::vector<std::string>{"first"}));
  const uint64_t t = ring().header()->tail.load();
  const uint64_t garbage = 0xdeadbeefcafef00dull;
  std::memcpy(at(t), &garbage, 8);
  EXPECT_TRUE(drain().empty());
  EXPECT_EQ(c_.rejected, 1u);
  push("second");
  EXPECT_EQ(drain(), (std::vector<std::string>{"second"}));
}

TEST_F(RingValidation, TooLargeRecordIsRefusedAndFullRingReportsFull) {
  std::atomic<uint64_t> hint{0};
  const auto none = [](char*) {};
  EXPECT_EQ(ring().push(2, kMe, 0, ring().max_record(), none, hint), Ring::Push::kTooBig);
  int pushed = 0;
  while (ring().push(2, kMe, 0, 1000, none, hint) == Ring::Push::kOk) ++pushed;
  EXPECT_EQ(pushed, 4);  // 4 x 1024 bytes
  EXPECT_EQ(ring().push(2, kMe, 0, 0, none, hint), Ring::Push::kFull);
  drain();
  EXPECT_EQ(ring().push(2, kMe, 0, 1000, none, hint), Ring::Push::kOk);
}

}  // namespace
