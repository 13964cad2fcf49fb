#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include "agent/cli/commands.h"
#include "common/json_util.h"
#include "test/support/cli_capture.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent {
namespace {

using CalcRun = testing::CliRun;

// Runs `gleaner-agent calc` in-process, capturing stdout and stderr.
CalcRun run_calc(const std::string& snapshot, const std::string& config_dir) {
  CLI::App app;
  register_calc_command(app);
  return testing::run_subcommand(app, {"calc", "--snapshot", snapshot, "--config-dir", config_dir});
}

TEST(CalcCommand, PrintsTheSpecOutputForTheWorkedExample) {
  for (const char* snap :
       {"agent/snapshots/worked-example.json", "agent/snapshots/worked-example-podlist.json"}) {
    auto run = run_calc(testing::fixture_path(snap), testing::fixture_path("agent/config/enabled"));
    ASSERT_EQ(run.code, 0) << run.err;
    auto json = Json::parse(run.out);
    EXPECT_EQ(json["node"], "node-1");
    EXPECT_EQ(json["colocation"], "enabled");
    EXPECT_EQ(json["batch"]["kubernetes.io/batch-cpu"], 12200);
    EXPECT_EQ(json["batch"]["kubernetes.io/batch-memory"], 42090679501);
    EXPECT_TRUE(json["explain"].is_object());
  }
  auto req = run_calc(testing::fixture_path("agent/snapshots/worked-example.json"),
                      testing::fixture_path("agent/config/request-memory"));
  EXPECT_EQ(Json::parse(req.out)["batch"]["kubernetes.io/batch-memory"], 16320875725);
  auto max = run_calc(testing::fixture_path("agent/snapshots/worked-example.json"),
                      testing::fixture_path("agent/config/max-usage-request-cpu"));
  EXPECT_EQ(Json::parse(max.out)["batch"]["kubernetes.io/batch-cpu"], 2200);
}

TEST(CalcCommand, DefaultsDisableColocationWithNullBatch) {
  auto run = run_calc(testing::fixture_path("agent/snapshots/worked-example.json"),
                      testing::fixture_path("agent/config/empty"));
  ASSERT_EQ(run.code, 0);
  auto json = Json::parse(run.out);
  EXPECT_EQ(json["colocation"], "disabled");
  EXPECT_TRUE(json["batch"].is_null());
}

TEST(CalcCommand, BadConfigIsReportedAndFallsBackToDefaults) {
  testing::TempDir dir;
  dir.write("colocation-config", R"({"enable": true, "cpuReclaimThresholdPercent": -20})");
  auto run = run_calc(testing::fixture_path("agent/snapshots/worked-example.json"), dir.path());
  ASSERT_EQ(run.code, 0);
  EXPECT_NE(run.err.find(dir / "colocation-config"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("cpuReclaimThresholdPercent"), std::string::npos);
  EXPECT_EQ(Json::parse(run.out)["colocation"], "disabled");  // defaults: enable=false
}

TEST(CalcCommand, AConfigDirThatIsNotThereIsAnError) {
  auto run = run_calc(testing::fixture_path("agent/snapshots/worked-example.json"),
                      "/nonexistent/slo-config");
  EXPECT_EQ(run.code, 2);
  EXPECT_TRUE(run.out.empty());
  EXPECT_NE(run.err.find("/nonexistent/slo-config is not a directory"), std::string::npos);
}

TEST(CalcCommand, BadSnapshotExitsWithCode2) {
  testing::TempDir dir;
  dir.write("truncated.json", R"({"node": {"metadata": {"name": "n"}}, "pods": [)");
  dir.write("no-metrics.json", R"({"node": {"metadata": {"name": "n"}}, "pods": []})");
  dir.write("bad-pod.json", R"({"node": {"metadata": {"name": "n"}},
      "pods": [{"metadata": {"name": "p", "namespace": "d"}, "spec": {"priority": "x"}}],
      "metrics": {"node": {"cpu": "1", "memory": "1Gi"}}})");
  for (const char* name : {"truncated.json", "no-metrics.json", "bad-pod.json", "absent.json"}) {
    auto run = run_calc(dir / name, testing::fixture_path("agent/config/enabled"));
    EXPECT_EQ(run.code, 2) << name;
    EXPECT_TRUE(run.out.empty()) << name;
    EXPECT_NE(run.err.find(name), std::string::npos) << run.err;
  }
}

}  // namespace
}  // namespace gleaner::agent
