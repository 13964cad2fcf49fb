// system-config: the knobs are computed as koordlet computes them and only when set; the
// executor reads before writing, keeps the value it found (on record before the change),
// puts back a knob the config stops setting, restores everything on stop, backs off a
// refused write, and leaves a kernel-specific knob this kernel lacks alone.
#include "agent/qos/system_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "agent/config/burst_system_config.h"
#include "agent/exec/system_executor.h"
#include "common/file_io.h"
#include "common/json_util.h"
#include "common/quantity.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent::qos {
namespace {
using exec::parse_system_originals;
using exec::system_originals_json;
using exec::SystemExecutor;
using exec::SystemOriginals;

using namespace std::chrono_literals;
using testing::TempDir;

using gleaner::kGi;

config::SystemStrategy parse_cluster(const std::string& json) {
  auto set = config::parse_system_config(json, "system-config");
  EXPECT_TRUE(set.ok()) << (set ? "" : set.error().message);
  return set ? set->cluster : config::SystemStrategy{};
}

TEST(SystemConfigPlan, NothingIsWrittenUnlessTheConfigSetsIt) {
  // Koordinator's default SystemStrategy sets no knob: neither does an empty key.
  auto plan = plan_system_config(parse_cluster(R"({"clusterStrategy":{}})"), 16 * kGi);
  EXPECT_TRUE(plan.writes.empty());
  EXPECT_TRUE(plan.notes.empty());
}

TEST(SystemConfigPlan, KnobsAsKoordletComputesThem) {
  auto plan = plan_system_config(
      parse_cluster(
          R"({"clusterStrategy":{"minFreeKbytesFactor":100,"watermarkScaleFactor":200,"memcgReapBackGround":1}})"),
      16 * kGi);
  ASSERT_EQ(plan.writes.size(), 3U);
  // 16 GiB = 16777216 KiB; * 100 / 10000 = 167772 (integer division, as koordlet).
  EXPECT_EQ(plan.writes[0], (SystemWrite{SystemKnob::kMinFreeKbytes, 167772}));
  EXPECT_EQ(plan.writes[1], (SystemWrite{SystemKnob::kWatermarkScaleFactor, 200}));
  EXPECT_EQ(plan.writes[2], (SystemWrite{SystemKnob::kMemcgReapBackground, 1}));
}

TEST(SystemConfigPlan, ValuesOutsideKoordletsRangesAreLeftWithAReason) {
  // 1 GiB * 1 / 10000 = 104 KiB: below 10 MiB.
  auto low =
      plan_system_config(parse_cluster(R"({"clusterStrategy":{"minFreeKbytesFactor":1}})"), kGi);
  EXPECT_TRUE(low.writes.empty());
  ASSERT_EQ(low.notes.size(), 1U);
  EXPECT_NE(low.notes[0].find("vm.min_free_kbytes 104"), std::string::npos) << low.notes[0];
  // 1 TiB at 20%: 214 GiB of reserve, above 10 GiB.
  EXPECT_TRUE(plan_system_config(
                  parse_cluster(R"({"clusterStrategy":{"minFreeKbytesFactor":2000}})"), 1024 * kGi)
                  .writes.empty());
  // Unknown capacity: nothing computed from it.
  auto unknown =
      plan_system_config(parse_cluster(R"({"clusterStrategy":{"minFreeKbytesFactor":100}})"), 0);
  EXPECT_TRUE(unknown.writes.empty());
  EXPECT_EQ(unknown.notes.size(), 1U);

  auto set = config::parse_system_config(R"({"clusterStrategy":{"watermarkScaleFactor":500}})",
                                         "system-config");
  ASSERT_TRUE(set.ok());
  ASSERT_EQ(set->warnings.size(), 1U);
  EXPECT_NE(set->warnings[0].find("clusterStrategy.watermarkScaleFactor 500"), std::string::npos)
      << set->warnings[0];
  EXPECT_TRUE(plan_system_config(set->cluster, 16 * kGi).writes.empty());
}

TEST(SystemConfigPlan, ANodeStrategyOverridesOnlyWhatItSets) {
  auto set = config::parse_system_config(
      R"({"clusterStrategy":{"watermarkScaleFactor":200,"minFreeKbytesFactor":100},
          "nodeStrategies":[{"nodeSelector":{"matchLabels":{"pool":"big"}},"watermarkScaleFactor":300}]})",
      "system-config");
  ASSERT_TRUE(set.ok()) << set.error().message;
  const auto big = set->for_node({{"pool", "big"}});
  EXPECT_EQ(big.watermark_scale_factor, 300);
  EXPECT_EQ(big.min_free_kbytes_factor, 100);
  EXPECT_EQ(set->for_node({}).watermark_scale_factor, 200);
  EXPECT_FALSE(set->cluster.memcg_reap_background.has_value());
}

class SystemExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    proc_.write("sys/vm/min_free_kbytes", "67584\n");
    proc_.write("sys/vm/watermark_scale_factor", "10\n");
  }
  [[nodiscard]] std::string knob(const char* relative) const {
    std::string v = proc_.read(relative);
    while (!v.empty() && v.back() == '\n')
      v.pop_back();
    return v;
  }

  TempDir proc_;
  TempDir sys_;
  FakeClock clock_;
  SystemExecutor executor_{proc_.path(), sys_.path(), false, &clock_};
};

TEST_F(SystemExecutorTest, WritesRemembersFirstAndSkipsWhatHolds) {
  std::vector<SystemOriginals> persisted;
  std::vector<std::string> on_disk_at_persist;
  executor_.set_persist([&](const SystemOriginals& o) {
    persisted.push_back(o);
    on_disk_at_persist.push_back(knob("sys/vm/watermark_scale_factor"));
    return true;
  });
  auto report = executor_.apply({{SystemKnob::kWatermarkScaleFactor, 200}});
  ASSERT_TRUE(report.failed.empty());
  EXPECT_EQ(knob("sys/vm/watermark_scale_factor"), "200");
  ASSERT_EQ(persisted.size(), 1U);
  EXPECT_EQ(persisted[0].at("vm.watermark_scale_factor"), "10");
  EXPECT_EQ(on_disk_at_persist[0], "10") << "the original is on record before the write";

  report = executor_.apply({{SystemKnob::kWatermarkScaleFactor, 200}});
  EXPECT_TRUE(report.written.empty());
  EXPECT_EQ(executor_.counters().at("vm.watermark_scale_factor").unchanged, 1);
  // Someone else changes it: written again, the original stays the first one found.
  proc_.write("sys/vm/watermark_scale_factor", "50\n");
  report = executor_.apply({{SystemKnob::kWatermarkScaleFactor, 200}});
  EXPECT_EQ(report.written.size(), 1U);
  EXPECT_EQ(executor_.originals().at("vm.watermark_scale_factor"), "10");
  EXPECT_EQ(persisted.size(), 1U);
}

TEST_F(SystemExecutorTest, AKnobNoLongerSetGoesBackAndStopRestoresTheRest) {
  executor_.apply({{SystemKnob::kWatermarkScaleFactor, 200}, {SystemKnob::kMinFreeKbytes, 167772}});
  EXPECT_EQ(knob("sys/vm/min_free_kbytes"), "167772");
  executor_.apply({{SystemKnob::kMinFreeKbytes, 167772}});
  EXPECT_EQ(knob("sys/vm/watermark_scale_factor"), "10");
  EXPECT_EQ(executor_.originals().count("vm.watermark_scale_factor"), 0U);
  auto back = executor_.restore_all();
  EXPECT_TRUE(back.failed.empty());
  EXPECT_EQ(knob("sys/vm/min_free_kbytes"), "67584");
  EXPECT_TRUE(executor_.originals().empty());
}

