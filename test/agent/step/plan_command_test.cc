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
  // Restart adoption: the tree the first run left needs no writes.
  PlanRun again = run_plan(args(tree));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_TRUE((*parse_json(again.out, "plan"))["writes"].empty()) << again.out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PlanGolden, ::testing::Values("v1-cfs-quota", "v2-cpuset"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

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
