#include "agent/qos/be_cgroups.h"

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "agent/edge/knob_reader.h"
#include "agent/qos/memory_qos.h"
#include "cgroup/executor.h"
#include "test/agent/qos/qos_test_util.h"

namespace gleaner::agent::qos {
namespace {
using namespace test;

FakePod batch_pod() {
  FakePod p{.name = "exec", .uid = "be-1", .qos_label = "BE"};
  p.containers = Json::array(
      {container("a", {{"kubernetes.io/batch-cpu", "1500"}, {"kubernetes.io/batch-memory", "1Gi"}},
                 {{"kubernetes.io/batch-cpu", "2000"}, {"kubernetes.io/batch-memory", "2Gi"}}),
       container("b", {{"kubernetes.io/batch-cpu", "500"}},
                 {{"kubernetes.io/batch-cpu", "1000"}, {"kubernetes.io/batch-memory", "1Gi"}})});
  return p;
}

TEST(BeCgroups, SharesFromBatchCpuClamped) {
  EXPECT_EQ(shares_from_milli(0), 2);
  EXPECT_EQ(shares_from_milli(1), 2);
  EXPECT_EQ(shares_from_milli(1000), 1024);
  EXPECT_EQ(shares_from_milli(2000000), 262144);
}

using Case = test::TreeCase;
// A scratch node tree for the suite's parameter (each test writes its pods into it first).
class BeTree : public ::testing::TestWithParam<Case> {
 protected:
  TempDir t;
  cgroup::KubeletLayout layout{GetParam().driver};
  cgroup::CgroupFs fs{t.path(), GetParam().version};
  TreeReader reader{fs, nullptr};
};

TEST_P(BeTree, PodAndContainerValuesFromBatchResources) {
  auto pods = std::vector<FakePod>{batch_pod()};
  make_node_tree(t, GetParam().version, layout, pods);
  auto snap = make_snapshot({}, pods);
  cgroup::WriteExecutor exec(fs);
  exec.apply(plan_be_cgroups(snap, layout, false, false, reader).writes);
  const std::string pod = layout.pod_dir(KubeQos::kBestEffort, "be-1");
  const std::string a = *layout.container_dir(KubeQos::kBestEffort, "be-1", container_id("a"));
  const std::string b = *layout.container_dir(KubeQos::kBestEffort, "be-1", container_id("b"));
  EXPECT_EQ(*fs.read_int(Resource::kCpuShares, pod),
            GetParam().version == CgroupVersion::kV2
                ? cgroup::weight_to_shares(cgroup::shares_to_weight(2048))
                : 2048);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, pod), 300000);
  EXPECT_EQ(*fs.read_int(Resource::kMemoryLimit, pod), 3LL << 30);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, a), 200000);
  EXPECT_EQ(*fs.read_int(Resource::kMemoryLimit, a), 2LL << 30);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, b), 100000);
  if (GetParam().version == CgroupVersion::kV2) {
    EXPECT_EQ(t.read(b + "/cpu.weight"), std::to_string(cgroup::shares_to_weight(512)));
  }
  // Restart adoption.
  EXPECT_TRUE(exec.plan(plan_be_cgroups(snap, layout, false, false, reader).writes).empty());
  // cfsQuota suppression active: the pod-level quota is lifted (the QoS level governs).
  exec.apply(plan_be_cgroups(snap, layout, true, false, reader).writes);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, pod), cgroup::kUnlimited);
  // An idle pod (cpu.idle 1) gets no pod-level weight, which the kernel would refuse;
  // its containers still do.
  for (const auto& w : plan_be_cgroups(snap, layout, false, true, reader).writes) {
    EXPECT_FALSE(w.resource == Resource::kCpuShares && w.cgroup == pod) << w.value;
  }
  auto idle_plan = plan_be_cgroups(snap, layout, false, true, reader).writes;
  EXPECT_TRUE(std::any_of(idle_plan.begin(), idle_plan.end(), [&](const cgroup::CgroupWrite& w) {
    return w.resource == Resource::kCpuShares && w.cgroup == a;
  }));
}

// kubelet lists a pod, makes its cgroup and only then writes the cgroup's values; until a
// container of the pod started, the values read there may be the kernel's defaults.
TEST_P(BeTree, APodIsLeftToKubeletUntilAContainerOfItStarted) {
  auto pods = std::vector<FakePod>{batch_pod()};
  make_node_tree(t, GetParam().version, layout, pods);
  auto snap = make_snapshot({}, pods);
  for (auto& pod : snap.pods)
    pod.pod.container_statuses.clear();
  EXPECT_TRUE(plan_be_cgroups(snap, layout, false, false, reader).writes.empty());
  snap = make_snapshot({}, pods);
  snap.pods[0].pod.container_statuses[1].container_id.clear();  // one of two started
  EXPECT_FALSE(plan_be_cgroups(snap, layout, false, false, reader).writes.empty());
}

