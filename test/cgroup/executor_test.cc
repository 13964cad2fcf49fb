#include "cgroup/executor.h"

#include <gtest/gtest.h>

#include "test/cgroup/kubelet_paths.h"
#include "test/support/temp_tree.h"

namespace gleaner::cgroup {
namespace {
using gleaner::testing::TempDir;

using test::kBe;
using test::kPod;

// A v1 tree with the files kubelet leaves: unlimited quotas, full cpusets.
void make_v1(const TempDir& t) {
  for (const std::string& cg : {std::string("kubepods"), kBe, kPod}) {
    t.write("cpu/" + cg + "/cpu.cfs_quota_us", "-1\n");
    t.write("cpu/" + cg + "/cpu.cfs_period_us", "100000\n");
    t.write("cpu/" + cg + "/cpu.shares", "2\n");
    t.write("cpuset/" + cg + "/cpuset.cpus", "0-7\n");
    t.write("memory/" + cg + "/memory.limit_in_bytes", "9223372036854771712\n");
  }
}

void make_v2(const TempDir& t) {
  t.write("cgroup.controllers", "cpuset cpu io memory pids\n");
  for (const std::string& cg : {std::string("kubepods"), kBe, kPod}) {
    t.write(cg + "/cpu.max", "max 100000\n");
    t.write(cg + "/cpu.weight", "100\n");
    t.write(cg + "/cpuset.cpus", "0-7\n");
    t.write(cg + "/memory.max", "max\n");
  }
}

TEST(Resource, TableIsIndexedByEnum) {
  for (int i = 0; i <= static_cast<int>(kLastResource); ++i) {
    EXPECT_EQ(static_cast<int>(spec_of(static_cast<Resource>(i)).resource), i);
  }
}

TEST(Resource, SharesWeightConversion) {
  EXPECT_EQ(shares_to_weight(2), 1);
  EXPECT_EQ(shares_to_weight(1024), 39);
  EXPECT_EQ(shares_to_weight(262144), 10000);
  EXPECT_EQ(weight_to_shares(1), 2);
  EXPECT_EQ(weight_to_shares(10000), 262144);
}

TEST(Resource, ValidatesRanges) {
  EXPECT_TRUE(validate_value(Resource::kCpuQuota, "-1").ok());
  EXPECT_FALSE(validate_value(Resource::kCpuQuota, "999").ok());
  EXPECT_FALSE(validate_value(Resource::kCpuShares, "1").ok());
  EXPECT_FALSE(validate_value(Resource::kCpuShares, "262145").ok());
  EXPECT_FALSE(validate_value(Resource::kCpuIdle, "2").ok());
  EXPECT_FALSE(validate_value(Resource::kCpusetCpus, "").ok());
  EXPECT_FALSE(validate_value(Resource::kMemoryLimit, "-5").ok());
  EXPECT_FALSE(validate_value(Resource::kCpuUsage, "1").ok());
}

TEST(Resource, V2CpuMaxKeepsTheOtherField) {
  EXPECT_EQ(*file_from_logical(Resource::kCpuQuota, CgroupVersion::kV2, "170000", "max 50000\n"),
            "170000 50000");
  EXPECT_EQ(*file_from_logical(Resource::kCpuPeriod, CgroupVersion::kV2, "20000", "5000 100000"),
            "5000 20000");
  EXPECT_EQ(*logical_from_file(Resource::kCpuQuota, CgroupVersion::kV2, "max 100000\n"), "-1");
  EXPECT_EQ(*logical_from_file(Resource::kCpuPeriod, CgroupVersion::kV2, "max 100000\n"), "100000");
  EXPECT_EQ(*logical_from_file(Resource::kMemoryLimit, CgroupVersion::kV1, "9223372036854771712\n"),
            "-1");
}

TEST(Executor, WritesV1AndSkipsUnchanged) {
  TempDir t;
  make_v1(t);
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  auto report = exec.apply({{Resource::kCpuQuota, kBe, "170000", "cpu-suppress"},
                            {Resource::kCpuShares, kPod, "2", "be-shares"}});
  ASSERT_EQ(report.written.size(), 1u);
  EXPECT_EQ(t.read("cpu/" + kBe + "/cpu.cfs_quota_us"), "170000");
  EXPECT_EQ(exec.counters().at("cpu_shares").unchanged, 1);
  // Same request again: the file already holds it, nothing is written.
  auto again = exec.apply({{Resource::kCpuQuota, kBe, "170000", "cpu-suppress"}});
  EXPECT_TRUE(again.written.empty());
  EXPECT_EQ(exec.counters().at("cpu_quota").writes, 1);
}

TEST(Executor, UnlimitedMemoryOnV1IsUnchanged) {
  TempDir t;
  make_v1(t);
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  EXPECT_TRUE(exec.plan({{Resource::kMemoryLimit, kPod, "-1", "x"}}).empty());
}

TEST(Executor, V2WritesWeightAndCpuMax) {
  TempDir t;
  make_v2(t);
  CgroupFs fs(t.path(), CgroupVersion::kV2);
  WriteExecutor exec(fs);
  auto report = exec.apply({{Resource::kCpuQuota, kBe, "170000", "cpu-suppress"},
                            {Resource::kCpuShares, kPod, "1024", "be-shares"},
                            {Resource::kMemoryLimit, kPod, "1073741824", "be-memory"}});
  EXPECT_TRUE(report.rejected.empty());
  EXPECT_EQ(t.read(kBe + "/cpu.max"), "170000 100000");
  EXPECT_EQ(t.read(kPod + "/cpu.weight"), "39");
  EXPECT_EQ(t.read(kPod + "/memory.max"), "1073741824");
}

TEST(Executor, NarrowsChildrenBeforeParentsAndWidensParentsFirst) {
  TempDir t;
  make_v1(t);
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  auto narrow = exec.plan({{Resource::kCpusetCpus, kBe, "0-1", "suppress"},
                           {Resource::kCpusetCpus, kPod, "0-1", "suppress"}});
  ASSERT_EQ(narrow.size(), 2u);
  EXPECT_EQ(narrow[0].cgroup, kPod);
  EXPECT_EQ(narrow[1].cgroup, kBe);
  exec.apply({{Resource::kCpusetCpus, kBe, "0-1", "s"}, {Resource::kCpusetCpus, kPod, "0-1", "s"}});
  auto widen = exec.plan(
      {{Resource::kCpusetCpus, kPod, "0-3", "grow"}, {Resource::kCpusetCpus, kBe, "0-3", "grow"}});
  ASSERT_EQ(widen.size(), 2u);
  EXPECT_EQ(widen[0].cgroup, kBe);
  EXPECT_EQ(widen[1].cgroup, kPod);
}

TEST(Executor, DisjointCpusetMovesThroughTheUnion) {
  TempDir t;
  make_v1(t);
  t.write("cpuset/" + kBe + "/cpuset.cpus", "0-1\n");
  t.write("cpuset/" + kPod + "/cpuset.cpus", "0-1\n");
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  auto plan = exec.plan(
      {{Resource::kCpusetCpus, kBe, "2-3", "m"}, {Resource::kCpusetCpus, kPod, "2-3", "m"}});
  std::vector<std::pair<std::string, std::string>> steps;
  for (const auto& w : plan)
    steps.emplace_back(w.cgroup, w.content);
  // Parent first to the union, child to its target, parent last to its target.
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0], std::make_pair(kBe, std::string("0-3")));
  EXPECT_EQ(steps[1], std::make_pair(kPod, std::string("0-3")));
  EXPECT_EQ(steps[2], std::make_pair(kPod, std::string("2-3")));
  EXPECT_EQ(steps[3], std::make_pair(kBe, std::string("2-3")));
}

