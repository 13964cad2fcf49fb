// The gang layer under faults: a binding the API server refuses is tried again and never
// deletes the pod; a gang found partly bound after a restart is finished around its bound
// pods, or released after the reservation TTL; an older copy of a bound pod (another
// thread's re-feed) never places it a second time.
#include <gtest/gtest.h>

#include "scheduler/gang/gang_scheduler.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace gang_faults_test {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

gang::PodView pod_of(const std::string& name, gang::PodRole role, const std::string& gang,
                     int64_t cpu_milli) {
  gang::PodView pod;
  pod.cluster = "c1";
  pod.ns = "default";
  pod.name = name;
  pod.uid = name + "-uid";
  pod.phase = "Pending";
  pod.ours = true;
  pod.role = role;
  pod.gang = gang;
  pod.batch = true;
  pod.request = Resources{cpu_milli, kGiB};
  return pod;
}

gang::PodView bound(gang::PodView pod, const std::string& node) {
  pod.node = node;
  pod.phase = "Running";
  return pod;
}

// A Spark driver of application `app` with `executors` executors of 1 core.
gang::PodView driver_of(const std::string& app, int executors) {
  gang::PodView d = pod_of(app + "-driver", gang::PodRole::kDriver, app, 1000);
  d.shape = gang::GangShape{d.request, Resources{1000, kGiB}, executors};
  return d;
}

gang::PodView member_of(const std::string& name, int min_available) {
  gang::PodView m = pod_of(name, gang::PodRole::kMember, "podgroup:pgb", 1000);
  m.min_available = min_available;
  return m;
}

class GangFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    gang::GangOptions options;
    options.clusters = {"c1"};
    options.policy.reservation_ttl_seconds = 60;
    auto live = gang::GangScheduler::create(options, {}, clock_, metrics_);
    ASSERT_TRUE(live.ok()) << live.error().message;
    live_ = std::move(*live);
    live_->set_sinks([this](gang::Action a) { actions_.push_back(std::move(a)); }, nullptr);
  }
  void report(const std::string& node, int64_t cpu_milli) {
    ASSERT_FALSE(live_->apply_report(
        live_testing::node_report(node, ++sequence_, cpu_milli, 16 * kGiB, "c1")));
  }
  [[nodiscard]] std::vector<std::string> actions(gang::ActionKind kind) const {
    std::vector<std::string> out;
    for (const gang::Action& a : actions_)
      if (a.kind == kind) out.push_back(a.name + (a.node.empty() ? "" : "@" + a.node));
    return out;
  }
  [[nodiscard]] std::string bind_of(const std::string& pod) const {
    for (const gang::Action& a : actions_)
      if (a.kind == gang::ActionKind::kBind && a.name == pod) return a.node;
    return "";
  }
  [[nodiscard]] int64_t used_cpu() const {
    int64_t sum = 0;
    const Json nodes = live_->nodes_json();
    for (const Json& n : nodes["nodes"])
      sum += n["used"]["cpuMillicores"].get<int64_t>();
    return sum;
  }
  [[nodiscard]] Json only_job() const {
    const Json jobs = live_->jobs_json()["jobs"];
    return jobs.size() == 1 ? jobs[0] : Json();
  }

  live_testing::JumpClock clock_;
  server::LiveMetrics metrics_;
  std::unique_ptr<gang::GangScheduler> live_;
  std::vector<gang::Action> actions_;
  uint64_t sequence_ = 0;
};

const Status kServerError = make_error(ErrorCode::kUnavailable, "POST binding: 500");