TEST_P(BeTree, UnlabelledBestEffortPodsAreLeftToKubelet) {
  FakePod p = batch_pod();
  p.qos_label = "";
  make_node_tree(t, GetParam().version, layout, {p});
  EXPECT_TRUE(plan_be_cgroups(make_snapshot({}, {p}), layout, false, false, reader).writes.empty());
}

TEST_P(BeTree, CpuIdleOnlyOnBePodDirsWhereTheKernelHasIt) {
  auto pods = std::vector<FakePod>{batch_pod()};
  make_node_tree(t, GetParam().version, layout, pods);
  auto snap = make_snapshot({}, pods);
  config::ResourceQoSStrategy qos;
  qos.be.cpu.enable = true;
  // No cpu.idle file anywhere (kernel < 5.15): nothing.
  EXPECT_TRUE(plan_cpu_idle(snap, layout, qos, reader).writes.empty());
  const std::string pod = layout.pod_dir(KubeQos::kBestEffort, "be-1");
  // A kernel that has it, in every cgroup but the root as kernels do (another kernel, so
  // another reader: what a kernel offers is probed once and holds until it reboots).
  const std::string cpu_root =
      GetParam().version == CgroupVersion::kV2 ? t.path() : t.path() + "/cpu";
  for (const auto& e : std::filesystem::recursive_directory_iterator(cpu_root)) {
    if (e.is_directory()) {
      t.write(std::filesystem::relative(e.path(), t.path()).string() + "/cpu.idle", "0\n");
    }
  }
  cgroup::CgroupFs newer_fs{t.path(), GetParam().version};
  TreeReader newer{newer_fs, nullptr};
  auto writes = plan_cpu_idle(snap, layout, qos, newer).writes;
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].cgroup, pod);  // never the kubelet-owned QoS dir
  EXPECT_EQ(writes[0].value, "1");
  cgroup::WriteExecutor exec(newer_fs);
  exec.apply(writes);
  // Switched off: the pod leaves idle (kubelet never sets it, so 0 is kubelet's value).
  qos.be.cpu.enable = false;
  auto off = exec.plan(plan_cpu_idle(snap, layout, qos, newer).writes);
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0].content, "0");
}

TEST_P(BeTree, MemoryQosAtContainerPodAndQosLevel) {
  FakePod ls{.name = "web", .uid = "ls-1", .kube_qos = "Burstable"};
  ls.containers = Json::array({container("app", {{"memory", "1Gi"}}, {{"memory", "3Gi"}})});
  make_node_tree(t, GetParam().version, layout, {ls});
  auto snap = make_snapshot({}, {ls});
  config::ResourceQoSStrategy qos;
  qos.ls.memory.enable = true;
  qos.ls.memory.min_limit_percent = 50;
  qos.ls.memory.low_limit_percent = 100;
  qos.ls.memory.throttling_percent = 50;
  cgroup::WriteExecutor exec(fs);
  exec.apply(plan_memory_qos(snap, layout, qos, reader).writes);
  const std::string pod = layout.pod_dir(KubeQos::kBurstable, "ls-1");
  const std::string c = *layout.container_dir(KubeQos::kBurstable, "ls-1", container_id("app"));
  EXPECT_EQ(*fs.read_int(Resource::kMemoryMin, c), 512LL << 20);
  EXPECT_EQ(*fs.read_int(Resource::kMemoryLow, c), 1LL << 30);
  EXPECT_EQ(*fs.read_int(Resource::kMemoryHigh, c), 2LL << 30);  // 1Gi + (3Gi-1Gi)*50%
  EXPECT_EQ(*fs.read_int(Resource::kMemoryMin, pod), 512LL << 20);
  EXPECT_EQ(*fs.read_int(Resource::kMemoryMin, layout.qos_dir(KubeQos::kBurstable)), 512LL << 20);
  EXPECT_EQ(*fs.read_int(Resource::kMemoryLow, layout.kubepods_dir()), 1LL << 30);
  EXPECT_TRUE(exec.plan(plan_memory_qos(snap, layout, qos, reader).writes).empty());
}

TEST_P(BeTree, MemoryQosSkippedSilentlyWhereFilesAreAbsent) {
  FakePod ls{.name = "web", .uid = "ls-1", .kube_qos = "Burstable"};
  ls.containers = Json::array({container("app", {{"memory", "1Gi"}})});
  make_node_tree(t, GetParam().version, layout, {ls}, "0-7", /*memory_qos_files=*/false);
  config::ResourceQoSStrategy qos;
  qos.ls.memory.enable = true;
  qos.ls.memory.min_limit_percent = 100;
  Plan plan = plan_memory_qos(make_snapshot({}, {ls}), layout, qos, reader);
  EXPECT_TRUE(plan.writes.empty());
  EXPECT_TRUE(plan.notes.empty());
}

INSTANTIATE_TEST_SUITE_P(Trees, BeTree, test::every_kubelet_tree(), test::tree_case_name);

}  // namespace
}  // namespace gleaner::agent::qos
