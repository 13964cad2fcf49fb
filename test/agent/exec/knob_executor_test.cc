#include "agent/exec/knob_executor.h"

#include <gtest/gtest.h>

#include "cgroup/originals_file.h"
#include "common/file_io.h"
#include "common/strings.h"
#include "test/agent/qos/qos_test_util.h"

namespace gleaner::agent::exec {
namespace {
using gleaner::testing::TempDir;
using qos::ResctrlAction;
using qos::SystemKnob;

constexpr const char* kBe = "kubepods/besteffort";
constexpr const char* kBoot = "boot-1";

// One node in temp dirs: a v1 cgroup tree as kubelet leaves it, a resctrl mount where
// someone else made the LS group, and /proc/sys's vm knobs. The record lives in state/.
class KnobNode : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* cg : {"kubepods", kBe}) {
      cg_.write(std::string("cpu/") + cg + "/cpu.cfs_quota_us", "-1\n");
      cg_.write(std::string("cpu/") + cg + "/cpu.cfs_period_us", "100000\n");
    }
    qos::test::make_resctrl(rt_);
    rt_.write("LS/schemata", "L3:0=7ff;2=7ff\nMB:0=100;2=100\n");
    rt_.write("LS/tasks", "");
    proc_.write("sys/vm/min_free_kbytes", "67584\n");
  }

  // An executor as the agent starts one: it adopts what the record holds, then records there.
  std::unique_ptr<KnobExecutor> start_agent() {
    auto knobs = std::make_unique<KnobExecutor>(fs_, &rfs_, proc_.path(), sys_.path());
    if (auto loaded = file_.load()) {
      auto read = read_knob_originals(std::move(*loaded), file_.path());
      EXPECT_TRUE(read.problems.empty()) << read.problems[0].describe();
      knobs->adopt(read.originals);
    }
    knobs->set_persist(
        [this](const KnobOriginals& all) { return save_knob_originals(file_, all); });
    return knobs;
  }

  [[nodiscard]] static std::string trimmed(const std::string& s) { return std::string(trim(s)); }
  [[nodiscard]] std::string quota() const {
    return trimmed(cg_.read(std::string("cpu/") + kBe + "/cpu.cfs_quota_us"));
  }
  [[nodiscard]] std::string min_free() const {
    return trimmed(proc_.read("sys/vm/min_free_kbytes"));
  }

  const std::vector<cgroup::CgroupWrite> cut_be_ = {
      {cgroup::Resource::kCpuQuota, kBe, "50000", "cpu-suppress"}};
  const std::vector<ResctrlAction> resctrl_ = {
      {ResctrlAction::Kind::kCreateGroup, "BE"},
      {ResctrlAction::Kind::kSchemata, "LS", "L3", {{0, "3ff"}, {2, "3ff"}}}};
  const std::vector<qos::SystemWrite> sysctls_ = {{SystemKnob::kMinFreeKbytes, 100000}};

  TempDir cg_;
  TempDir rt_;
  TempDir proc_;
  TempDir sys_;
  TempDir state_;
  cgroup::CgroupFs fs_{cg_.path(), cgroup::CgroupVersion::kV1};
  resctrl::ResctrlFs rfs_{rt_.path()};
  cgroup::OriginalsFile file_{state_ / "originals.json", kBoot};
};

TEST_F(KnobNode, OneRecordRestoresEveryKnobFamilyAfterACrash) {
  {
    auto agent = start_agent();
    auto report = agent->apply(cut_be_, resctrl_, &sysctls_);
    EXPECT_TRUE(report.failed.empty()) << report.failed[0].error.describe();
    EXPECT_EQ(report.written_of(KnobKind::kCgroup), 1u);
    EXPECT_EQ(report.written_of(KnobKind::kResctrl), 2u);
    ASSERT_EQ(report.written_of(KnobKind::kSysctl), 1u);
    EXPECT_EQ(report.written.back().path, proc_ / "sys/vm/min_free_kbytes");
    EXPECT_EQ(report.written.back().old_value, "67584");
    EXPECT_EQ(quota(), "50000");
    EXPECT_EQ(rt_.read("LS/schemata"), "L3:0=3ff;2=3ff\n");
    EXPECT_TRUE(is_directory(rt_ / "BE"));
    EXPECT_EQ(min_free(), "100000");
    EXPECT_EQ(agent->persist_failures(), 0);
    // Killed here: no restore_all(), the values stay changed and on record.
  }
  ASSERT_TRUE(path_exists(file_.path()));
  auto successor = start_agent();
  // The successor finds the agent's own values in force: the record, not they, goes back.
  auto back = successor->restore_all();
  EXPECT_TRUE(back.failed.empty()) << back.failed[0].error.describe();
  EXPECT_TRUE(back.nothing_left());
  EXPECT_EQ(back.written_of(KnobKind::kCgroup), 1u);
  EXPECT_EQ(back.written_of(KnobKind::kSysctl), 1u);
  EXPECT_EQ(quota(), "-1");
  EXPECT_EQ(rt_.read("LS/schemata"), "L3:0=7ff;2=7ff\n");
  EXPECT_FALSE(is_directory(rt_ / "BE")) << "the group the first agent created is removed";
  EXPECT_EQ(min_free(), "67584");
  EXPECT_TRUE(successor->originals().empty());
}

