// Jobs described by roles (PyTorchJob, TFJob): leader first, GPUs, per-role selectors,
// the clusters a placement allows, GPU quotas; and the back-off from a cluster a job was
// reclaimed from.
#include <gtest/gtest.h>

#include "common/quantity.h"
#include "scheduler/core/scheduler.h"

namespace gleaner::scheduler {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace roles_test {
namespace {

using gleaner::kGi;
Resources cores(int64_t n, int64_t gpus = 0) {
  return Resources{n * 1000, n * kGi, gpus};
}

struct Fixture {
  explicit Fixture(std::vector<QueueSpec> queues = {})
      : s(SchedulerPolicy{}, *QuotaTree::build(queues), ClusterState()) {}
  NodeId node(const std::string& name, const std::string& cluster, Resources batch,
              Labels labels = {}) {
    return *s.upsert_node(NodeInfo{name, cluster, std::move(labels), batch}, 0);
  }
  Scheduler s;
};

JobSpec pytorch(const std::string& name, int workers, int64_t gpus_each) {
  JobSpec spec;
  spec.name = name;
  spec.kind = "PyTorchJob";
  spec.roles = {RoleSpec{"master", cores(2, gpus_each), 1, {}, std::nullopt},
                RoleSpec{"worker", cores(4, gpus_each), workers, {}, std::nullopt}};
  return spec;
}

// Clusters a and b of 8 cores each, and a 6-core job that may go to b only (b is then
// busy); returns that job.
JobId a_and_busy_b(Scheduler& s) {
  (void)*s.upsert_node(NodeInfo{"a-1", "a", {}, cores(8)}, 0);
  (void)*s.upsert_node(NodeInfo{"b-1", "b", {}, cores(8)}, 0);
  JobSpec filler = pytorch("filler", 1, 0);
  filler.allowed_clusters = std::vector<std::string>{"b"};
  return *s.submit(filler);
}

std::vector<std::string> nodes_of(const Scheduler& s, const Job& j) {
  std::vector<std::string> out;
  for (const PodState& p : j.pods)
    out.push_back(s.clusters().node(p.node).name);
  return out;
}

TEST(SchedulerRoles, AGpuJobLandsOnlyWhereGpusAreFree) {
  Fixture f;
  // cpu-only is the best fit by cpu and memory (the least left over); gpu has just enough
  // GPUs for the master and 3 workers.
  f.node("cpu-1", "cpu-only", cores(16));
  f.node("gpu-1", "gpu", cores(16, 2));
  f.node("gpu-2", "gpu", cores(16, 2));
  JobId id = *f.s.submit(pytorch("train", 3, 1));
  auto ds = f.s.schedule(0);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].kind, DecisionKind::kAdmit);
  const Job& j = f.s.job(id);
  EXPECT_EQ(f.s.clusters().cluster_name(*j.cluster), "gpu");
  ASSERT_EQ(j.pods.size(), 4u);
  EXPECT_EQ(j.role_of(0).name, "master");
  EXPECT_EQ(j.role_of(3).name, "worker");
  EXPECT_EQ(j.total, (cores(2, 1) + cores(4, 1) * 3));
  // Every GPU taken, none twice.
  EXPECT_EQ(f.s.clusters().node(*f.s.clusters().find_node("gpu-1")).free().gpus, 0);
  EXPECT_EQ(f.s.clusters().node(*f.s.clusters().find_node("gpu-2")).free().gpus, 0);

  // A second one finds no GPU left and waits (it fits the empty cluster), not unschedulable.
  JobId second = *f.s.submit(pytorch("train-2", 3, 1));
  EXPECT_TRUE(f.s.schedule(1).empty());
  EXPECT_EQ(f.s.job(second).phase, JobPhase::kPending);
  EXPECT_EQ(f.s.job(second).reason, "waiting for batch capacity");

  // One asking for more GPUs than any cluster has is unschedulable, its roles named.
  JobId huge = *f.s.submit(pytorch("huge", 7, 1));
  auto none = f.s.schedule(2);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].kind, DecisionKind::kUnschedulable);
  EXPECT_NE(f.s.job(huge).reason.find("1 master, 7 worker"), std::string::npos)
      << f.s.job(huge).reason;
}

