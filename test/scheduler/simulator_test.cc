#include "scheduler/sim/simulator.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "common/file_io.h"
#include "common/json_util.h"
#include "scheduler/cli/commands.h"

namespace gleaner::scheduler::sim {
namespace {

std::string scenario_path(const std::string& name) {
  return std::string(GLEANER_SOURCE_DIR) + "/scheduler/scenarios/" + name;
}

Json run(const std::string& name) {
  auto text = read_file(scenario_path(name));
  EXPECT_TRUE(text.ok()) << name;
  auto out = simulate(*text, name);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  return Json::parse(*out);
}

// name -> "state cluster startedAt-finishedAt preemptions/reschedules"
std::map<std::string, std::string> outcomes(const Json& doc) {
  std::map<std::string, std::string> out;
  for (const Json& j : doc["jobs"]) {
    out[j["name"]] = j["state"].get<std::string>() + " " + j.value("cluster", "-") + " " +
                     std::to_string(j.value("startedAt", -1)) + "-" +
                     std::to_string(j.value("finishedAt", -1)) + " " +
                     std::to_string(j["preemptions"].get<int>()) + "/" +
                     std::to_string(j["reschedules"].get<int>());
  }
  return out;
}

TEST(Simulator, SparkDeadlockScenarioRunsTwoJobsAtATimeAndAllComplete) {
  Json doc = run("spark-deadlock.json");
  std::map<std::string, std::string> want{
      {"job-1", "Completed default 0-60 0/0"},    {"job-2", "Completed default 0-60 0/0"},
      {"job-3", "Completed default 60-120 0/0"},  {"job-4", "Completed default 60-120 0/0"},
      {"job-5", "Completed default 120-180 0/0"}, {"job-6", "Completed default 120-180 0/0"}};
  EXPECT_EQ(outcomes(doc), want);
  EXPECT_EQ(doc["summary"]["completed"], 6);
  EXPECT_EQ(doc["summary"]["makespanSeconds"], 180);
  // Drivers spread (n1, n3), executors packed around them.
  const Json& pods = doc["jobs"][0]["pods"];
  ASSERT_EQ(pods.size(), 3u);
  EXPECT_EQ(pods[0]["name"], "job-1-driver");
  EXPECT_EQ(pods[0]["node"], "n1");
  EXPECT_EQ(pods[1]["node"], "n1");
  EXPECT_EQ(pods[2]["node"], "n2");
  EXPECT_EQ(doc["jobs"][1]["pods"][0]["node"], "n3");
}

TEST(Simulator, QuotaScenarioBorrowsThenReclaimsFromTheLowerPriorityJob) {
  std::map<std::string, std::string> want{{"a-1", "Completed default 0-100 0/0"},
                                          {"a-2", "Completed default 70-170 1/0"},
                                          {"b-1", "Completed default 20-70 0/0"}};
  EXPECT_EQ(outcomes(run("quota-borrow-reclaim.json")), want);
}

TEST(Simulator, BlockingHoldsTheSmallJobBackNonBlockingLetsItThrough) {
  std::map<std::string, std::string> blocking{{"big-1", "Completed default 0-100 0/0"},
                                              {"big-2", "Completed default 100-200 0/0"},
                                              {"small-1", "Completed default 100-110 0/0"}};
  std::map<std::string, std::string> nonblocking{{"big-1", "Completed default 0-100 0/0"},
                                                 {"big-2", "Completed default 100-200 0/0"},
                                                 {"small-1", "Completed default 2-12 0/0"}};
  EXPECT_EQ(outcomes(run("blocking.json")), blocking);
  EXPECT_EQ(outcomes(run("nonblocking.json")), nonblocking);
}

TEST(Simulator, LsSurgeKeepsTheRunningJobAndSendsTheNextOneElsewhere) {
  // c1's node shrinks below etl-1's use at 30 s and its agent evicts 4Gi of executors:
  // etl-1 keeps running in c1 (two executors replaced there once the node, grown back at
  // 60 s, has kept their room for the scenario's 30 s reclaimHoldSeconds: at 90 s); etl-2,
  // submitted meanwhile, goes to c2. Meanwhile etl-1 runs on one executor, at half pace
  // while it shares the node's one core with the driver (30-60 s): its end is at 145 s.
  Json doc = run("ls-surge-reschedule.json");
  std::map<std::string, std::string> want{{"etl-1", "Completed c1 0-145 0/0"},
                                          {"etl-2", "Completed c2 40-90 0/0"}};
  EXPECT_EQ(outcomes(doc), want);
  const Json& etl1 = doc["jobs"][0];
  EXPECT_EQ(etl1["executorsEvicted"], 2);
  EXPECT_EQ(etl1["executorsReplaced"], 2);
  EXPECT_EQ(etl1["plannedFinishAt"], 100);
  EXPECT_EQ(etl1["executorSecondsMissing"], 120);  // two executors from 30 s to 90 s
  EXPECT_EQ(etl1["placementsSteeredAway"], 0);     // c1 has no other node
  for (const Json& pod : etl1["pods"]) {
    EXPECT_EQ(pod["node"], "c1-n1");
    if (pod["name"] == "etl-1-exec-2" || pod["name"] == "etl-1-exec-3") {
      EXPECT_EQ(pod["boundAt"], 90);
    }
  }
}

TEST(Simulator, EvictedExecutorsAreReplacedOnAnotherNodeNotBackWhereTheyWereEvicted) {
  // a's batch memory drops to 6Gi at 30 s and its agent evicts 4Gi (two executors): a is
  // left with 2Gi free, the fullest node with room, where packing alone would put a
  // replacement back. Both go to b; a's room is back at 90 s and has held by 390 s, so the
  // job submitted at 400 s may use it.
  Json doc = run("no-ping-pong.json");
  const Json& etl = doc["jobs"][0];
  ASSERT_EQ(etl["name"], "etl");
  EXPECT_EQ(etl["state"], "Completed");
  EXPECT_EQ(etl["executorsEvicted"], 2);
  EXPECT_EQ(etl["executorsReplaced"], 2);
  EXPECT_EQ(etl["placementsSteeredAway"], 2);
  std::map<std::string, int> on;
  for (const Json& pod : etl["pods"])
    ++on[pod["node"].get<std::string>()];
  EXPECT_EQ(on["a"], 2);  // the two executors not evicted
  EXPECT_EQ(on["b"], 3);  // the driver and both replacements
  const Json& late = doc["jobs"][1];
  ASSERT_EQ(late["name"], "late");
  for (const Json& pod : late["pods"]) {
    if (pod["name"] != "late-driver") {
      EXPECT_EQ(pod["node"], "a") << pod.dump();
    }
  }
}

TEST(Simulator, AnEvictionOnlyNamesMemory) {
  const char* text = R"({"nodes": [{"name": "n", "batch": {"cpu": "2", "memory": "4Gi"},
    "changes": [{"at": 5, "batch": {"cpu": "1", "memory": "4Gi"}, "evict": {"cpu": "1"}}]}],
    "jobs": []})";
  auto out = simulate(text, "inline");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message.find("nodes[0].changes[0].evict"), std::string::npos)
      << out.error().message;
}

