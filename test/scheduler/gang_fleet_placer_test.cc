// The fleet placer's books on their own: one placement record per application, and what
// is due for a gang whose placement is not yet recorded or that waits to be submitted again.
#include <vector>

#include <gtest/gtest.h>

#include "scheduler/gang/fleet_placer.h"

namespace gleaner::scheduler::gang {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace gang_fleet_placer_test {
namespace {

TEST(FleetPlacer, OneRecordPerApplicationUntilForgotten) {
  FleetPlacer placer(5);
  EXPECT_FALSE(placer.placed("a/ns/app"));
  EXPECT_EQ(placer.gang_of("a/ns/app"), nullptr);
  placer.record("a/ns/app", "b/ns/app");
  ASSERT_NE(placer.gang_of("a/ns/app"), nullptr);
  EXPECT_EQ(*placer.gang_of("a/ns/app"), "b/ns/app");
  placer.forget("a/ns/app");
  EXPECT_FALSE(placer.placed("a/ns/app"));
}

TEST(FleetPlacer, AnUnrecordedPlacementIsSentAgainAfterTheRetryPeriod) {
  FleetPlacer placer(5);
  Gang g;
  g.key = "b/ns/app";
  g.origin = "a";
  g.cluster = "b";
  g.job = 1;
  placer.sent(g, 100);
  EXPECT_FALSE(FleetPlacer::due(g, 104.9).send);
  EXPECT_TRUE(FleetPlacer::due(g, 104.9).keep);
  EXPECT_TRUE(FleetPlacer::due(g, 105).send);

  g.app_recorded = true;  // recorded on the origin: nothing more to send
  EXPECT_FALSE(FleetPlacer::due(g, 200).send);
  EXPECT_FALSE(FleetPlacer::due(g, 200).keep);
}

TEST(FleetPlacer, AWithdrawnPlacementIsSubmittedAgainOnce) {
  FleetPlacer placer(5);
  Gang g;
  g.key = "app:a/ns/app";
  g.origin = "a";
  placer.resubmit_later(g, g.key, 10);
  EXPECT_FALSE(FleetPlacer::due(g, 14).resubmit);
  EXPECT_TRUE(FleetPlacer::due(g, 14).keep);
  const FleetPlacer::Due now = FleetPlacer::due(g, 15);
  EXPECT_TRUE(now.resubmit);
  EXPECT_FALSE(now.keep);  // submitted: nothing left to retry

  // Keys with nothing left leave the retry set.
  std::vector<std::string> seen;
  placer.retry_each([&](const std::string& key) {
    seen.push_back(key);
    return false;
  });
  placer.retry_each([&](const std::string& key) {
    seen.push_back(key);
    return true;
  });
  EXPECT_EQ(seen, std::vector<std::string>{"app:a/ns/app"});
}

}  // namespace
}  // namespace gang_fleet_placer_test
}  // namespace gleaner::scheduler::gang
