// QoS strategies against the real cgroup filesystem: a BE busy loop in a besteffort pod
// cgroup is throttled to the suppress quota once an LS busy loop runs, with the snapshot
// built from measured usage; restore_all() then puts every original value back.
#include <chrono>
#include <map>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "agent/edge/knob_reader.h"
#include "agent/qos/pod_dirs.h"
#include "agent/qos/qos_engine.h"
#include "cgroup/executor.h"
#include "common/file_io.h"
#include "test/agent/qos/qos_test_util.h"
#include "test/support/eventually.h"
#include "test/support/scratch_cgroup.h"

namespace gleaner {
namespace {
using namespace std::chrono_literals;
using namespace agent::qos::test;
using cgroup::KubeQos;
using cgroup::Resource;

// CPU used by each cgroup over a measurement window, in millicores.
std::map<std::string, int64_t> measure(cgroup::CgroupFs& fs, const std::vector<std::string>& cgs,
                                       std::chrono::milliseconds window) {
  std::map<std::string, int64_t> start;
  for (const auto& cg : cgs)
    start[cg] = *fs.read_cpu_usage_ns(cg);
  auto t0 = std::chrono::steady_clock::now();
  testing::measurement_window(window);
  const double wall_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  std::map<std::string, int64_t> out;
  for (const auto& cg : cgs) {
    out[cg] = static_cast<int64_t>(static_cast<double>(*fs.read_cpu_usage_ns(cg) - start[cg]) *
                                   1000.0 / wall_ns);
  }
  return out;
}

TEST(QosReal, BeIsThrottledToTheSuppressQuotaWhileLsRunsAndRestoredAfter) {
  auto reason = testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 2) GTEST_SKIP() << "needs 2 CPUs";
  testing::ScratchCgroups scratch;
  cgroup::KubeletLayout layout(cgroup::CgroupDriver::kCgroupfs);
  const std::string be_qos = layout.qos_dir(KubeQos::kBestEffort);
  const std::string be_pod = layout.pod_dir(KubeQos::kBestEffort, "be1");
  const std::string ls_pod = layout.pod_dir(KubeQos::kBurstable, "ls1");
  scratch.mkdir(be_pod);
  scratch.mkdir(ls_pod);
  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  std::map<std::string, std::string> before;
  for (const auto& cg : {be_qos, be_pod}) {
    before[cg + " quota"] = *fs.read_logical(Resource::kCpuQuota, cg);
    before[cg + " cpuset"] = *fs.read_logical(Resource::kCpusetCpus, cg);
  }
  pid_t be = scratch.spawn_busy(be_pod);
  pid_t ls = scratch.spawn_busy(ls_pod);
  auto used = measure(fs, {be_pod, ls_pod}, 500ms);

  FakeNode node;
  node.cpu = node.allocatable_cpu = std::to_string(cpus);
  node.node_cpu_usage = std::to_string(used[be_pod] + used[ls_pod]) + "m";
  FakePod ls_spec{.name = "web",
                  .uid = "ls1",
                  .kube_qos = "Burstable",
                  .cpu_usage = std::to_string(used[ls_pod]) + "m"};
  FakePod be_spec{.name = "spark",
                  .uid = "be1",
                  .qos_label = "BE",
                  .cpu_usage = std::to_string(used[be_pod]) + "m"};
  auto snap = make_snapshot(node, {ls_spec, be_spec});

  agent::edge::FsQosReader reader(fs, nullptr);
  agent::qos::QosInputs in;
  in.snapshot = &snap;
  in.threshold.enable = true;
  in.threshold.cpu_suppress_policy = agent::config::CpuSuppressPolicy::kCfsQuota;
  in.layout = layout;
  in.reader = &reader;
  agent::qos::QosEngine engine;
  auto plan = engine.run(in);
  cgroup::WriteExecutor exec(fs);
  auto report = exec.apply(plan.writes);
  ASSERT_TRUE(report.failed.empty()) << report.failed[0].second.message;

  // The formula on the measured figures: capacity*65% - LS usage - max(system 0, 0).
  const int64_t period = *fs.read_int(Resource::kCpuPeriod, be_qos);
  const int64_t suppress = cpus * 1000 * 65 / 100 - used[ls_pod];
  const int64_t expected = std::max<int64_t>(suppress * period / 1000, 2000);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, be_qos), expected);
  // BE now runs at about the quota's share of a CPU.
  auto throttled = measure(fs, {be_pod}, 1000ms);
  EXPECT_LT(throttled[be_pod], expected * 1000 / period + 100) << "BE used " << throttled[be_pod];

  // LS stops: with the LS usage gone BE may grow (by at most 10% of capacity per step).
  scratch.kill_child(ls);
  FakePod idle_ls = ls_spec;
  idle_ls.cpu_usage = "0";
  auto calm = make_snapshot(node, {idle_ls, be_spec});
  in.snapshot = &calm;
  exec.apply(engine.run(in).writes);
  EXPECT_GT(*fs.read_int(Resource::kCpuQuota, be_qos), expected);

  // Every value the agent changed goes back to what it found.
  auto restored = exec.restore_all();
  EXPECT_TRUE(restored.failed.empty());
  for (const auto& cg : {be_qos, be_pod}) {
    EXPECT_EQ(*fs.read_logical(Resource::kCpuQuota, cg), before[cg + " quota"]) << cg;
    EXPECT_EQ(*fs.read_logical(Resource::kCpusetCpus, cg), before[cg + " cpuset"]) << cg;
  }
  scratch.kill_child(be);
}