TEST(Simulator, StalledDriverIsReclaimedAfterTheTimeout) {
  std::map<std::string, std::string> want{{"report-1", "Completed c2 120-180 0/1"}};
  EXPECT_EQ(outcomes(run("driver-start-timeout.json")), want);
}

TEST(Simulator, SameInputGivesByteIdenticalOutput) {
  for (const char* name : {"spark-deadlock.json", "quota-borrow-reclaim.json",
                           "ls-surge-reschedule.json", "driver-start-timeout.json"}) {
    auto text = read_file(scenario_path(name));
    ASSERT_TRUE(text.ok());
    auto first = simulate(*text, name);
    auto second = simulate(*text, name);
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_EQ(*first, *second) << name;
    // The key order of the contract, not alphabetical order.
    EXPECT_EQ(first->rfind("{\n  \"jobs\": [\n    {\n      \"name\": ", 0), 0u) << name;
  }
}

TEST(Simulator, UnschedulableJobIsReportedPendingWithReason) {
  const char* text = R"({"nodes": [{"name": "n", "batch": {"cpu": "2", "memory": "4Gi"}}],
    "jobs": [{"name": "huge", "durationSeconds": 10, "driver": {"cpu": "1", "memory": "1Gi"},
              "executor": {"cpu": "1", "memory": "1Gi", "instances": 4}}]})";
  auto out = simulate(text, "inline");
  ASSERT_TRUE(out.ok());
  Json doc = Json::parse(*out);
  EXPECT_EQ(doc["jobs"][0]["state"], "Pending");
  EXPECT_NE(doc["jobs"][0]["reason"].get<std::string>().find("larger than any cluster"),
            std::string::npos);
  EXPECT_EQ(doc["summary"]["pending"], 1);
}

