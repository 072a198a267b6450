// Self-test of ep_cc_test (plain googletest, gtest_main) and the @tbb / @concurrentqueue /
// @gtest external repositories.
#include <concurrentqueue/concurrentqueue.h>
#include <gtest/gtest.h>
#include <tbb/concurrent_vector.h>

#include <thread>
#include <vector>

TEST(ExternalsSelfTest, ConcurrentQueueRoundTrip) {
  moodycamel::ConcurrentQueue<int> q;
  std::thread producer([&] {
    for (int i = 0; i < 1000; ++i) q.enqueue(i);
  });
  producer.join();
  long long sum = 0;
  int v;
  while (q.try_dequeue(v)) sum += v;
  EXPECT_EQ(sum, 999LL * 1000 / 2);
}

TEST(ExternalsSelfTest, TbbConcurrentVector) {
  tbb::concurrent_vector<int> vec;
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 100; ++i) vec.push_back(i);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(vec.size(), 200u);
}