TEST(SchedulerRoles, EachRoleHonoursItsOwnSelector) {
  Fixture f;
  f.node("plain", "c", cores(32));
  f.node("fast", "c", cores(32), {{"disk", "nvme"}});
  JobSpec spec = pytorch("tf", 2, 0);
  spec.kind = "TFJob";
  NodeSelector nvme;
  nvme.labels = {{"disk", "nvme"}};
  spec.roles[1].selector = nvme;  // workers on nvme; the master anywhere
  JobId id = *f.s.submit(spec);
  ASSERT_EQ(f.s.schedule(0).size(), 1u);
  auto nodes = nodes_of(f.s, f.s.job(id));
  // The master (leader) goes to the emptiest node, the workers only to "fast".
  EXPECT_EQ(nodes, (std::vector<std::string>{"fast", "fast", "fast"}));

  // Once "fast" is full, a second job waits although "plain" has room.
  ASSERT_TRUE(f.s.report_node(*f.s.clusters().find_node("fast"), cores(12), 1).ok());
  spec.name = "tf-2";
  JobId other = *f.s.submit(spec);
  f.s.schedule(2);
  EXPECT_EQ(f.s.job(other).phase, JobPhase::kPending);
}

TEST(SchedulerRoles, ARoleSelectorThatAllowsAnyNodeIsNotTheJobsSelector) {
  Fixture f;
  f.node("x", "c", cores(2), {{"pool", "x"}});
  f.node("plain", "c", cores(32));
  NodeSelector pool_x;
  pool_x.labels = {{"pool", "x"}};
  // Both: the master in pool x. `inherits` runs its workers there too (they do not fit);
  // `anywhere` gives its workers a selector of their own that takes any node.
  JobSpec inherits = pytorch("inherits", 2, 0);
  inherits.node_selector = pool_x;
  JobSpec anywhere = inherits;
  anywhere.name = "anywhere";
  anywhere.roles[1].selector = NodeSelector{};
  JobId a = *f.s.submit(inherits);
  JobId b = *f.s.submit(anywhere);
  f.s.schedule(0);
  EXPECT_EQ(f.s.job(a).phase, JobPhase::kPending);
  EXPECT_EQ(f.s.job(b).phase, JobPhase::kAdmitted) << "not the same shape as `inherits`";
}

TEST(SchedulerRoles, PlacementAllowsOnlyTheNamedClusters) {
  Fixture f;
  f.node("a-1", "a", cores(32));
  f.node("b-1", "b", cores(8));
  JobSpec spec = pytorch("pinned", 1, 0);
  spec.allowed_clusters = std::vector<std::string>{"b"};
  JobId id = *f.s.submit(spec);
  f.s.schedule(0);
  // "a" has more room (best fit would not pick it anyway here), "b" is the only one allowed.
  ASSERT_TRUE(f.s.job(id).cluster.has_value());
  EXPECT_EQ(f.s.clusters().cluster_name(*f.s.job(id).cluster), "b");

  spec.name = "too-big-for-b";
  spec.roles[1].replicas = 3;
  JobId big = *f.s.submit(spec);
  f.s.schedule(1);
  EXPECT_TRUE(f.s.job(big).unschedulable) << "fits a, which it may not use";
  EXPECT_NE(f.s.job(big).reason.find("larger than any cluster it may go to"), std::string::npos);

  spec.name = "nowhere";
  spec.allowed_clusters = std::vector<std::string>{"z"};
  JobId nowhere = *f.s.submit(spec);
  f.s.schedule(2);
  EXPECT_EQ(f.s.job(nowhere).reason, "its placement allows none of the known clusters");
}

TEST(SchedulerRoles, AJobAskingForGpusDoesNotHoldBackTheSameShapeWithout) {
  Fixture f;
  const NodeId n = f.node("a-1", "a", cores(8));
  f.s.set_regular_outside(n, Resources{8000, 8 * kGi, 0});  // no GPU on the node
  JobSpec gpu;
  gpu.name = "gpu";
  gpu.driver = cores(1);
  gpu.driver_regular = Resources{0, 0, 1};
  gpu.submit_time = 0;
  JobSpec plain = gpu;
  plain.name = "plain";
  plain.driver_regular = {};
  plain.submit_time = 1;
  const JobId g = *f.s.submit(gpu);
  const JobId p = *f.s.submit(plain);
  f.s.schedule(2);
  EXPECT_EQ(f.s.job(g).phase, JobPhase::kPending);
  EXPECT_EQ(f.s.job(p).phase, JobPhase::kAdmitted) << "a different shape: its GPUs differ";
}

