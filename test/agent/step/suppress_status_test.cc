// The suppress status (policy, active, BE's CPU limit) from the configuration and the BE
// ceiling a pass leaves in force; and that ceiling from what the pass read with the
// executor's writes put over it, as the daemon and `plan` both compute it.
#include "agent/step/suppress_status.h"

#include <gtest/gtest.h>

namespace gleaner::agent::step {
namespace {
using config::CpuSuppressPolicy;

config::ResourceThresholdStrategy threshold(bool enable, CpuSuppressPolicy policy) {
  config::ResourceThresholdStrategy t;
  t.enable = enable;
  t.cpu_suppress_policy = policy;
  return t;
}

TEST(SuppressStatus, CfsQuotaIsActiveUnderAFiniteQuotaWithTheLimitInMillicores) {
  const auto cfs = threshold(true, CpuSuppressPolicy::kCfsQuota);
  EXPECT_EQ(suppress_status(cfs, {270000, 100000, std::nullopt}, 8),
            (SuppressStatus{"cfsQuota", true, 2700}));
  // Another period: 1.5 CPUs as 75000 us every 50000 us.
  EXPECT_EQ(suppress_status(cfs, {75000, 50000, std::nullopt}, 8),
            (SuppressStatus{"cfsQuota", true, 1500}));
  // Unlimited, no quota file, no period: BE is not held.
  EXPECT_EQ(suppress_status(cfs, {-1, 100000, std::nullopt}, 8), (SuppressStatus{"cfsQuota"}));
  EXPECT_EQ(suppress_status(cfs, {}, 8), (SuppressStatus{"cfsQuota"}));
  EXPECT_EQ(suppress_status(cfs, {50000, std::nullopt, std::nullopt}, 8),
            (SuppressStatus{"cfsQuota"}));
  // The CPU list does not count under this policy.
  EXPECT_EQ(suppress_status(cfs, {-1, 100000, std::vector<int>{0}}, 8),
            (SuppressStatus{"cfsQuota"}));
}

TEST(SuppressStatus, CpusetIsActiveOnlyWithFewerCpusThanTheNode) {
  const auto cpuset = threshold(true, CpuSuppressPolicy::kCpuset);
  EXPECT_EQ(suppress_status(cpuset, {std::nullopt, std::nullopt, std::vector<int>{0, 1, 4}}, 8),
            (SuppressStatus{"cpuset", true, 3000}));
  EXPECT_EQ(suppress_status(cpuset, {std::nullopt, std::nullopt, std::vector<int>{0}}, 2),
            (SuppressStatus{"cpuset", true, 1000}));
  // Every CPU of the node, an empty list (it inherits its parent's) or none: not held.
  EXPECT_EQ(suppress_status(cpuset, {std::nullopt, std::nullopt, std::vector<int>{0, 1}}, 2),
            (SuppressStatus{"cpuset"}));
  EXPECT_EQ(suppress_status(cpuset, {std::nullopt, std::nullopt, std::vector<int>{}}, 2),
            (SuppressStatus{"cpuset"}));
  EXPECT_EQ(suppress_status(cpuset, {}, 2), (SuppressStatus{"cpuset"}));
  // The quota does not count under this policy.
  EXPECT_EQ(suppress_status(cpuset, {50000, 100000, std::vector<int>{0, 1}}, 2),
            (SuppressStatus{"cpuset"}));
}

TEST(SuppressStatus, NoneWhenDisabledWhateverIsInForce) {
  for (auto policy : {CpuSuppressPolicy::kCfsQuota, CpuSuppressPolicy::kCpuset}) {
    EXPECT_EQ(suppress_status(threshold(false, policy), {50000, 100000, std::vector<int>{0}}, 8),
              (SuppressStatus{"none"}));
  }
}

TEST(BeCeiling, TheWritesToBesQuotaAndCpuListGoOverWhatWasRead) {
  const BeCeilingFiles v2{"/cg/be/cpu.max", "/cg/be/cpuset.cpus", cgroup::CgroupVersion::kV2};
  BeCeiling c{-1, 100000, std::vector<int>{0, 1}};
  note_be_file_write(c, v2, "/cg/be/pod1/cpu.max", "50000 100000");  // a pod's: not BE's
  EXPECT_EQ(c, (BeCeiling{-1, 100000, std::vector<int>{0, 1}}));
  note_be_file_write(c, v2, "/cg/be/cpu.max", "60000 100000");
  note_be_file_write(c, v2, "/cg/be/cpuset.cpus", "1");
  EXPECT_EQ(c, (BeCeiling{60000, 100000, std::vector<int>{1}}));
  // In order: the last write to a file is the one in force; "max" is unlimited.
  note_be_file_write(c, v2, "/cg/be/cpu.max", "max 100000");
  EXPECT_EQ(c.quota_us, -1);

  // A file not offered (empty name) matches no write.
  const BeCeilingFiles v1{"/cg/cpu/be/cpu.cfs_quota_us", "", cgroup::CgroupVersion::kV1};
  BeCeiling d{-1, 100000, std::nullopt};
  note_be_file_write(d, v1, "", "0");
  note_be_file_write(d, v1, "/cg/cpu/be/cpu.cfs_quota_us", "270000");
  EXPECT_EQ(d, (BeCeiling{270000, 100000, std::nullopt}));
}

}  // namespace
}  // namespace gleaner::agent::step
