#include "agent/qos/cpu_suppress.h"

#include <gtest/gtest.h>

#include "agent/edge/cpu_topology_reader.h"
#include "agent/edge/knob_reader.h"
#include "cgroup/executor.h"
#include "cgroup/hierarchy.h"
#include "test/agent/qos/qos_test_util.h"

namespace gleaner::agent::qos {
namespace {
using namespace test;

// 8 CPUs: LS pod uses 2 cores, system 0.5, nothing reserved by kubelet.
FakeNode node8() {
  FakeNode n;
  n.node_cpu_usage = "4";
  n.system_cpu = "500m";
  return n;
}
std::vector<FakePod> pods_ls_and_be() {
  FakePod ls{.name = "web", .uid = "ls-1", .kube_qos = "Burstable", .cpu_usage = "2"};
  ls.containers = Json::array({container("app", {{"cpu", "1"}})});
  FakePod be{.name = "spark", .uid = "be-1", .qos_label = "BE", .cpu_usage = "1500m"};
  be.containers = Json::array({container("exec")});
  return {ls, be};
}

config::ResourceThresholdStrategy strategy(config::CpuSuppressPolicy policy) {
  config::ResourceThresholdStrategy s;
  s.enable = true;
  s.cpu_suppress_policy = policy;
  return s;
}

TEST(SuppressTerms, FollowsTheFormulaAndTheMinPercentFloor) {
  auto snap = make_snapshot(node8(), pods_ls_and_be());
  auto ctx = node_facts(snap, cgroup::KubeletLayout(CgroupDriver::kCgroupfs), std::nullopt);
  auto s = strategy(config::CpuSuppressPolicy::kCfsQuota);
  // 8000*65% - 2000 (non-BE) - max(500, 0) = 2700
  auto t = suppress_terms(ctx, s, non_be_cpu_usage(snap), ctx.system_usage_milli);
  EXPECT_EQ(t.non_be_milli, 2000);
  EXPECT_EQ(t.suppress_milli, 2700);
  // Reserved by kubelet beyond system usage counts instead.
  FakeNode n = node8();
  n.allocatable_cpu = "7";
  auto ctx2 = node_facts(make_snapshot(n, pods_ls_and_be()),
                         cgroup::KubeletLayout(CgroupDriver::kCgroupfs), std::nullopt);
  EXPECT_EQ(suppress_terms(ctx2, s, 2000, 500).suppress_milli, 2200);
  // A busy node: floored at minPercent.
  s.cpu_suppress_min_percent = 10;
  EXPECT_EQ(suppress_terms(ctx, s, 7000, 500).suppress_milli, 800);
}

TEST(NextQuota, UnlimitedCurrentTakesTheTargetAtOnce) {
  // 8 cores, period 100 ms: target 2700 m -> 270000 us, no ramp from unlimited.
  EXPECT_EQ(next_quota(2700, 8000, 100000, cgroup::kUnlimited, false), 270000);
}

TEST(NextQuota, DeadBandSkipsChangesBelowOnePercentOfCapacity) {
  // 1% of capacity = 8000 us.
  EXPECT_EQ(next_quota(2750, 8000, 100000, 270000, false), std::nullopt);  // +5000
  EXPECT_EQ(next_quota(2630, 8000, 100000, 270000, false), std::nullopt);  // -7000
  EXPECT_EQ(next_quota(2620, 8000, 100000, 270000, false), 262000);        // -8000: not below
  EXPECT_EQ(next_quota(2600, 8000, 100000, 270000, false), 260000);        // -10000
}

TEST(NextQuota, IncreasesAreCappedAtTenPercentOfCapacityPerStep) {
  EXPECT_EQ(next_quota(6000, 8000, 100000, 100000, false), 180000);  // +80000 max
  EXPECT_EQ(next_quota(6000, 8000, 100000, 180000, false), 260000);
}

TEST(NextQuota, DecreasesAtOnce) {
  EXPECT_EQ(next_quota(500, 8000, 100000, 600000, false), 50000);
}

TEST(NextQuota, FloorOf2000IsWrittenEvenInsideTheDeadBand) {
  EXPECT_EQ(next_quota(0, 8000, 100000, 5000, false), 2000);
  EXPECT_EQ(next_quota(-3000, 8000, 100000, 2000, false), std::nullopt);
}

TEST(NextQuota, AnAllowanceOfEveryCpuLeavesBeWithNoQuotaAtAll) {
  // 8 cores: a quota of 800000 us cannot bind BE, it only keeps CFS bandwidth control on.
  EXPECT_EQ(next_quota(8000, 8000, 100000, cgroup::kUnlimited, false), std::nullopt);
  EXPECT_EQ(next_quota(9000, 8000, 100000, cgroup::kUnlimited, false), std::nullopt);
  // From a quota within one ramp step of the whole node: lifted.
  EXPECT_EQ(next_quota(8000, 8000, 100000, 720000, false), cgroup::kUnlimited);
  EXPECT_EQ(next_quota(8000, 8000, 100000, 800000, false), cgroup::kUnlimited);
  // From further down it still ramps, a step at a time; stale data never lifts.
  EXPECT_EQ(next_quota(8000, 8000, 100000, 100000, false), 180000);
  EXPECT_EQ(next_quota(8000, 8000, 100000, 790000, true), std::nullopt);
}

TEST(NextQuota, StaleDataNeverGrowsButStillShrinks) {
  EXPECT_EQ(next_quota(6000, 8000, 100000, 100000, true), std::nullopt);
  EXPECT_EQ(next_quota(500, 8000, 100000, 600000, true), 50000);
}

TEST(NextCpuCount, AtLeastTwoAndGrowthCapped) {
  EXPECT_EQ(next_cpu_count(300, 8, 16, false), 2);    // ceil(0.3) = 1 -> 2
  EXPECT_EQ(next_cpu_count(2100, 8, 16, false), 3);   // decrease at once
  EXPECT_EQ(next_cpu_count(16000, 4, 16, false), 6);  // +ceil(1.6) = 2 per step
  EXPECT_EQ(next_cpu_count(16000, 4, 16, true), 4);   // stale: hold
  EXPECT_EQ(next_cpu_count(900, 8, 16, true), 2);     // stale may still shrink
  EXPECT_EQ(next_cpu_count(99000, 16, 16, false), 16);
}

TEST(NextCpuCount, KeepsCpuSuppressMinCpus) {
  EXPECT_EQ(next_cpu_count(300, 2, 2, false, 1), 1);  // a 2-CPU node can take one from BE
  EXPECT_EQ(next_cpu_count(300, 2, 2, false), 2);     // not at the default minimum
  EXPECT_EQ(next_cpu_count(300, 8, 16, false, 4), 4);
  EXPECT_EQ(next_cpu_count(300, 8, 3, false, 4), 3);  // never more than BE may use
}

TEST(CpuTopology, OrderTakesWholeCoresAlternatingNumaNodes) {
  TempDir t;
  make_sysfs16(t);
  auto topo = edge::read_cpu_topology(t.path());
  ASSERT_TRUE(topo.ok()) << topo.error().message;
  ASSERT_EQ(topo->cpus.size(), 16u);
  EXPECT_EQ(topo->cpus[12].node, 1);
  auto order = be_cpu_order(*topo, {});
  std::vector<int> first6(order.begin(), order.begin() + 6);
  EXPECT_EQ(first6, (std::vector<int>{0, 8, 4, 12, 1, 9}));
  // Reserved CPUs never go to BE; a core with one reserved thread offers the other.
  auto without = be_cpu_order(*topo, {0, 4});
  EXPECT_EQ(without.size(), 14u);
  EXPECT_EQ(std::vector<int>(without.begin(), without.begin() + 3), (std::vector<int>{8, 12, 1}));
}

TEST(CpuTopology, MissingSysfsIsAnErrorNamingThePath) {
  TempDir t;
  auto topo = edge::read_cpu_topology(t.path());
  ASSERT_FALSE(topo.ok());
  EXPECT_NE(topo.error().message.find("sys/devices/system/cpu"), std::string::npos);
}

using Case = test::TreeCase;

class SuppressTree : public ::testing::TestWithParam<Case> {
 protected:
  cgroup::KubeletLayout layout() const { return cgroup::KubeletLayout(GetParam().driver); }
  std::string be_dir() const { return layout().qos_dir(cgroup::KubeQos::kBestEffort); }
};

TEST_P(SuppressTree, CfsQuotaWritesTheBesteffortQuotaAndAdoptsItOnRestart) {
  TempDir t;
  auto pods = pods_ls_and_be();
  make_node_tree(t, GetParam().version, layout(), pods);
  auto snap = make_snapshot(node8(), pods);
  cgroup::CgroupFs fs(t.path(), GetParam().version);
  TreeReader reader(fs, nullptr);
  auto ctx = node_facts(snap, layout(), std::nullopt);
  auto s = strategy(config::CpuSuppressPolicy::kCfsQuota);
  Plan plan =
      plan_cpu_suppress(ctx, s, non_be_cpu_usage(snap), ctx.system_usage_milli, reader, false);
  cgroup::WriteExecutor exec(fs);
  auto first = exec.plan(plan.writes);
  ASSERT_EQ(first.size(), 1u);  // cpusets are already the full set
  EXPECT_EQ(first[0].cgroup, be_dir());
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, be_dir()), cgroup::kUnlimited);
  exec.apply(plan.writes);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, be_dir()), 270000);
  // A restarted agent computes from what it finds: nothing to write.
  Plan again =
      plan_cpu_suppress(ctx, s, non_be_cpu_usage(snap), ctx.system_usage_milli, reader, false);
  EXPECT_TRUE(exec.plan(again.writes).empty());
}

