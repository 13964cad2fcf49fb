#include "scheduler/core/scheduler.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "common/quantity.h"

namespace gleaner::scheduler {
namespace {

using gleaner::kGi;
Resources cores(int64_t n) {
  return Resources{n * 1000, n * kGi};
}

struct Fixture {
  explicit Fixture(std::vector<std::pair<std::string, int64_t>> nodes,
                   std::vector<QueueSpec> queues = {}, SchedulerPolicy policy = {})
      : s(policy, *QuotaTree::build(queues), ClusterState()) {
    for (auto& [name, n] : nodes) {
      std::string cluster = name.substr(0, name.find('-'));
      (void)*s.upsert_node(NodeInfo{name, cluster, {}, cores(n)}, 0);
    }
  }
  JobId submit(const std::string& name, int64_t at, int executors, int32_t priority = 0,
               const std::string& queue = "") {
    JobSpec spec{name, queue, priority, at, cores(1), cores(1), executors, {}};
    return *s.submit(spec);
  }
  std::vector<std::string> admitted(const std::vector<Decision>& ds) const {
    std::vector<std::string> out;
    for (const Decision& d : ds) {
      if (d.kind == DecisionKind::kAdmit) out.push_back(s.job(d.job).spec.name);
    }
    return out;
  }
  Scheduler s;
};

TEST(Scheduler, OrdersByPriorityThenAge) {
  Fixture f({{"c-n1", 2}});
  f.submit("old-low", 0, 1, 10);
  f.submit("new-high", 5, 1, 20);
  f.submit("old-high", 1, 1, 20);
  // Only one 2-core job fits at a time; the pass admits the best-ordered one.
  EXPECT_EQ(f.admitted(f.s.schedule(10)), std::vector<std::string>{"old-high"});
  f.s.complete(*f.s.find_job("old-high"), 20);
  EXPECT_EQ(f.admitted(f.s.schedule(20)), std::vector<std::string>{"new-high"});
}

TEST(Scheduler, NonBlockingLetsSmallerJobsGoAhead) {
  Fixture f({{"c-n1", 4}});
  f.submit("big-1", 0, 2);
  f.submit("big-2", 1, 2);
  f.submit("small", 2, 0);
  EXPECT_EQ(f.admitted(f.s.schedule(2)), (std::vector<std::string>{"big-1", "small"}));
  EXPECT_EQ(f.s.job(*f.s.find_job("big-2")).reason, "waiting for batch capacity");
}

TEST(Scheduler, BlockingQueueHoldsBackLaterJobsOnlyOfThatQueue) {
  std::vector<QueueSpec> queues{
      QueueSpec{"strict", "root", std::nullopt, std::nullopt, QueueingPolicy::kBlocking},
      QueueSpec{"loose", "root", std::nullopt, std::nullopt, std::nullopt}};
  Fixture f({{"c-n1", 5}}, queues);
  f.submit("big-1", 0, 2, 0, "strict");
  f.submit("big-2", 1, 2, 0, "strict");
  f.submit("small-strict", 2, 0, 0, "strict");
  f.submit("small-loose", 3, 0, 0, "loose");
  EXPECT_EQ(f.admitted(f.s.schedule(3)), (std::vector<std::string>{"big-1", "small-loose"}));
  EXPECT_EQ(f.s.job(*f.s.find_job("small-strict")).reason,
            "blocked behind big-2 in blocking queue strict");
}

TEST(Scheduler, JobLargerThanAnyClusterIsUnschedulableAndDoesNotBlock) {
  SchedulerPolicy policy;
  policy.queueing = QueueingPolicy::kBlocking;
  Fixture f({{"c1-n1", 4}, {"c2-n1", 4}}, {}, policy);
  f.submit("huge", 0, 5);  // 6 cores: fits neither 4-core cluster even when empty
  f.submit("fits", 1, 1);
  auto ds = f.s.schedule(1);
  EXPECT_EQ(f.admitted(ds), std::vector<std::string>{"fits"});
  const Job& huge = f.s.job(*f.s.find_job("huge"));
  EXPECT_TRUE(huge.unschedulable);
  EXPECT_NE(huge.reason.find("larger than any cluster"), std::string::npos);
  ASSERT_EQ(std::count_if(ds.begin(), ds.end(),
                          [](const Decision& d) { return d.kind == DecisionKind::kUnschedulable; }),
            1);
  // Reported once, not on every pass.
  auto again = f.s.schedule(2);
  EXPECT_TRUE(again.empty());
}

TEST(Scheduler, QueueMaxMakesJobsWaitOrUnschedulable) {
  Fixture f({{"c-n1", 16}}, {QueueSpec{"capped", "root", std::nullopt, cores(4), std::nullopt}});
  f.submit("first", 0, 2, 0, "capped");
  f.submit("second", 1, 2, 0, "capped");
  f.submit("too-big", 2, 4, 0, "capped");
  EXPECT_EQ(f.admitted(f.s.schedule(2)), std::vector<std::string>{"first"});
  EXPECT_NE(f.s.job(*f.s.find_job("second")).reason.find("would exceed its max"),
            std::string::npos);
  EXPECT_TRUE(f.s.job(*f.s.find_job("too-big")).unschedulable);
  EXPECT_EQ(f.s.quotas().queue(*f.s.quotas().find("capped")).used, cores(3));
}

std::vector<QueueSpec> two_tenants() {
  return {QueueSpec{"a", "root", cores(4), cores(8), std::nullopt},
          QueueSpec{"b", "root", cores(4), cores(8), std::nullopt}};
}

TEST(Scheduler, ReclaimPreemptsTheBorrowersLowestPriorityJob) {
  Fixture f({{"c-n1", 4}, {"c-n2", 4}}, two_tenants());
  f.submit("a-high", 0, 3, 100, "a");
  f.submit("a-low", 0, 3, 50, "a");
  EXPECT_EQ(f.admitted(f.s.schedule(0)).size(), 2u);  // a borrows b's idle min
  f.submit("b-1", 10, 3, 0, "b");
  auto ds = f.s.schedule(10);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].kind, DecisionKind::kPreempt);
  EXPECT_EQ(f.s.job(ds[0].job).spec.name, "a-low");
  EXPECT_EQ(ds[1].kind, DecisionKind::kAdmit);
  EXPECT_EQ(f.s.job(ds[1].job).spec.name, "b-1");
  const Job& low = f.s.job(*f.s.find_job("a-low"));
  EXPECT_EQ(low.phase, JobPhase::kPending);
  EXPECT_EQ(low.preemptions, 1);
  // a is back at its min, so its pending job is not within min and reclaims nothing.
  EXPECT_TRUE(f.s.schedule(11).empty());
}

