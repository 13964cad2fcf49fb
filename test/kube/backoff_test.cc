#include "kube/backoff.h"

#include <gtest/gtest.h>

#include "common/clock.h"
#include "kube/rate_limiter.h"

namespace gleaner::kube {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, DoublesWithinJitterUpToTheCap) {
  Backoff b({milliseconds(100), milliseconds(1000), 2.0, 0.2}, 42);
  const int64_t expected[] = {100, 200, 400, 800, 1000, 1000};
  for (int64_t base : expected) {
    const auto d = b.next().count();
    EXPECT_GE(d, base * 8 / 10) << base;
    EXPECT_LE(d, std::min<int64_t>(base * 12 / 10, 1000)) << base;
  }
  b.reset();
  EXPECT_LE(b.next().count(), 120);
}

TEST(Backoff, JitterSpreadsClientsApart) {
  Backoff a({milliseconds(1000), milliseconds(60000), 2.0, 0.2}, 1);
  Backoff b({milliseconds(1000), milliseconds(60000), 2.0, 0.2}, 2);
  int differ = 0;
  for (int i = 0; i < 5; ++i)
    differ += a.next() != b.next();
  EXPECT_GE(differ, 4);
}

TEST(TokenBucket, AllowsBurstThenPacesAtQps) {
  FakeClock clock;
  TokenBucket bucket(10, 3);  // 10 QPS, burst 3
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(bucket.reserve(clock.now()).count(), 0) << i;
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(bucket.reserve(clock.now())).count(), 100);
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(bucket.reserve(clock.now())).count(), 200);
  clock.advance(std::chrono::seconds(1));  // refills 10 tokens, minus the 2 borrowed, capped at 3
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(bucket.reserve(clock.now()).count(), 0) << i;
  EXPECT_GT(bucket.reserve(clock.now()).count(), 0);
}

TEST(TokenBucket, ZeroQpsMeansUnlimited) {
  FakeClock clock;
  TokenBucket bucket(0, 1);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(bucket.reserve(clock.now()).count(), 0);
}

}  // namespace
}  // namespace gleaner::kube
