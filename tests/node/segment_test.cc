// node::Segment and node::PeerSegment: the segment is a memfd of mode 0600 that no name in
// /dev/shm reaches; another process maps it through /proc/<pid>/fd with the cookie and
// the layout checked; contexts' rings are assigned, resolved and released with new
// generations; a record pushed by another process arrives and its doorbell wakes a
// sleeper through a shared futex; the staging pool allocates and frees; cross-memory
// attach reads what it should and refuses a wrong cookie.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "node/cma.h"
#include "node/segment.h"
#include "node/shm.h"
#include "progress/backoff.h"

namespace {

using ep::node::Consumer;
using ep::node::Owner;
using ep::node::PeerSegment;
using ep::node::Ring;
using ep::node::Segment;

constexpr uint64_t kStaging = 1 << 20;

std::vector<std::string> dev_shm() {
  std::vector<std::string> names;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) names.emplace_back(e->d_name);
    closedir(d);
  }
  return names;
}

TEST(Segment, IsAnUnnamedMemfdOfMode0600) {
  const std::vector<std::string> before = dev_shm();
  Segment s;
  std::string error;
  ASSERT_TRUE(s.create(ep::node::ring_capacity_for(16384), kStaging, &error)) << error;
  struct stat st;
  ASSERT_EQ(fstat(s.fd(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  char link[256] = {0};
  const std::string path = "/proc/self/fd/" + std::to_string(s.fd());
  ASSERT_GT(readlink(path.c_str(), link, sizeof link - 1), 0);
  EXPECT_EQ(std::string(link).rfind("/memfd:ep-node", 0), 0u) << link;
  EXPECT_EQ(dev_shm(), before) << "a name appeared in /dev/shm";
  for (const std::string& n : dev_shm()) EXPECT_EQ(n.rfind("ep-", 0), std::string::npos) << n;
}

TEST(Segment, RingCapacityHoldsTwoEagerRecords) {
  EXPECT_EQ(ep::node::ring_capacity_for(16384), 64u * 1024);
  EXPECT_EQ(ep::node::ring_capacity_for(0), 64u * 1024);
  const uint32_t c = ep::node::ring_capacity_for(1 << 20);
  EXPECT_EQ(c & (c - 1), 0u);
  EXPECT_GE(c / 2, Ring::record_len((1 << 20) + 64));
}

TEST(Segment, PeerMapsItThroughProcOnlyWithItsCookieAndLength) {
  Segment s;
  std::string error;
  ASSERT_TRUE(s.create(ep::node::ring_capacity_for(16384), kStaging, &error)) << error;
  PeerSegment p;
  EXPECT_FALSE(p.map(getpid(), s.fd(), s.length(), s.cookie() + 1));
  EXPECT_FALSE(p.map(getpid(), s.fd(), s.length() - 4096, s.cookie()));
  EXPECT_FALSE(p.map(getpid(), s.fd() + 1000, s.length(), s.cookie()));
  ASSERT_TRUE(p.map(getpid(), s.fd(), s.length(), s.cookie()));
  EXPECT_EQ(p.pid(), getpid());
  // A header that disagrees with its layout is refused.
  s.header()->ring_capacity = 5000;  // not a power of two
  PeerSegment q;
  EXPECT_FALSE(q.map(getpid(), s.fd(), s.length(), s.cookie()));
}

TEST(Segment, RingsAreAssignedResolvedAndReleasedWithNewGenerations) {
  Segment s;
  std::string error;
  ASSERT_TRUE(s.create(ep::node::ring_capacity_for(16384), kStaging, &error)) << error;
  PeerSegment p;
  ASSERT_TRUE(p.map(getpid(), s.fd(), s.length(), s.cookie()));
  const int a = s.assign_rings(10, 3);
  const int b = s.assign_rings(12, 2);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  EXPECT_TRUE(b >= a + 3 || b + 2 <= a);
  uint32_t gen = 0;
  EXPECT_EQ(p.resolve(10, 1, &gen), a + 1);
  EXPECT_EQ(gen, s.owner(a + 1).generation);
  EXPECT_EQ(s.owner(a + 1).ctx, 10u);
  EXPECT_EQ(s.owner(a + 1).local, 1);
  EXPECT_EQ(p.resolve(12, 1, &gen), b + 1);
  EXPECT_EQ(p.resolve(11, 0, &gen), -1);  // no rings for that context
  EXPECT_EQ(p.resolve(ep::node::kDirEntries, 0, &gen), -1);
  const uint32_t old = s.owner(a).generation;
  s.release_rings(10, a, 3);
  EXPECT_EQ(p.resolve(10, 0, &gen), -1);
  const int again = s.assign_rings(20, 1);
  ASSERT_GE(again, 0);
  EXPECT_EQ(p.resolve(20, 0, &gen), again);
  if (again == a) EXPECT_GT(gen, old);
  EXPECT_EQ(s.assign_rings(ep::node::kDirEntries, 1), -1);  // beyond the directory
  EXPECT_EQ(s.assign_rings(30, static_cast<int>(ep::node::kMaxRings)), -1);
}

TEST(Segment, StagingPoolAllocatesWithinItsLengthAndReusesFreedBlocks) {
  Segment s;
  std::string error;
  ASSERT_TRUE(s.create(ep::node::ring_capacity_for(16384), kStaging, &error)) << error;
  PeerSegment p;
  ASSERT_TRUE(p.map(getpid(), s.fd(), s.length(), s.cookie()));
  const int64_t x = s.stage_alloc(1000);
  const int64_t y = s.stage_alloc(kStaging / 2);
  ASSERT_GE(x, 0);
  ASSERT_GE(y, 0);
  EXPECT_EQ(x % 64, 0);
  EXPECT_EQ(s.stage_alloc(kStaging), -1);  // no room
  std::memset(s.stage_at(y), 0x5a, 100);
  EXPECT_EQ(std::memcmp(p.staged(static_cast<uint64_t>(y), 100), s.stage_at(y), 100), 0);
  EXPECT_EQ(p.staged(kStaging - 10, 100), nullptr);  // past the pool
  EXPECT_EQ(p.staged(~uint64_t{0} - 10, 100), nullptr);
  s.stage_free(y);
  EXPECT_GE(s.stage_alloc(kStaging / 2 + 4096), 0);
}

TEST(Cma, ReadsThisProcessAndChecksTheCookie) {
  Segment s;
  std::string error;
  ASSERT_TRUE(s.create(ep::node::ring_capacity_for(16384), kStaging, &error)) << error;
  EXPECT_TRUE(ep::node::cma_probe(getpid(), s.cookie_address(), s.cookie()));
  EXPECT_FALSE(ep::node::cma_probe(getpid(), s.cookie_address(), s.cookie() ^ 1));
  std::vector<char> from(100000), to(100000);
  for (size_t i = 0; i < from.size(); ++i) from[i] = static_cast<char>(i * 7);
  int err = 0;
  ASSERT_TRUE(ep::node::cma_read(getpid(), reinterpret_cast<uint64_t>(from.data()), to.data(),
                                 to.size(), &err));
  EXPECT_EQ(from, to);
  EXPECT_FALSE(ep::node::cma_read(getpid(), 8, to.data(), 16, &err));  // unmapped address
  EXPECT_EQ(err, EFAULT);
}

// Another process maps the segment, pushes records into a ring and rings the doorbell;
// this one sleeps on the shared futex until woken, then drains them in order.
TEST(Segment, RecordsAndDoorbellCrossProcesses) {
  Segment s;
  std::string error;
  ASSERT_TRUE(s.create(ep::node::ring_capacity_for(16384), kStaging, &error)) << error;
  const int r = s.assign_rings(40, 1);
  ASSERT_GE(r, 0);
  const Owner me = s.owner(r);
  constexpr int kRecords = 2000;  // more than the ring holds at once
  const int parent = getpid();
  const int fd = s.fd();
  const uint64_t len = s.length(), cookie = s.cookie();
  ep::node::Doorbell& bell = s.doorbell();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    PeerSegment p;
    if (!p.map(parent, fd, len, cookie)) _exit(2);
    uint32_t gen = 0;
    const int i = p.resolve(40, 0, &gen);
    if (i != r || gen != me.generation) _exit(3);
    usleep(50'000);  // let the parent fall asleep
    for (int k = 0; k < kRecords; ++k) {
      for (;;) {
        const Ring::Push res = p.ring(i).push(
            2, Owner{40, 0, gen}, static_cast<uint32_t>(k), sizeof k,
            [&](char* body) { std::memcpy(body, &k, sizeof k); }, p.head_hint(i));
        if (res == Ring::Push::kOk) break;
        if (res == Ring::Push::kTooBig) _exit(4);
        usleep(100);
      }
      if (p.doorbell().mark(static_cast<uint32_t>(i))) {
        p.doorbell().bell.fetch_add(1);
        ep::progress::futex_wake_shared(p.doorbell().bell);
      }
    }
    _exit(0);
  }
  Consumer c;
  int next = 0;
  bool bad = false;
  while (next < kRecords) {
    const uint32_t seen = bell.bell.load();
    bell.asleep.store(1);
    if (!bell.any()) EXPECT_FALSE(ep::progress::futex_wait_shared(bell.bell, seen, 10'000'000'000));
    bell.asleep.store(0);
    bell.take(static_cast<uint32_t>(r) / 64);
    // A drain takes at most its `max` records: drain until nothing is ready.
    while (s.ring(r).drain(c, me, [&](uint8_t kind, uint32_t aux, const char* body, uint32_t n) {
      int k = -1;
      std::memcpy(&k, body, sizeof k);
      bad |= kind != 2 || n < sizeof k || k != next || aux != static_cast<uint32_t>(k);
      ++next;
      return true;
    }) > 0) {
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_FALSE(bad);
  EXPECT_EQ(c.rejected, 0u);
}

}  // namespace
