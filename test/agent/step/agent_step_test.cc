// The agent's step without root: the daemon's rules (interference armed, held and lifted;
// the fast path resting while no ceiling is in force; the fast path owning suppress writes;
// the priming pass) on a fake cgroup tree.
#include "agent/step/agent_step.h"

#include <gtest/gtest.h>

#include "agent/edge/knob_reader.h"
#include "agent/step/step_record.h"
#include "cgroup/cgroup_fs.h"
#include "test/agent/qos/qos_test_util.h"
#include "test/agent/step/step_test_node.h"

namespace gleaner::agent::step {
namespace {
using namespace qos::test;
using cgroup::Resource;
using test::kBeQos;
using test::kLayout;

class AgentStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pods_ = test::web_and_spark();
    make_node_tree(tree_, cgroup::CgroupVersion::kV1, kLayout, pods_);
    snap_ = make_snapshot(test::busy_node(), pods_);
  }

  TickInputs inputs(config::CpuSuppressMode mode, double now_s, ProbeReadings probe = {}) {
    TickInputs in;
    in.snapshot = &snap_;
    in.threshold.enable = true;
    in.threshold.cpu_suppress_policy = config::CpuSuppressPolicy::kCfsQuota;
    in.threshold.cpu_suppress_mode = mode;
    in.layout = kLayout;
    in.reader = &reader_;
    in.now_s = now_s;
    in.probe = std::move(probe);
    return in;
  }
  static bool writes_be_quota(const qos::Plan& plan) {
    return std::any_of(plan.writes.begin(), plan.writes.end(), [](const auto& w) {
      return w.resource == Resource::kCpuQuota && w.cgroup == kBeQos;
    });
  }
  // The BE pod used nothing in the latest sample.
  void be_idle() {
    pods_[1].cpu_usage = "0";
    FakeNode n;
    n.node_cpu_usage = "3";
    n.system_cpu = "500m";
    snap_ = make_snapshot(n, pods_);
  }
  static ProbeReadings waiting(double p99_ms) {
    ProbeReadings p;
    p.runqueue_probe = true;
    p.runq_p99_ns["default/web"] = p99_ms * 1e6;
    return p;
  }

  TempDir tree_;
  std::vector<FakePod> pods_;
  snapshot::NodeSnapshot snap_;
  cgroup::CgroupFs fs_{tree_.path(), cgroup::CgroupVersion::kV1};
  qos::test::TreeReader reader_{fs_, nullptr};
  bpf::InterferenceConfig rule_{.runq_p99_bound = std::chrono::milliseconds(5),
                                .hold = std::chrono::seconds(30)};
};

TEST_F(AgentStepTest, AlwaysModeSuppressesWithoutASignal) {
  AgentStep step(rule_, kLayout, 8);
  auto out = step.tick(inputs(config::CpuSuppressMode::kAlways, 100));
  EXPECT_TRUE(writes_be_quota(out.plan));
}

TEST_F(AgentStepTest, OnInterferenceArmsOnAWaitHoldsThenLifts) {
  AgentStep step(rule_, kLayout, 8);
  const auto mode = config::CpuSuppressMode::kOnInterference;
  // A signal that stays quiet: no ceiling, and the fast path rests.
  auto quiet = step.tick(inputs(mode, 100, waiting(0.1)));
  EXPECT_FALSE(step.suppress_armed());
  EXPECT_FALSE(writes_be_quota(quiet.plan));
  EXPECT_TRUE(step.fast({4000, 2000, false, &reader_}).writes.empty());
  // An LS pod waits 8 ms while BE runs: armed at once, the ceiling lands.
  auto wait = step.tick(inputs(mode, 101, waiting(8)));
  EXPECT_TRUE(step.suppress_armed());
  EXPECT_TRUE(writes_be_quota(wait.plan));
  ASSERT_FALSE(wait.events.empty());
  EXPECT_NE(wait.events.back().find("armed"), std::string::npos);
  // Quiet again: held for the hold time, lifted after it.
  step.tick(inputs(mode, 120, waiting(0.1)));
  EXPECT_TRUE(step.suppress_armed());
  auto lifted = step.tick(inputs(mode, 132, waiting(0.1)));
  EXPECT_FALSE(step.suppress_armed());
  EXPECT_NE(lifted.events.back().find("lifted"), std::string::npos);
}