// The record as agents before the one executor wrote it (the same form, kept on purpose):
// an upgraded agent puts back what the old one changed.
TEST_F(KnobNode, AnOlderAgentsRecordIsRestored) {
  // The old agent's values are in force.
  cg_.write(std::string("cpu/") + kBe + "/cpu.cfs_quota_us", "50000\n");
  rt_.write("LS/schemata", "L3:0=3ff;2=3ff\n");
  rt_.mkdir("BE");
  proc_.write("sys/vm/min_free_kbytes", "100000\n");
  state_.write("originals.json", R"({
 "format": 1,
 "bootId": "boot-1",
 "cgroups": [
  {"path": "/elsewhere/cpu/kubepods/besteffort/cpu.cfs_quota_us", "resource": "cpu_quota",
   "cgroup": "kubepods/besteffort", "content": "-1"}
 ],
 "resctrl": {"createdGroups": ["BE"], "schemata": {"LS": {"L3": "L3:0=7ff;2=7ff"}}},
 "system": {"vm.min_free_kbytes": "67584"}
}
)");
  auto agent = start_agent();
  EXPECT_EQ(agent->originals().cgroups.size(), 1u);
  auto back = agent->restore_all();
  EXPECT_TRUE(back.nothing_left());
  EXPECT_EQ(quota(), "-1");
  EXPECT_EQ(rt_.read("LS/schemata"), "L3:0=7ff;2=7ff\n");
  EXPECT_FALSE(is_directory(rt_ / "BE"));
  EXPECT_EQ(min_free(), "67584");
}

TEST_F(KnobNode, NothingChangesWhoseOriginalCannotBeRecorded) {
  KnobExecutor agent(fs_, &rfs_, proc_.path(), sys_.path());
  int calls = 0;
  agent.set_persist([&](const KnobOriginals&) -> Status {
    ++calls;
    return make_error(ErrorCode::kIo, "state dir: read-only file system");
  });
  const std::vector<ResctrlAction> ls_line = {resctrl_[1]};
  auto report = agent.apply(cut_be_, ls_line, &sysctls_);
  EXPECT_EQ(report.unrecorded, 3);
  EXPECT_TRUE(report.written.empty());
  EXPECT_EQ(agent.persist_failures(), calls);
  EXPECT_EQ(calls, 3) << "one attempt per family, each before its change";
  EXPECT_EQ(quota(), "-1");
  EXPECT_EQ(rt_.read("LS/schemata"), "L3:0=7ff;2=7ff\nMB:0=100;2=100\n");
  EXPECT_EQ(min_free(), "67584");
  EXPECT_TRUE(agent.originals().empty());
}

TEST_F(KnobNode, SysctlsAreLeftUnlessThePassSetsThem) {
  KnobExecutor agent(fs_, &rfs_, proc_.path(), sys_.path());
  agent.apply({}, {}, &sysctls_);
  ASSERT_EQ(min_free(), "100000");
  // A fast pass: cgroups only; system-config's knobs stay as the last full pass set them.
  agent.apply(cut_be_, {});
  EXPECT_EQ(min_free(), "100000");
  // A full pass whose config no longer sets the knob puts it back.
  const std::vector<qos::SystemWrite> none;
  auto report = agent.apply({}, {}, &none);
  EXPECT_EQ(min_free(), "67584");
  EXPECT_EQ(report.written_of(KnobKind::kSysctl), 1u);
  EXPECT_EQ(agent.counters().at("vm.min_free_kbytes").writes, 2);
  EXPECT_EQ(agent.counters().at("cpu_quota").writes, 1);
}

TEST_F(KnobNode, WithoutResctrlItsRecordIsLeftAndTheRestRestored) {
  state_.write("originals.json", R"({"format": 1, "bootId": "boot-1", "cgroups": [],
 "resctrl": {"createdGroups": ["BE"]}, "system": {"vm.min_free_kbytes": "67584"}})");
  proc_.write("sys/vm/min_free_kbytes", "100000\n");
  rt_.mkdir("BE");
  KnobExecutor agent(fs_, nullptr, proc_.path(), sys_.path());
  auto read = read_knob_originals(*file_.load(), file_.path());
  agent.adopt(read.originals);
  EXPECT_FALSE(agent.has_resctrl());
  auto back = agent.restore_all();
  EXPECT_TRUE(back.nothing_left());
  EXPECT_EQ(min_free(), "67584");
  EXPECT_TRUE(is_directory(rt_ / "BE"));
}

TEST(KnobOriginalsRecord, ABadSectionIsNamedAndTheOthersAreKept) {
  auto loaded = cgroup::parse_originals(
      R"({"format": 1, "bootId": "b", "cgroups": [], "resctrl": {"createdGroups": [1]},
          "system": {"vm.min_free_kbytes": "67584"}})",
      "/var/lib/gleaner/originals.json", "b");
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  auto read = read_knob_originals(std::move(*loaded), "/var/lib/gleaner/originals.json");
  ASSERT_EQ(read.problems.size(), 1u);
  EXPECT_NE(read.problems[0].message.find("resctrl.createdGroups"), std::string::npos)
      << read.problems[0].message;
  EXPECT_EQ(read.originals.sysctls.at("vm.min_free_kbytes"), "67584");
  EXPECT_TRUE(read.originals.resctrl.empty());
}

}  // namespace
}  // namespace gleaner::agent::exec
