#include "agent/qos/evict.h"

#include <gtest/gtest.h>

#include "test/agent/qos/qos_test_util.h"

namespace gleaner::agent::qos {
namespace {
using namespace test;

config::ResourceThresholdStrategy enabled() {
  config::ResourceThresholdStrategy s;
  s.enable = true;
  return s;
}

FakePod be(const std::string& name, int priority, const std::string& memory,
           const std::string& cpu = "0", const std::string& batch_cpu = "1000") {
  FakePod p{.name = name, .uid = name, .qos_label = "BE", .priority = priority};
  p.memory_usage = memory;
  p.cpu_usage = cpu;
  p.containers = Json::array({container("c", {{"kubernetes.io/batch-cpu", batch_cpu}})});
  return p;
}

// 100Gi node at 80% usage, threshold 70, lower 68: free 12Gi.
FakeNode busy_memory() {
  FakeNode n;
  n.memory = n.allocatable_memory = "100Gi";
  n.node_memory_usage = "80Gi";
  return n;
}

std::vector<std::string> keys(const Plan& p) {
  std::vector<std::string> out;
  for (const auto& e : p.evictions)
    out.push_back(e.pod);
  return out;
}

TEST(MemoryEvict, LowestPriorityFirstThenLargestMemory) {
  auto snap = make_snapshot(busy_memory(), {be("a", 5500, "4Gi"), be("b", 5100, "5Gi"),
                                            be("c", 5100, "8Gi"), be("d", 5900, "30Gi")});
  Plan plan = plan_memory_evict(snap, enabled(), {}, 100, false);
  // Priority 5100 first (c 8Gi, then b 5Gi) = 13Gi >= 12Gi.
  EXPECT_EQ(keys(plan), (std::vector<std::string>{"default/c", "default/b"}));
  EXPECT_EQ(plan.evictions[0].reason, kReasonMemoryEvict);
}

TEST(MemoryEvict, BelowThresholdOrDisabledDoesNothing) {
  FakeNode n = busy_memory();
  n.node_memory_usage = "69Gi";
  EXPECT_TRUE(plan_memory_evict(make_snapshot(n, {be("a", 1, "9Gi")}), enabled(), {}, 0, false)
                  .evictions.empty());
  auto snap = make_snapshot(busy_memory(), {be("a", 1, "9Gi")});
  EXPECT_TRUE(plan_memory_evict(snap, {}, {}, 0, false).evictions.empty());
}

TEST(MemoryEvict, LowerPercentSetsHowMuchIsFreed) {
  auto s = enabled();
  s.memory_evict_lower_percent = 75;  // free 5Gi only
  auto snap = make_snapshot(busy_memory(), {be("a", 1, "6Gi"), be("b", 1, "4Gi")});
  EXPECT_EQ(keys(plan_memory_evict(snap, s, {}, 0, false)),
            (std::vector<std::string>{"default/a"}));
}

TEST(MemoryEvict, TerminatingPodsCountAsReleasedAndAreNotChosen) {
  FakePod going = be("going", 1, "10Gi");
  going.terminating = true;
  auto snap = make_snapshot(busy_memory(), {going, be("x", 2, "3Gi"), be("y", 3, "3Gi")});
  // 10Gi already on its way out: 2Gi more needed.
  EXPECT_EQ(keys(plan_memory_evict(snap, enabled(), {}, 0, false)),
            (std::vector<std::string>{"default/x"}));
  // Pods we evicted before and are still listed count the same way.
  EvictionMemory state;
  state.evicted_at_s["default/x"] = 0;
  state.evicted_at_s["default/going"] = 0;
  EXPECT_TRUE(plan_memory_evict(snap, enabled(), state, 10, false).evictions.empty());
}

TEST(MemoryEvict, CoolDownOfFourSecondsAndRecording) {
  auto snap = make_snapshot(busy_memory(), {be("a", 1, "20Gi"), be("b", 1, "20Gi")});
  EvictionMemory state;
  Plan first = plan_memory_evict(snap, enabled(), state, 100, false);
  ASSERT_EQ(first.evictions.size(), 1u);
  record_evictions(first, snap, 100, state);
  EXPECT_EQ(state.last_memory_evict_s, 100);
  EXPECT_TRUE(plan_memory_evict(snap, enabled(), state, 103.9, false).evictions.empty());
  // After the cool-down the evicted pod (accepted, still listed) counts as released.
  record_eviction_answer(first.evictions[0].pod, true, 100.1, state);
  EXPECT_TRUE(plan_memory_evict(snap, enabled(), state, 104, false).evictions.empty());
  state.evicted_at_s.clear();
  EXPECT_EQ(plan_memory_evict(snap, enabled(), state, 104, false).evictions.size(), 1u);
  // Pods gone from the snapshot are forgotten.
  state.evicted_at_s["default/gone"] = 1;
  record_evictions({}, snap, 105, state);
  EXPECT_EQ(state.evicted_at_s.count("default/gone"), 0u);
}

TEST(MemoryEvict, ARefusedEvictionIsAskedAgainAfterItsBackOffAndReleasesNothing) {
  auto snap = make_snapshot(busy_memory(), {be("a", 1, "20Gi"), be("b", 2, "20Gi")});
  EvictionMemory state;
  Plan first = plan_memory_evict(snap, enabled(), state, 100, false);
  ASSERT_EQ(keys(first), (std::vector<std::string>{"default/a"}));
  record_evictions(first, snap, 100, state);
  // A PodDisruptionBudget says not now: a's memory is still there, and a is asked again
  // at the first decision after the cool-down and its back-off (1 s).
  record_eviction_answer("default/a", false, 100.1, state);
  Plan again = plan_memory_evict(snap, enabled(), state, 104, false);
  EXPECT_EQ(keys(again), (std::vector<std::string>{"default/a"}));
  record_evictions(again, snap, 104, state);
  // Refused again and again: the back-off doubles (2 s, 4 s, ...) up to 10 s; within it
  // the next candidate is chosen instead, since a releases nothing.
  record_eviction_answer("default/a", false, 104.1, state);
  record_eviction_answer("default/a", false, 104.1, state);
  EXPECT_DOUBLE_EQ(state.eviction_refused.at("default/a").retry_at_s, 104.1 + 4);
  EXPECT_EQ(keys(plan_memory_evict(snap, enabled(), state, 108, false)),
            (std::vector<std::string>{"default/b"}));
  EXPECT_EQ(keys(plan_memory_evict(snap, enabled(), state, 108.2, false)),
            (std::vector<std::string>{"default/a"}));
  for (int i = 0; i < 5; ++i)
    record_eviction_answer("default/a", false, 110, state);
  EXPECT_DOUBLE_EQ(state.eviction_refused.at("default/a").retry_at_s, 110 + kEvictRetryMaxS);
  // Accepted at last: going, released, and its back-off forgotten.
  record_eviction_answer("default/a", true, 121, state);
  EXPECT_TRUE(plan_memory_evict(snap, enabled(), state, 125, false).evictions.empty());
  EXPECT_EQ(state.eviction_refused.count("default/a"), 0u);
}

TEST(MemoryEvict, AnUnansweredEvictionIsNotAskedTwiceNorCountedAsReleased) {
  auto snap = make_snapshot(busy_memory(), {be("a", 1, "20Gi"), be("b", 2, "20Gi")});
  EvictionMemory state;
  record_evictions(plan_memory_evict(snap, enabled(), state, 100, false), snap, 100, state);
  EXPECT_EQ(keys(plan_memory_evict(snap, enabled(), state, 104, false)),
            (std::vector<std::string>{"default/b"}));
}

TEST(MemoryEvict, StaleDataHolds) {
  auto snap = make_snapshot(busy_memory(), {be("a", 1, "20Gi")});
  Plan plan = plan_memory_evict(snap, enabled(), {}, 0, true);
  EXPECT_TRUE(plan.evictions.empty());
  EXPECT_FALSE(plan.notes.empty());
}

config::ResourceThresholdStrategy cpu_evict() {
  auto s = enabled();
  s.cpu_evict_be_satisfaction_lower_percent = 60;
  s.cpu_evict_be_satisfaction_upper_percent = 80;
  return s;
}

TEST(CpuEvict, EvictsUntilReleasedRequestsReachTheUpperSatisfaction) {
  // BE requests 10 cores, limited to 4 (40%), using 3.8 (95% >= 90%).
  // Release 10000 * (80 - 40) / 100 = 4000 m of requests.
  auto snap =
      make_snapshot({}, {be("a", 5000, "0", "1900m", "3000"), be("b", 5000, "0", "1500m", "3000"),
                         be("c", 4000, "0", "400m", "4000")});
  Plan plan = plan_cpu_evict(snap, cpu_evict(), 4000, {}, 50, false);
  EXPECT_EQ(keys(plan), (std::vector<std::string>{"default/c"}));
  snap =
      make_snapshot({}, {be("a", 5000, "0", "1900m", "3000"), be("b", 5000, "0", "1500m", "3000"),
                         be("c", 5000, "0", "400m", "2000")});
  // Requests 8000, satisfaction 50%: release 2400; equal priorities, largest user first.
  EXPECT_EQ(keys(plan_cpu_evict(snap, cpu_evict(), 4000, {}, 50, false)),
            (std::vector<std::string>{"default/a"}));
}

TEST(CpuEvict, NotWhenSatisfiedOrIdleOrUnconfiguredOrCooling) {
  auto snap = make_snapshot({}, {be("a", 1, "0", "3800m", "10000")});
  EXPECT_TRUE(plan_cpu_evict(snap, cpu_evict(), 7000, {}, 0, false).evictions.empty());  // 70%
  EXPECT_TRUE(plan_cpu_evict(snap, cpu_evict(), 5000, {}, 0, false).evictions.empty());  // idle
  EXPECT_TRUE(plan_cpu_evict(snap, enabled(), 4000, {}, 0, false).evictions.empty());
  EvictionMemory state;
  state.last_cpu_evict_s = 0;
  EXPECT_TRUE(plan_cpu_evict(snap, cpu_evict(), 4000, state, 19, false).evictions.empty());
  EXPECT_EQ(plan_cpu_evict(snap, cpu_evict(), 4000, state, 20, false).evictions.size(), 1u);
  EXPECT_TRUE(plan_cpu_evict(snap, cpu_evict(), 4000, {}, 0, true).evictions.empty());
}

config::ResourceThresholdStrategy windowed(int64_t seconds) {
  auto s = cpu_evict();
  s.cpu_evict_time_window_seconds = seconds;
  return s;
}

TEST(CpuEvict, WindowAveragesUsageAndLimitOverEarlierPasses) {
  // Now: limited to 4 cores (40%), using 3.8: starved. Over the window the limit averaged
  // 7 cores (70%, above lower 60%): not starved on average, nothing is evicted.
  auto snap = make_snapshot({}, {be("a", 1, "0", "3800m", "10000")});
  EvictionMemory state;
  for (double at : {7.0, 8.0, 9.0})
    record_be_cpu(state, windowed(5), {at, 7500, 8000});
  EXPECT_TRUE(plan_cpu_evict(snap, windowed(5), 4000, state, 10, false).evictions.empty());
  // The same figures starved throughout: the average is starved too.
  EvictionMemory starved;
  for (double at : {7.0, 8.0, 9.0})
    record_be_cpu(starved, windowed(5), {at, 3800, 4000});
  EXPECT_EQ(plan_cpu_evict(snap, windowed(5), 4000, starved, 10, false).evictions.size(), 1u);
}

TEST(CpuEvict, WindowWaitsUntilHalfOfItIsCovered) {
  auto snap = make_snapshot({}, {be("a", 1, "0", "3800m", "10000")});
  EvictionMemory state;
  record_be_cpu(state, windowed(10), {8, 3800, 4000});  // 2 s of a 10 s window
  EXPECT_TRUE(plan_cpu_evict(snap, windowed(10), 4000, state, 10, false).evictions.empty());
  state.be_cpu_history = {{4, 3800, 4000}, {8, 3800, 4000}};  // 6 s covered
  EXPECT_EQ(plan_cpu_evict(snap, windowed(10), 4000, state, 10, false).evictions.size(), 1u);
}

TEST(CpuEvict, HistoryKeepsOnlyTheWindow) {
  EvictionMemory state;
  for (double at = 0; at <= 20; at += 1)
    record_be_cpu(state, windowed(5), {at, 1, 1});
  ASSERT_FALSE(state.be_cpu_history.empty());
  EXPECT_GE(state.be_cpu_history.front().at_s, 15);
  record_be_cpu(state, cpu_evict(), {21, 1, 1});  // window removed from the config
  EXPECT_TRUE(state.be_cpu_history.empty());
}

}  // namespace
}  // namespace gleaner::agent::qos