TEST_F(GangFaults, AFailedBindingIsTriedAgainAndNeverDeletesThePod) {
  report("n1", 8000);
  const gang::PodView driver = driver_of("pi", 1);
  live_->observe_pod(driver);
  live_->tick();
  ASSERT_EQ(bind_of("pi-driver"), "n1");
  actions_.clear();
  live_->bind_done("c1", driver.uid, kServerError);
  live_->bind_done("c1", driver.uid, make_error(ErrorCode::kRetryLater, "429"));
  EXPECT_EQ(actions(gang::ActionKind::kDelete), std::vector<std::string>{});
  EXPECT_EQ(only_job()["phase"], "Admitted");
  EXPECT_EQ(used_cpu(), 2000);  // the room stays held for the retry
  live_->tick();
  EXPECT_EQ(actions(gang::ActionKind::kBind), std::vector<std::string>{});  // backing off
  clock_.advance(std::chrono::seconds(2));
  live_->tick();
  EXPECT_EQ(actions(gang::ActionKind::kBind), std::vector<std::string>{"pi-driver@n1"});
  live_->bind_done("c1", driver.uid, ok_status());
  live_->observe_pod(bound(driver, "n1"));
  clock_.advance(std::chrono::seconds(30));
  live_->tick();
  EXPECT_EQ(actions(gang::ActionKind::kBind).size(), 1u);
  EXPECT_EQ(actions(gang::ActionKind::kDelete), std::vector<std::string>{});
  EXPECT_EQ(only_job()["reschedules"], 0);
  const std::string text = metrics_.render(live_->gauges());
  EXPECT_NE(text.find("gleaner_scheduler_bind_failures_total{cause=\"server_error\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gleaner_scheduler_bind_failures_total{cause=\"throttled\"} 1"),
            std::string::npos);
}

// The node's batch capacity shrank below what the job reserved before its executor came:
// the reserved room went back (a shrink deletes nothing), and the executor that comes then
// finds no room. It waits, and binds on the pass after the node has room again: a
// GleanerNoRoom is not the end of it.
TEST_F(GangFaults, AnExecutorThatFoundNoRoomBindsOnceTheNodeHasRoomAgain) {
  report("n1", 3000);
  const gang::PodView driver = driver_of("pi", 1);
  live_->observe_pod(driver);
  live_->tick();
  ASSERT_EQ(bind_of("pi-driver"), "n1");
  live_->bind_done("c1", driver.uid, ok_status());
  live_->observe_pod(bound(driver, "n1"));
  report("n1", 1500);  // an LS surge: below the 2000m the job reserved
  EXPECT_EQ(used_cpu(), 1000) << "the executor's unbound room went back";
  gang::PodView executor = pod_of("pi-exec-1", gang::PodRole::kExecutor, "pi", 1000);
  live_->observe_pod(executor);
  live_->tick();
  EXPECT_EQ(bind_of("pi-exec-1"), "") << "no room on n1 yet";
  live_->tick();
  EXPECT_EQ(bind_of("pi-exec-1"), "");
  report("n1", 3000);  // the surge is over
  live_->tick();
  EXPECT_EQ(bind_of("pi-exec-1"), "n1") << live_->jobs_json().dump();
  EXPECT_EQ(used_cpu(), 2000);
  EXPECT_EQ(actions(gang::ActionKind::kDelete), std::vector<std::string>{});
}

TEST_F(GangFaults, AJobNoneOfWhosePodsCouldBeBoundWaitsInItsQueueAgain) {
  report("n1", 8000);
  const gang::PodView driver = driver_of("pi", 1);
  live_->observe_pod(driver);
  live_->tick();
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(only_job()["phase"], "Admitted") << i;
    live_->bind_done("c1", driver.uid, make_error(ErrorCode::kTimeout, "timed out"));
    clock_.advance(std::chrono::seconds(11));
    if (i < 4) live_->tick();  // the next try
  }
  // Five tries failed: the room went back and the job waits; nothing was deleted.
  EXPECT_EQ(only_job()["phase"], "Pending") << only_job().dump();
  EXPECT_EQ(used_cpu(), 0);
  EXPECT_EQ(actions(gang::ActionKind::kDelete), std::vector<std::string>{});
  const std::string text = metrics_.render(live_->gauges());
  EXPECT_NE(text.find("gleaner_scheduler_bind_requeues_total 1"), std::string::npos) << text;
  // The next pass admits it again and binds its driver anew.
  actions_.clear();
  live_->tick();
  EXPECT_EQ(actions(gang::ActionKind::kBind), std::vector<std::string>{"pi-driver@n1"});
  EXPECT_EQ(only_job()["phase"], "Admitted");
}

