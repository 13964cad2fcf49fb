#include "agent/step/interference_cap.h"

#include <gtest/gtest.h>

#include "cgroup/parsers.h"

namespace gleaner::agent {
namespace {
using bpf::InterferenceAction;
const std::string kBe = "kubepods/besteffort";

TEST(InterferenceCap, TightensOneStepPerVerdictAndHoldsThenRelaxes) {
  InterferenceCap cap(kBe, 4);  // step = 10% of 4 x 100000 = 40000 us
  cap.update(InterferenceAction::kTightenNow, 200000);
  EXPECT_EQ(cap.ceiling(), 160000);
  cap.update(InterferenceAction::kTightenNow, 160000);
  EXPECT_EQ(cap.ceiling(), 120000);
  cap.update(InterferenceAction::kHold, 120000);
  EXPECT_EQ(cap.ceiling(), 120000);
  cap.update(InterferenceAction::kRelaxAllowed, 120000);
  EXPECT_FALSE(cap.ceiling().has_value());
}

TEST(InterferenceCap, StartsFromCapacityWhenUnlimitedAndStopsAtTheFloor) {
  InterferenceCap cap(kBe, 1);  // step 10000
  cap.update(InterferenceAction::kTightenNow, cgroup::kUnlimited);
  EXPECT_EQ(cap.ceiling(), 90000);
  for (int i = 0; i < 20; ++i)
    cap.update(InterferenceAction::kTightenNow, *cap.ceiling());
  EXPECT_EQ(cap.ceiling(), 2000);
}

TEST(InterferenceCap, FiltersPlansBelowTheCeiling) {
  InterferenceCap cap(kBe, 4);
  std::vector<cgroup::CgroupWrite> writes = {
      {cgroup::Resource::kCpuQuota, kBe, "300000", "cpu-suppress"},
      {cgroup::Resource::kCpuQuota, "kubepods/besteffort/podx", "-1", "be-cgroups"}};
  cap.filter(writes, 300000);  // no ceiling: unchanged
  EXPECT_EQ(writes[0].value, "300000");
  cap.update(InterferenceAction::kTightenNow, 300000);
  cap.filter(writes, 300000);
  EXPECT_EQ(writes[0].value, "260000");
  EXPECT_EQ(writes[0].reason, "interference");
  EXPECT_EQ(writes[1].value, "-1");  // only the QoS-level quota is capped
  // A plan without a BE quota write gets one when the current value is above the ceiling.
  std::vector<cgroup::CgroupWrite> none;
  cap.filter(none, cgroup::kUnlimited);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].value, "260000");
  std::vector<cgroup::CgroupWrite> already;
  cap.filter(already, 100000);
  EXPECT_TRUE(already.empty());
}

}  // namespace
}  // namespace gleaner::agent
