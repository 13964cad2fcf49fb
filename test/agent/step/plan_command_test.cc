// `gleaner-agent plan` on fixture trees (test/fixtures/agent/plan/<case>/): snapshot.json,
// config/, cgroup/ (a copied node tree), optional sys/ (CPU topology) and expected.json,
// where <cgroup> stands for the cgroup root the plan ran on.
#include <filesystem>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include "agent/cli/commands.h"
#include "cgroup/parsers.h"
#include "common/file_io.h"
#include "common/json_util.h"
#include "test/support/cli_capture.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent {
namespace {
using gleaner::testing::fixture_path;
using gleaner::testing::TempDir;

using PlanRun = gleaner::testing::CliRun;

PlanRun run_plan(std::vector<std::string> args) {
  CLI::App app;
  register_plan_command(app);
  args.insert(args.begin(), "plan");
  return gleaner::testing::run_subcommand(app, args);
}

// The output with the cgroup root replaced by "<cgroup>".
Json normalised(const std::string& text, const std::string& root) {
  std::string s = text;
  for (size_t pos = 0; (pos = s.find(root, pos)) != std::string::npos;) {
    s.replace(pos, root.size(), "<cgroup>");
  }
  return *parse_json(s, "plan output");
}

class PlanGolden : public ::testing::TestWithParam<std::string> {
 protected:
  std::string dir() const { return fixture_path("agent/plan/" + GetParam()); }
  std::vector<std::string> args(const TempDir& tree) const {
    std::vector<std::string> a = {
        "--snapshot",    dir() + "/snapshot.json", "--config-dir", dir() + "/config",
        "--cgroup-root", tree.path() + "/cgroup",  "--sys-root",   dir() + "/sys"};
    return a;
  }
  void copy_tree(const TempDir& tree) const {
    std::filesystem::copy(dir() + "/cgroup", tree.path() + "/cgroup",
                          std::filesystem::copy_options::recursive);
  }
};

TEST_P(PlanGolden, PrintsTheExpectedWritesAndEvictions) {
  TempDir tree;
  copy_tree(tree);
  PlanRun run = run_plan(args(tree));
  ASSERT_EQ(run.code, 0) << run.err;
  Json expected = *parse_json(*read_file(dir() + "/expected.json"), "expected.json");
  EXPECT_EQ(normalised(run.out, tree.path() + "/cgroup"), expected) << run.out;
}

TEST_P(PlanGolden, ApplyWritesThemAndASecondRunFindsNothing) {
  TempDir tree;
  copy_tree(tree);
  auto a = args(tree);
  a.push_back("--apply");
  PlanRun applied = run_plan(a);
  ASSERT_EQ(applied.code, 0) << applied.err;
  Json expected = *parse_json(*read_file(dir() + "/expected.json"), "expected.json");
  for (const auto& w : expected["writes"]) {
    std::string path = w["path"].get<std::string>();
    path.replace(0, std::string("<cgroup>").size(), tree.path() + "/cgroup");
    EXPECT_EQ(std::string(gleaner::trim(*read_file(path))), w["value"].get<std::string>()) << path;
  }
  // Restart adoption: the tree the first run left needs no writes, and the ceiling it
  // reads is the one the first run's writes put in force.
  PlanRun again = run_plan(args(tree));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_TRUE((*parse_json(again.out, "plan"))["writes"].empty()) << again.out;
  EXPECT_EQ((*parse_json(again.out, "plan"))["suppress"], expected["suppress"]) << again.out;
}

// The suppress status is the tick's: BE's ceiling as it read it with its writes over it.
// The v1 fixture's BE quota reads -1 (not held); the tick writes 270000 of 100000 us.
TEST(PlanCommand, PrintsTheSuppressStatusTheTicksWritesPutInForce) {
  const std::string dir = fixture_path("agent/plan/v1-cfs-quota");
  ASSERT_EQ(std::string(gleaner::trim(
                *read_file(dir + "/cgroup/cpu/kubepods/besteffort/cpu.cfs_quota_us"))),
            "-1");
  TempDir t;
  std::filesystem::copy(dir + "/cgroup", t / "cgroup", std::filesystem::copy_options::recursive);
  PlanRun run = run_plan({"--snapshot", dir + "/snapshot.json", "--config-dir", dir + "/config",
                          "--cgroup-root", t / "cgroup"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ((*parse_json(run.out, "plan"))["suppress"],
            Json::parse(R"({"policy": "cfsQuota", "active": true, "beCpuLimitMillicores": 2700})"))
      << run.out;

  // Suppression off: "none", whatever the tree holds.
  TempDir off;
  off.write("resource-threshold-config", R"({"clusterStrategy": {"enable": false}})");
  PlanRun disabled = run_plan({"--snapshot", dir + "/snapshot.json", "--config-dir", off.path(),
                               "--cgroup-root", t / "cgroup"});
  ASSERT_EQ(disabled.code, 0) << disabled.err;
  EXPECT_EQ((*parse_json(disabled.out, "plan"))["suppress"],
            Json::parse(R"({"policy": "none", "active": false, "beCpuLimitMillicores": 0})"))
      << disabled.out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PlanGolden, ::testing::Values("v1-cfs-quota", "v2-cpuset"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

// The v1-cfs-quota fixture's snapshot with `fast_passes` recorded after its tick, in `t`.
std::string with_fast_passes(const TempDir& t, const char* fast_passes) {
  Json doc = *parse_json(*read_file(fixture_path("agent/plan/v1-cfs-quota/snapshot.json")), "");
  doc["fastPasses"] = Json::parse(fast_passes);
  t.write("snap.json", doc.dump());
  return t / "snap.json";
}

// Two fast passes after the tick, each from its own sample: LS at 3 CPUs leaves BE 5.2 - 3 -
// 0.5 (system) = 1.7 CPUs. Read as the tree is, both would write it; with --apply each pass
// reads the tree the writes before it left, and the second finds the first's in place.
// Issue #59: the daemon bounds the batch CPU it reports by the slo allowance BE kept over
// the last minute; `plan` and `calc` apply the same bound, so both print the figure the
// node reports. The recorded window holds 1000m for a minute: the colocation formula's
// figure (above it) is cut to 1000m by both tools.
TEST(PlanCommand, PlanAndCalcPrintTheBatchCpuTheSloAllowanceBounds) {
  const std::string fixture = fixture_path("agent/plan/v1-cfs-quota");
  TempDir t;
  std::filesystem::copy(fixture + "/cgroup", t / "cgroup",
                        std::filesystem::copy_options::recursive);
  Json snap = *parse_json(*read_file(fixture + "/snapshot.json"), "snapshot.json");
  snap["probe"] = {{"runqueueP99Micros", {{"web/api-0", 300}}}};
  Json window = Json::array();
  for (int ago = 5; ago <= 50; ago += 5)
    window.push_back({{"secondsAgo", ago}, {"allowance", "1"}});
  snap["agent"] = {{"slo",
                    {{"allowance", "1"},
                     {"secondsSinceStep", 1},
                     {"watched", {{"web/api-0", 60}}},
                     {"window", window}}}};
  t.write("snapshot.json", snap.dump());
  t.write("config/resource-threshold-config",
          R"({"clusterStrategy": {"enable": true, "cpuSuppressPolicy": "cfsQuota",
              "cpuSuppressMode": "slo"}})");
  t.write("config/colocation-config", R"({"enable": true})");
  PlanRun plan = run_plan({"--snapshot", t / "snapshot.json", "--config-dir", t / "config",
                           "--cgroup-root", t / "cgroup", "--sys-root", fixture + "/sys"});
  ASSERT_EQ(plan.code, 0) << plan.err;
  const Json planned = *parse_json(plan.out, "plan output");
  EXPECT_EQ(planned["batchCpuBoundBySloAllowance"], 1000) << plan.out;
  EXPECT_EQ(planned["batch"]["kubernetes.io/batch-cpu"], 1000) << plan.out;

  CLI::App app;
  register_calc_command(app);
  auto calc = gleaner::testing::run_subcommand(
      app, {"calc", "--snapshot", t / "snapshot.json", "--config-dir", t / "config"});
  ASSERT_EQ(calc.code, 0) << calc.err;
  const Json calculated = *parse_json(calc.out, "calc output");
  EXPECT_EQ(calculated["batch"]["kubernetes.io/batch-cpu"], 1000) << calc.out;
  EXPECT_EQ(calculated["explain"]["cpu"]["boundBySloAllowance"], 1000);
  EXPECT_GT(calculated["explain"]["cpu"]["batch"], 1000) << "the formula alone gives more";

  // Without the probe the threshold formula decides BE's CPU, and nothing bounds the batch.
  snap.erase("probe");
  t.write("snapshot.json", snap.dump());
  auto unbounded = gleaner::testing::run_subcommand(
      app, {"calc", "--snapshot", t / "snapshot.json", "--config-dir", t / "config"});
  ASSERT_EQ(unbounded.code, 0) << unbounded.err;
  EXPECT_GT(Json::parse(unbounded.out)["batch"]["kubernetes.io/batch-cpu"], 1000);
}

TEST(PlanCommand, ReplaysTheFastPassesAfterTheTick) {
  TempDir t;
  std::filesystem::copy(fixture_path("agent/plan/v1-cfs-quota/cgroup"), t / "cgroup",
                        std::filesystem::copy_options::recursive);
  const std::string snap = with_fast_passes(t, R"([
      {"secondsAfterSnapshot": 0.05, "trigger": "timer", "nodeCpu": "4", "nonBeCpu": "3",
       "agent": {"suppressArmed": true}},
      {"secondsAfterSnapshot": 0.1, "trigger": "wakeup", "nodeCpu": "4", "nonBeCpu": "3000m"}])");
  const std::vector<std::string> args = {
      "--snapshot",    snap,         "--config-dir", fixture_path("agent/plan/v1-cfs-quota/config"),
      "--cgroup-root", t / "cgroup", "--sys-root",   t / "no-sys"};
  const Json quota = {{"path", "<cgroup>/cpu/kubepods/besteffort/cpu.cfs_quota_us"},
                      {"value", "170000"},
                      {"reason", "cpu-suppress"}};
  PlanRun run = run_plan(args);
  ASSERT_EQ(run.code, 0) << run.err;
  Json printed = normalised(run.out, t / "cgroup");
  Json expected = *parse_json(*read_file(fixture_path("agent/plan/v1-cfs-quota/expected.json")),
                              "expected.json");
  EXPECT_EQ(printed["writes"], expected["writes"]) << run.out;  // the tick's, as without them
  ASSERT_EQ(printed["fastPasses"].size(), 2u) << run.out;
  EXPECT_EQ(printed["fastPasses"][0]["secondsAfterSnapshot"], 0.05);
  EXPECT_EQ(printed["fastPasses"][1]["trigger"], "wakeup");
  EXPECT_EQ(printed["fastPasses"][0]["writes"], Json::array({quota})) << run.out;
  EXPECT_EQ(printed["fastPasses"][1]["writes"], Json::array({quota})) << run.out;

  auto applying = args;
  applying.push_back("--apply");
  PlanRun applied = run_plan(applying);
  ASSERT_EQ(applied.code, 0) << applied.err;
  printed = normalised(applied.out, t / "cgroup");
  // After the tick's writes the BE container has a quota (2 CPUs) above the new ceiling:
  // the executor lowers it first, as the kernel requires.
  const Json child = {{"path", "<cgroup>/cpu/kubepods/besteffort/pod2222-bbbb/b2/cpu.cfs_quota_us"},
                      {"value", "170000"},
                      {"reason", "parent-limit"}};
  EXPECT_EQ(printed["fastPasses"][0]["writes"], Json::array({child, quota})) << applied.out;
  EXPECT_TRUE(printed["fastPasses"][1]["writes"].empty()) << applied.out;
  EXPECT_EQ(gleaner::trim(*read_file(t / "cgroup/cpu/kubepods/besteffort/cpu.cfs_quota_us")),
            "170000");
}

// The tree as the daemon left it after a fast pass lowered BE's ceiling to 1.7 CPUs: the BE
// container's batch quota (2 CPUs) clamped under it, its wish held by the executor. The next
// pass raises the ceiling (LS at 2.5 CPUs): the daemon's executor gives the container its
// quota back after widening BE, and `plan` names that write only from the record's clamps.
TEST(PlanCommand, AFastPassGivesBackTheQuotaTheRecordHoldsClamped) {
  TempDir t;
  std::filesystem::copy(fixture_path("agent/plan/v1-cfs-quota/cgroup"), t / "cgroup",
                        std::filesystem::copy_options::recursive);
  const std::string be = "cgroup/cpu/kubepods/besteffort/";
  t.write(be + "cpu.cfs_quota_us", "170000\n");
  t.write(be + "pod2222-bbbb/b2/cpu.cfs_quota_us", "170000\n");
  const std::string pass = R"("secondsAfterSnapshot": 0.05, "nodeCpu": "4", "nonBeCpu": "2500m",
      "agent": {"suppressArmed": true})";
  const std::string clamps = R"("heldClamps": [{"resource": "cpu_quota",
      "cgroup": "kubepods/besteffort/pod2222-bbbb/b2", "wish": "200000", "clampedTo": "170000"}])";
  const std::string passes = "[{" + pass + ", " + clamps + "}, {" + pass + "}]";
  const std::string snap = with_fast_passes(t, passes.c_str());
  PlanRun run =
      run_plan({"--snapshot", snap, "--config-dir", fixture_path("agent/plan/v1-cfs-quota/config"),
                "--cgroup-root", t / "cgroup", "--sys-root", t / "no-sys"});
  ASSERT_EQ(run.code, 0) << run.err;
  const Json printed = normalised(run.out, t / "cgroup");
  const Json widen = {{"path", "<cgroup>/cpu/kubepods/besteffort/cpu.cfs_quota_us"},
                      {"value", "220000"},
                      {"reason", "cpu-suppress"}};
  const Json release = {
      {"path", "<cgroup>/cpu/kubepods/besteffort/pod2222-bbbb/b2/cpu.cfs_quota_us"},
      {"value", "200000"},
      {"reason", "parent-limit-released"}};
  ASSERT_EQ(printed["fastPasses"].size(), 2u) << run.out;
  EXPECT_EQ(printed["fastPasses"][0]["writes"], Json::array({widen, release})) << run.out;
  // The same pass recorded without clamps: an executor that clamped nothing.
  EXPECT_EQ(printed["fastPasses"][1]["writes"], Json::array({widen})) << run.out;
}