TEST_F(AgentStepTest, OnInterferenceWithoutAnySignalKeepsTheCeiling) {
  AgentStep step(rule_, kLayout, 8);
  auto out = step.tick(inputs(config::CpuSuppressMode::kOnInterference, 100));
  EXPECT_TRUE(step.suppress_armed());
  EXPECT_TRUE(writes_be_quota(out.plan));
}

TEST_F(AgentStepTest, ALiveFastPathOwnsTheSuppressWrites) {
  AgentStep step(rule_, kLayout, 8);
  auto in = inputs(config::CpuSuppressMode::kAlways, 100);
  in.fast_path_live = true;
  EXPECT_FALSE(writes_be_quota(step.tick(in).plan));
  // ... and writes them itself from its own sample.
  EXPECT_TRUE(writes_be_quota(step.fast({4000, 2500, false, &reader_})));
}

// Forwards to a reader and notes every cgroup a pass asked it to read.
class CountingReader : public qos::QosReader {
 public:
  explicit CountingReader(qos::QosReader& inner) : inner_(inner) {}
  std::vector<std::string> cgroups;
  qos::KnobSnapshot read(const qos::KnobReads& reads) override {
    for (const auto& [cg, resources] : reads.files)
      cgroups.push_back(cg);
    for (const auto& cg : reads.counters)
      cgroups.push_back(cg);
    return inner_.read(reads);
  }

 private:
  qos::QosReader& inner_;
};

TEST_F(AgentStepTest, UnderCfsQuotaTheFastPathReadsOnlyTheBeQosCgroup) {
  AgentStep step(rule_, kLayout, 8);
  auto in = inputs(config::CpuSuppressMode::kAlways, 100);
  in.fast_path_live = true;
  step.tick(in);
  CountingReader counting(reader_);
  auto plan = step.fast({4000, 2500, false, &counting});
  EXPECT_TRUE(writes_be_quota(plan));
  // The quota and its period: no BE pod or container cgroup is read at 50 ms.
  ASSERT_FALSE(counting.cgroups.empty());
  for (const auto& cg : counting.cgroups)
    EXPECT_EQ(cg, kBeQos);
  // The BE pods' CPU lists (restored after the cpuset policy) stay the full pass's.
  in.now_s = 101;
  bool restores_cpusets = false;
  for (const auto& w : step.tick(in).plan.writes)
    restores_cpusets |= w.resource == Resource::kCpusetCpus && w.cgroup != kBeQos;
  EXPECT_TRUE(restores_cpusets);
}

TEST_F(AgentStepTest, ThePrimingPassLeavesBeAsItIs) {
  AgentStep step(rule_, kLayout, 8);
  auto in = inputs(config::CpuSuppressMode::kAlways, 100);
  in.cpu_measured = false;
  EXPECT_FALSE(writes_be_quota(step.tick(in).plan));
  EXPECT_TRUE(step.fast({4000, 2500, false, &reader_}).writes.empty());
}

TEST_F(AgentStepTest, BeRunningIsJudgedOnTheLatestSample) {
  // The BE pod used nothing in the latest sample (whatever it averaged before): an LS wait
  // holds the ceiling but does not tighten it.
  be_idle();
  AgentStep step(rule_, kLayout, 8);
  auto out = step.tick(inputs(config::CpuSuppressMode::kOnInterference, 100, waiting(8)));
  EXPECT_EQ(out.interference.action, bpf::InterferenceAction::kHold);
}