TEST_F(GangFaults, ABindingThatWentThroughOrAPodGoneIsNotSentAgain) {
  report("n1", 8000);
  const gang::PodView driver = driver_of("pi", 0);
  live_->observe_pod(driver);
  live_->tick();
  actions_.clear();
  live_->bind_done("c1", driver.uid, make_error(ErrorCode::kConflict, "already assigned"));
  clock_.advance(std::chrono::seconds(20));
  live_->tick();
  EXPECT_EQ(actions(gang::ActionKind::kBind), std::vector<std::string>{});
  EXPECT_EQ(actions(gang::ActionKind::kDelete), std::vector<std::string>{});
}

TEST_F(GangFaults, ASparkGangHalfBoundBeforeARestartIsFinished) {
  // What the API server holds when this process starts: the driver and two executors bound
  // by an earlier process, two executors pending.
  report("n1", 3000);
  report("n2", 4000);
  const gang::PodView driver = driver_of("pi", 4);
  live_->observe_pod(bound(pod_of("pi-exec-1", gang::PodRole::kExecutor, "pi", 1000), "n1"));
  live_->observe_pod(bound(driver, "n1"));
  live_->observe_pod(pod_of("pi-exec-3", gang::PodRole::kExecutor, "pi", 1000));
  live_->observe_pod(bound(pod_of("pi-exec-2", gang::PodRole::kExecutor, "pi", 1000), "n1"));
  live_->observe_pod(pod_of("pi-exec-4", gang::PodRole::kExecutor, "pi", 1000));
  EXPECT_EQ(used_cpu(), 3000);  // the bound pods' room, held meanwhile
  live_->tick();
  EXPECT_EQ(bind_of("pi-exec-3"), "n2");
  EXPECT_EQ(bind_of("pi-exec-4"), "n2");
  EXPECT_EQ(actions(gang::ActionKind::kDelete), std::vector<std::string>{});
  const Json job = only_job();
  EXPECT_EQ(job["phase"], "Admitted") << job.dump();
  EXPECT_EQ(job["executors"], 4);
  EXPECT_EQ(job["pods"][0]["node"], "c1/n1");
  EXPECT_EQ(used_cpu(), 5000);  // each pod once
  // The executors Spark creates later take the gang's room, not more.
  live_->observe_pod(bound(pod_of("pi-exec-3", gang::PodRole::kExecutor, "pi", 1000), "n2"));
  live_->observe_pod(bound(pod_of("pi-exec-4", gang::PodRole::kExecutor, "pi", 1000), "n2"));
  EXPECT_EQ(used_cpu(), 5000);
  EXPECT_EQ(only_job()["phase"], "Running");
  // The driver ends: every pod's room goes back.
  gang::PodView done = bound(driver, "n1");
  done.phase = "Succeeded";
  live_->observe_pod(done);
  EXPECT_EQ(only_job()["phase"], "Completed");
  EXPECT_EQ(used_cpu(), 0);
  for (const char* e : {"pi-exec-1", "pi-exec-2", "pi-exec-3", "pi-exec-4"})
    live_->forget_pod(pod_of(e, gang::PodRole::kExecutor, "pi", 1000));
  EXPECT_EQ(used_cpu(), 0);
  const std::string text = metrics_.render(live_->gauges());
  EXPECT_NE(text.find("gleaner_scheduler_recovered_gangs_total{outcome=\"resumed\"} 1"),
            std::string::npos)
      << text;
}

TEST_F(GangFaults, APodGroupHalfBoundBeforeARestartIsFinished) {
  report("n1", 2000);
  report("n2", 4000);
  live_->observe_pod(bound(member_of("pgb-0", 4), "n1"));
  live_->observe_pod(bound(member_of("pgb-1", 4), "n1"));
  live_->observe_pod(member_of("pgb-2", 4));
  live_->observe_pod(member_of("pgb-3", 4));
  live_->tick();
  EXPECT_EQ(bind_of("pgb-2"), "n2");
  EXPECT_EQ(bind_of("pgb-3"), "n2");
  EXPECT_EQ(bind_of("pgb-0"), "");  // bound already: not bound again
  EXPECT_EQ(used_cpu(), 4000);
  EXPECT_EQ(only_job()["phase"], "Admitted") << only_job().dump();
}