TEST_P(SuppressTree, CfsQuotaRestoresFullBeCpusets) {
  TempDir t;
  auto pods = pods_ls_and_be();
  make_node_tree(t, GetParam().version, layout(), pods);
  cgroup::CgroupFs fs(t.path(), GetParam().version);
  cgroup::WriteExecutor setup(fs);
  const std::string pod = layout().pod_dir(cgroup::KubeQos::kBestEffort, "be-1");
  setup.apply(
      {{Resource::kCpusetCpus, pod, "0-1", "t"}, {Resource::kCpusetCpus, be_dir(), "0-1", "t"}});
  auto snap = make_snapshot(node8(), pods);
  TreeReader reader(fs, nullptr);
  auto ctx = node_facts(snap, layout(), std::nullopt);
  Plan plan = plan_cpu_suppress(ctx, strategy(config::CpuSuppressPolicy::kCfsQuota),
                                non_be_cpu_usage(snap), ctx.system_usage_milli, reader, false);
  cgroup::WriteExecutor exec(fs);
  auto writes = exec.plan(plan.writes);
  // Widening goes parent-first: the QoS dir before the pod, the pod before its container
  // (which the set-up narrowed with the pod, as v1 requires; v2 left it alone).
  std::vector<std::string> cpuset_dirs;
  for (const auto& w : writes) {
    if (w.resource == Resource::kCpusetCpus) cpuset_dirs.push_back(w.cgroup);
  }
  const bool v1 = GetParam().version != cgroup::CgroupVersion::kV2;
  ASSERT_EQ(cpuset_dirs.size(), v1 ? 3u : 2u);
  EXPECT_EQ(cpuset_dirs[0], be_dir());
  EXPECT_EQ(cpuset_dirs[1], pod);
  if (v1) {
    EXPECT_EQ(cgroup::parent_cgroup(cpuset_dirs[2]), pod);
  }
  // Stale: the full set would grow BE, so it is held.
  Plan stale =
      plan_cpu_suppress(ctx, strategy(config::CpuSuppressPolicy::kCfsQuota), 0, 0, reader, true);
  for (const auto& w : stale.writes)
    EXPECT_NE(w.resource, Resource::kCpusetCpus);
}

