// What the kernel offers is judged once, in kubepods, never in the pod cgroup asked about
// (issue #61 item 13).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cgroup/cgroup_fs.h"
#include "test/cgroup/kubelet_paths.h"
#include "test/support/temp_tree.h"

namespace gleaner::cgroup {
namespace {
using gleaner::testing::TempDir;

using test::kBe;
using test::kPod;

const std::string kOfferReference = "kubepods";

// A v1 kernel without the memcg QoS files: the first miss is judged in kubepods, and later
// passes ask the filesystem nothing of memory.min (every pass used to stat it for every pod).
TEST(CgroupFs, AFileTheKernelLacksIsProbedOnceAcrossPasses) {
  TempDir t;
  t.write("memory/" + kOfferReference + "/memory.limit_in_bytes", "9223372036854771712\n");
  std::vector<std::string> pods;
  for (int i = 0; i < 50; ++i) {
    pods.push_back(kBe + "/pod" + std::to_string(i));
    t.write("memory/" + pods.back() + "/memory.limit_in_bytes", "9223372036854771712\n");
  }
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  fs.judge_offers_in(kOfferReference);
  for (int pass = 0; pass < 10; ++pass) {
    for (const auto& pod : pods) {
      EXPECT_FALSE(fs.has(Resource::kMemoryMin, pod));
      EXPECT_TRUE(fs.has(Resource::kMemoryLimit, pod));
    }
  }
  // memory.min: the pod's file, kubepods' file and kubepods' directory, once;
  // memory.limit_in_bytes: one stat a file, as it stays the cgroup-exists check.
  EXPECT_EQ(fs.lookups(), 3u + 10u * 50u);
}

// rmdir takes a cgroup's controller files away before its directory (kill_css() before
// kernfs_remove()), and kubelet lists a pod before it makes its cgroup: a pod directory
// without cpu.cfs_quota_us is such a cgroup, caught half removed or half made, not a kernel
// without CFS quotas. The quota stays read and written in every other pod.
TEST(CgroupFs, AFileMissingFromAHalfRemovedCgroupStaysOffered) {
  TempDir t;
  for (const std::string& cg : {kOfferReference, kBe, kPod}) {
    t.write("cpu/" + cg + "/cpu.cfs_quota_us", "-1\n");
  }
  const std::string dying = kBe + "/poddying";
  t.mkdir("cpu/" + dying);
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  fs.judge_offers_in(kOfferReference);
  ASSERT_TRUE(fs.read_raw(Resource::kCpuQuota, kBe));  // the executor keeps it open
  EXPECT_TRUE(fs.has(Resource::kCpuQuota, kBe));
  EXPECT_FALSE(fs.has(Resource::kCpuQuota, dying));
  EXPECT_TRUE(fs.has(Resource::kCpuQuota, kPod));
  const std::string made = kBe + "/podnew";
  t.write("cpu/" + made + "/cpu.cfs_quota_us", "-1\n");
  EXPECT_TRUE(fs.has(Resource::kCpuQuota, made));
}

// Without a reference cgroup nothing is judged: every miss is a lookup, as before.
TEST(CgroupFs, WithoutAReferenceEveryMissIsLookedUp) {
  TempDir t;
  t.mkdir("memory/" + kPod);
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  for (int pass = 0; pass < 3; ++pass)
    EXPECT_FALSE(fs.has(Resource::kMemoryMin, kPod));
  EXPECT_EQ(fs.lookups(), 3u);
  t.write("memory/" + kPod + "/memory.min", "0\n");
  EXPECT_TRUE(fs.has(Resource::kMemoryMin, kPod));
}

// On v2 a controller's files exist only where it is enabled, and enabling it in the parent's
// cgroup.subtree_control adds them to cgroups that exist: while kubepods' cgroup.controllers
// leaves memory out a miss says nothing of the kernel; once listed, the miss is the kernel's.
TEST(CgroupFs, OnV2AControllerEnabledLaterIsJudgedOnceEnabled) {
  TempDir t;
  t.write("cgroup.controllers", "cpu io memory pids\n");
  t.write(kOfferReference + "/cgroup.controllers", "cpu io pids\n");
  t.write(kBe + "/cgroup.controllers", "cpu io pids\n");
  CgroupFs fs(t.path(), CgroupVersion::kV2);
  fs.judge_offers_in(kOfferReference);
  EXPECT_FALSE(fs.has(Resource::kMemoryMin, kBe));
  EXPECT_FALSE(fs.has(Resource::kMemoryMin, kBe));
  // memory enabled for kubepods and below: memory.min appears in the cgroups already there.
  for (const std::string& cg : {kOfferReference, kBe}) {
    t.write(cg + "/cgroup.controllers", "cpu io memory pids\n");
    t.write(cg + "/memory.min", "0\n");
  }
  EXPECT_TRUE(fs.has(Resource::kMemoryMin, kBe));

  // A kernel without memory.high (say): listed in kubepods, the file is not there.
  const uint64_t before = fs.lookups();
  EXPECT_FALSE(fs.has(Resource::kMemoryHigh, kBe));
  const uint64_t judged = fs.lookups();
  EXPECT_GT(judged, before);
  EXPECT_FALSE(fs.has(Resource::kMemoryHigh, kBe));
  EXPECT_EQ(fs.lookups(), judged);
}

}  // namespace
}  // namespace gleaner::cgroup
