// Reclaiming borrowed quota preempts only jobs whose room the waiting job needs: a job that
// holds another resource than the one it lacks keeps running.
#include <gtest/gtest.h>

#include "common/quantity.h"
#include "scheduler/core/scheduler.h"

namespace gleaner::scheduler {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace reclaim_victims_test {
namespace {

using gleaner::kGi;
Resources cores(int64_t n, int64_t gpus = 0) {
  return Resources{n * 1000, n * kGi, gpus};
}

std::vector<std::string> preempted(const Scheduler& s, const std::vector<Decision>& ds) {
  std::vector<std::string> out;
  for (const Decision& d : ds)
    if (d.kind == DecisionKind::kPreempt) out.push_back(s.job(d.job).spec.name);
  return out;
}

JobSpec spark(const std::string& name, int64_t at, int32_t priority, const std::string& queue) {
  // A driver and three executors of one core each: four cores.
  return JobSpec{name, queue, priority, at, cores(1), cores(1), 3, {}};
}

TEST(ReclaimVictims, AJobHoldingOnlyGpusIsNotPreemptedToMakeCpuRoom) {
  Scheduler s(SchedulerPolicy{},
              *QuotaTree::build({QueueSpec{"a", "root", cores(8), std::nullopt, std::nullopt},
                                 QueueSpec{"b", "root", std::nullopt, std::nullopt, std::nullopt}}),
              ClusterState());
  (void)*s.upsert_node(NodeInfo{"n1", "c", {}, cores(8, 4)}, 0);
  // b borrows the whole node: a GPU-only training job (no cpu or memory) and two 4-core
  // Spark applications. The GPU job has the lowest priority: it is the first candidate.
  JobSpec gpu_only;
  gpu_only.name = "b-gpu";
  gpu_only.queue = "b";
  gpu_only.kind = "PyTorchJob";
  gpu_only.roles = {RoleSpec{"master", Resources{0, 0, 4}, 1, {}, std::nullopt}};
  ASSERT_TRUE(s.submit(gpu_only).ok());
  ASSERT_TRUE(s.submit(spark("b-cpu-1", 0, 5, "b")).ok());
  ASSERT_TRUE(s.submit(spark("b-cpu-2", 0, 10, "b")).ok());
  ASSERT_EQ(s.schedule(0).size(), 3u);

  // a's first job is within a's min: it reclaims four cores. Only a Spark job frees cpu.
  ASSERT_TRUE(s.submit(spark("a-1", 10, 0, "a")).ok());
  EXPECT_EQ(preempted(s, s.schedule(10)), std::vector<std::string>{"b-cpu-1"});
  EXPECT_EQ(s.job(*s.find_job("a-1")).phase, JobPhase::kAdmitted);
  const Job& gpu = s.job(*s.find_job("b-gpu"));
  EXPECT_EQ(gpu.phase, JobPhase::kAdmitted);
  EXPECT_EQ(gpu.preemptions, 0);
  // The spared job still holds its GPUs; b-cpu-1's room went to a-1.
  EXPECT_EQ(s.clusters().node(0).used, cores(8, 4));
  EXPECT_EQ(s.quotas().queue(*s.quotas().find("b")).used, cores(4, 4));
}

TEST(ReclaimVictims, AJobOnNodesTheWaitingJobCannotUseIsSpared) {
  Scheduler s(SchedulerPolicy{},
              *QuotaTree::build({QueueSpec{"a", "root", cores(8), std::nullopt, std::nullopt},
                                 QueueSpec{"b", "root", std::nullopt, std::nullopt, std::nullopt}}),
              ClusterState());
  (void)*s.upsert_node(NodeInfo{"n1", "c", {{"pool", "x"}}, cores(4)}, 0);
  (void)*s.upsert_node(NodeInfo{"n2", "c", {{"pool", "y"}}, cores(4)}, 0);
  JobSpec on_x = spark("b-x", 0, 0, "b");
  on_x.node_selector = NodeSelector{{{"pool", "x"}}, {}};
  JobSpec on_y = spark("b-y", 0, 5, "b");
  on_y.node_selector = NodeSelector{{{"pool", "y"}}, {}};
  ASSERT_TRUE(s.submit(on_x).ok());
  ASSERT_TRUE(s.submit(on_y).ok());
  ASSERT_EQ(s.schedule(0).size(), 2u);
  // a-1 may only use pool y: b-x (the lower priority, the first candidate) frees nothing
  // it can use.
  JobSpec a1 = spark("a-1", 10, 0, "a");
  a1.node_selector = NodeSelector{{{"pool", "y"}}, {}};
  ASSERT_TRUE(s.submit(a1).ok());
  EXPECT_EQ(preempted(s, s.schedule(10)), std::vector<std::string>{"b-y"});
  EXPECT_EQ(s.job(*s.find_job("b-x")).phase, JobPhase::kAdmitted);
  EXPECT_EQ(s.job(*s.find_job("a-1")).phase, JobPhase::kAdmitted);
}

}  // namespace
}  // namespace reclaim_victims_test
}  // namespace gleaner::scheduler