TEST(Simulator, SparkReplacingExecutorsKeepsTheJobAndItsRoom) {
  // A node full with the job: a second job waits. Executor 1 goes at 10 s and is replaced
  // at 15 s; executor 2 goes at 20 s and is replaced at once. The job is never reclaimed,
  // runs to its end (60 s, and the 2.5 s of work the missing executor did not do: 63 s),
  // and the waiting job gets no room in between.
  const char* text = R"({"nodes": [{"name": "n", "batch": {"cpu": "3", "memory": "6Gi"}}],
    "jobs": [{"name": "spark", "durationSeconds": 60, "driver": {"cpu": "1", "memory": "1Gi"},
              "executor": {"cpu": "1", "memory": "1Gi", "instances": 2},
              "executorLosses": [{"afterSeconds": 10, "executor": 1, "replaceAfterSeconds": 5},
                                 {"afterSeconds": 20, "executor": 2}]},
             {"name": "next", "submitAt": 1, "durationSeconds": 10,
              "driver": {"cpu": "1", "memory": "1Gi"}}]})";
  auto out = simulate(text, "inline");
  ASSERT_TRUE(out.ok()) << out.error().message;
  Json doc = Json::parse(*out);
  EXPECT_EQ(doc["jobs"][0]["state"], "Completed");
  EXPECT_EQ(doc["jobs"][0]["finishedAt"], 63);
  EXPECT_EQ(doc["jobs"][0]["reschedules"], 0);
  EXPECT_EQ(doc["jobs"][0]["executorsReplaced"], 2);
  EXPECT_EQ(doc["jobs"][1]["startedAt"], 63);
}

TEST(Simulator, DynamicAllocationExtrasTakeFreeRoomAndWaitForIt) {
  // 4 cores: the gang (driver + 1) takes 2 and `late` 1 from 5 s to 15 s. At 10 s Spark
  // asks for 3 more: one gets the free core at once, one the core `late` gives back at
  // 15 s, the third never finds room and is let go with the rest at 40 s; `next` (2 cores)
  // gets room only then.
  const char* text = R"({"nodes": [{"name": "n", "batch": {"cpu": "4", "memory": "16Gi"}}],
    "jobs": [{"name": "elastic", "durationSeconds": 100, "driver": {"cpu": "1", "memory": "1Gi"},
              "executor": {"cpu": "1", "memory": "1Gi", "instances": 1},
              "executorRequests": [{"afterSeconds": 10, "count": 3, "releaseAfterSeconds": 30}]},
             {"name": "late", "submitAt": 5, "durationSeconds": 10,
              "driver": {"cpu": "1", "memory": "1Gi"}},
             {"name": "next", "submitAt": 12, "durationSeconds": 10,
              "driver": {"cpu": "2", "memory": "1Gi"}}]})";
  auto out = simulate(text, "inline");
  ASSERT_TRUE(out.ok()) << out.error().message;
  Json doc = Json::parse(*out);
  EXPECT_EQ(doc["jobs"][0]["state"], "Completed");
  EXPECT_EQ(doc["jobs"][0]["extraExecutorsPlaced"], 2);
  EXPECT_EQ(doc["jobs"][0]["extraExecutorsWaiting"], 0);
  EXPECT_EQ(doc["jobs"][1]["finishedAt"], 15);
  EXPECT_EQ(doc["jobs"][2]["startedAt"], 40);
}

TEST(Simulator, UntilSecondsStopsTheClock) {
  auto text = read_file(scenario_path("spark-deadlock.json"));
  ASSERT_TRUE(text.ok());
  Json doc = Json::parse(*text);
  doc["policy"] = {{"untilSeconds", 90}};
  auto out = simulate(doc.dump(), "inline");
  ASSERT_TRUE(out.ok());
  Json result = Json::parse(*out);
  EXPECT_EQ(result["summary"]["completed"], 2);
  EXPECT_EQ(result["summary"]["running"], 2);
  EXPECT_EQ(result["summary"]["pending"], 2);
}

