// The agent raises its soft descriptor limit to the hard one and keeps at most half of it
// as cached cgroup descriptors. Each test runs in its own process (ctest), so the limits it
// sets do not reach other tests.
#include "agent/daemon/descriptor_limit.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include "cgroup/cgroup_fs.h"

namespace gleaner::agent {
namespace {

TEST(DescriptorLimit, TheSoftLimitGoesUpToTheHardOneAndHalfOfItMayBeKept) {
  rlimit original{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &original), 0);
  // A hard limit of 4096 (lowering it needs no privilege), the soft one at 256.
  rlimit lowered{256, std::min<rlim_t>(original.rlim_max, 4096)};
  if (lowered.rlim_max <= lowered.rlim_cur) GTEST_SKIP() << "hard limit below 257 here";
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  const size_t keep = raise_descriptor_limit(cgroup::CgroupFs::kDefaultDescriptorCap);
  rlimit now{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &now), 0);
  EXPECT_EQ(now.rlim_cur, lowered.rlim_max);
  EXPECT_EQ(keep, lowered.rlim_max / 2);
}

TEST(DescriptorLimit, NoMoreThanTheCapIsKept) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < 400) GTEST_SKIP() << "hard limit < 400";
  EXPECT_EQ(raise_descriptor_limit(100), 100U);
}

}  // namespace
}  // namespace gleaner::agent
