// What the live loop's jobs hold, and whose queue they are in: a pod of our gang that
// kube-scheduler bound is counted once, and jobs that named no queue follow their
// namespace's leaf when an ElasticQuotaTree appears.
#include <gtest/gtest.h>

#include "scheduler/gang/gang_scheduler.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace gang_accounting_test {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

using live_testing::lone_batch_pod;

// A live loop managing c1, whose node n1 reported 8 cores; every action it takes recorded.
class LiveGangAccounting : public live_testing::RecordedOneNodeLive {};

std::vector<std::string> queues_of_jobs(const gang::GangScheduler& live) {
  std::vector<std::string> out;
  const Json doc = live.jobs_json();
  for (const Json& j : doc["jobs"])
    out.push_back(j.value("queue", ""));
  return out;
}

TEST_F(LiveGangAccounting, JobsAdmittedBeforeTheQuotaTreeJoinTheirNamespacesQueue) {
  live->observe_pod(lone_batch_pod("team-a", "a1", 4000));
  live->observe_pod(lone_batch_pod("team-a", "a2", 4000));
  live->tick();
  ASSERT_EQ(count(gang::ActionKind::kBind), 2u);
  EXPECT_EQ(queues_of_jobs(*live), (std::vector<std::string>{"default", "default"}));

  // The tree appears: team-a's namespace belongs to leaf team-a, guaranteed the node.
  ASSERT_TRUE(live->set_quotas({QueueSpec{"team-a", "root", Resources{8000, 64 * kGiB},
                                          std::nullopt, std::nullopt}},
                               std::nullopt, {{"team-a", "team-a"}})
                  .ok());
  EXPECT_EQ(queues_of_jobs(*live), (std::vector<std::string>{"team-a", "team-a"}));
  // team-a's next job finds its own queue at its min: it waits, and preempts neither of
  // its namespace's running jobs (in default they looked borrowed).
  live->observe_pod(lone_batch_pod("team-a", "a3", 4000));
  live->tick();
  EXPECT_EQ(count(gang::ActionKind::kDelete), 0u) << live->jobs_json().dump();
  EXPECT_EQ(count(gang::ActionKind::kBind), 2u);
}

TEST_F(LiveGangAccounting, WhatAMaxLeavesUnlimitedReadsUnlimited) {
  // A max naming cpu only, as an ElasticQuotaTree leaf may have it: memory and GPUs are not
  // limited, and /api/v1/queues says so instead of an internal number (or 0).
  ASSERT_TRUE(
      live->set_quotas({QueueSpec{"team-a", "root", std::nullopt,
                                  Resources{8000, INT64_MAX, kGpusUnlimited}, std::nullopt}},
                       std::nullopt, {})
          .ok());
  const Json doc = live->queues_json();
  Json team_a;
  for (const Json& q : doc["queues"])
    if (q.value("name", "") == "team-a") team_a = q;
  ASSERT_TRUE(team_a.is_object()) << doc.dump();
  EXPECT_EQ(team_a["max"]["cpuMillicores"], 8000);
  EXPECT_EQ(team_a["max"]["memoryBytes"], "unlimited");
  EXPECT_EQ(team_a["max"]["gpus"], "unlimited");
  // And in messages: a min above such a max names the limit it breaks, not the others.
  const Status bad =
      live->set_quotas({QueueSpec{"b", "root", Resources{9000, 0, 0},
                                  Resources{8000, INT64_MAX, kGpusUnlimited}, std::nullopt}},
                       std::nullopt, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("max cpu=8000m memory=unlimited nvidia.com/gpu=unlimited"),
            std::string::npos)
      << bad.error().message;
}

TEST_F(LiveGangAccounting, ADriverBoundByAnotherSchedulerTakesItsJobsRoomOnce) {
  // A multi-cluster application of c1 (suspended until placed): a driver and two executors
  // of one core each.
  gang::AppView app;
  app.cluster = "c1";
  app.ns = "default";
  app.name = "pi";
  app.uid = "pi-uid";
  app.suspended = true;
  app.shape = gang::GangShape{Resources{1000, kGiB}, Resources{1000, kGiB}, 2};
  live->observe_app(app);
  live->tick();
  ASSERT_EQ(count(gang::ActionKind::kPlaceApp), 1u);
  live->app_recorded("c1", "default", "pi");
  auto used = [&] { return live->nodes_json()["nodes"][0]["used"]["cpuMillicores"].get<int>(); };
  ASSERT_EQ(used(), 3000);
  auto driver_bound = [&] { return live->jobs_json()["jobs"][0]["pods"][0].value("bound", true); };
  EXPECT_FALSE(driver_bound()) << "room is held for the driver, but no driver pod exists yet";

  // Its SparkApplication names no schedulerName: kube-scheduler binds the driver and the
  // executors to n1. Each takes the room the job holds for it, and nothing more.
  gang::PodView driver = lone_batch_pod("default", "pi-driver", 1000);
  driver.ours = false;
  driver.role = gang::PodRole::kDriver;
  driver.gang = "pi";
  driver.node = "n1";
  driver.phase = "Running";
  live->observe_pod(driver);
  EXPECT_EQ(used(), 3000) << live->jobs_json().dump();
  EXPECT_TRUE(driver_bound());
  for (const char* name : {"pi-exec-1", "pi-exec-2"}) {
    gang::PodView executor = driver;
    executor.name = name;
    executor.uid = name;
    executor.role = gang::PodRole::kExecutor;
    live->observe_pod(executor);
  }
  EXPECT_EQ(used(), 3000) << live->jobs_json().dump();
  // The node still reports 3 cores of batch: nothing is over-committed, nothing reclaimed.
  ASSERT_FALSE(live->apply_report(live_testing::node_report("n1", 2, 3000, 64 * kGiB, "c1")));
  live->tick();
  EXPECT_EQ(count(gang::ActionKind::kDelete), 0u) << live->jobs_json().dump();
  EXPECT_EQ(live->jobs_json()["jobs"][0].value("phase", ""), "Running");
  // The driver's end ends the job and frees its room.
  driver.phase = "Succeeded";
  live->observe_pod(driver);
  EXPECT_EQ(live->jobs_json()["jobs"][0].value("phase", ""), "Completed");
}

}  // namespace
}  // namespace gang_accounting_test
}  // namespace gleaner::scheduler