TEST_F(SystemExecutorTest, AnEarlierRunsOriginalsWinOverTheValuesFoundNow) {
  // A killed agent left 200 in force; its record says 10 was the node's value.
  proc_.write("sys/vm/watermark_scale_factor", "200\n");
  executor_.adopt({{"vm.watermark_scale_factor", "10"}});
  executor_.apply({{SystemKnob::kWatermarkScaleFactor, 200}});
  executor_.restore_all();
  EXPECT_EQ(knob("sys/vm/watermark_scale_factor"), "10");
}

TEST_F(SystemExecutorTest, AKnobThisKernelLacksIsLeftWithoutAFailure) {
  auto report = executor_.apply({{SystemKnob::kMemcgReapBackground, 1}});
  EXPECT_TRUE(report.failed.empty());
  EXPECT_TRUE(report.written.empty());
  EXPECT_TRUE(executor_.plan({{SystemKnob::kMemcgReapBackground, 1}}).empty());
  sys_.write("sys/kernel/mm/memcg_reaper/reap_background", "0\n");
  report = executor_.apply({{SystemKnob::kMemcgReapBackground, 1}});
  EXPECT_EQ(report.written.size(), 1U);
  EXPECT_EQ(sys_.read("sys/kernel/mm/memcg_reaper/reap_background"), "1");
}

TEST_F(SystemExecutorTest, ARefusedWriteBacksOffAndIsCounted) {
  // A kernel file that reads but refuses every write, even root's (as a read-only /proc/sys
  // does in an unprivileged container): the knob's path is a link to it.
  const std::string refusing = "/sys/kernel/uevent_seqnum";
  if (!path_exists(refusing)) GTEST_SKIP() << refusing << " is not on this kernel";
  TempDir proc;
  proc.mkdir("sys/vm");
  ASSERT_EQ(::symlink(refusing.c_str(), (proc / "sys/vm/watermark_scale_factor").c_str()), 0);
  SystemExecutor executor(proc.path(), sys_.path(), false, &clock_);
  const std::vector<SystemWrite> wanted = {{SystemKnob::kWatermarkScaleFactor, 200}};
  auto first = executor.apply(wanted);
  ASSERT_EQ(first.failed.size(), 1U);
  EXPECT_EQ(first.failed[0].code, ErrorCode::kPermission) << first.failed[0].message;
  EXPECT_EQ(executor.apply(wanted).failed.size(), 0U) << "held back within the first second";
  EXPECT_EQ(executor.counters().at("vm.watermark_scale_factor").deferred, 1);
  clock_.advance(1100ms);
  EXPECT_EQ(executor.apply(wanted).failed.size(), 1U);
  clock_.advance(1100ms);
  EXPECT_EQ(executor.apply(wanted).failed.size(), 0U) << "the second wait is 2 s";
  EXPECT_EQ(executor.counters().at("vm.watermark_scale_factor").failures, 2);
  // What was found is on record (the write was attempted), and restore leaves it alone.
  EXPECT_EQ(executor.originals().count("vm.watermark_scale_factor"), 1U);
}

TEST(SystemOriginalsRecord, RoundTripsAndRefusesWhatItDoesNotKnow) {
  const SystemOriginals o = {{"vm.min_free_kbytes", "67584"}, {"vm.watermark_scale_factor", "10"}};
  auto back = parse_system_originals(system_originals_json(o), "originals.json");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, o);
  auto unknown = parse_system_originals(Json{{"vm.swappiness", "60"}}, "originals.json");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("system.vm.swappiness"), std::string::npos);
  EXPECT_FALSE(parse_system_originals(Json{{"vm.min_free_kbytes", 67584}}, "f").ok());
  EXPECT_FALSE(parse_system_originals(Json::array(), "f").ok());
}

}  // namespace
}  // namespace gleaner::agent::qos
