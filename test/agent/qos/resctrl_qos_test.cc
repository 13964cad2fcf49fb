#include "agent/qos/resctrl_qos.h"

#include <gtest/gtest.h>

#include "agent/edge/knob_reader.h"
#include "agent/exec/resctrl_executor.h"
#include "common/file_io.h"
#include "test/agent/qos/qos_test_util.h"

namespace gleaner::agent::qos {
namespace {
using namespace test;
using exec::describe;
using exec::parse_resctrl_originals;
using exec::resctrl_originals_json;
using exec::ResctrlExecutor;
using exec::ResctrlOriginals;

FakePod be_pod() {
  FakePod p{.name = "exec", .uid = "be-1", .qos_label = "BE"};
  // Qualified: kubelet_values_test.cc, compiled in the same unity batch, has its own.
  p.containers = Json::array({test::container("c")});
  return p;
}

config::ResourceQoSStrategy be_resctrl() {
  config::ResourceQoSStrategy qos;
  qos.be.resctrl.enable = true;  // defaults: 0-30% of the ways, 100% bandwidth
  qos.be.resctrl.mba_percent = 35;
  return qos;
}

class ResctrlTree : public ::testing::TestWithParam<CgroupVersion> {};

TEST_P(ResctrlTree, GroupSchemataPerCacheIdAndTasksPlacedOnce) {
  TempDir cg;
  TempDir rt;
  make_resctrl(rt);
  cgroup::KubeletLayout layout(CgroupDriver::kCgroupfs);
  auto pods = std::vector<FakePod>{be_pod()};
  make_node_tree(cg, GetParam(), layout, pods);
  const std::string dir = *layout.container_dir(KubeQos::kBestEffort, "be-1", container_id("c"));
  cg.write(GetParam() == CgroupVersion::kV2 ? dir + "/cgroup.threads" : "cpu/" + dir + "/tasks",
           "101\n102\n");
  cgroup::CgroupFs fs(cg.path(), GetParam());
  resctrl::ResctrlFs rfs(rt.path());
  TreeReader reader(fs, &rfs);
  auto snap = make_snapshot({}, pods);

  Plan plan = plan_resctrl(snap, layout, be_resctrl(), reader);
  ASSERT_EQ(plan.resctrl.size(), 5u);
  EXPECT_EQ(plan.resctrl[0].kind, ResctrlAction::Kind::kCreateGroup);
  EXPECT_EQ(describe(rfs, plan.resctrl[1]).value, "L3:0=f;2=f");
  EXPECT_EQ(describe(rfs, plan.resctrl[2]).value, "MB:0=40;2=40");  // rounded up to 10s
  EXPECT_EQ(describe(rfs, plan.resctrl[3]).path, rt.path() + "/BE/tasks");
  EXPECT_EQ(describe(rfs, plan.resctrl[4]).value, "102");

  ResctrlExecutor exec(rfs);
  ASSERT_EQ(exec.apply({plan.resctrl[0]}).written, 1);
  ASSERT_TRUE(is_directory(rt.path() + "/BE"));
  // The kernel populates a new group with its files (all ways, full bandwidth); a plain
  // directory does not, so the test does it.
  rt.write("BE/schemata", "L3:0=7ff;2=7ff\nMB:0=100;2=100\n");
  rt.write("BE/tasks", "");
  auto report = exec.apply({plan.resctrl.begin() + 1, plan.resctrl.end()});
  EXPECT_TRUE(report.failed.empty()) << report.failed[0].message;
  EXPECT_EQ(report.written, 4);
  EXPECT_EQ(rt.read("BE/schemata"), "MB:0=40;2=40\n");  // the last line written
  // The kernel shows every resource line after a write; a plain file keeps the last one.
  rt.write("BE/schemata", "L3:0=00f;2=f\nMB:0=40;2=40\n");
  EXPECT_EQ(*rfs.read_tasks("BE"), (std::vector<int>{101, 102}));
  // Everything in place: a second pass (or a restarted agent) changes nothing.
  EXPECT_TRUE(plan_resctrl(snap, layout, be_resctrl(), reader).resctrl.empty());
  // A new thread appears: only it is appended.
  cg.write(GetParam() == CgroupVersion::kV2 ? dir + "/cgroup.threads" : "cpu/" + dir + "/tasks",
           "101\n102\n103\n");
  Plan more = plan_resctrl(snap, layout, be_resctrl(), reader);
  ASSERT_EQ(more.resctrl.size(), 1u);
  EXPECT_EQ(more.resctrl[0].tid, 103);
  // Someone changed the BE schemata: only the differing line is rewritten.
  rt.write("BE/schemata", "L3:0=f;2=7ff\nMB:0=40;2=40\n");
  Plan fix = plan_resctrl(snap, layout, be_resctrl(), reader);
  ASSERT_GE(fix.resctrl.size(), 1u);
  EXPECT_EQ(fix.resctrl[0].resource, "L3");
  EXPECT_EQ(ResctrlExecutor(rfs).apply({fix.resctrl[0]}).written, 1);
  EXPECT_EQ(rt.read("BE/schemata"), "L3:0=f;2=f\n");
}

TEST(ResctrlRestore, RemovesCreatedGroupsAndPutsBackLinesOfGroupsFoundBefore) {
  TempDir rt;
  make_resctrl(rt);
  rt.write("LS/schemata", "L3:0=7ff;2=7ff\nMB:0=100;2=100\n");  // made by someone else
  rt.write("LS/tasks", "");
  resctrl::ResctrlFs rfs(rt.path());
  ResctrlExecutor exec(rfs);
  std::vector<ResctrlOriginals> persisted;
  exec.set_persist([&](const ResctrlOriginals& o) {
    persisted.push_back(o);
    return true;
  });
  ResctrlAction create{ResctrlAction::Kind::kCreateGroup, "BE"};
  ResctrlAction ls_l3{ResctrlAction::Kind::kSchemata, "LS", "L3", {{0, "3ff"}, {2, "3ff"}}};
  ResctrlAction ls_task{ResctrlAction::Kind::kAddTask, "LS", "", {}, 4242};
  ASSERT_TRUE(exec.apply({create, ls_l3, ls_task}).failed.empty());
  EXPECT_EQ(rt.read("LS/schemata"), "L3:0=3ff;2=3ff\n");
  // Recorded before each change: the new group, then the LS line as found.
  ASSERT_EQ(persisted.size(), 2u);
  EXPECT_EQ(persisted[0].created_groups, std::set<std::string>{"BE"});
  EXPECT_EQ(persisted[1].schemata.at("LS").at("L3").at(2), "7ff");

  // Through the state file's form, as a restarted agent reads it.
  auto json = resctrl_originals_json(exec.originals());
  auto reread = parse_resctrl_originals(json, "originals.json");
  ASSERT_TRUE(reread.ok()) << reread.error().message;
  ResctrlExecutor restarted(rfs);
  restarted.adopt(*reread);
  rt.write("tasks", "");
  auto back = restarted.restore_all();
  EXPECT_TRUE(back.failed.empty()) << back.failed[0].message;
  EXPECT_FALSE(is_directory(rt.path() + "/BE"));  // the group it created is gone
  EXPECT_EQ(rt.read("LS/schemata"), "L3:0=7ff;2=7ff\n");
  // Task ids do not survive a restart (they name other processes by then); the executor
  // that placed one moves it back to the root group.
  exec.restore_all();
  EXPECT_EQ(rt.read("tasks"), "4242\n");
}

TEST(ResctrlRestore, MalformedRecordsNameTheField) {
  auto bad = parse_resctrl_originals(Json::parse(R"({"schemata":{"LS":{"L3":"nonsense"}}})"),
                                     "originals.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("resctrl.schemata.LS.L3"), std::string::npos)
      << bad.error().message;
  EXPECT_FALSE(parse_resctrl_originals(Json::parse(R"({"createdGroups":[1]})"), "f").ok());
}

TEST_P(ResctrlTree, MissingResctrlIsOneNoteAndNoAction) {
  TempDir cg;
  TempDir empty;
  cgroup::KubeletLayout layout(CgroupDriver::kSystemd);
  make_node_tree(cg, GetParam(), layout, {be_pod()});
  cgroup::CgroupFs fs(cg.path(), GetParam());
  resctrl::ResctrlFs rfs(empty.path());
  TreeReader reader(fs, &rfs);
  Plan plan = plan_resctrl(make_snapshot({}, {be_pod()}), layout, be_resctrl(), reader);
  EXPECT_TRUE(plan.resctrl.empty());
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_NE(plan.notes[0].find("not available"), std::string::npos);
  // Disabled everywhere: not even a note.
  EXPECT_TRUE(plan_resctrl(make_snapshot({}, {be_pod()}), layout, {}, reader).notes.empty());
}

INSTANTIATE_TEST_SUITE_P(Trees, ResctrlTree,
                         ::testing::Values(CgroupVersion::kV1, CgroupVersion::kV2),
                         [](const auto& info) {
                           return std::string(cgroup::to_string(info.param));
                         });

}  // namespace
}  // namespace gleaner::agent::qos