TEST(Scheduler, ReclaimThatCannotMakeRoomPreemptsNobody) {
  Fixture f({{"c-n1", 4}, {"c-n2", 4}}, {QueueSpec{"a", "root", cores(4), cores(8), std::nullopt},
                                         QueueSpec{"b", "root", cores(6), cores(8), std::nullopt}});
  f.submit("a-1", 0, 3, 0, "a");
  f.submit("a-2", 0, 3, 0, "a");
  f.s.schedule(0);
  // b-wide (5 cores) is within b's min, but only one of a's jobs is borrowed quota:
  // preempting it frees 4 cores, not enough, so the tentative preemption is undone.
  f.submit("b-wide", 5, 4, 0, "b");
  auto ds = f.s.schedule(5);
  EXPECT_TRUE(ds.empty());
  EXPECT_EQ(f.s.job(*f.s.find_job("a-1")).phase, JobPhase::kAdmitted);
  EXPECT_EQ(f.s.job(*f.s.find_job("a-2")).phase, JobPhase::kAdmitted);
  EXPECT_EQ(f.s.job(*f.s.find_job("a-2")).preemptions, 0);
  EXPECT_EQ(f.s.clusters().cluster_free(0), Resources{});
  EXPECT_EQ(f.s.quotas().queue(*f.s.quotas().find("a")).used, cores(8));
}

