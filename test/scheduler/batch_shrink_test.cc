// A node report that shrinks batch capacity below what is placed there: bound pods stay
// (the node is over-committed and takes nothing new), reserved room not yet bound goes
// back, and a pod the agent evicts is replaced where there is room.
#include <gtest/gtest.h>

#include "common/quantity.h"
#include "scheduler/core/scheduler.h"

namespace gleaner::scheduler {
namespace {

using gleaner::kGi;
Resources cores(int64_t n) {
  return Resources{n * 1000, n * kGi};
}

struct Shrink {
  explicit Shrink(std::vector<std::pair<std::string, int64_t>> nodes)
      : s(SchedulerPolicy{}, *QuotaTree::build({}), ClusterState()) {
    for (auto& [name, n] : nodes)
      (void)*s.upsert_node(NodeInfo{name, "c", {}, cores(n)}, 0);
  }
  JobId submit(const std::string& name, int64_t at, int executors, int32_t priority = 0) {
    return *s.submit(JobSpec{name, "", priority, at, cores(1), cores(1), executors, {}});
  }
  // Admits everything pending at `at`, binds and runs every pod.
  void run_all(int64_t at) {
    for (const Decision& d : s.schedule(at)) {
      if (d.kind != DecisionKind::kAdmit) continue;
      const Job& j = s.job(d.job);
      ASSERT_TRUE(s.pod_running(d.job, 0, at) || j.pods.size() > 1);
      for (size_t i = 1; i < j.pods.size(); ++i) {
        ASSERT_TRUE(s.bind_executor(d.job, static_cast<int>(i), at).ok());
        s.pod_running(d.job, static_cast<int>(i), at);
      }
    }
  }
  NodeId node(const std::string& name) const { return *s.clusters().find_node(name); }
  Scheduler s;
};

TEST(BatchShrink, RunningJobSurvivesAShrinkBelowItsUse) {
  Shrink f({{"n1", 4}});
  JobId id = f.submit("spark", 0, 3);  // driver and three executors: 4 cores, all on n1
  f.run_all(0);
  ASSERT_EQ(f.s.job(id).phase, JobPhase::kRunning);
  auto ds = f.s.report_node(f.node("n1"), cores(1), 30);  // an LS surge leaves one core
  ASSERT_TRUE(ds.ok());
  EXPECT_TRUE(ds->empty());
  EXPECT_EQ(f.s.job(id).phase, JobPhase::kRunning);
  EXPECT_EQ(f.s.job(id).reschedules, 0);
  const Node& n = f.s.clusters().node(f.node("n1"));
  EXPECT_EQ(n.used, cores(4));  // over-committed: the running pods keep their room
  EXPECT_EQ(n.capacity(), cores(1));
  // The surge passes: the capacity grows back and nothing happened to the job.
  ASSERT_TRUE(f.s.report_node(f.node("n1"), cores(4), 60).ok());
  EXPECT_EQ(f.s.job(id).phase, JobPhase::kRunning);
}

TEST(BatchShrink, OverCommittedNodeTakesNothingNew) {
  Shrink f({{"n1", 4}});
  JobId spark = f.submit("spark", 0, 1);  // 2 of n1's 4 cores
  f.run_all(0);
  const NodeId n1 = f.node("n1");
  ASSERT_TRUE(f.s.report_node(n1, cores(1), 10).ok());  // below the 2 cores in use
  JobId next = f.submit("next", 11, 0);                 // a 1-core job
  f.run_all(12);
  EXPECT_EQ(f.s.job(next).phase, JobPhase::kPending);
  EXPECT_EQ(f.s.clusters().node(n1).used, cores(2));
  EXPECT_EQ(f.s.job(spark).phase, JobPhase::kRunning);
  // A node with room takes it.
  (void)*f.s.upsert_node(NodeInfo{"n2", "c", {}, cores(2)}, 13);
  f.run_all(14);
  ASSERT_EQ(f.s.job(next).phase, JobPhase::kRunning);
  EXPECT_EQ(f.s.job(next).pods[0].node, f.node("n2"));
  EXPECT_EQ(f.s.clusters().node(n1).used, cores(2));
}

TEST(BatchShrink, UnboundReservationsGoBackLowestPriorityFirst) {
  Shrink f({{"n1", 4}, {"n2", 4}});
  JobId high = f.submit("high", 0, 1, 100);
  JobId low = f.submit("low", 0, 1, 10);
  f.s.schedule(0);
  const NodeId n1 = f.node("n1");
  // high: driver and executor on n1; low: driver spread to n2, executor reserved on n1. No
  // executor is bound yet. Shrinking n1 to 2 cores releases low's reservation only.
  ASSERT_EQ(f.s.clusters().node(n1).used, cores(3));
  auto ds = f.s.report_node(n1, cores(2), 30);
  ASSERT_TRUE(ds.ok());
  ASSERT_EQ(ds->size(), 1u);
  EXPECT_EQ((*ds)[0].kind, DecisionKind::kReservationExpired);
  EXPECT_EQ((*ds)[0].job, low);
  EXPECT_EQ(f.s.job(low).phase, JobPhase::kAdmitted);  // the job itself goes on
  EXPECT_EQ(f.s.job(low).reschedules, 0);
  EXPECT_EQ(f.s.clusters().node(n1).used, cores(2));
  EXPECT_EQ(f.s.job(high).pods[1].node, n1);
  EXPECT_TRUE(f.s.job(high).pods[1].holds_room);
  // low's executor, when it comes, binds where the cluster has room: n2.
  auto bound = f.s.bind_executor(low, 1, 31);
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ(*bound, f.node("n2"));
}

TEST(BatchShrink, EvictedExecutorIsReplacedWhereThereIsRoom) {
  Shrink f({{"n1", 4}, {"n2", 4}});
  JobId id = f.submit("spark", 0, 2);
  f.run_all(0);
  const NodeId n1 = f.node("n1");
  const Job& j = f.s.job(id);
  // The executors are packed on one node; shrink that one.
  const NodeId packed = j.pods[1].node;
  const NodeId other = packed == n1 ? f.node("n2") : n1;
  ASSERT_EQ(j.pods[2].node, packed);
  const Resources before = f.s.clusters().node(packed).used;
  ASSERT_TRUE(f.s.report_node(packed, before - cores(1), 10).ok());
  // The agent evicts one executor under memory pressure; Spark asks for a replacement.
  ASSERT_TRUE(f.s.executor_gone(id, 2, 20).ok());
  EXPECT_EQ(f.s.clusters().node(packed).used, before - cores(1));
  auto replacement = f.s.bind_executor(id, 2, 21);
  ASSERT_TRUE(replacement.ok());
  EXPECT_EQ(*replacement, other);
  EXPECT_EQ(f.s.job(id).reschedules, 0);
}

TEST(BatchShrink, ExecutorGoneOnANodeThatFitsKeepsItsRoomThere) {
  Shrink f({{"n1", 4}, {"n2", 4}});
  JobId id = f.submit("spark", 0, 2);
  f.run_all(0);
  const NodeId packed = f.s.job(id).pods[2].node;
  ASSERT_TRUE(f.s.executor_gone(id, 2, 20).ok());
  auto replacement = f.s.bind_executor(id, 2, 21);
  ASSERT_TRUE(replacement.ok());
  EXPECT_EQ(*replacement, packed);
}

}  // namespace
}  // namespace gleaner::scheduler
