// The live loop fed a pod after its deletion (an informer re-feeding pods from an older
// snapshot on another thread): the deleted pod stays gone and holds no room.
#include <gtest/gtest.h>

#include "scheduler/server/live_scheduler.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler {
namespace {

TEST(LiveStalePod, APodSeenAgainAfterItWasForgottenHoldsNoRoom) {
  SystemClock clock;
  server::LiveMetrics metrics;
  server::LiveOptions options;
  options.clusters = {"c1"};
  auto live = server::LiveScheduler::create(options, {}, clock, metrics);
  ASSERT_TRUE(live.ok());
  ASSERT_FALSE(
      (*live)->apply_report(live_testing::node_report("n1", 1, 8000, int64_t{16} << 30, "c1")));
  server::PodView pod;
  pod.cluster = "c1";
  pod.ns = "default";
  pod.name = "batch-job";
  pod.uid = "uid-1";
  pod.node = "n1";
  pod.phase = "Running";
  pod.batch = true;
  pod.request = Resources{1000, int64_t{1} << 30};
  auto used = [&] { return (*live)->nodes_json()["nodes"][0]["used"]["cpuMillicores"]; };

  (*live)->observe_pod(pod);
  EXPECT_EQ(used(), 1000);
  (*live)->forget_pod(pod);
  EXPECT_EQ(used(), 0);
  (*live)->observe_pod(pod);  // the stale copy
  EXPECT_EQ(used(), 0);
}

}  // namespace
}  // namespace gleaner::scheduler
