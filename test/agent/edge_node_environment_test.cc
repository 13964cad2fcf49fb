// One discovery of the node for every entry point (agent/edge/node_environment.h).
#include <gtest/gtest.h>

#include "agent/edge/node_environment.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent::edge {
namespace {

using gleaner::testing::TempDir;

TEST(NodeEnvironment, FindsTheVersionAndKubeletsDriverFromTheTree) {
  TempDir root;
  root.mkdir("cpu/kubepods.slice");
  root.mkdir("memory");
  auto env = discover_environment(EnvironmentFlags{.cgroup_root = root.path()});
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(env->version, cgroup::CgroupVersion::kV1);
  EXPECT_EQ(env->cpu_root, root / "cpu");
  ASSERT_TRUE(env->driver);
  EXPECT_EQ(*env->driver, cgroup::CgroupDriver::kSystemd);
  EXPECT_FALSE(env->resctrl) << "no resctrl root given";
  EXPECT_FALSE(env->topology) << "no sys root given";
}

TEST(NodeEnvironment, FlagsWinOverTheTreeAndANodeWithoutKubepodsSaysSo) {
  TempDir root;
  root.write("cgroup.controllers", "cpu memory\n");
  auto found = discover_environment(EnvironmentFlags{.cgroup_root = root.path()});
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->version, cgroup::CgroupVersion::kV2);
  EXPECT_FALSE(found->driver);
  EXPECT_FALSE(found->driver_problem.empty());

  auto forced = discover_environment(EnvironmentFlags{
      .cgroup_root = root.path(), .cgroup_version = "hybrid", .cgroup_driver = "cgroupfs"});
  ASSERT_TRUE(forced) << forced.error().message;
  EXPECT_EQ(forced->version, cgroup::CgroupVersion::kHybrid);
  ASSERT_TRUE(forced->driver);
  EXPECT_EQ(*forced->driver, cgroup::CgroupDriver::kCgroupfs);
}

TEST(NodeEnvironment, EveryBadFlagIsNamedAndDiscoveryRefusesTheFirst) {
  TempDir root;
  const EnvironmentFlags bad{
      .cgroup_root = root / "missing", .cgroup_version = "v3", .cgroup_driver = "openrc"};
  const auto errors = environment_flag_errors(bad);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0].rfind("--cgroup-version: ", 0), 0u) << errors[0];
  EXPECT_EQ(errors[1], "--cgroup-root " + (root / "missing") + ": not a directory");
  EXPECT_EQ(errors[2].rfind("--cgroup-driver: ", 0), 0u) << errors[2];
  auto env = discover_environment(bad);
  ASSERT_FALSE(env);
  EXPECT_EQ(env.error().message, errors[0]);

  // A directory that is no cgroup hierarchy is named by its flag.
  auto plain = discover_environment(EnvironmentFlags{.cgroup_root = root.path()});
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().message.rfind("--cgroup-root " + root.path() + ": ", 0), 0u)
      << plain.error().message;
}

TEST(NodeEnvironment, AMissingTopologyIsAProblemNotAnError) {
  TempDir root;
  root.mkdir("cpu/kubepods");
  root.mkdir("memory");
  auto env = discover_environment(
      EnvironmentFlags{.cgroup_root = root.path(), .sys_root = root / "no-sys"});
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_FALSE(env->topology);
  EXPECT_FALSE(env->topology_problem.empty());
}

}  // namespace
}  // namespace gleaner::agent::edge
