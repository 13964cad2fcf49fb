// `gleaner-agent report` in-process: what it tells of a node it only partly recognises.
#include <string>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include "agent/cli/commands.h"
#include "common/json_util.h"
#include "test/agent/qos/qos_test_util.h"
#include "test/support/cli_capture.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent {
namespace {

using testing::TempDir;

// RDT is looked for on its own: a cgroup root that is no cgroup hierarchy must not hide
// what resctrl offers.
TEST(ReportCommand, TellsResctrlOnANodeWhoseCgroupRootItDoesNotRecognise) {
  TempDir cgroup_root;  // empty: neither v1 controllers nor cgroup.controllers
  TempDir resctrl_root;
  qos::test::make_resctrl(resctrl_root);
  TempDir proc_root;
  CLI::App app;
  register_report_command(app);
  auto run = testing::run_subcommand(
      app, {"report", "--json", "--cgroup-root", cgroup_root.path(), "--resctrl-root",
            resctrl_root.path(), "--proc-root", proc_root.path(), "--window-ms", "50"});
  auto report = parse_json(run.out, "report --json");
  ASSERT_TRUE(report.ok()) << report.error().message << "\n" << run.out << run.err;
  EXPECT_TRUE((*report)["cgroup"].contains("error")) << report->dump();
  EXPECT_EQ((*report)["features"]["resctrl"], "L3 CAT + MBA") << report->dump();
}

}  // namespace
}  // namespace gleaner::agent
