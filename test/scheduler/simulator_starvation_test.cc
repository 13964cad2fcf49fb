// The simulator is truthful about starvation (#61 item 12): BE on a node whose batch CPU
// falls below what its pods ask gets what the node has left, so its jobs finish late or not
// at all; executors that cannot be placed again leave their job slower, or stalled.
#include <string>

#include <gtest/gtest.h>

#include "common/json_util.h"
#include "scheduler/sim/simulator.h"

namespace gleaner::scheduler::sim {
namespace {

// One node, and one job of a 1-core driver and two 1-core executors for 60 s, started at 0.
Json run_starved(const std::string& node_changes, const std::string& executor_memory = "1Gi",
                 const std::string& policy = "{}") {
  const std::string text = R"({"nodes": [{"name": "n", "batch": {"cpu": "3", "memory": "6Gi"},
      "changes": )" + node_changes +
                           R"(}], "policy": )" + policy + R"(,
    "jobs": [{"name": "etl", "durationSeconds": 60, "driver": {"cpu": "1", "memory": "1Gi"},
              "executor": {"cpu": "1", "memory": ")" +
                           executor_memory + R"(", "instances": 2}}]})";
  auto out = simulate(text, "in.json");
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  return out.ok() ? Json::parse(*out)["jobs"][0] : Json::object();
}

TEST(SimulatorStarvation, BatchCpuAtZeroRightAfterTheStartStallsTheJobUntilItReturns) {
  // 1 s at full speed, 30 s with no batch CPU at all, then the 59 s left.
  const std::string changes = R"([{"at": 1, "batch": {"cpu": "0", "memory": "6Gi"}},
                                   {"at": 31, "batch": {"cpu": "3", "memory": "6Gi"}}])";
  const Json late = run_starved(changes);
  EXPECT_EQ(late["state"], "Completed") << late.dump();
  EXPECT_EQ(late["startedAt"], 0);
  EXPECT_EQ(late["plannedFinishAt"], 60);
  EXPECT_EQ(late["finishedAt"], 90) << late.dump();
  EXPECT_EQ(late["stalledSeconds"], 30);
  EXPECT_EQ(late["executorSecondsStarved"], 60) << "two executors with nothing for 30 s";
  EXPECT_EQ(late["executorSecondsMissing"], 0);
  // Stopped at 70 s, past its planned end: not finished, two thirds done.
  const Json stopped = run_starved(changes, "1Gi", R"({"untilSeconds": 70})");
  EXPECT_EQ(stopped["state"], "Running") << stopped.dump();
  EXPECT_FALSE(stopped.contains("finishedAt")) << stopped.dump();
  EXPECT_EQ(stopped["workDonePercent"], 66);
}

TEST(SimulatorStarvation, HalfTheBatchCpuItsPodsAskForHalvesTheirPace) {
  // At 10 s the node has 1.5 of the 3 cores its pods ask for, for good: the 50 s of work
  // left take 100 s.
  const Json slow = run_starved(R"([{"at": 10, "batch": {"cpu": "1500m", "memory": "6Gi"}}])");
  EXPECT_EQ(slow["state"], "Completed");
  EXPECT_EQ(slow["finishedAt"], 110) << slow.dump();
  EXPECT_EQ(slow["stalledSeconds"], 0);
  EXPECT_EQ(slow["executorSecondsStarved"], 100) << "two executors at half speed for 100 s";
}

TEST(SimulatorStarvation, EvictedExecutorsWithNoRoomLeaveTheJobStalled) {
  // At 10 s the node keeps 1Gi of batch memory (the driver's) and its agent evicts both
  // 2Gi executors: Spark asks for two more, which no node can take, ever.
  const std::string both = R"([{"at": 10, "batch": {"cpu": "3", "memory": "1Gi"},
                                "evict": {"memory": "4Gi"}}])";
  const Json stalled = run_starved(both, "2Gi", R"({"untilSeconds": 100})");
  EXPECT_EQ(stalled["state"], "Running") << stalled.dump();
  EXPECT_FALSE(stalled.contains("finishedAt"));
  EXPECT_EQ(stalled["executorsEvicted"], 2);
  EXPECT_EQ(stalled["replacementsAsked"], 2);
  EXPECT_EQ(stalled["executorsReplaced"], 0) << "asked for, never placed";
  EXPECT_EQ(stalled["stalledSince"], 10);
  EXPECT_EQ(stalled["stalledSeconds"], 90);
  EXPECT_EQ(stalled["executorSecondsMissing"], 180);
  EXPECT_EQ(stalled["workDonePercent"], 16);
  // One evicted (2Gi freed of 3Gi asked): the job runs on with the other, at half pace,
  // and ends at 10 + 100 s.
  const std::string one = R"([{"at": 10, "batch": {"cpu": "3", "memory": "3Gi"},
                               "evict": {"memory": "2Gi"}}])";
  const Json slower = run_starved(one, "2Gi");
  EXPECT_EQ(slower["state"], "Completed") << slower.dump();
  EXPECT_EQ(slower["finishedAt"], 110);
  EXPECT_EQ(slower["replacementsAsked"], 1);
  EXPECT_EQ(slower["executorsReplaced"], 0);
  EXPECT_EQ(slower["executorSecondsMissing"], 100);
}

}  // namespace
}  // namespace gleaner::scheduler::sim