TEST(Executor, QuotaOrderFollowsDirection) {
  TempDir t;
  make_v1(t);
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  auto tighten = exec.plan(
      {{Resource::kCpuQuota, kBe, "200000", "s"}, {Resource::kCpuQuota, kPod, "100000", "s"}});
  ASSERT_EQ(tighten.size(), 2u);
  EXPECT_EQ(tighten[0].cgroup, kPod);  // narrowing from unlimited: child first
}

TEST(Executor, RestoresOriginalValues) {
  TempDir t;
  make_v1(t);
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  exec.apply({{Resource::kCpuQuota, kBe, "170000", "s"}, {Resource::kCpusetCpus, kBe, "0-1", "s"}});
  exec.apply({{Resource::kCpuQuota, kBe, "90000", "s"}});
  // The pod's cpuset was narrowed with its parent's (v1 keeps children inside parents).
  EXPECT_EQ(exec.originals().size(), 3u);
  auto report = exec.restore_all();
  EXPECT_EQ(report.written.size(), 3u);
  EXPECT_EQ(t.read("cpuset/" + kPod + "/cpuset.cpus"), "0-7");
  EXPECT_EQ(t.read("cpu/" + kBe + "/cpu.cfs_quota_us"), "-1");
  EXPECT_EQ(t.read("cpuset/" + kBe + "/cpuset.cpus"), "0-7");
  EXPECT_TRUE(exec.originals().empty());
}

