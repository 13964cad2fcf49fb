// The live loop fed a pod after its deletion (an informer re-feeding pods from an older
// snapshot on another thread): the deleted pod stays gone and holds no room.
#include <gtest/gtest.h>

#include "scheduler/gang/gang_scheduler.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler {
namespace {

TEST(LiveStalePod, APodSeenAgainAfterItWasForgottenHoldsNoRoom) {
  SystemClock clock;
  server::LiveMetrics metrics;
  auto live = live_testing::one_node_live(clock, metrics, int64_t{16} << 30);
  ASSERT_NE(live, nullptr);
  gang::PodView pod;
  pod.cluster = "c1";
  pod.ns = "default";
  pod.name = "batch-job";
  pod.uid = "uid-1";
  pod.node = "n1";
  pod.phase = "Running";
  pod.batch = true;
  pod.request = Resources{1000, int64_t{1} << 30};
  auto used = [&] { return live->nodes_json()["nodes"][0]["used"]["cpuMillicores"]; };

  live->observe_pod(pod);
  EXPECT_EQ(used(), 1000);
  live->forget_pod(pod);
  EXPECT_EQ(used(), 0);
  live->observe_pod(pod);  // the stale copy
  EXPECT_EQ(used(), 0);
}

}  // namespace
}  // namespace gleaner::scheduler