TEST(Scheduler, ExecutorsTakeReservedRoomAndExpiredRoomIsReleased) {
  SchedulerPolicy policy;
  policy.reservation_ttl_seconds = 100;
  policy.driver_start_timeout_seconds = 50;
  Fixture f({{"c-n1", 4}}, {}, policy);
  JobId id = f.submit("j", 0, 2);
  f.s.schedule(0);
  EXPECT_EQ(f.s.clusters().cluster_free(0), cores(1));  // 1 driver + 2 reserved
  f.s.pod_running(id, 0, 10);
  auto first = f.s.bind_executor(id, 1, 10);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(f.s.next_deadline(), 100);
  auto expired = f.s.check_timeouts(100);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].kind, DecisionKind::kReservationExpired);
  EXPECT_EQ(f.s.clusters().cluster_free(0), cores(2));
  // A late executor still binds if the cluster has room.
  ASSERT_TRUE(f.s.bind_executor(id, 2, 120).ok());
  f.s.pod_running(id, 1, 120);
  EXPECT_TRUE(f.s.pod_running(id, 2, 121));
  EXPECT_EQ(f.s.job(id).phase, JobPhase::kRunning);
  EXPECT_EQ(f.s.job(id).started_at, 121);
  f.s.complete(id, 200);
  EXPECT_EQ(f.s.clusters().cluster_free(0), cores(4));
}

TEST(Scheduler, AnExecutorTakesItsReservedRoomOnlyWhereItsOwnSelectorHolds) {
  Scheduler s(SchedulerPolicy{}, *QuotaTree::build({}), ClusterState());
  (void)*s.upsert_node(NodeInfo{"c-n1", "c", {{"kubernetes.io/os", "linux"}}, cores(4)}, 0);
  JobId id = *s.submit(JobSpec{"j", "", 0, 0, cores(1), cores(1), 1, {}});
  s.schedule(0);
  // The pod asks for a label its reserved node lacks: kubelet would refuse it there.
  const NodeSelector windows{{{"kubernetes.io/os", "windows"}}, {}, {}};
  auto refused = s.bind_executor(id, 1, 10, &windows);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("kubernetes.io/os=windows"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(s.job(id).pods[1].bound);
  EXPECT_TRUE(s.job(id).pods[1].holds_room) << "its room stays reserved";
  const NodeSelector linux_only{{{"kubernetes.io/os", "linux"}}, {}, {}};
  ASSERT_TRUE(s.bind_executor(id, 1, 10, &linux_only).ok());
  EXPECT_TRUE(s.job(id).pods[1].bound);
}

TEST(Scheduler, StalledDriverIsReclaimedIntoAnotherCluster) {
  SchedulerPolicy policy;
  policy.driver_start_timeout_seconds = 120;
  Fixture f({{"c1-n1", 2}, {"c2-n1", 8}}, {}, policy);
  JobId id = f.submit("j", 0, 1);
  f.s.schedule(0);
  EXPECT_EQ(f.s.clusters().cluster_name(*f.s.job(id).cluster), "c1");  // best fit
  EXPECT_TRUE(f.s.check_timeouts(119).empty());
  EXPECT_EQ(f.s.next_deadline(), 120);
  auto ds = f.s.check_timeouts(120);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].kind, DecisionKind::kReschedule);
  EXPECT_EQ(f.s.job(id).reschedules, 1);
  f.s.schedule(120);
  // c1 has room again, but the job prefers the cluster it was not stuck in.
  EXPECT_EQ(f.s.clusters().cluster_name(*f.s.job(id).cluster), "c2");
}