TEST_F(GangFaults, ATrainingJobHalfBoundBeforeARestartIsFinished) {
  report("n1", 2000);
  report("n2", 4000);
  // A PyTorchJob of a master and two workers: the master and worker 0 bound, worker 1 not.
  gang::GangShape roles;
  roles.roles = {RoleSpec{"Master", Resources{1000, kGiB}, 1, {}, std::nullopt},
                 RoleSpec{"Worker", Resources{1000, kGiB}, 2, {}, std::nullopt}};
  auto replica = [&](const std::string& type, int index) {
    gang::PodView p = pod_of("tj-" + type + "-" + std::to_string(index), gang::PodRole::kReplica,
                             "PyTorchJob:tj", 1000);
    p.replica_type = type;
    p.replica_index = index;
    p.shape = roles;
    return p;
  };
  live_->observe_pod(replica("worker", 1));
  live_->observe_pod(bound(replica("master", 0), "n1"));
  live_->observe_pod(bound(replica("worker", 0), "n1"));
  live_->tick();
  EXPECT_EQ(actions(gang::ActionKind::kBind), std::vector<std::string>{"tj-worker-1@n2"});
  // Queued whole by its pending worker first (seen first), then resumed around the others.
  const Json jobs = live_->jobs_json()["jobs"];
  EXPECT_EQ(jobs.back()["phase"], "Admitted") << jobs.dump();
  EXPECT_EQ(used_cpu(), 3000);
}

TEST_F(GangFaults, AGangThatCannotBeFinishedIsReleasedAfterTheReservationTtl) {
  // The pending members do not fit: n1 is full with the bound ones, nothing else reported.
  report("n1", 2000);
  live_->observe_pod(bound(member_of("pgb-0", 3), "n1"));
  live_->observe_pod(bound(member_of("pgb-1", 3), "n1"));
  live_->observe_pod(member_of("pgb-2", 3));
  live_->tick();
  EXPECT_EQ(actions(gang::ActionKind::kBind), std::vector<std::string>{});
  EXPECT_EQ(used_cpu(), 2000);
  gang::StateGauges g = live_->gauges();
  EXPECT_EQ(g.partial_gangs, 1);
  clock_.advance(std::chrono::seconds(30));
  live_->tick();
  EXPECT_EQ(actions(gang::ActionKind::kDelete), std::vector<std::string>{});
  EXPECT_GE(live_->gauges().oldest_partial_gang_seconds, 30);
  clock_.advance(std::chrono::seconds(31));
  live_->tick();
  EXPECT_EQ(actions(gang::ActionKind::kDelete), (std::vector<std::string>{"pgb-0", "pgb-1"}));
  // The released pods run on through their grace period: their room is held until they are
  // gone.
  EXPECT_EQ(used_cpu(), 2000);
  live_->forget_pod(bound(member_of("pgb-0", 3), "n1"));
  live_->forget_pod(bound(member_of("pgb-1", 3), "n1"));
  EXPECT_EQ(used_cpu(), 0);
  g = live_->gauges();
  EXPECT_EQ(g.partial_gangs, 0);
  EXPECT_EQ(g.oldest_partial_gang_seconds, 0);
}

TEST_F(GangFaults, AnOlderUnboundCopyOfABoundPodDoesNotPlaceItAgain) {
  report("n1", 8000);
  gang::PodView lone = pod_of("lone", gang::PodRole::kNone, "", 2000);
  live_->observe_pod(bound(lone, "n1"));  // bound by an earlier process: its room is held
  EXPECT_EQ(used_cpu(), 2000);
  live_->observe_pod(lone);  // a re-feed from a snapshot taken before it was bound
  live_->tick();
  EXPECT_EQ(actions(gang::ActionKind::kBind), std::vector<std::string>{});
  EXPECT_EQ(used_cpu(), 2000);
  live_->forget_pod(bound(lone, "n1"));
  EXPECT_EQ(used_cpu(), 0);
}

}  // namespace
}  // namespace gang_faults_test
}  // namespace gleaner::scheduler
