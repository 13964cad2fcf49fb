// Spark's operator retries an application whose driver failed: a new driver pod comes,
// sometimes before the old executors are gone. The new driver is a new run of the
// application and is placed like any driver; the old run's pods hold nothing more.
#include <gtest/gtest.h>

#include "scheduler/gang/gang_scheduler.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler {
namespace {

gang::PodView spark_pod(const std::string& name, gang::PodRole role) {
  gang::PodView pod;
  pod.cluster = "c1";
  pod.ns = "default";
  pod.name = name;
  pod.uid = name + "-uid";
  pod.phase = "Pending";
  pod.ours = true;
  pod.role = role;
  pod.gang = "pi";
  pod.batch = true;
  pod.request = Resources{1000, int64_t{1} << 30};
  if (role == gang::PodRole::kDriver) {
    pod.shape = gang::GangShape{pod.request, pod.request, 1};
  }
  return pod;
}

TEST(LiveDriverRetry, ADriverRetriedBeforeTheOldExecutorsWentIsPlaced) {
  SystemClock clock;
  server::LiveMetrics metrics;
  auto live = live_testing::one_node_live(clock, metrics, int64_t{16} << 30);
  ASSERT_NE(live, nullptr);
  std::vector<gang::Action> actions;
  live->set_sinks([&](gang::Action a) { actions.push_back(std::move(a)); }, nullptr);
  auto bound = [&](const std::string& uid) {
    for (const gang::Action& a : actions)
      if (a.kind == gang::ActionKind::kBind && a.uid == uid) return true;
    return false;
  };
  auto run_on_n1 = [&](gang::PodView pod) {
    pod.node = "n1";
    pod.phase = "Running";
    live->observe_pod(pod);
    return pod;
  };

  gang::PodView driver = spark_pod("pi-driver", gang::PodRole::kDriver);
  live->observe_pod(driver);
  live->tick();
  ASSERT_TRUE(bound(driver.uid));
  driver = run_on_n1(driver);
  gang::PodView executor = spark_pod("pi-exec-1", gang::PodRole::kExecutor);
  live->observe_pod(executor);
  ASSERT_TRUE(bound(executor.uid));
  executor = run_on_n1(executor);

  // The driver fails; the operator's retry creates a new driver before the old executor
  // has gone.
  driver.phase = "Failed";
  live->observe_pod(driver);
  gang::PodView retry = spark_pod("pi-driver", gang::PodRole::kDriver);
  retry.uid = "pi-driver-retry-uid";
  live->observe_pod(retry);
  live->tick();
  EXPECT_TRUE(bound(retry.uid)) << live->jobs_json().dump();
  // The new run holds its driver's and its executor's room; the old executor, still bound,
  // holds its own until it goes.
  auto used = [&] { return live->nodes_json()["nodes"][0]["used"]["cpuMillicores"]; };
  EXPECT_EQ(used(), 3000);
  live->forget_pod(executor);
  EXPECT_EQ(used(), 2000);
}

}  // namespace
}  // namespace gleaner::scheduler
