#include "agent/qos/qos_engine.h"

#include <gtest/gtest.h>

#include "agent/edge/knob_reader.h"
#include "cgroup/executor.h"
#include "test/agent/qos/qos_test_util.h"

namespace gleaner::agent::qos {
namespace {
using namespace test;

std::vector<FakePod> pods() {
  FakePod ls{.name = "web", .uid = "ls-1", .kube_qos = "Burstable", .cpu_usage = "2"};
  FakePod be{.name = "spark", .uid = "be-1", .qos_label = "BE", .cpu_usage = "1"};
  return {ls, be};
}

TEST(QosEngine, SuppressOnlyReactsToAFreshSampleAfterOneFullRun) {
  NodeTree node(CgroupVersion::kV1, CgroupDriver::kCgroupfs, pods());
  auto& [t, layout, fs, reader, exec] = node;
  auto snap = make_snapshot({}, pods());
  QosEngine engine;
  EXPECT_TRUE(engine.suppress_only({6000, 5000, false}, reader).writes.empty());  // no run yet
  QosInputs in;
  in.snapshot = &snap;
  in.threshold.enable = true;
  in.threshold.cpu_suppress_policy = config::CpuSuppressPolicy::kCfsQuota;
  in.layout = layout;
  in.reader = &reader;
  exec.apply(engine.run(in).writes);
  const std::string be = layout.qos_dir(KubeQos::kBestEffort);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, be), 320000);  // 8000*65% - 2000
  // LS surges to 4.5 cores: the fast path cuts BE at once.
  exec.apply(engine.suppress_only({6000, 4500, false}, reader).writes);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, be), 70000);
  // A stale fast sample showing LS gone does not let BE grow.
  EXPECT_TRUE(exec.plan(engine.suppress_only({1000, 0, true}, reader).writes).empty());
}

// The agent's first pass: /proc/stat has no delta yet and no pod has a CPU figure, so a
// snapshot would show every core busy outside the pods (all "system") and BE at 0. Acting
// on it would cut BE to the floor; the engine leaves BE's CPU alone until figures exist.
TEST(QosEngine, FirstPassWithoutCpuFiguresLeavesBeCpuAsItIs) {
  std::vector<FakePod> unmeasured = pods();
  for (auto& p : unmeasured)
    p.cpu_usage = "0";
  NodeTree node(CgroupVersion::kV1, CgroupDriver::kCgroupfs, unmeasured);
  auto& [t, layout, fs, reader, exec] = node;
  FakeNode placeholder;
  placeholder.node_cpu_usage = "8";
  auto snap = make_snapshot(placeholder, unmeasured);
  QosInputs in;
  in.snapshot = &snap;
  in.threshold.enable = true;
  in.threshold.cpu_suppress_policy = config::CpuSuppressPolicy::kCfsQuota;
  in.threshold.cpu_evict_be_satisfaction_lower_percent = 60;
  in.threshold.cpu_evict_time_window_seconds = 60;
  in.layout = layout;
  in.reader = &reader;
  in.cpu_measured = false;
  QosEngine engine;
  Plan first = engine.run(in);
  for (const auto& w : first.writes)
    EXPECT_NE(w.reason, kReasonCpuSuppress) << w.cgroup << " " << w.value;
  EXPECT_TRUE(first.evictions.empty());
  EXPECT_FALSE(engine.save_memory(0).contains("beCpuWindow"));
  // Nor does the fast path act on the node facts of that pass.
  EXPECT_TRUE(engine.suppress_only({6000, 5000, false}, reader).writes.empty());
  // The same figures, measured, do cut BE: the hold is what the flag decides.
  in.cpu_measured = true;
  bool suppressed = false;
  for (const auto& w : engine.run(in).writes)
    suppressed |= w.reason == kReasonCpuSuppress;
  EXPECT_TRUE(suppressed);
  EXPECT_FALSE(engine.suppress_only({6000, 5000, false}, reader).writes.empty());
}

TEST(QosEngine, StaleInputsNeverLoosenAnything) {
  NodeTree node(CgroupVersion::kV2, CgroupDriver::kSystemd, pods());
  auto& [t, layout, fs, reader, exec] = node;
  const std::string be = layout.qos_dir(KubeQos::kBestEffort);
  exec.apply({{Resource::kCpuQuota, be, "100000", "t"}, {Resource::kCpusetCpus, be, "0-1", "t"}});
  FakeNode idle;  // nothing runs: fresh data would widen BE
  idle.memory = idle.allocatable_memory = "10Gi";
  idle.node_memory_usage = "9Gi";  // over the eviction threshold too
  auto snap = make_snapshot(idle, pods());
  for (auto policy : {config::CpuSuppressPolicy::kCfsQuota, config::CpuSuppressPolicy::kCpuset}) {
    QosInputs in;
    in.snapshot = &snap;
    in.threshold.enable = true;
    in.threshold.cpu_suppress_policy = policy;
    in.layout = layout;
    in.reader = &reader;
    in.stale = true;
    QosEngine engine;
    Plan plan = engine.run(in);
    // BE cgroup values come from pod specs, not metrics; suppression must hold.
    // Suppression may tighten or keep children inside their parent, never widen.
    for (const auto& w : exec.plan(plan.writes)) {
      auto old_v = *cgroup::logical_from_file(w.resource, CgroupVersion::kV2, w.old_content);
      auto new_v = *cgroup::logical_from_file(w.resource, CgroupVersion::kV2, w.content);
      EXPECT_NE(cgroup::direction_of(w.resource, old_v, new_v), cgroup::Direction::kWiden)
          << config::to_string(policy) << " " << w.path << " " << old_v << " -> " << new_v;
    }
    EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, be), 100000);
    EXPECT_TRUE(plan.evictions.empty());
    in.stale = false;
    bool widened = false;
    for (const auto& w : exec.plan(engine.run(in).writes))
      widened |= w.reason == kReasonCpuSuppress;
    EXPECT_TRUE(widened) << config::to_string(policy);
  }
}

}  // namespace
}  // namespace gleaner::agent::qos
