// What a quota change costs the write executor below the cgroup it changes: BE may make
// thousands of cgroups below a container, and they are walked only when the quota narrows
// (issue #61 item 13).
#include <string>

#include <gtest/gtest.h>

#include "cgroup/executor.h"
#include "test/cgroup/kubelet_paths.h"
#include "test/support/temp_tree.h"

namespace gleaner::cgroup {
namespace {
using gleaner::testing::TempDir;

using test::kBe;
using test::kPod;
const std::string kFitContainer = kPod + "/c1";
const std::string kFitDeep = kFitContainer + "/s7/deep";  // BE's own, limited by BE itself
constexpr int kFitSubCgroups = 500;

void write_quota(const TempDir& t, const std::string& cg, const std::string& value) {
  t.write("cpu/" + cg + "/cpu.cfs_quota_us", value + "\n");
  t.write("cpu/" + cg + "/cpu.cfs_period_us", "100000\n");
}

// kubepods, BE and its pod unlimited, the container batch-limited to 2 CPUs, and below it
// kFitSubCgroups unlimited cgroups BE made, one of which holds a child BE limited to 1.5 CPUs.
void make_fit_tree(const TempDir& t) {
  for (const std::string& cg : {std::string("kubepods"), kBe, kPod})
    write_quota(t, cg, "-1");
  write_quota(t, kFitContainer, "200000");
  for (int i = 0; i < kFitSubCgroups; ++i)
    write_quota(t, kFitContainer + "/s" + std::to_string(i), "-1");
  write_quota(t, kFitDeep, "150000");
}

TEST(ExecutorFitCost, AWiderQuotaReadsNoCgroupBelowItButTheClampedOnes) {
  TempDir t;
  make_fit_tree(t);
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  // Narrower: every cgroup below is looked at, and the limited ones are clamped first.
  exec.apply({{Resource::kCpuQuota, kBe, "100000", "cpu-suppress"}});
  EXPECT_EQ(t.read("cpu/" + kFitDeep + "/cpu.cfs_quota_us"), "100000");
  EXPECT_EQ(t.read("cpu/" + kFitContainer + "/cpu.cfs_quota_us"), "100000");
  EXPECT_GT(fs.cached_descriptors(), static_cast<size_t>(kFitSubCgroups));

  // What the walk opened is closed, so every file read from now on shows as a descriptor.
  fs.forget(kFitContainer);
  const size_t before = fs.cached_descriptors();
  exec.apply({{Resource::kCpuQuota, kBe, "120000", "cpu-suppress"}});
  // Wider: the clamped cgroups get closer to what they asked for...
  EXPECT_EQ(t.read("cpu/" + kFitDeep + "/cpu.cfs_quota_us"), "120000");
  EXPECT_EQ(t.read("cpu/" + kFitContainer + "/cpu.cfs_quota_us"), "120000");
  // ...and only they and the cgroups between them and BE are read (quota and period of
  // the container, s7 and deep), not the kFitSubCgroups others.
  EXPECT_LE(fs.cached_descriptors(), before + 6);

  exec.apply({{Resource::kCpuQuota, kBe, "-1", "cpu-suppress"}});
  EXPECT_EQ(t.read("cpu/" + kFitDeep + "/cpu.cfs_quota_us"), "150000");
  EXPECT_EQ(t.read("cpu/" + kFitContainer + "/cpu.cfs_quota_us"), "200000");
  EXPECT_LE(fs.cached_descriptors(), before + 6);
}

}  // namespace
}  // namespace gleaner::cgroup
