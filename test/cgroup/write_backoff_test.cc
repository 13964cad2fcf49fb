#include "cgroup/write_backoff.h"

#include <gtest/gtest.h>

namespace gleaner::cgroup {
namespace {
using namespace std::chrono_literals;

TEST(WriteBackoff, DoublesToThirtySecondsAndForgetsOnSuccess) {
  FakeClock clock;
  WriteBackoff backoff(clock);
  EXPECT_FALSE(backoff.waiting("/q"));
  const std::vector<int64_t> waits = {1, 2, 4, 8, 16, 30, 30};
  for (size_t i = 0; i < waits.size(); ++i) {
    auto v = backoff.refused("/q", "EINVAL");
    EXPECT_EQ(v.failures, static_cast<int>(i + 1));
    EXPECT_EQ(v.wait.count(), waits[i]) << "refusal " << i + 1;
    EXPECT_TRUE(backoff.waiting("/q"));
    clock.advance(v.wait - 1ms);
    EXPECT_TRUE(backoff.waiting("/q"));
    clock.advance(1ms);
    EXPECT_FALSE(backoff.waiting("/q"));
  }
  EXPECT_FALSE(backoff.waiting("/other")) << "keyed by file";
  EXPECT_EQ(backoff.succeeded("/q"), 7);
  EXPECT_EQ(backoff.succeeded("/q"), 0);
  EXPECT_EQ(backoff.refused("/q", "EINVAL").wait.count(), 1) << "a success starts over";
}

TEST(WriteBackoff, AnUrgentWriteWaitsOneSecondAtMost) {
  FakeClock clock;
  WriteBackoff backoff(clock);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(backoff.refused("/q", "EBUSY", true).wait.count(), 1);
}

TEST(WriteBackoff, WarnsOnceAMinuteUnlessTheErrorChanges) {
  FakeClock clock;
  WriteBackoff backoff(clock);
  EXPECT_TRUE(backoff.refused("/q", "EINVAL").warn);
  clock.advance(30s);
  EXPECT_FALSE(backoff.refused("/q", "EINVAL").warn);
  EXPECT_TRUE(backoff.refused("/q", "EBUSY").warn) << "a new reason is said at once";
  clock.advance(59s);
  EXPECT_FALSE(backoff.refused("/q", "EBUSY").warn);
  clock.advance(1s);
  EXPECT_TRUE(backoff.refused("/q", "EBUSY").warn);
  backoff.forget("/q");
  EXPECT_FALSE(backoff.waiting("/q"));
  EXPECT_TRUE(backoff.refused("/q", "EBUSY").warn);
}

}  // namespace
}  // namespace gleaner::cgroup