TEST(Scheduler, PreferredClusterGoesBeforeBestFitWhenTheGangFits) {
  Fixture f({{"c1-n1", 8}, {"c2-n1", 3}});
  JobSpec spec{"j", "", 0, 0, cores(1), cores(1), 2, {}};
  spec.preferred_cluster = "c1";
  JobId id = *f.s.submit(spec);
  JobSpec other{"k", "", 0, 1, cores(1), cores(1), 2, {}};
  JobId best = *f.s.submit(other);
  f.s.schedule(1);
  ASSERT_TRUE(f.s.job(id).cluster && f.s.job(best).cluster);
  // Best fit alone would pick c2 (3 CPUs, nothing left over), as it does for k.
  EXPECT_EQ(f.s.clusters().cluster_name(*f.s.job(id).cluster), "c1");
  EXPECT_EQ(f.s.clusters().cluster_name(*f.s.job(best).cluster), "c2");
  // A preferred cluster without room is passed over.
  JobSpec big{"big", "", 0, 2, cores(1), cores(1), 3, {}};
  big.preferred_cluster = "c2";
  JobId moved = *f.s.submit(big);
  f.s.schedule(2);
  ASSERT_TRUE(f.s.job(moved).cluster);
  EXPECT_EQ(f.s.clusters().cluster_name(*f.s.job(moved).cluster), "c1");
}

TEST(Scheduler, SelectorMatchingNoNodeIsUnschedulableWithItsReason) {
  Fixture f({{"c-n1", 8}});
  JobSpec spec{"j", "", 0, 0, cores(1), cores(1), 1, {}};
  spec.node_selector.labels = {{"pool", "gpu"}};
  JobId id = *f.s.submit(spec);
  auto ds = f.s.schedule(0);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].kind, DecisionKind::kUnschedulable);
  EXPECT_EQ(f.s.job(id).reason, "no node matches the node selector (pool=gpu)");
  // A node labelled later makes it placeable; a new selector is judged again.
  f.s.set_node_labels(*f.s.clusters().find_node("c-n1"), {{"pool", "gpu"}});
  EXPECT_EQ(f.admitted(f.s.schedule(1)), std::vector<std::string>{"j"});
  JobSpec k{"k", "", 0, 2, cores(1), {}, 0, {}};
  JobId kid = *f.s.submit(k);
  ASSERT_TRUE(f.s.set_node_selector(kid, NodeSelector{{{"pool", "cpu"}}, {}}).ok());
  f.s.schedule(2);
  EXPECT_TRUE(f.s.job(kid).unschedulable);
  EXPECT_FALSE(f.s.set_node_selector(99, {}).ok());
}

TEST(Scheduler, AGoneExecutorLeavesItsRoomToTheJobForItsReplacement) {
  Fixture f({{"c-n1", 4}});
  JobId id = f.submit("j", 0, 2);
  f.s.schedule(0);
  f.s.pod_running(id, 0, 10);
  auto first = f.s.bind_executor(id, 1, 10);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(f.s.executor_gone(id, 1, 10).ok());
  // Still admitted, and the room is not the node's again: nothing else takes it.
  EXPECT_EQ(f.s.job(id).phase, JobPhase::kAdmitted);
  EXPECT_EQ(f.s.clusters().cluster_free(0), cores(1));
  auto replacement = f.s.bind_executor(id, 1, 20);
  ASSERT_TRUE(replacement.ok());
  EXPECT_EQ(*replacement, *first);
  EXPECT_FALSE(f.s.executor_gone(id, 0, 20).ok());  // the driver is not an executor
  EXPECT_FALSE(f.s.executor_gone(id, 3, 20).ok());
  EXPECT_FALSE(f.s.executor_gone(99, 1, 20).ok());
}

