// The distinct levels the sched probe's kernel side reads ancestors at.
#include "agent/bpf/registered_levels.h"

#include <gtest/gtest.h>

namespace gleaner::agent::bpf {
namespace {

using Levels = std::vector<uint32_t>;

TEST(RegisteredLevels, EachLevelOnceDeepestFirst) {
  RegisteredLevels levels;
  EXPECT_TRUE(levels.add(3));  // a Burstable pod
  EXPECT_TRUE(levels.add(2));  // a Guaranteed pod
  EXPECT_TRUE(levels.add(3));
  EXPECT_TRUE(levels.add(5));
  EXPECT_EQ(levels.deepest_first(), (Levels{5, 3, 2}));
}

TEST(RegisteredLevels, ALevelStaysUntilItsLastCgroupGoes) {
  RegisteredLevels levels;
  ASSERT_TRUE(levels.add(3));
  ASSERT_TRUE(levels.add(3));
  ASSERT_TRUE(levels.add(2));
  levels.remove(3);
  EXPECT_EQ(levels.deepest_first(), (Levels{3, 2}));
  levels.remove(3);
  EXPECT_EQ(levels.deepest_first(), (Levels{2}));
  levels.remove(7);  // never counted: nothing changes
  EXPECT_EQ(levels.deepest_first(), (Levels{2}));
}

TEST(RegisteredLevels, ALevelBeyondTheCapacityIsRefusedAndNothingCounted) {
  RegisteredLevels levels(2);
  ASSERT_TRUE(levels.add(2));
  ASSERT_TRUE(levels.add(3));
  EXPECT_FALSE(levels.add(4));
  EXPECT_TRUE(levels.add(3));  // a level already counted still fits
  EXPECT_EQ(levels.deepest_first(), (Levels{3, 2}));
  levels.remove(3);
  levels.remove(3);
  EXPECT_TRUE(levels.add(4));  // room again
  EXPECT_EQ(levels.deepest_first(), (Levels{4, 2}));
}

TEST(RegisteredLevels, TheDefaultCapacityIsWhatTheKernelSideReads) {
  EXPECT_EQ(RegisteredLevels().capacity(), size_t{GLEANER_MAX_TRACKED_LEVELS});
}

}  // namespace
}  // namespace gleaner::agent::bpf