TEST_F(AgentStepTest, MemoryRoundTripsThroughAnotherStep) {
  AgentStep first(rule_, kLayout, 8);
  const auto mode = config::CpuSuppressMode::kOnInterference;
  first.tick(inputs(mode, 100, waiting(8)));
  AgentStep second(rule_, kLayout, 8);
  ASSERT_TRUE(second.adopt(first.memory(100), 100));
  // Within the hold time the adopted step still holds, as the first one would.
  auto a = first.tick(inputs(mode, 110, waiting(0.1)));
  auto b = second.tick(inputs(mode, 110, waiting(0.1)));
  EXPECT_EQ(a.interference.action, b.interference.action);
  EXPECT_EQ(first.suppress_armed(), second.suppress_armed());
  ASSERT_EQ(a.plan.writes.size(), b.plan.writes.size());
  for (size_t i = 0; i < a.plan.writes.size(); ++i)
    EXPECT_EQ(a.plan.writes[i].value, b.plan.writes[i].value);
}

LsWait waited(double ms, double now_s, qos::QosReader& reader) {
  return {"default/web", ms * 1e6, now_s, &reader};
}

TEST_F(AgentStepTest, AWaitBetweenTicksArmsAndTheFastPathWritesTheCeiling) {
  AgentStep step(rule_, kLayout, 8);
  const auto mode = config::CpuSuppressMode::kOnInterference;
  step.tick(inputs(mode, 100, waiting(0.1)));
  ASSERT_FALSE(step.suppress_armed());
  ASSERT_TRUE(step.fast({4000, 2000, false, &reader_}).writes.empty());
  auto out = step.ls_waited(waited(8, 100.4, reader_));
  EXPECT_EQ(out.interference.action, bpf::InterferenceAction::kTightenNow);
  EXPECT_TRUE(step.suppress_armed());
  // The state change is an event (an info line); the step itself a detail (a debug line).
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_NE(out.events.front().find("armed"), std::string::npos);
  ASSERT_EQ(out.details.size(), 1u);
  EXPECT_NE(out.details.front().find("interference between ticks"), std::string::npos);
  ASSERT_TRUE(step.memory(0).ceiling_quota_us.has_value());
  // The fast pass that follows writes BE's quota, at most the ceiling.
  auto plan = step.fast({4000, 2000, false, &reader_});
  ASSERT_TRUE(writes_be_quota(plan));
  for (const auto& w : plan.writes) {
    if (w.resource == Resource::kCpuQuota && w.cgroup == kBeQos) {
      EXPECT_LE(std::stoll(w.value), *step.memory(0).ceiling_quota_us);
    }
  }
  // The wait restarted the hold: a quiet tick 20 s later still holds.
  step.tick(inputs(mode, 120, waiting(0.1)));
  EXPECT_TRUE(step.suppress_armed());
}