TEST(PlanCommand, ABadFastPassExitsTwoNamingTheEntryAndField) {
  TempDir t;
  t.mkdir("cgroup/cpu/kubepods");
  for (const auto& [passes, field] : std::vector<std::pair<const char*, const char*>>{
           {R"({"secondsAfterSnapshot": 1})", "fastPasses"},
           {R"([{"secondsAfterSnapshot": 1, "nodeCpu": "1", "nonBeCpu": "1"},
                {"secondsAfterSnapshot": 1, "nodeCpu": "1", "nonBeCpu": "lots"}])",
            "fastPasses[1].nonBeCpu"},
           {R"([{"nodeCpu": "1", "nonBeCpu": "1"}])", "fastPasses[0].secondsAfterSnapshot"},
           {R"([{"secondsAfterSnapshot": 1, "nodeCpu": "1", "nonBeCpu": "1", "trigger": "cron"}])",
            "fastPasses[0].trigger"},
           {R"([{"secondsAfterSnapshot": 1, "nodeCpu": "1", "nonBeCpu": "1",
                 "agent": {"suppressArmed": "yes"}}])",
            "fastPasses[0]: agent.suppressArmed"}}) {
    const std::string snap = with_fast_passes(t, passes);
    PlanRun run =
        run_plan({"--snapshot", snap, "--config-dir", t / "config", "--cgroup-root", t / "cgroup"});
    EXPECT_EQ(run.code, 2) << passes;
    EXPECT_NE(run.err.find(snap + ": " + field), std::string::npos) << run.err;
    EXPECT_TRUE(run.out.empty()) << run.out;
  }
}