struct BadCase {
  const char* json;
  const char* message;
};

TEST(Simulator, BadScenariosNameTheField) {
  const BadCase cases[] = {
      {R"({"nodes": [{"name": "n"}]})", "nodes[0].batch: required"},
      {R"({"nodes": [{"name": "n", "batch": {"cpu": "lots"}}]})", "nodes[0].batch.cpu"},
      {R"({"nodes": [{"name": "n", "cluster": "x", "batch": {}}]})",
       "nodes[0].cluster: unknown cluster x"},
      {R"({"jobs": [{"name": "j", "driver": {}}]})", "jobs[0].durationSeconds: required"},
      {R"({"jobs": [{"name": "j", "durationSeconds": -1, "driver": {}}]})",
       "jobs[0].durationSeconds: out of range"},
      {R"({"jobs": [{"name": "j", "durationSeconds": 1, "driver": {}, "executor": {"cpu": 1}}]})",
       "jobs[0].executor.instances: required"},
      {R"({"jobs": [{"name": "j", "durationSeconds": 1, "driver": {}, "submitat": 3}]})",
       "jobs[0].submitat: unknown field"},
      {R"({"jobs": [{"name": "j", "queue": "q", "durationSeconds": 1, "driver": {}}]})",
       "jobs[0].queue: unknown queue q"},
      {R"({"policy": {"queueing": "fifo"}})", "policy.queueing: expected blocking or nonblocking"},
      {R"({"policy": {"reclaimHoldSeconds": -1}})", "policy.reclaimHoldSeconds"},
      {R"({"policy": {"reclaimHoldSeconds": "5m"}})", "policy.reclaimHoldSeconds"},
      {R"({"queues": [{"name": "a", "parent": "b"}]})", "queues: queue a: unknown parent b"},
      {R"({"clusters": []})", "clusters: expected a non-empty array"},
      {R"({"nodes": [{"name": "n", "batch": {"cpu": "1"}}], "jobs": [{"name": "j",
          "durationSeconds": 1, "driver": {"cpu": "1"}, "executor": {"cpu": "1", "instances": 1},
          "executorLosses": [{"afterSeconds": 1, "executor": 2}]}]})",
       "jobs[0].executorLosses[0].executor: expected 1..1"},
      {R"({"nodes": [{"name": "n", "batch": {"cpu": "1"}}], "jobs": [{"name": "j",
          "durationSeconds": 1, "driver": {"cpu": "1"}, "executor": {"cpu": "1", "instances": 1},
          "executorRequests": [{"afterSeconds": 1, "count": 0}]}]})",
       "jobs[0].executorRequests[0].count: expected 1..10000"},
      {R"([1, 2])", "scenario: expected an object"},
      {R"({"nodes": [)", "in.json: "},
  };
  for (const BadCase& c : cases) {
    auto out = simulate(c.json, "in.json");
    ASSERT_FALSE(out.ok()) << c.json;
    EXPECT_NE(out.error().message.find(c.message), std::string::npos)
        << c.json << " -> " << out.error().message;
    EXPECT_EQ(out.error().message.rfind("in.json: ", 0), 0u) << out.error().message;
  }
}

TEST(SimulateCommand, ExitsWithTwoOnBadInput) {
  for (const std::string& path :
       {std::string("/nonexistent/scenario.json"), scenario_path("../CMakeLists.txt")}) {
    CLI::App app;
    register_commands(app);
    set_exit_code(0);
    std::vector<std::string> args{"simulate", "--scenario", path};
    std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
    app.parse(args);
    EXPECT_EQ(exit_code(), 2) << path;
  }
  CLI::App app;
  register_commands(app);
  set_exit_code(7);
  std::vector<std::string> ok{scenario_path("nonblocking.json"), "--scenario", "simulate"};
  ::testing::internal::CaptureStdout();
  app.parse(ok);
  std::string printed = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(exit_code(), 0);
  EXPECT_NE(printed.find("\"makespanSeconds\": 200"), std::string::npos);
}

}  // namespace
}  // namespace gleaner::scheduler::sim
