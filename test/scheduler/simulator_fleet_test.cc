// The simulator's fleet scenarios: job kinds with roles and GPUs, cluster labels and
// placement, namespaces and PriorityClasses, pod events, and scenarios that must end.
#include <gtest/gtest.h>

#include "common/file_io.h"
#include "common/json_util.h"
#include "scheduler/sim/simulator.h"

namespace gleaner::scheduler::sim {
namespace {

Json simulate_ok(const std::string& text) {
  auto out = simulate(text, "in.json");
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  return out.ok() ? Json::parse(*out) : Json::object();
}

const Json& job(const Json& doc, const std::string& name) {
  for (const Json& j : doc["jobs"]) {
    if (j["name"] == name) return j;
  }
  static const Json none = Json::object();
  ADD_FAILURE() << "no job " << name;
  return none;
}

std::string fleet_kinds() {
  auto text = read_file(std::string(GLEANER_SOURCE_DIR) + "/scheduler/scenarios/fleet-kinds.json");
  EXPECT_TRUE(text.ok());
  return text.ok() ? *text : "";
}

TEST(SimulatorFleet, GpuJobsGoWhereGpusAreAndWaitForThem) {
  Json doc = simulate_ok(fleet_kinds());
  const Json& train = job(doc, "train-1");
  EXPECT_EQ(train["kind"], "PyTorchJob");
  EXPECT_EQ(train["state"], "Completed");
  EXPECT_EQ(train["cluster"], "c2") << "its placement asks for gpu=true";
  ASSERT_EQ(train["pods"].size(), 4u);
  EXPECT_EQ(train["pods"][0]["name"], "train-1-master-0");
  EXPECT_EQ(train["pods"][0]["role"], "master");
  EXPECT_EQ(train["pods"][3]["name"], "train-1-worker-2");
  for (const Json& p : train["pods"])
    EXPECT_EQ(p["node"], "c2-g1") << "the only node with GPUs";
  // The TFJob needs 2 of the 4 GPUs train-1 holds: it starts when train-1 ends.
  const Json& tf = job(doc, "train-2");
  EXPECT_EQ(tf["kind"], "TFJob");
  EXPECT_EQ(tf["startedAt"], 600);
  EXPECT_EQ(tf["pods"][0]["role"], "chief");
}

// scenarios/mpi-gang.json: two MPIJobs of a launcher and three 4-core workers on two
// 8-core nodes. Only one fits at a time; the second starts whole when the first ends, none
// of its pods bound before (a pod-by-pod placement would have started two of its workers
// at once beside the first job).
TEST(SimulatorFleet, AnMpiJobsLauncherAndWorkersArePlacedAsOneGang) {
  auto text = read_file(std::string(GLEANER_SOURCE_DIR) + "/scheduler/scenarios/mpi-gang.json");
  ASSERT_TRUE(text.ok());
  Json doc = simulate_ok(*text);
  const Json& a = job(doc, "allreduce-a");
  EXPECT_EQ(a["kind"], "MPIJob");
  EXPECT_EQ(a["startedAt"], 0);
  ASSERT_EQ(a["pods"].size(), 4u);
  EXPECT_EQ(a["pods"][0]["role"], "launcher") << "the launcher leads";
  const Json& b = job(doc, "allreduce-b");
  EXPECT_EQ(b["state"], "Completed");
  EXPECT_EQ(b["startedAt"], 600) << "waits whole for allreduce-a's room";
  ASSERT_EQ(b["pods"].size(), 4u);
  for (const Json& p : b["pods"])
    EXPECT_EQ(p["boundAt"], 600) << p.dump();
}

TEST(SimulatorFleet, AJobWantingMoreGpusThanItsOnlyAllowedClusterHasIsUnschedulable) {
  // 8 GPUs (a master and 7 workers of one each); c2, the only cluster its placement allows,
  // has 4 in all. Batch room is plenty: only the Nodes' allocatable GPUs keep it out, for
  // ever, so it is unschedulable (not waiting for room that never comes).
  const char* text = R"({"clusters": [{"name": "c1"}, {"name": "c2"}],
    "nodes": [{"name": "c1-n1", "cluster": "c1", "batch": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "8"}},
              {"name": "c2-g1", "cluster": "c2", "batch": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "4"}}],
    "jobs": [{"name": "train", "kind": "PyTorchJob", "durationSeconds": 60,
              "placement": {"clusterNames": ["c2"]},
              "roles": [{"name": "master", "replicas": 1, "cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
                        {"name": "worker", "replicas": 7, "cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}]}]})";
  Json doc = simulate_ok(text);
  const Json& train = job(doc, "train");
  EXPECT_EQ(train["state"], "Pending");
  const std::string reason = train.value("reason", "");
  EXPECT_NE(reason.find("larger than any cluster it may go to"), std::string::npos) << reason;
  EXPECT_NE(reason.find("GPUs"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("waiting for regular allocatable"), std::string::npos) << reason;
}

TEST(SimulatorFleet, AQueueMaxThatNamesNoMemoryLeavesMemoryUnlimited) {
  // Was read as a memory max of 0: every job asking for memory was above it, unschedulable.
  const char* text = R"({"queues": [{"name": "q", "max": {"cpu": "4"}}],
    "nodes": [{"name": "n", "batch": {"cpu": "8", "memory": "16Gi"}}],
    "jobs": [{"name": "j", "queue": "q", "durationSeconds": 10,
              "driver": {"cpu": "1", "memory": "1Gi"},
              "executor": {"cpu": "1", "memory": "1Gi", "instances": 1}}]})";
  Json doc = simulate_ok(text);
  EXPECT_EQ(job(doc, "j")["state"], "Completed") << doc.dump();
}

TEST(SimulatorFleet, SparkEventsReplaceExecutorsAndReclaimOnDriverFailure) {
  Json doc = simulate_ok(fleet_kinds());
  const Json& etl = job(doc, "etl-7");
  EXPECT_EQ(etl["cluster"], "c1") << "c2 is excluded";
  EXPECT_EQ(etl["executorsReplaced"], 2);
  // The driver failed 90 s after submission (at 95): placed again and run from the start.
  EXPECT_EQ(etl["reschedules"], 1);
  EXPECT_EQ(etl["startedAt"], 95);
  EXPECT_EQ(etl["finishedAt"], 395);
  // A Spark application written with roles keeps Spark's pod names.
  const Json& report = job(doc, "report-3");
  EXPECT_EQ(report["pods"][1]["name"], "report-3-exec-1");
  EXPECT_EQ(report["pods"][1]["role"], "executor");
}

TEST(SimulatorFleet, NamespacesPickQueuesAndPriorityClassesOrderJobs) {
  // One node, room for one job at a time; both in spark-a's queue by namespace.
  Json doc = simulate_ok(R"({
    "priorityClasses": {"high": 1000, "low": -5},
    "queues": [{"name": "q", "namespaces": ["spark-a"], "max": {"cpu": "2", "memory": "8Gi"}}],
    "nodes": [{"name": "n", "batch": {"cpu": "2", "memory": "8Gi"}}],
    "jobs": [
      {"name": "low", "namespace": "spark-a", "priorityClassName": "low", "submitAt": 1,
       "durationSeconds": 10, "driver": {"cpu": "2", "memory": "1Gi"}},
      {"name": "high", "namespace": "spark-a", "priorityClassName": "high", "submitAt": 1,
       "durationSeconds": 10, "driver": {"cpu": "2", "memory": "1Gi"}},
      {"name": "over", "namespace": "spark-a", "durationSeconds": 10,
       "driver": {"cpu": "3", "memory": "1Gi"}}]})");
  EXPECT_EQ(job(doc, "high")["startedAt"], 1);
  EXPECT_EQ(job(doc, "low")["startedAt"], 11);
  // Above queue q's max: it went to q by its namespace.
  EXPECT_EQ(job(doc, "over")["state"], "Pending");
  EXPECT_NE(job(doc, "over")["reason"].get<std::string>().find("above the max of queue q"),
            std::string::npos);
}

TEST(SimulatorFleet, AJobThatCanNeverStartEndsTheSimulationPending) {
  // The issue's reproduction: driver-start-timeout.json with c2's memory at 0. c1's node
  // starts pods after 600 s, past the 120 s timeout: the job cycles through c1 forever.
  auto text =
      read_file(std::string(GLEANER_SOURCE_DIR) + "/scheduler/scenarios/driver-start-timeout.json");
  ASSERT_TRUE(text.ok());
  Json scenario = Json::parse(*text);
  scenario["nodes"][1]["batch"]["memory"] = "0";
  Json doc = simulate_ok(scenario.dump());
  const Json& j = job(doc, "report-1");
  EXPECT_EQ(j["state"], "Pending");
  EXPECT_EQ(j["reschedules"], 3);
  EXPECT_NE(j["reason"].get<std::string>().find("driver not running within 120s"),
            std::string::npos);
  EXPECT_NE(j["reason"].get<std::string>().find("stopped retrying"), std::string::npos);
}

TEST(SimulatorFleet, ACyclingJobIsRetriedWhileSomethingElseCanStillHappen) {
  // c2's node is busy until another job ends at 500, past the third timeout: report-1 keeps
  // cycling through c1's slow node, backing off from it between tries (timeouts at 121,
  // 301 and 541; admitted there again at 181 and 421, when its back-offs of 60 and 120 s
  // ended, c2 still busy), and runs in c2 from 541.
  Json doc = simulate_ok(R"({
    "clusters": ["c1", "c2"],
    "nodes": [{"name": "slow", "cluster": "c1", "batch": {"cpu": "4", "memory": "16Gi"},
               "startDelaySeconds": 600},
              {"name": "fast", "cluster": "c2", "batch": {"cpu": "4", "memory": "16Gi"}}],
    "policy": {"driverStartTimeoutSeconds": 120},
    "jobs": [
      {"name": "busy", "submitAt": 0, "durationSeconds": 500, "placement": {"clusterNames": ["c2"]},
       "driver": {"cpu": "4", "memory": "1Gi"}},
      {"name": "report-1", "submitAt": 1, "durationSeconds": 60,
       "driver": {"cpu": "1", "memory": "1Gi"}, "executor": {"cpu": "1", "memory": "1Gi", "instances": 1}}]})");
  const Json& j = job(doc, "report-1");
  EXPECT_EQ(j["state"], "Completed") << j.dump();
  EXPECT_EQ(j["cluster"], "c2");
  EXPECT_EQ(j["reschedules"], 3);
  EXPECT_EQ(j["startedAt"], 541);
}

// The simulator runs the live scheduler's gang layer: in one cluster, two PyTorchJobs whose
// operator creates every replica at once are each placed whole (the live scheduler's
// training-job gangs), so one runs and the other waits for all of its room.
TEST(SimulatorFleet, AClustersOwnTrainingJobsArePlacedWhole) {
  Json doc = simulate_ok(R"({
    "nodes": [{"name": "n", "batch": {"cpu": "4", "memory": "16Gi"}}],
    "jobs": [
      {"name": "a", "kind": "PyTorchJob", "durationSeconds": 100,
       "roles": [{"name": "master", "cpu": "1", "memory": "1Gi"},
                 {"name": "worker", "replicas": 2, "cpu": "1", "memory": "1Gi"}]},
      {"name": "b", "kind": "PyTorchJob", "durationSeconds": 100,
       "roles": [{"name": "master", "cpu": "1", "memory": "1Gi"},
                 {"name": "worker", "replicas": 2, "cpu": "1", "memory": "1Gi"}]}]})");
  EXPECT_EQ(job(doc, "a")["startedAt"], 0);
  EXPECT_EQ(job(doc, "a")["finishedAt"], 100);
  EXPECT_EQ(job(doc, "b")["startedAt"], 100) << "b took no room while a ran";
  EXPECT_EQ(doc["summary"]["completed"], 2);
}

TEST(SimulatorFleet, SameInputSameOutput) {
  auto a = simulate(fleet_kinds(), "in.json");
  auto b = simulate(fleet_kinds(), "in.json");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(SimulatorFleet, BadFleetFieldsAreNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"jobs": [{"name": "j", "kind": "XGBoostJob", "durationSeconds": 1, "roles": []}]})",
       "jobs[0].kind: expected SparkApplication, YuniKorn, PyTorchJob, TFJob or MPIJob, got "
       "XGBoostJob"},
      {R"({"jobs": [{"name": "j", "kind": "MPIJob", "durationSeconds": 1}]})",
       "jobs[0].roles: required for a MPIJob"},
      {R"({"jobs": [{"name": "j", "kind": "PyTorchJob", "durationSeconds": 1}]})",
       "jobs[0].roles: required for a PyTorchJob"},
      {R"({"jobs": [{"name": "j", "durationSeconds": 1, "driver": {},
           "roles": [{"name": "driver"}]}]})",
       "jobs[0].roles: give roles or driver/executor, not both"},
      {R"({"jobs": [{"name": "j", "durationSeconds": 1, "priorityClassName": "gold",
           "driver": {}}]})",
       "jobs[0].priorityClassName: unknown PriorityClass gold"},
      {R"({"jobs": [{"name": "j", "durationSeconds": 1, "driver": {},
           "placement": {"clusterNames": ["mars"]}}]})",
       "jobs[0].placement.clusterNames: unknown cluster mars"},
      {R"({"jobs": [{"name": "j", "durationSeconds": 1, "driver": {},
           "events": [{"at": 1, "type": "nodeOnFire"}]}]})",
       "jobs[0].events[0].type: expected executorDeleted, executorFailed or driverFailed"},
      {R"({"jobs": [{"name": "j", "kind": "TFJob", "durationSeconds": 1,
           "roles": [{"name": "chief", "cpu": "1"}, {"name": "chief", "cpu": "1"}]}]})",
       "jobs[0].roles[1].name: role chief given twice"},
      {R"({"jobs": [{"name": "j", "kind": "TFJob", "durationSeconds": 1,
           "roles": [{"name": "chief", "nvidia.com/gpu": "0.5"}]}]})",
       "jobs[0].roles[0].nvidia.com/gpu: expected whole devices"},
      {R"({"jobs": [{"name": "j", "durationSeconds": 1,
           "roles": [{"name": "executor", "cpu": "1"}, {"name": "driver", "cpu": "1"}]}]})",
       "a SparkApplication's first role is driver"},
      {R"({"clusters": [{"name": "a"}, "a"]})", "clusters[1]: duplicate cluster a"},
      {R"({"queues": [{"name": "a", "namespaces": ["x"]}, {"name": "b", "namespaces": ["x"]}]})",
       "queues[1].namespaces: namespace x is already in queue a"},
  };
  for (const auto& [json, message] : cases) {
    auto out = simulate(json, "in.json");
    ASSERT_FALSE(out.ok()) << json;
    EXPECT_NE(out.error().message.find(message), std::string::npos)
        << json << " -> " << out.error().message;
  }
}

}  // namespace
}  // namespace gleaner::scheduler::sim