// pods_ls_and_be() as a cgroup tree, read through a FsQosReader, on the 8-CPU node of node8()
// (no sysfs topology) or on a 16-CPU, 2-NUMA-node machine described by make_sysfs16().
struct SuppressNodeTree {
  enum class Cpus { k8NoTopology, k16TwoNumaNodes };
  explicit SuppressNodeTree(const Case& c, Cpus cpus = Cpus::k8NoTopology,
                            Json annotations = Json::object())
      : pods(pods_ls_and_be()), fs(t.path(), c.version) {
    const bool sixteen = cpus == Cpus::k16TwoNumaNodes;
    make_node_tree(t, c.version, cgroup::KubeletLayout(c.driver), pods, sixteen ? "0-15" : "0-7");
    FakeNode n = node8();
    std::optional<CpuTopology> topology;
    if (sixteen) {
      make_sysfs16(sys);
      n.cpu = n.allocatable_cpu = "16";
      topology = *edge::read_cpu_topology(sys.path());
    }
    n.annotations = std::move(annotations);
    snap = make_snapshot(n, pods);
    ctx = node_facts(snap, cgroup::KubeletLayout(c.driver), topology);
  }
  TempDir t;
  TempDir sys;
  std::vector<FakePod> pods;
  cgroup::CgroupFs fs;
  TreeReader reader{fs, nullptr};
  snapshot::NodeSnapshot snap;
  NodeFacts ctx;
};