TEST_F(AgentStepTest, WaitsBetweenTicksTakeAtMostOneStepPerGap) {
  AgentStep step(rule_, kLayout, 8);
  step.tick(inputs(config::CpuSuppressMode::kAlways, 100));
  step.ls_waited(waited(8, 100.20, reader_));
  const auto first = step.memory(0).ceiling_quota_us;
  ASSERT_TRUE(first.has_value());
  // Within the gap: held, the ceiling stays.
  EXPECT_EQ(step.ls_waited(waited(9, 100.25, reader_)).interference.action,
            bpf::InterferenceAction::kHold);
  EXPECT_EQ(step.memory(0).ceiling_quota_us, first);
  // After it: one more step down (a tenth of 8 CPUs).
  step.ls_waited(waited(9, 100.31, reader_));
  ASSERT_TRUE(step.memory(0).ceiling_quota_us.has_value());
  EXPECT_EQ(*step.memory(0).ceiling_quota_us, *first - 80'000);
}

TEST_F(AgentStepTest, AWaitBetweenTicksWithoutBeRunningOrBeforeAnyTickChangesNothing) {
  AgentStep fresh(rule_, kLayout, 8);
  EXPECT_TRUE(fresh.ls_waited(waited(8, 99, reader_)).events.empty());
  EXPECT_FALSE(fresh.memory(0).ceiling_quota_us.has_value());

  be_idle();
  AgentStep step(rule_, kLayout, 8);
  step.tick(inputs(config::CpuSuppressMode::kAlways, 100));
  EXPECT_EQ(step.ls_waited(waited(8, 100.5, reader_)).interference.action,
            bpf::InterferenceAction::kHold);
  EXPECT_FALSE(step.memory(0).ceiling_quota_us.has_value());
}

// The step reads what each strategy declares: resctrl QoS finds the node's resctrl (its
// capability, groups and tasks) and plans BE's group.
TEST_F(AgentStepTest, AFullPassReadsWhatTheStrategiesDeclare) {
  TempDir resctrl_root;
  make_resctrl(resctrl_root);
  resctrl::ResctrlFs rfs(resctrl_root.path());
  TreeReader reader(fs_, &rfs);
  TickInputs in = inputs(config::CpuSuppressMode::kAlways, 100);
  in.reader = &reader;
  in.qos.be.resctrl.enable = true;
  AgentStep step(rule_, kLayout, 8);
  const StepResult out = step.tick(in);
  EXPECT_FALSE(out.plan.resctrl.empty());
  for (const auto& note : out.plan.notes)
    EXPECT_EQ(note.find("resctrl: not available"), std::string::npos) << note;
}

TEST(StepRecord, RoundTripsAndNamesBadFields) {
  StepRecord r;
  r.probe.runqueue_probe = true;
  r.probe.runq_p99_ns["web/api-0"] = 8e6;
  r.probe.cpu_psi_some_avg10 = 12.5;
  r.memory.last_breach_s = 990;
  r.memory.ceiling_quota_us = 40000;
  // The strategies' parts, in their record form (each strategy reads and writes its own).
  r.memory.strategies = Json::parse(R"({
    "evictions": {"lastCpuSecondsAgo": 100},
    "beCpuWindow": [{"secondsAgo": 5, "usage": "900m", "limit": "1"}],
    "cfsQuotaBurst": {"kubepods/burstable/pod1/c1":
        {"secondsAgo": 1, "usageNanos": 81000000000, "nrThrottled": 42, "tokens": -12.5}}})");
  r.fast_path_live = true;
  r.cpus = 96;
  Json doc = Json::object();
  add_step_record(doc, r, 1000);
  auto back = parse_step_record(doc, "snap.json", 5000);  // another moment: ages carry over
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->probe.runq_p99_ns.at("web/api-0"), 8e6);
  EXPECT_EQ(*back->memory.last_breach_s, 4990);
  EXPECT_EQ(*back->memory.ceiling_quota_us, 40000);
  const Json& m = back->memory.strategies;
  EXPECT_EQ(m["evictions"]["lastCpuSecondsAgo"], 100);
  EXPECT_EQ(m["beCpuWindow"][0]["usage"], "900m");
  EXPECT_EQ(m["beCpuWindow"][0]["limit"], "1000m");
  EXPECT_EQ(m["cfsQuotaBurst"]["kubepods/burstable/pod1/c1"]["secondsAgo"], 1);
  EXPECT_EQ(m["cfsQuotaBurst"]["kubepods/burstable/pod1/c1"]["nrThrottled"], 42);
  EXPECT_EQ(m["cfsQuotaBurst"]["kubepods/burstable/pod1/c1"]["tokens"], -12.5);
  EXPECT_TRUE(back->fast_path_live);
  EXPECT_EQ(back->cpus, 96);

  // The BE-caused waits travel with the record, in the same unit.
  {
    StepRecord attributed;
    attributed.probe.runqueue_probe = true;
    attributed.probe.be_attribution = true;
    attributed.probe.be_runq_p99_ns["web/api-0"] = 250e3;
    Json doc2 = Json::object();
    add_step_record(doc2, attributed, 0);
    auto again = parse_step_record(doc2, "snap.json", 0);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_TRUE(again->probe.be_attribution);
    EXPECT_EQ(again->probe.be_runq_p99_ns.at("web/api-0"), 250e3);
    StepRecord plain;
    plain.probe.runqueue_probe = true;
    Json doc3 = Json::object();
    add_step_record(doc3, plain, 0);
    auto back3 = parse_step_record(doc3, "snap.json", 0);
    ASSERT_TRUE(back3) << back3.error().message;
    EXPECT_FALSE(back3->probe.be_attribution);
  }

  auto err = [](const char* text) {
    auto r = parse_step_record(Json::parse(text), "snap.json", 0);
    return r.ok() ? std::string("ok") : r.error().message;
  };
  EXPECT_NE(err(R"({"probe":{"runqueueP99Micros":{"api-0":5}}})").find("namespace/name"),
            std::string::npos);
  EXPECT_NE(err(R"({"probe":{"beCausedRunqueueP99Micros":{"web/api-0":"x"}}})")
                .find("beCausedRunqueueP99Micros.web/api-0"),
            std::string::npos);
  EXPECT_NE(err(R"({"probe":{"nodeCpuPsiSomeAvg10":-1}})").find("nodeCpuPsiSomeAvg10"),
            std::string::npos);
  EXPECT_NE(err(R"({"agent":{"interferenceCeiling":{"cpus":4294967297}}})").find("cpus"),
            std::string::npos);
  EXPECT_NE(err(R"({"agent":{"beCpuWindow":[{"secondsAgo":1}]}})").find("beCpuWindow[0]"),
            std::string::npos);
  EXPECT_NE(
      err(R"({"agent":{"cfsQuotaBurst":{"c":{"secondsAgo":1,"usageNanos":-1,"nrThrottled":0,"tokens":0}}}})")
          .find("cfsQuotaBurst.c.usageNanos"),
      std::string::npos);
  EXPECT_NE(err(R"({"agent":{"suppressArmed":"yes"}})").find("suppressArmed"), std::string::npos);
  EXPECT_NE(err(R"({"agent":{"cpus":0}})").find("agent.cpus"), std::string::npos);
}