// CPU burst on the real kernel (v1 cpu.cfs_burst_us here, v2 cpu.max.burst in the VM): the
// kernel refuses a burst above the cgroup's quota, so the plan caps it there, and the
// executor's restore puts kubelet's 0 back.
TEST(QosReal, CpuBurstOfAnLsPodStaysWithinItsQuotaAndIsRestored) {
  auto reason = testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  testing::ScratchCgroups scratch;
  cgroup::KubeletLayout layout(cgroup::CgroupDriver::kCgroupfs);
  FakePod web{.name = "web",
              .uid = "ls1",
              .kube_qos = "Burstable",
              .containers = Json::array({container("app", {{"cpu", "500m"}}, {{"cpu", "500m"}})})};
  auto snap = make_snapshot(FakeNode{}, {web});
  const std::string pod_dir = agent::qos::pod_cgroup(layout, snap.pods[0]);
  const std::string app_dir = agent::qos::container_cgroups(layout, snap.pods[0]).at(0).second;
  scratch.mkdir(app_dir);
  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  if (!fs.has(Resource::kCpuBurst, app_dir)) GTEST_SKIP() << "this kernel has no CPU burst";
  // kubelet's quotas for a 500m limit (the pod's first: a v1 child may not exceed it).
  cgroup::WriteExecutor kubelet(fs);
  ASSERT_TRUE(kubelet
                  .apply({{Resource::kCpuQuota, pod_dir, "50000", "kubelet"},
                          {Resource::kCpuQuota, app_dir, "50000", "kubelet"}})
                  .failed.empty());
  ASSERT_EQ(*fs.read_int(Resource::kCpuBurst, app_dir), 0);

  agent::edge::FsQosReader reader(fs, nullptr);
  agent::qos::QosInputs in;
  in.snapshot = &snap;
  in.layout = layout;
  in.reader = &reader;
  in.cpu_burst.policy = agent::config::CpuBurstPolicy::kCpuBurstOnly;
  in.cpu_burst.cpu_burst_percent = 1000;  // 10x the limit: the kernel allows one quota
  agent::qos::QosEngine engine;
  cgroup::WriteExecutor exec(fs);
  auto report = exec.apply(engine.run(in).writes);
  ASSERT_TRUE(report.failed.empty()) << report.failed[0].second.message;
  EXPECT_EQ(*fs.read_int(Resource::kCpuBurst, app_dir), 50000);
  EXPECT_EQ(*fs.read_int(Resource::kCpuBurst, pod_dir), 50000);
  in.cpu_burst.cpu_burst_percent = 50;  // half the limit
  ASSERT_TRUE(exec.apply(engine.run(in).writes).failed.empty());
  EXPECT_EQ(*fs.read_int(Resource::kCpuBurst, app_dir), 25000);
  in.cpu_burst.policy = agent::config::CpuBurstPolicy::kNone;
  ASSERT_TRUE(exec.apply(engine.run(in).writes).failed.empty());
  EXPECT_EQ(*fs.read_int(Resource::kCpuBurst, app_dir), 0);
  // On again, then the agent stops: kubelet's 0 is back.
  in.cpu_burst.policy = agent::config::CpuBurstPolicy::kAuto;
  ASSERT_TRUE(exec.apply(engine.run(in).writes).failed.empty());
  EXPECT_EQ(*fs.read_int(Resource::kCpuBurst, app_dir), 25000);
  EXPECT_TRUE(exec.restore_all().failed.empty());
  EXPECT_EQ(*fs.read_int(Resource::kCpuBurst, app_dir), 0);
  EXPECT_EQ(*fs.read_int(Resource::kCpuBurst, pod_dir), 0);
}