// A Node whose allocatable is not yet seen (the informer lags its watch) has no GPUs:
// kubelet would refuse a GPU pod there. A job asking for GPUs waits for the Node to state
// them; one asking only regular cpu/memory is not held back.
TEST(SchedulerRoles, AGpuJobWaitsForTheNodeToStateItsGpus) {
  Fixture f;
  const NodeId a = f.node("a-1", "a", cores(16));
  const NodeId b = f.node("b-1", "b", cores(8));
  f.s.set_regular_outside(a, Resources{16000, 16 * kGi, 0});  // a states no GPU; b nothing yet
  JobSpec gpu;
  gpu.name = "gpu";
  gpu.driver = cores(1);
  gpu.driver_regular = Resources{0, 0, 1};
  JobSpec kept = gpu;
  kept.name = "kept-cpu";
  kept.driver_regular = Resources{500, kGi, 0};
  kept.allowed_clusters = std::vector<std::string>{"b"};
  const JobId g = *f.s.submit(gpu);
  const JobId k = *f.s.submit(kept);
  f.s.schedule(0);
  EXPECT_EQ(f.s.job(g).phase, JobPhase::kPending) << "neither node is known to have a GPU";
  EXPECT_EQ(f.s.job(k).phase, JobPhase::kAdmitted) << "cpu/memory of an unknown Node: no limit";
  f.s.set_regular_outside(b, Resources{8000, 8 * kGi, 2}, Resources{8000, 8 * kGi, 2});
  f.s.schedule(1);
  ASSERT_EQ(f.s.job(g).phase, JobPhase::kAdmitted);
  EXPECT_EQ(f.s.clusters().cluster_name(*f.s.job(g).cluster), "b");
}

TEST(SchedulerRoles, AWaitingJobGoesByTheClustersAllowedNow) {
  Fixture f;
  f.node("a-1", "a", cores(32));
  JobSpec spec = pytorch("pinned", 1, 0);
  spec.allowed_clusters = std::vector<std::string>{"z"};  // a label the member lacks yet
  JobId id = *f.s.submit(spec);
  f.s.schedule(0);
  ASSERT_TRUE(f.s.job(id).unschedulable);
  // The member's labels (or the policy) changed: a is allowed now.
  ASSERT_TRUE(f.s.set_allowed_clusters(id, std::vector<std::string>{"a"}).ok());
  EXPECT_FALSE(f.s.job(id).unschedulable);
  f.s.schedule(1);
  ASSERT_EQ(f.s.job(id).phase, JobPhase::kAdmitted);
  EXPECT_EQ(f.s.clusters().cluster_name(*f.s.job(id).cluster), "a");
  EXPECT_FALSE(f.s.set_allowed_clusters(99, std::nullopt).ok());
}

TEST(SchedulerRoles, AQueueMaxOnGpusHoldsGpuJobsOnly) {
  QueueSpec team{"team", "root", std::nullopt, Resources{1000 * 1000, 1000 * kGi, 2}, {}};
  Fixture f({team});
  f.node("g-1", "g", cores(64, 8));
  JobSpec gpu = pytorch("gpu", 3, 1);  // 4 GPUs > max 2
  gpu.queue = "team";
  JobId g = *f.s.submit(gpu);
  JobSpec cpu = pytorch("cpu", 3, 0);
  cpu.queue = "team";
  JobId c = *f.s.submit(cpu);
  f.s.schedule(0);
  EXPECT_TRUE(f.s.job(g).unschedulable);
  EXPECT_NE(f.s.job(g).reason.find("above the max of queue team"), std::string::npos);
  EXPECT_EQ(f.s.job(c).phase, JobPhase::kAdmitted);
}

TEST(SchedulerRoles, BadRolesAreRefusedByName) {
  Fixture f;
  JobSpec both = pytorch("both", 1, 0);
  both.driver = cores(1);
  EXPECT_NE(f.s.submit(both).error().message.find("both roles and driver/executor"),
            std::string::npos);
  JobSpec twice = pytorch("twice", 1, 0);
  twice.roles[1].name = "master";
  EXPECT_NE(f.s.submit(twice).error().message.find("role master: a role needs a name of its own"),
            std::string::npos);
  JobSpec empty = pytorch("empty", 0, 0);
  empty.roles[0].replicas = 0;
  EXPECT_NE(f.s.submit(empty).error().message.find("no role has replicas"), std::string::npos);
  JobSpec negative = pytorch("negative", 1, 0);
  negative.roles[1].batch.gpus = -1;
  EXPECT_NE(f.s.submit(negative).error().message.find("role worker: negative resource request"),
            std::string::npos);
}