// A fast pass's memory counts its ages from its own moment, secondsAfterSnapshot after the
// snapshot's, so it lands at the same distance from the snapshot on another clock.
TEST(StepRecord, FastPassesRoundTripWithTheirOwnMoments) {
  StepRecord r;
  FastPassRecord pass;
  pass.seconds_after = 0.25;
  pass.trigger = "wakeup";
  pass.node_cpu_milli = 1500;
  pass.non_be_cpu_milli = 900;
  pass.stale = true;
  pass.memory.suppress_armed = false;
  pass.memory.last_breach_s = 995;
  pass.memory.ceiling_quota_us = 30000;
  pass.memory.slo.allowance_milli = 1200;
  pass.memory.slo.last_cut_s = 1000.1;
  r.fast_passes = {FastPassRecord{}, pass};
  Json doc = Json::object();
  add_step_record(doc, r, 1000);
  EXPECT_EQ(doc["fastPasses"][1]["nonBeCpu"], "900m") << doc.dump();
  auto back = parse_step_record(doc, "snap.json", 5000);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->fast_passes.size(), 2u);
  EXPECT_EQ(back->fast_passes[0].trigger, "timer");
  EXPECT_TRUE(back->fast_passes[0].memory.suppress_armed);
  const FastPassRecord& p = back->fast_passes[1];
  EXPECT_DOUBLE_EQ(p.seconds_after, 0.25);
  EXPECT_EQ(p.trigger, "wakeup");
  EXPECT_EQ(p.node_cpu_milli, 1500);
  EXPECT_EQ(p.non_be_cpu_milli, 900);
  EXPECT_TRUE(p.stale);
  EXPECT_FALSE(p.memory.suppress_armed);
  EXPECT_NEAR(*p.memory.last_breach_s, 4995, 1e-6);
  EXPECT_EQ(*p.memory.ceiling_quota_us, 30000);
  EXPECT_EQ(*p.memory.slo.allowance_milli, 1200);
  EXPECT_NEAR(*p.memory.slo.last_cut_s, 5000.1, 1e-6);
  // No fast pass, no key: a record without them reads as before.
  Json plain = Json::object();
  add_step_record(plain, StepRecord{}, 0);
  EXPECT_FALSE(plain.contains("fastPasses"));
}

}  // namespace
}  // namespace gleaner::agent::step