TEST_P(SuppressTree, CpusetPolicyPicksHyperthreadPairsAcrossNodesWithUnlimitedQuota) {
  SuppressNodeTree tree(GetParam(), SuppressNodeTree::Cpus::k16TwoNumaNodes);
  auto& [t, sys, pods, fs, reader, snap, ctx] = tree;
  cgroup::WriteExecutor setup(fs);
  setup.apply({{Resource::kCpuQuota, be_dir(), "200000", "t"}});
  auto s = strategy(config::CpuSuppressPolicy::kCpuset);
  // 16000*65% - 2000 - 500 = 7900 -> 8 CPUs: cores 0,4,1,5 (both threads each).
  Plan plan =
      plan_cpu_suppress(ctx, s, non_be_cpu_usage(snap), ctx.system_usage_milli, reader, false);
  cgroup::WriteExecutor exec(fs);
  exec.apply(plan.writes);
  EXPECT_EQ(*fs.read_logical(Resource::kCpusetCpus, be_dir()), "0-1,4-5,8-9,12-13");
  const std::string container =
      *layout().container_dir(cgroup::KubeQos::kBestEffort, "be-1", container_id("exec"));
  EXPECT_EQ(*fs.read_logical(Resource::kCpusetCpus, container), "0-1,4-5,8-9,12-13");
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, be_dir()), cgroup::kUnlimited);
  // Restart adoption: the same inputs find nothing to change.
  Plan again =
      plan_cpu_suppress(ctx, s, non_be_cpu_usage(snap), ctx.system_usage_milli, reader, false);
  EXPECT_TRUE(exec.plan(again.writes).empty());
  // LS load drops: BE may grow by ceil(10% of 16) = 2 CPUs per step only.
  Plan grow = plan_cpu_suppress(ctx, s, 0, 0, reader, false);
  exec.apply(grow.writes);
  EXPECT_EQ(fs.read_cpuset(be_dir())->size(), 10u);
  // Stale: no growth, and the quota stays as it is.
  Plan stale = plan_cpu_suppress(ctx, s, 0, 0, reader, true);
  EXPECT_TRUE(exec.plan(stale.writes).empty());
}

TEST_P(SuppressTree, CpusetPolicyKeepsCpuSuppressMinCpusForBe) {
  SuppressNodeTree tree(GetParam(), SuppressNodeTree::Cpus::k16TwoNumaNodes);
  auto& [t, sys, pods, fs, reader, snap, ctx] = tree;
  cgroup::WriteExecutor exec(fs);
  auto s = strategy(config::CpuSuppressPolicy::kCpuset);
  // LS uses the whole node: BE keeps the minimum, 2 CPUs by default, 1 when so configured.
  exec.apply(plan_cpu_suppress(ctx, s, 16000, 0, reader, false).writes);
  EXPECT_EQ(fs.read_cpuset(be_dir())->size(), 2u);
  s.cpu_suppress_min_cpus = 1;
  exec.apply(plan_cpu_suppress(ctx, s, 16000, 0, reader, false).writes);
  EXPECT_EQ(fs.read_cpuset(be_dir())->size(), 1u);
}