TEST(SchedulerRoles, AReclaimedJobBacksOffFromItsClusterWhileAnotherMayTakeIt) {
  SchedulerPolicy policy;
  policy.driver_start_timeout_seconds = 100;
  policy.reclaim_backoff_seconds = 60;
  policy.reclaim_backoff_max_seconds = 100;
  Scheduler s(policy, *QuotaTree::build({}), ClusterState());
  JobId busy = a_and_busy_b(s);              // the best fit for j is then a
  JobId id = *s.submit(pytorch("j", 1, 0));  // 6 cores
  s.schedule(0);
  ASSERT_EQ(s.clusters().cluster_name(*s.job(id).cluster), "a");
  s.pod_running(busy, 0, 1);  // the filler's master runs: only j times out
  ASSERT_EQ(s.check_timeouts(100).size(), 1u) << "its master never ran";
  EXPECT_TRUE(s.schedule(100).empty()) << "a is avoided for 60 s, b is busy";
  EXPECT_NE(
      s.job(id).reason.find("cluster a, which it was reclaimed from, is avoided for another 60 s"),
      std::string::npos)
      << s.job(id).reason;
  EXPECT_EQ(s.next_deadline(), 160) << "the caller is woken when the back-off ends";
  (void)s.check_timeouts(160);
  ASSERT_EQ(s.schedule(160).size(), 1u);
  EXPECT_EQ(s.clusters().cluster_name(*s.job(id).cluster), "a");
  // Reclaimed again: twice the back-off, capped at 100 s.
  ASSERT_EQ(s.check_timeouts(260).size(), 1u);
  EXPECT_TRUE(s.schedule(260).empty());
  EXPECT_EQ(s.next_deadline(), 360);
  // Room in b ends the wait at once: the back-off keeps it from a, not from elsewhere.
  s.complete(busy, 270);
  ASSERT_EQ(s.schedule(270).size(), 1u);
  EXPECT_EQ(s.clusters().cluster_name(*s.job(id).cluster), "b");
}

TEST(SchedulerRoles, NoBackOffWhenNoOtherClusterCouldEverTakeIt) {
  SchedulerPolicy policy;
  policy.driver_start_timeout_seconds = 100;
  Scheduler s(policy, *QuotaTree::build({}), ClusterState());
  (void)*s.upsert_node(NodeInfo{"gpu-1", "gpu", {}, cores(8, 4)}, 0);
  (void)*s.upsert_node(NodeInfo{"cpu-1", "cpu", {}, cores(64)}, 0);
  JobId id = *s.submit(pytorch("train", 1, 1));  // GPUs: only "gpu" can ever hold it
  s.schedule(0);
  ASSERT_EQ(s.check_timeouts(100).size(), 1u);
  ASSERT_EQ(s.schedule(100).size(), 1u) << "waiting would only idle it";
  EXPECT_EQ(s.clusters().cluster_name(*s.job(id).cluster), "gpu");
}

TEST(SchedulerRoles, WithNowhereElseToGoAReclaimedJobReturnsAtOnce) {
  SchedulerPolicy policy;
  policy.driver_start_timeout_seconds = 100;
  Scheduler s(policy, *QuotaTree::build({}), ClusterState());
  (void)*s.upsert_node(NodeInfo{"a-1", "a", {}, cores(8)}, 0);
  JobId id = *s.submit(pytorch("j", 1, 0));
  s.schedule(0);
  ASSERT_EQ(s.check_timeouts(100).size(), 1u);
  ASSERT_EQ(s.schedule(100).size(), 1u) << "one cluster: backing off would only idle it";
  EXPECT_EQ(s.job(id).phase, JobPhase::kAdmitted);
}

TEST(SchedulerRoles, OneJobsBackOffDoesNotHoldBackAnotherOfTheSameShape) {
  SchedulerPolicy policy;
  policy.driver_start_timeout_seconds = 100;
  Scheduler s(policy, *QuotaTree::build({}), ClusterState());
  JobId busy = a_and_busy_b(s);
  JobId first = *s.submit(pytorch("first", 1, 0));  // 6 cores: into a
  s.schedule(0);
  s.pod_running(busy, 0, 1);
  ASSERT_EQ(s.check_timeouts(100).size(), 1u);
  // `first` backs off from a (b is busy); `second`, the same shape, has no reason to.
  JobId second = *s.submit(pytorch("second", 1, 0));
  auto ds = s.schedule(100);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].job, second) << "room in a is not withheld from it";
  EXPECT_EQ(s.job(first).phase, JobPhase::kPending);
}

TEST(SchedulerRoles, AFleetJobBacksOffEvenWithNowhereElseToGo) {
  SchedulerPolicy policy;
  policy.driver_start_timeout_seconds = 100;
  Scheduler s(policy, *QuotaTree::build({}), ClusterState());
  (void)*s.upsert_node(NodeInfo{"a-1", "a", {}, cores(8)}, 0);
  JobSpec spec = pytorch("j", 1, 0);
  spec.back_off_without_alternative = true;
  JobId id = *s.submit(spec);
  s.schedule(0);
  ASSERT_EQ(s.check_timeouts(100).size(), 1u);
  EXPECT_TRUE(s.schedule(100).empty()) << "its copy there is still being deleted";
  (void)s.check_timeouts(160);
  ASSERT_EQ(s.schedule(160).size(), 1u);
  EXPECT_EQ(s.job(id).phase, JobPhase::kAdmitted);
}

}  // namespace
}  // namespace roles_test
}  // namespace gleaner::scheduler
