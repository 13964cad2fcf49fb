#include "agent/bpf/running_slots.h"

#include <gtest/gtest.h>

namespace gleaner::agent::bpf {
namespace {

gleaner_cpu_slot slot(uint32_t index, uint32_t tid, uint64_t arrival) {
  gleaner_cpu_slot s{};
  s.index = index;
  s.tid = tid;
  s.runtime_at_arrival_ns = arrival;
  return s;
}

TEST(RunningSlots, TheSameTasksStillRunningAgree) {
  const std::vector<gleaner_cpu_slot> read{slot(2, 100, 5'000'000), slot(0, 0, 0)};
  EXPECT_TRUE(accounted_tasks_unchanged(read, read));
}

TEST(RunningSlots, AnAccountedTaskThatSwitchedOutAndBackInDisagrees) {
  // Same thread, same cgroup, but it left and came back: its slice went to the counters.
  EXPECT_FALSE(accounted_tasks_unchanged({slot(2, 100, 5'000'000)}, {slot(2, 100, 9'000'000)}));
}

TEST(RunningSlots, AnAccountedTaskArrivingOrLeavingDisagrees) {
  EXPECT_FALSE(accounted_tasks_unchanged({slot(0, 7, 1)}, {slot(3, 200, 1)}));
  EXPECT_FALSE(accounted_tasks_unchanged({slot(3, 200, 1)}, {slot(0, 7, 1)}));
  EXPECT_FALSE(accounted_tasks_unchanged({slot(3, 200, 1)}, {slot(3, 201, 1)}));
}

TEST(RunningSlots, SwitchesAmongTasksNotAccountedAgree) {
  // The BPF program leaves tid and arrival of an unaccounted slot as they were or not:
  // neither matters, nothing was added to any counter.
  EXPECT_TRUE(
      accounted_tasks_unchanged({slot(0, 7, 1), slot(4, 9, 2)}, {slot(0, 8, 3), slot(4, 9, 2)}));
}

TEST(RunningSlots, ReadsOfDifferentCpuCountsDisagree) {
  EXPECT_FALSE(accounted_tasks_unchanged({slot(0, 0, 0)}, {slot(0, 0, 0), slot(0, 0, 0)}));
}

}  // namespace
}  // namespace gleaner::agent::bpf