TEST(Scheduler, AReplacementExecutorRunningMakesTheJobRunningAgainNotStartedAgain) {
  Fixture f({{"c-n1", 4}});
  JobId id = f.submit("j", 0, 1);
  f.s.schedule(0);
  ASSERT_TRUE(f.s.bind_executor(id, 1, 1).ok());
  EXPECT_FALSE(f.s.pod_running(id, 0, 2));
  EXPECT_TRUE(f.s.pod_running(id, 1, 3));  // the job started
  ASSERT_EQ(f.s.job(id).phase, JobPhase::kRunning);
  ASSERT_TRUE(f.s.executor_gone(id, 1, 50).ok());
  EXPECT_EQ(f.s.job(id).phase, JobPhase::kAdmitted);  // not every pod runs
  ASSERT_TRUE(f.s.bind_executor(id, 1, 51).ok());
  EXPECT_FALSE(f.s.pod_running(id, 1, 52));  // running again, but it started at 3
  EXPECT_EQ(f.s.job(id).phase, JobPhase::kRunning);
  EXPECT_TRUE(f.s.job(id).pods[1].running);
  EXPECT_EQ(f.s.job(id).started_at, 3);
}

TEST(Scheduler, AGoneExecutorsRoomIsReservedAgainFromWhenItWent) {
  SchedulerPolicy policy;
  policy.reservation_ttl_seconds = 100;
  Fixture f({{"c-n1", 4}}, {}, policy);
  JobId id = f.submit("j", 0, 1);
  f.s.schedule(0);
  ASSERT_TRUE(f.s.bind_executor(id, 1, 1).ok());
  f.s.pod_running(id, 0, 2);
  f.s.pod_running(id, 1, 3);
  // Gone long after admission: the replacement still has reservation_ttl to come.
  ASSERT_TRUE(f.s.executor_gone(id, 1, 500).ok());
  EXPECT_TRUE(f.s.check_timeouts(550).empty());
  EXPECT_EQ(f.s.clusters().cluster_free(0), cores(2));
  auto expired = f.s.check_timeouts(600);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].kind, DecisionKind::kReservationExpired);
  EXPECT_EQ(f.s.clusters().cluster_free(0), cores(3));
}

TEST(Scheduler, DriverRunningInTimeCancelsItsTimeout) {
  SchedulerPolicy policy;
  policy.driver_start_timeout_seconds = 120;
  policy.reservation_ttl_seconds = 600;
  Fixture f({{"c-n1", 4}}, {}, policy);
  JobId id = f.submit("j", 0, 1);
  f.s.schedule(0);
  EXPECT_EQ(f.s.next_deadline(), 120);
  f.s.pod_running(id, 0, 10);
  EXPECT_EQ(f.s.next_deadline(), 600);  // only the executor's reservation is left
  EXPECT_TRUE(f.s.check_timeouts(500).empty());
  ASSERT_TRUE(f.s.bind_executor(id, 1, 20).ok());
  EXPECT_EQ(f.s.next_deadline(), std::nullopt);
  EXPECT_EQ(f.s.job(id).reschedules, 0);
}

TEST(Scheduler, WithdrawnPendingJobLeavesItsQueue) {
  Fixture f({{"c-n1", 2}});
  JobId first = f.submit("first", 0, 1);
  f.submit("second", 1, 1);
  ASSERT_TRUE(f.s.withdraw(first).ok());
  // Only one 2-core job fits: without the withdrawal "first" (older) would be admitted.
  EXPECT_EQ(f.admitted(f.s.schedule(2)), std::vector<std::string>{"second"});
  EXPECT_EQ(f.s.job(first).phase, JobPhase::kWithdrawn);
}

TEST(Scheduler, WithdrawnAdmittedJobReleasesBoundAndReservedRoomAndQuota) {
  Fixture f({{"c-n1", 3}}, {QueueSpec{"a", "root", std::nullopt, cores(3), std::nullopt}});
  JobId first = f.submit("first", 0, 2, 0, "a");  // driver bound, two executors reserved
  JobId second = f.submit("second", 1, 2, 0, "a");
  EXPECT_EQ(f.admitted(f.s.schedule(1)), std::vector<std::string>{"first"});
  ASSERT_TRUE(f.s.bind_executor(first, 1, 1).ok());  // one executor bound, one still reserved
  const NodeId n1 = *f.s.clusters().find_node("c-n1");
  EXPECT_EQ(f.s.clusters().node(n1).used, cores(3));
  ASSERT_TRUE(f.s.next_deadline().has_value());

  ASSERT_TRUE(f.s.withdraw(first).ok());
  EXPECT_EQ(f.s.job(first).phase, JobPhase::kWithdrawn);
  EXPECT_TRUE(f.s.job(first).pods.empty());
  EXPECT_EQ(f.s.clusters().node(n1).used, Resources{});
  EXPECT_EQ(f.s.quotas().queue(*f.s.quotas().find("a")).used, Resources{});
  EXPECT_FALSE(f.s.next_deadline().has_value());  // its driver timeout is gone too
  // The room and the queue's max are free for the next job at once.
  EXPECT_EQ(f.admitted(f.s.schedule(2)), std::vector<std::string>{"second"});
  EXPECT_EQ(f.s.job(second).phase, JobPhase::kAdmitted);
}