// The record of originals was lost while an earlier agent held BE at 2000 us: the original
// put back is the value kubelet gives, not the suppressed one found, also for a file that
// already holds what this run asks (nothing is written to it, it still goes on record).
TEST(Executor, ALostRecordRestoresKubeletsValuesNotTheSuppressedOnes) {
  TempDir t;
  make_v1(t);
  t.write("cpu/" + kBe + "/cpu.cfs_quota_us", "2000\n");
  t.write("cpu/" + kPod + "/cpu.cfs_quota_us", "2000\n");
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  int asked = 0;
  exec.set_lost_record([&](Resource r, const std::string&) -> std::optional<std::string> {
    ++asked;
    if (r == Resource::kCpuQuota) return "-1";
    return std::nullopt;  // not known: the value found stays the original
  });
  exec.apply({{Resource::kCpuQuota, kBe, "3000", "cpu-suppress"},
              {Resource::kCpuQuota, kPod, "2000", "batch-limit"},
              {Resource::kCpuShares, kPod, "4", "be-shares"}});
  EXPECT_GT(asked, 0);
  EXPECT_EQ(exec.originals().at(t.path() + "/cpu/" + kBe + "/cpu.cfs_quota_us").content, "-1");
  EXPECT_EQ(exec.originals().at(t.path() + "/cpu/" + kPod + "/cpu.shares").content, "2");
  exec.restore_all();
  EXPECT_EQ(t.read("cpu/" + kBe + "/cpu.cfs_quota_us"), "-1");
  EXPECT_EQ(t.read("cpu/" + kPod + "/cpu.cfs_quota_us"), "-1");
  EXPECT_EQ(t.read("cpu/" + kPod + "/cpu.shares"), "2");
}

// Without a lost record the value found is the original, as before.
TEST(Executor, AnIntactRecordKeepsTheValueFoundAsOriginal) {
  TempDir t;
  make_v1(t);
  t.write("cpu/" + kBe + "/cpu.cfs_quota_us", "50000\n");
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  exec.apply({{Resource::kCpuQuota, kBe, "3000", "cpu-suppress"}});
  exec.restore_all();
  EXPECT_EQ(t.read("cpu/" + kBe + "/cpu.cfs_quota_us"), "50000");
}

TEST(Executor, VanishedCgroupIsRoutine) {
  TempDir t;
  make_v1(t);
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  auto report = exec.apply({{Resource::kCpuQuota, "kubepods/besteffort/podgone", "1000", "s"}});
  ASSERT_EQ(report.rejected.size(), 1u);
  EXPECT_EQ(report.rejected[0].code, ErrorCode::kNotFound);
  EXPECT_EQ(exec.counters().at("cpu_quota").vanished, 1);
  EXPECT_EQ(exec.counters().at("cpu_quota").failures, 0);
}

TEST(Executor, InvalidValuesAreRejectedAndCounted) {
  TempDir t;
  make_v1(t);
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  auto report = exec.apply(
      {{Resource::kCpuShares, kPod, "0", "bad"}, {Resource::kCpuQuota, kBe, "150000", "good"}});
  EXPECT_EQ(report.rejected.size(), 1u);
  EXPECT_EQ(report.written.size(), 1u);
  EXPECT_EQ(exec.counters().at("cpu_shares").failures, 1);
  EXPECT_EQ(t.read("cpu/" + kPod + "/cpu.shares"), "2\n");
}

TEST(Executor, DryRunChangesNothing) {
  TempDir t;
  make_v1(t);
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs, /*dry_run=*/true);
  auto report = exec.apply({{Resource::kCpuQuota, kBe, "170000", "s"}});
  EXPECT_EQ(report.written.size(), 1u);
  EXPECT_EQ(t.read("cpu/" + kBe + "/cpu.cfs_quota_us"), "-1\n");
  EXPECT_TRUE(exec.originals().empty());
}

TEST(CgroupFs, ReadsThroughTheTable) {
  TempDir t;
  make_v2(t);
  t.write(kPod + "/cpu.stat", "usage_usec 1500\nnr_periods 4\nnr_throttled 2\nthrottled_usec 7\n");
  t.write(kPod + "/cpu.pressure", "some avg10=2.00 avg60=0 avg300=0 total=9\n");
  CgroupFs fs(t.path(), CgroupVersion::kV2);
  EXPECT_EQ(*fs.read_cpu_usage_ns(kPod), 1500000);
  EXPECT_EQ(fs.read_cpu_throttle(kPod)->throttled_ns, 7000);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, kPod), kUnlimited);
  EXPECT_EQ(*fs.read_int(Resource::kCpuShares, kPod), weight_to_shares(100));
  EXPECT_DOUBLE_EQ(fs.read_pressure(Resource::kCpuPressure, kPod)->some.avg10, 2.0);
  // Re-read through the kept descriptor sees new content.
  t.write(kPod + "/cpu.stat", "usage_usec 2500\n");
  EXPECT_EQ(*fs.read_cpu_usage_ns(kPod), 2500000);
}

TEST(CgroupFs, HybridReadsPressureFromUnified) {
  TempDir t;
  make_v1(t);
  t.write("unified/" + kPod + "/cpu.pressure", "some avg10=3.00 avg60=0 avg300=0 total=9\n");
  CgroupFs fs(t.path(), CgroupVersion::kHybrid);
  EXPECT_EQ(*fs.path_of(Resource::kCpuPressure, kPod), t / ("unified/" + kPod + "/cpu.pressure"));
  EXPECT_DOUBLE_EQ(fs.read_pressure(Resource::kCpuPressure, kPod)->some.avg10, 3.0);
  CgroupFs v1(t.path(), CgroupVersion::kV1);
  EXPECT_EQ(v1.path_of(Resource::kCpuPressure, kPod).error().code, ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace gleaner::cgroup