TEST_P(SuppressTree, CpusetPolicyExcludesReservedCpus) {
  SuppressNodeTree tree(GetParam(), SuppressNodeTree::Cpus::k16TwoNumaNodes,
                        {{"node.koordinator.sh/reservation", R"({"reservedCPUs":"0,8"})"}});
  auto& [t, sys, pods, fs, reader, snap, ctx] = tree;
  Plan plan = plan_cpu_suppress(ctx, strategy(config::CpuSuppressPolicy::kCpuset), 20000, 0, reader,
                                false);  // suppress floors -> 2 CPUs
  ASSERT_FALSE(plan.writes.empty());
  // Core 0 (cpus 0 and 8) is reserved: the first pair is core 1 of node 0.
  EXPECT_EQ(plan.writes[0].value, "1,9");
}

TEST_P(SuppressTree, DisabledRecoversKubeletValuesOnly) {
  SuppressNodeTree tree(GetParam());
  auto& [t, sys, pods, fs, reader, snap, ctx] = tree;
  config::ResourceThresholdStrategy off;
  cgroup::WriteExecutor exec(fs);
  EXPECT_TRUE(exec.plan(plan_cpu_suppress(ctx, off, 0, 0, reader, false).writes).empty());
  exec.apply({{Resource::kCpuQuota, be_dir(), "50000", "t"}});
  auto writes = exec.plan(plan_cpu_suppress(ctx, off, 0, 0, reader, false).writes);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].resource, Resource::kCpuQuota);
}

TEST_P(SuppressTree, OnInterferenceModeAppliesTheCeilingOnlyWhileArmed) {
  SuppressNodeTree tree(GetParam());
  auto& [t, sys, pods, fs, reader, snap, ctx] = tree;
  auto s = strategy(config::CpuSuppressPolicy::kCfsQuota);
  s.cpu_suppress_mode = config::CpuSuppressMode::kOnInterference;
  const int64_t non_be = non_be_cpu_usage(snap);
  cgroup::WriteExecutor exec(fs);
  // Disarmed: BE keeps kubelet's unlimited quota although usage is over the threshold line.
  Plan calm = plan_cpu_suppress(ctx, s, non_be, ctx.system_usage_milli, reader, false, false);
  EXPECT_TRUE(exec.plan(calm.writes).empty());
  EXPECT_FALSE(suppress_ceiling_applies(s, false));
  // Armed: the same figures as the `always` mode.
  exec.apply(plan_cpu_suppress(ctx, s, non_be, ctx.system_usage_milli, reader, false, true).writes);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, be_dir()), 270000);
  // Disarmed on stale data: hold, never lift.
  EXPECT_TRUE(exec.plan(plan_cpu_suppress(ctx, s, non_be, 0, reader, true, false).writes).empty());
  // Disarmed again on fresh data: the ceiling is lifted.
  exec.apply(
      plan_cpu_suppress(ctx, s, non_be, ctx.system_usage_milli, reader, false, false).writes);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, be_dir()), cgroup::kUnlimited);
  // The `always` mode ignores the arming.
  s.cpu_suppress_mode = config::CpuSuppressMode::kAlways;
  EXPECT_TRUE(suppress_ceiling_applies(s, false));
  exec.apply(
      plan_cpu_suppress(ctx, s, non_be, ctx.system_usage_milli, reader, false, false).writes);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, be_dir()), 270000);
}

INSTANTIATE_TEST_SUITE_P(Trees, SuppressTree, test::every_kubelet_tree(), test::tree_case_name);

}  // namespace
}  // namespace gleaner::agent::qos