TEST(Scheduler, WithdrawRefusesUnknownFinishedAndWithdrawnJobs) {
  Fixture f({{"c-n1", 4}});
  JobId done = f.submit("done", 0, 0);
  JobId gone = f.submit("gone", 0, 0);
  EXPECT_EQ(f.admitted(f.s.schedule(0)), (std::vector<std::string>{"done", "gone"}));
  f.s.complete(done, 5);
  ASSERT_TRUE(f.s.withdraw(gone).ok());
  auto finished = f.s.withdraw(done);
  ASSERT_FALSE(finished.ok());
  EXPECT_NE(finished.error().message.find("job done is Completed"), std::string::npos);
  EXPECT_FALSE(f.s.withdraw(gone).ok());
  EXPECT_EQ(f.s.withdraw(99).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(f.s.job(done).phase, JobPhase::kCompleted);
}

TEST(Scheduler, SubmitRejectsBadJobsNamingThem) {
  Fixture f({{"c-n1", 4}});
  f.submit("dup", 0, 1);
  auto dup = f.s.submit(JobSpec{"dup", "", 0, 0, cores(1), cores(1), 1, {}});
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().message, "job dup: name used twice");
  auto queue = f.s.submit(JobSpec{"q", "nope", 0, 0, cores(1), cores(1), 1, {}});
  ASSERT_FALSE(queue.ok());
  EXPECT_EQ(queue.error().message, "job q: unknown queue nope");
}

}  // namespace
}  // namespace gleaner::scheduler

namespace gleaner::scheduler {
namespace {

TEST(Scheduler, PodsThatKeepCpuRequestsNeedRegularAllocatableToo) {
  Fixture f({{"c-n1", 8}, {"c-n2", 2}});
  const NodeId n1 = *f.s.clusters().find_node("c-n1");
  const NodeId n2 = *f.s.clusters().find_node("c-n2");
  // n1 has the batch room but LS requests leave it half a core of regular allocatable.
  f.s.set_regular_outside(n1, Resources{500, 8 * kGi});
  f.s.set_regular_outside(n2, Resources{500, 8 * kGi});
  JobSpec spec{"burstable", "", 0, 1, cores(1), {}, 0, {}};
  spec.driver_regular = cores(1);
  const JobId id = *f.s.submit(spec);
  f.s.schedule(2);
  EXPECT_EQ(f.s.job(id).phase, JobPhase::kPending);
  EXPECT_NE(f.s.job(id).reason.find("regular allocatable"), std::string::npos)
      << f.s.job(id).reason;
  // Room made on n2's regular allocatable (an LS pod went): the driver goes there, though
  // n1 has more batch room.
  f.s.set_regular_outside(n2, Resources{4000, 8 * kGi});
  f.s.schedule(3);
  ASSERT_EQ(f.s.job(id).phase, JobPhase::kAdmitted);
  EXPECT_EQ(f.s.job(id).pods[0].node, n2);
  EXPECT_EQ(f.s.clusters().node(n2).regular_used, cores(1));
  f.s.complete(id, 4);
  EXPECT_EQ(f.s.clusters().node(n2).regular_used, Resources{});
}

}  // namespace
}  // namespace gleaner::scheduler
