// The LS demand bound the eBPF probe wakes the fast path at.
#include "agent/daemon/wake_bounds.h"

#include <gtest/gtest.h>

namespace gleaner::agent {
namespace {
using namespace std::chrono_literals;
using Time = std::chrono::steady_clock::time_point;

const Time kNow = Time{} + 100s;

TEST(DemandWakeBound, OneSuppressStepAboveWhatTheCountersShow) {
  EXPECT_EQ(demand_wake_bound(300, std::nullopt, kNow, 2), 500);
  // A tenth of a large node's CPUs, at least 100 millicores on a small one.
  EXPECT_EQ(demand_wake_bound(300, std::nullopt, kNow, 16), 1900);
  EXPECT_EQ(demand_wake_bound(300, std::nullopt, kNow, 1), 400);
}

// LS contended for its CPUs shows a demand (CPU time plus waits) above its CPU time for as
// long as it stays contended: re-armed from the counters alone, it would signal at every
// minimum gap. Above a recent wake-up's demand it waits for a further rise.
TEST(DemandWakeBound, StaysAboveTheDemandAWakeUpCarriedWithinTheSpan) {
  const NotedDemand noted{kNow - 100ms, 2600};
  EXPECT_EQ(demand_wake_bound(2000, noted, kNow, 2), 2800);
  // Below what the counters show, the noted demand changes nothing.
  EXPECT_EQ(demand_wake_bound(2700, noted, kNow, 2), 2900);
}

// A rising surge keeps signalling: once its last signal is older than the span, the bound is
// back to the counters' figure.
TEST(DemandWakeBound, ADemandOlderThanTheSpanNoLongerCounts) {
  const NotedDemand noted{kNow - kNotedDemandSpan, 2600};
  EXPECT_EQ(demand_wake_bound(2000, noted, kNow, 2), 2200);
}

}  // namespace
}  // namespace gleaner::agent
