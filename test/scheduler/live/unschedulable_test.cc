// What karmada-descheduler asks the estimator (GetUnschedulableReplicas): the pods of an
// application whose gang still waits in the queue after the threshold, all of them; none for
// an application that was admitted, one in another member, or before the threshold.
#include <gtest/gtest.h>

#include "scheduler/gang/gang_scheduler.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler {
namespace {

gang::PodView driver(const std::string& name, int executors, int64_t executor_cpu) {
  gang::PodView pod;
  pod.cluster = "c1";
  pod.ns = "spark";
  pod.name = name + "-driver";
  pod.uid = "uid-" + name;
  pod.phase = "Pending";
  pod.ours = true;
  pod.role = gang::PodRole::kDriver;
  pod.gang = name;
  pod.batch = true;
  pod.request = Resources{1000, int64_t{1} << 30};
  pod.shape = gang::GangShape{Resources{1000, int64_t{1} << 30},
                              Resources{executor_cpu, int64_t{1} << 30}, executors};
  return pod;
}

TEST(LiveUnschedulable, APendingGangCountsAllItsPodsAfterTheThreshold) {
  live_testing::JumpClock clock;
  server::LiveMetrics metrics;
  auto live = live_testing::one_node_live(clock, metrics, int64_t{32} << 30);
  ASSERT_NE(live, nullptr);
  live->observe_pod(driver("fits", 3, 1000));  // 4 CPUs of 8
  live->observe_pod(driver("huge", 4, 4000));  // 17 CPUs: never fits
  live->tick();

  EXPECT_EQ(live->unschedulable_pods("c1", "spark", "huge", 0), 5);
  EXPECT_EQ(live->unschedulable_pods("c1", "spark", "fits", 0), 0) << "admitted";
  EXPECT_EQ(live->unschedulable_pods("c2", "spark", "huge", 0), 0) << "another member";
  EXPECT_EQ(live->unschedulable_pods("c1", "spark", "huge", 300), 0) << "not 300 s yet";
  clock.advance(std::chrono::seconds(301));
  EXPECT_EQ(live->unschedulable_pods("c1", "spark", "huge", 300), 5);
}

}  // namespace
}  // namespace gleaner::scheduler