// The CFS quota burst on the kernel's own throttling counters: a busy LS container limited
// to 100m is throttled every period (a small limit, so that it still is on a busy machine,
// where the loop gets far less than a core); with the share pool idle its quota (and its pod's,
// first on v1, where a child may not exceed its parent) grows pass by pass to
// cfsQuotaBurstPercent of the limit, and restore_all() puts kubelet's back.
TEST(QosReal, CfsQuotaBurstRaisesAThrottledLsContainerAndIsRestored) {
  auto reason = testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  testing::ScratchCgroups scratch;
  cgroup::KubeletLayout layout(cgroup::CgroupDriver::kCgroupfs);
  FakePod web{.name = "web",
              .uid = "ls3",
              .kube_qos = "Burstable",
              .containers = Json::array({container("app", {{"cpu", "100m"}}, {{"cpu", "100m"}})})};
  auto snap = make_snapshot(FakeNode{.node_cpu_usage = "100m"}, {web});
  const std::string pod_dir = agent::qos::pod_cgroup(layout, snap.pods[0]);
  const std::string app_dir = agent::qos::container_cgroups(layout, snap.pods[0]).at(0).second;
  scratch.mkdir(app_dir);
  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  cgroup::WriteExecutor kubelet(fs);
  ASSERT_TRUE(kubelet
                  .apply({{Resource::kCpuQuota, pod_dir, "10000", "kubelet"},
                          {Resource::kCpuQuota, app_dir, "10000", "kubelet"}})
                  .failed.empty());
  scratch.spawn_busy(app_dir);

  agent::edge::FsQosReader reader(fs, nullptr);
  agent::qos::QosInputs in;
  in.snapshot = &snap;
  in.layout = layout;
  in.reader = &reader;
  in.cpu_burst.policy = agent::config::CpuBurstPolicy::kCfsQuotaBurstOnly;
  in.cpu_burst.cfs_quota_burst_percent = 200;
  agent::qos::QosEngine engine;
  cgroup::WriteExecutor exec(fs);
  std::vector<int64_t> seen;
  // One pass per throttled period seen, as the agent's passes would find them.
  int64_t throttled = 0;
  for (int pass = 0; pass < 8 && (seen.empty() || seen.back() < 20000); ++pass) {
    if (pass > 0) {
      ASSERT_TRUE(testing::eventually(
          [&] { return fs.read_cpu_throttle(app_dir)->nr_throttled > throttled; }, 5s))
          << "a busy loop under a quota of " << seen.back() << " is throttled";
    }
    in.now_s = pass;
    auto report = exec.apply(engine.run(in).writes);
    ASSERT_TRUE(report.failed.empty()) << report.failed[0].second.message;
    // Read after the pass: the next one sees a count above what this one recorded.
    throttled = fs.read_cpu_throttle(app_dir)->nr_throttled;
    seen.push_back(*fs.read_int(Resource::kCpuQuota, app_dir));
    EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, pod_dir), seen.back()) << "pass " << pass;
  }
  // 10000 at first sight, then +20% a pass: 12000, 14400, 17280, then the 200% ceiling.
  EXPECT_EQ(seen, (std::vector<int64_t>{10000, 12000, 14400, 17280, 20000}));
  EXPECT_TRUE(exec.restore_all().failed.empty());
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, app_dir), 10000);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, pod_dir), 10000);
}

// Memory QoS knobs beyond protection land where the kernel has their files: v2's
// memory.oom.group (in the VM); none of them on this v1 kernel, where nothing is attempted.
TEST(QosReal, MemoryQosKnobsLandWhereTheKernelHasThemAndAreRestored) {
  auto reason = testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  testing::ScratchCgroups scratch;
  cgroup::KubeletLayout layout(cgroup::CgroupDriver::kCgroupfs);
  FakePod web{
      .name = "web",
      .uid = "ls2",
      .kube_qos = "Burstable",
      .containers = Json::array({container("app", {{"memory", "64Mi"}}, {{"memory", "128Mi"}})})};
  auto snap = make_snapshot(FakeNode{}, {web});
  const std::string app_dir = agent::qos::container_cgroups(layout, snap.pods[0]).at(0).second;
  scratch.mkdir(app_dir);
  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  const bool has_oom_group = fs.has(Resource::kMemoryOomGroup, app_dir);
  if (scratch.version() == cgroup::CgroupVersion::kV2) {
    ASSERT_TRUE(has_oom_group);
  }

  agent::edge::FsQosReader reader(fs, nullptr);
  agent::qos::QosInputs in;
  in.snapshot = &snap;
  in.layout = layout;
  in.reader = &reader;
  in.qos.ls.memory.enable = true;
  in.qos.ls.memory.oom_kill_group = 1;
  agent::qos::QosEngine engine;
  const auto writes = engine.run(in).writes;
  for (const auto& w : writes) {
    EXPECT_TRUE(fs.has(w.resource, w.cgroup))
        << "a write where the kernel has no file: " << cgroup::to_string(w.resource);
  }
  cgroup::WriteExecutor exec(fs);
  auto report = exec.apply(writes);
  ASSERT_TRUE(report.failed.empty()) << report.failed[0].second.message;
  if (has_oom_group) {
    EXPECT_EQ(*fs.read_int(Resource::kMemoryOomGroup, app_dir), 1);
    EXPECT_TRUE(exec.restore_all().failed.empty());
    EXPECT_EQ(*fs.read_int(Resource::kMemoryOomGroup, app_dir), 0);
  }
}

}  // namespace
}  // namespace gleaner
