// No ping-pong (core/reclaim_memory.h): a job that lost a pod to an eviction on a node is
// not placed there again until the node has had that pod's room free, without a break, for
// the hold time; then it may go back.
#include <gtest/gtest.h>

#include "common/json_util.h"
#include "common/quantity.h"
#include "kube/objects.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/kube/pod_view.h"

namespace gleaner::scheduler::reclaim_hold_test {
namespace {

using gleaner::kGi;
Resources cores(int64_t n) {
  return Resources{n * 1000, n * kGi};
}

struct Hold {
  explicit Hold(const std::vector<std::pair<std::string, int64_t>>& nodes, int64_t hold = 300)
      : s(policy(hold), *QuotaTree::build({}), ClusterState()) {
    for (auto& [name, n] : nodes)
      (void)*s.upsert_node(NodeInfo{name, "c", {}, cores(n)}, 0);
  }
  static SchedulerPolicy policy(int64_t hold) {
    SchedulerPolicy p;
    p.reclaim_hold_seconds = hold;
    return p;
  }
  JobId submit(const std::string& name, int64_t at, int executors) {
    return *s.submit(JobSpec{name, "", 0, at, cores(1), cores(1), executors, {}});
  }
  // Admits everything pending at `at`, binds and runs every pod.
  void run_all(int64_t at) {
    for (const Decision& d : s.schedule(at)) {
      if (d.kind != DecisionKind::kAdmit) continue;
      const Job& j = s.job(d.job);
      s.pod_running(d.job, 0, at);
      for (size_t i = 1; i < j.pods.size(); ++i) {
        ASSERT_TRUE(s.bind_executor(d.job, static_cast<int>(i), at).ok());
        s.pod_running(d.job, static_cast<int>(i), at);
      }
    }
  }
  // The node agent evicts executor `i` of `id` at `at` (the scheduler sees the pod go).
  void evict_executor(JobId id, int i, int64_t at) {
    ASSERT_TRUE(s.note_eviction(id, i, at).ok());
    ASSERT_TRUE(s.executor_gone(id, i, at).ok());
  }
  NodeId node(const std::string& name) const { return *s.clusters().find_node(name); }
  Scheduler s;
};

// a (4 cores) takes the three executors (packing: the fullest node that fits), b (8) the
// driver (the emptiest). a's batch capacity drops to 2 at 30 and the agent evicts executor
// 1 at 31; a grows back to 3 at 40: one core free there again, the fullest node that fits.
struct Evicted : Hold {
  Evicted() : Hold({{"a", 4}, {"b", 8}}) {
    id = submit("etl", 0, 3);
    run_all(0);
    for (int i = 1; i <= 3; ++i)
      EXPECT_EQ(s.job(id).pods[static_cast<size_t>(i)].node, node("a"));
    EXPECT_TRUE(s.report_node(node("a"), cores(2), 30).ok());
    evict_executor(id, 1, 31);
    EXPECT_TRUE(s.report_node(node("a"), cores(3), 40).ok());
    (void)s.schedule(40);
  }
  JobId id = 0;
};

TEST(ReclaimHold, AnEvictedExecutorsReplacementGoesElsewhereWhileTheNodeHasNotHeld) {
  Evicted f;
  // a has the room (1 core free) and is the fullest node: without the hold the replacement
  // would go straight back there.
  ASSERT_TRUE(cores(1).fits_in(f.s.clusters().node(f.node("a")).free()));
  (void)f.s.schedule(339);
  auto placed = f.s.bind_executor(f.id, 1, 339);
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(*placed, f.node("b"));
  EXPECT_EQ(f.s.job(f.id).steered_away, 1);
  auto steered = f.s.take_steered();
  ASSERT_EQ(steered.size(), 1u);
  EXPECT_EQ(steered[0].job, f.id);
  EXPECT_EQ(steered[0].pod_index, 1);
  EXPECT_EQ(steered[0].avoided, f.node("a"));
  EXPECT_EQ(steered[0].placed, f.node("b"));
  EXPECT_NE(steered[0].message.find("node a:"), std::string::npos) << steered[0].message;
  EXPECT_NE(steered[0].message.find("300 s"), std::string::npos) << steered[0].message;
  EXPECT_TRUE(f.s.take_steered().empty());  // each counted once
}

TEST(ReclaimHold, TheJobMayGoBackOnceTheNodesRoomHasHeldForTheHoldTime) {
  Evicted f;
  // The hold started when the pass at 40 saw the room; it ends at 340.
  EXPECT_EQ(f.s.next_deadline(), std::optional<int64_t>(340));
  (void)f.s.schedule(340);
  auto placed = f.s.bind_executor(f.id, 1, 340);
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(*placed, f.node("a"));
  EXPECT_EQ(f.s.job(f.id).steered_away, 0);
  EXPECT_TRUE(f.s.take_steered().empty());
  EXPECT_TRUE(f.s.reclaims().empty());
}

TEST(ReclaimHold, ANewShrinkRestartsTheHold) {
  Evicted f;
  ASSERT_TRUE(f.s.report_node(f.node("a"), cores(2), 100).ok());  // no room again
  EXPECT_EQ(f.s.next_deadline(), std::nullopt);
  ASSERT_TRUE(f.s.report_node(f.node("a"), cores(3), 200).ok());  // the hold starts again
  (void)f.s.schedule(340);  // 300 s after the first recovery, 140 s after the last
  auto placed = f.s.bind_executor(f.id, 1, 340);
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(*placed, f.node("b"));
}

TEST(ReclaimHold, AnEvictedExecutorsRoomLeavesTheNodeEvenWhenItIsNotOverCommitted) {
  // Memory pressure with the published batch unchanged: the executor's room would stay on
  // a for its replacement (executor_gone), which is a ping-pong too.
  Hold f({{"a", 4}, {"b", 8}});
  JobId id = f.submit("etl", 0, 3);
  f.run_all(0);
  f.evict_executor(id, 2, 10);
  EXPECT_FALSE(f.s.job(id).pods[2].holds_room);
  EXPECT_EQ(f.s.clusters().node(f.node("a")).used, cores(2));
  auto placed = f.s.bind_executor(id, 2, 11);
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(*placed, f.node("b"));
}

TEST(ReclaimHold, AGangReclaimedAfterItsDriversEvictionIsPlacedOnAnotherNode) {
  // The driver goes to the emptiest node (a, 8 cores); the agent evicts it, and the job is
  // placed again as a whole: a is still the emptiest, so without the hold it would go back.
  Hold f({{"a", 8}, {"b", 4}});
  JobId id = f.submit("etl", 0, 1);
  f.run_all(0);
  ASSERT_EQ(f.s.job(id).pods[0].node, f.node("a"));
  ASSERT_TRUE(f.s.note_eviction(id, 0, 10).ok());
  (void)f.s.lose_pod(id, 10, "driver evicted");
  ASSERT_EQ(f.s.job(id).phase, JobPhase::kPending);
  bool admitted = false;
  for (const Decision& d : f.s.schedule(11))
    admitted |= d.kind == DecisionKind::kAdmit && d.job == id;
  ASSERT_TRUE(admitted);
  EXPECT_EQ(f.s.job(id).pods[0].node, f.node("b"));
  EXPECT_EQ(f.s.job(id).steered_away, 1);
  auto steered = f.s.take_steered();
  ASSERT_EQ(steered.size(), 1u);
  EXPECT_EQ(steered[0].pod_index, 0);
  EXPECT_EQ(steered[0].avoided, f.node("a"));
}

TEST(ReclaimHold, AJobThatFitsOnlyTheAvoidedNodeWaitsAndSaysWhy) {
  Hold f({{"a", 8}});
  JobId id = f.submit("etl", 0, 1);
  f.run_all(0);
  ASSERT_TRUE(f.s.note_eviction(id, 0, 10).ok());
  (void)f.s.lose_pod(id, 10, "driver evicted");
  (void)f.s.schedule(11);
  EXPECT_EQ(f.s.job(id).phase, JobPhase::kPending);
  EXPECT_NE(f.s.job(id).reason.find("evicted there"), std::string::npos) << f.s.job(id).reason;
  // a had the room from the pass at 11: it may take the job from 311.
  (void)f.s.schedule(310);
  EXPECT_EQ(f.s.job(id).phase, JobPhase::kPending);
  (void)f.s.schedule(311);
  EXPECT_EQ(f.s.job(id).phase, JobPhase::kAdmitted);
  EXPECT_EQ(f.s.job(id).pods[0].node, f.node("a"));
}

// How the live loop learns of an eviction: what the API server and kubelet record on the
// pod (Kubernetes' pod disruption conditions; kubelet's status.reason).
bool read_evicted(const Json& status) {
  Json json{{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", "exec-1"}, {"namespace", "spark"}, {"uid", "u1"}}},
            {"spec", {{"schedulerName", "gleaner-scheduler"}, {"nodeName", "a"}}},
            {"status", status}};
  auto pod = kube::parse_pod(json);
  EXPECT_TRUE(pod.ok());
  return kube_glue::pod_view(pod.ok() ? *pod : kube::Pod{}, "c1", "gleaner-scheduler",
                             kube_glue::JobOwners{})
      .evicted;
}

// Spark asks for the replacement as soon as the evicted executor is marked for deletion,
// while it still terminates and holds its index: the replacement is an executor beyond the
// gang, and it too keeps off the node, steered to the next node the packing rule picks.
TEST(ReclaimHold, AReplacementAskedForWhileTheVictimTerminatesKeepsOffItsNode) {
  Hold f({{"a", 4}, {"b", 8}});
  const JobId id = f.submit("etl", 0, 2);
  f.run_all(0);
  ASSERT_EQ(f.s.job(id).pods[1].node, f.node("a"));
  // The victim is marked (its eviction seen), not gone: its room is still held on a.
  ASSERT_TRUE(f.s.note_eviction(id, 1, 31).ok());
  ASSERT_TRUE(cores(1).fits_in(f.s.clusters().node(f.node("a")).free()))
      << "a, the fuller node, has room for the replacement";
  auto placed = f.s.place_extra_executor("replacement", id, cores(1), {}, nullptr, 32);
  ASSERT_TRUE(placed.ok()) << placed.error().message;
  EXPECT_EQ(*placed, f.node("b"));
  const std::vector<SteeredPlacement> steered = f.s.take_steered();
  ASSERT_EQ(steered.size(), 1u);
  EXPECT_EQ(steered[0].pod_index, kExtraExecutorIndex);
  EXPECT_EQ(steered[0].pod_key, "replacement");
  EXPECT_EQ(steered[0].avoided, f.node("a"));
  // Another job is not kept off a.
  const JobId other = f.submit("other", 40, 1);
  f.run_all(40);
  auto extra = f.s.place_extra_executor("other-extra", other, cores(1), {}, nullptr, 41);
  ASSERT_TRUE(extra.ok());
  EXPECT_EQ(*extra, f.node("a"));
}

TEST(ReclaimHold, APodIsEvictedByItsDisruptionConditionOrKubeletsReason) {
  auto condition = [](const char* reason, const char* status = "True") {
    return Json{{"phase", "Running"},
                {"conditions",
                 {{{"type", "Ready"}, {"status", "True"}},
                  {{"type", "DisruptionTarget"}, {"status", status}, {"reason", reason}}}}};
  };
  EXPECT_TRUE(read_evicted(condition("EvictionByEvictionAPI")));
  EXPECT_TRUE(read_evicted(condition("TerminationByKubelet")));
  EXPECT_TRUE(read_evicted(Json{{"phase", "Failed"}, {"reason", "Evicted"}}));
  // Not the node's batch capacity: a preemption, a taint, or a condition not in force.
  EXPECT_FALSE(read_evicted(condition("PreemptionByScheduler")));
  EXPECT_FALSE(read_evicted(condition("DeletionByTaintManager")));
  EXPECT_FALSE(read_evicted(condition("EvictionByEvictionAPI", "False")));
  EXPECT_FALSE(read_evicted(Json{{"phase", "Running"}}));
}

}  // namespace
}  // namespace gleaner::scheduler::reclaim_hold_test