TEST(PlanCommand, BadSnapshotExitsTwoNamingFileAndField) {
  TempDir t;
  t.write(
      "snap.json",
      R"({"node": {"metadata": {"name": "n"}}, "pods": [], "metrics": {"node": {"cpu": "lots"}}})");
  t.mkdir("cgroup/cpu/kubepods");
  PlanRun run = run_plan(
      {"--snapshot", t / "snap.json", "--config-dir", t / "config", "--cgroup-root", t / "cgroup"});
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("snap.json"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("cpu"), std::string::npos) << run.err;
  EXPECT_TRUE(run.out.empty());
}

TEST(PlanCommand, MissingCgroupRootOrBadVersionExitsTwo) {
  const std::string snap = fixture_path("agent/plan/v1-cfs-quota/snapshot.json");
  PlanRun run = run_plan(
      {"--snapshot", snap, "--config-dir", "/nonexistent", "--cgroup-root", "/nonexistent/cgroup"});
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("/nonexistent/cgroup"), std::string::npos);
  TempDir t;
  t.mkdir("cpu/kubepods");
  run = run_plan({"--snapshot", snap, "--config-dir", t.path(), "--cgroup-root", t.path(),
                  "--cgroup-version", "v3"});
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("--cgroup-version"), std::string::npos);
}

}  // namespace
}  // namespace gleaner::agent
