// cpuSuppressMode slo's controller on a fake clock: slack grows BE, a breach cuts it in
// proportion, a steady load settles, noise and signal loss never loosen LS protection.
#include "agent/step/slo_controller.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace gleaner::agent::step {
namespace {

constexpr int64_t kCapacity = 8000;
constexpr double kTargetNs = 2e6;  // 2 ms
constexpr double kMinNs = 1e5;     // 100 us, the lowest a pod may ask for in these tests

SloInputs at(double now_s, std::optional<double> p99_ms, int64_t be_usage = kCapacity) {
  SloInputs in;
  in.now_s = now_s;
  in.capacity_milli = kCapacity;
  in.floor_milli = 800;
  in.be_usage_milli = be_usage;
  in.ls_pods = {{"web/api", kTargetNs}};
  if (p99_ms) in.runq_p99_ns["web/api"] = *p99_ms * 1e6;
  return in;
}

// A node where LS's wait rises with what BE may use: quiet below half the node, past the
// 2 ms target above ~85% of it.
double plant_p99_ms(int64_t allowance) {
  const double share = static_cast<double>(allowance) / kCapacity;
  return 0.2 + 2.6 * share * share;
}

TEST(SloController, GrowsWhileThereIsSlackUpToTheNode) {
  SloMemory m;
  int64_t last = 0;
  for (int t = 0; t <= 60; ++t) {
    auto d = slo_step(at(t, 0.3), m);
    EXPECT_GE(d.allowance_milli, last) << "t=" << t;  // slack never takes from BE
    last = d.allowance_milli;
  }
  EXPECT_EQ(last, kCapacity);
}

TEST(SloController, StartsFromWhatBeUsesAndTheFirstStepHolds) {
  SloMemory m;
  auto d = slo_step(at(10, 0.3, 3000), m);
  EXPECT_EQ(d.action, SloAction::kHold);  // no interval to grow over yet
  EXPECT_EQ(d.allowance_milli, 3000);
}

TEST(SloController, CutsAtOnceInProportionToTheBreach) {
  for (const auto& [p99_ms, expected] :
       std::vector<std::pair<double, int64_t>>{{2.4, 6400}, {3.0, 5200}, {4.0, 4000}, {40, 4000}}) {
    SloMemory m;
    m.allowance_milli = 8000;
    m.last_s = 0;
    auto d = slo_step(at(1, p99_ms), m);
    EXPECT_EQ(d.action, SloAction::kCut) << p99_ms;
    // 1.2x: 10% + 10%; 1.5x: 10% + 25%; 2x and beyond: half.
    EXPECT_EQ(d.allowance_milli, expected) << p99_ms;
    EXPECT_NE(d.reason.find("web/api"), std::string::npos);
  }
}

TEST(SloController, ACutTakesFromWhatBeReallyUses) {
  SloMemory m;
  m.allowance_milli = 8000;
  m.last_s = 0;
  // BE uses 2 cores of its 8: cutting the unused limit would change nothing.
  auto d = slo_step(at(1, 4.0, 2000), m);
  EXPECT_EQ(d.allowance_milli, 1000);
}

TEST(SloController, NeverBelowTheFloorNorAboveTheHardCeiling) {
  SloMemory m;
  m.allowance_milli = 1000;
  m.last_s = 0;
  for (int t = 1; t < 10; ++t)
    EXPECT_EQ(slo_step(at(t, 50), m).allowance_milli, 800) << t;
  SloMemory grown;
  grown.allowance_milli = 5000;
  grown.last_s = 0;
  auto in = at(1, 0.1);
  in.ceiling_milli = 3000;  // the threshold formula, as a hard ceiling
  EXPECT_EQ(slo_step(in, grown).allowance_milli, 3000);
}

TEST(SloController, ASteadyLoadSettlesWithoutOscillating) {
  SloMemory m;
  std::vector<int64_t> trace;
  for (int t = 0; t < 300; ++t) {
    const int64_t allowance = m.allowance_milli.value_or(800);
    trace.push_back(slo_step(at(t, plant_p99_ms(allowance), allowance), m).allowance_milli);
  }
  // Settled within the first two minutes and unchanged for the last three.
  for (size_t i = 120; i < trace.size(); ++i)
    EXPECT_EQ(trace[i], trace[119]) << "t=" << i;
  // ... where LS is within its target and BE has most of the node.
  EXPECT_LE(plant_p99_ms(trace.back()), 2.0);
  EXPECT_GE(trace.back(), kCapacity * 6 / 10);
}

TEST(SloController, NoiseCutsRarelyAndNeverDeep) {
  SloMemory m;
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> noise(0.9, 1.1);
  int cuts = 0;
  int64_t low = kCapacity;
  for (int t = 0; t < 300; ++t) {
    const int64_t allowance = m.allowance_milli.value_or(800);
    // The plant's reading moves +-10% window to window.
    auto d = slo_step(at(t, plant_p99_ms(allowance) * noise(rng), allowance), m);
    if (d.action == SloAction::kCut) ++cuts;
    if (t > 60) low = std::min(low, d.allowance_milli);
  }
  EXPECT_LE(cuts, 3);
  EXPECT_GE(low, kCapacity / 2);
}

TEST(SloController, NoisyBreachesCutAndRecoverWithoutCollapsing) {
  SloMemory m;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(0.7, 1.3);
  int64_t low = kCapacity;
  for (int t = 0; t < 600; ++t) {
    const int64_t allowance = m.allowance_milli.value_or(800);
    auto d = slo_step(at(t, plant_p99_ms(allowance) * noise(rng), allowance), m);
    if (t > 120) low = std::min(low, d.allowance_milli);
  }
  // A noisy window costs one proportional cut, not a slide to the floor.
  EXPECT_GE(low, kCapacity * 4 / 10);
}

TEST(SloController, ASurgeIsCutOnTheFirstBreachingWindow) {
  SloMemory m;
  for (int t = 0; t < 30; ++t)
    slo_step(at(t, 0.2), m);
  const int64_t before = *m.allowance_milli;
  auto d = slo_step(at(30, 12), m);  // LS surges: p99 6x its target
  EXPECT_EQ(d.action, SloAction::kCut);
  EXPECT_EQ(d.allowance_milli, before / 2);
  // Still breaching: it keeps cutting every window, down to the floor at most.
  EXPECT_LT(slo_step(at(31, 12), m).allowance_milli, d.allowance_milli);
  // No growth for the hold after the last cut, even with slack.
  EXPECT_EQ(slo_step(at(32, 0.2), m).action, SloAction::kHold);
}

TEST(SloController, AWaitBetweenPassesCutsAtOnceOncePerGap) {
  SloMemory m;
  m.allowance_milli = 8000;
  auto first = slo_wait_cut(6e6, kTargetNs, 800, 100.0, m);  // 3x the target
  EXPECT_EQ(first.action, SloAction::kCut);
  EXPECT_EQ(first.allowance_milli, 4000);
  EXPECT_EQ(slo_wait_cut(6e6, kTargetNs, 800, 100.05, m).action, SloAction::kHold);
  EXPECT_EQ(slo_wait_cut(6e6, kTargetNs, 800, 100.2, m).allowance_milli, 2000);
  EXPECT_EQ(slo_wait_cut(1e6, kTargetNs, 800, 101.0, m).action, SloAction::kHold);  // within
}

TEST(SloController, AnLsPodWithoutHistoryHasNoSlack) {
  SloMemory m;
  m.allowance_milli = 3000;
  m.last_s = 0;
  // The pod never waited yet (no reading): hold until it has been watched long enough.
  for (int t = 1; t <= 5; ++t)
    EXPECT_EQ(slo_step(at(t, std::nullopt), m).allowance_milli, 3000) << t;
  EXPECT_EQ(slo_step(at(6, std::nullopt), m).action, SloAction::kGrow);
  // A new pod arriving starts over.
  auto in = at(7, std::nullopt);
  in.ls_pods.push_back({"web/new", kTargetNs});
  EXPECT_EQ(slo_step(in, m).action, SloAction::kHold);
}

TEST(SloController, StaleMetricsAndClockJumpsNeverGrowBe) {
  SloMemory m;
  m.allowance_milli = 3000;
  m.last_s = 100;
  auto stale = at(101, 0.1);
  stale.stale = true;
  EXPECT_EQ(slo_step(stale, m).allowance_milli, 3000);
  EXPECT_EQ(slo_step(at(50, 0.1), m).allowance_milli, 3000);       // the clock went back
  EXPECT_EQ(slo_step(at(5000, 0.1), m).allowance_milli, 3000);     // ... or leapt forward
  EXPECT_EQ(slo_step(at(5001, 0.1), m).action, SloAction::kGrow);  // a plausible step again
  // A breach still cuts whatever the clock did.
  EXPECT_EQ(slo_step(at(10, 8), m).action, SloAction::kCut);
}

TEST(SloController, PsiAboveItsBoundIsABreach) {
  SloMemory m;
  m.allowance_milli = 4000;
  m.last_s = 0;
  auto in = at(1, 0.1);
  in.cpu_psi_some_avg10 = 30;
  in.cpu_psi_bound = 20;
  auto d = slo_step(in, m);
  EXPECT_EQ(d.action, SloAction::kCut);
  EXPECT_NE(d.reason.find("PSI"), std::string::npos);
}

TEST(SloController, SustainedAllowanceIsALowPercentileOfTheLastMinute) {
  SloMemory m;
  EXPECT_FALSE(slo_sustained_allowance(m));
  for (int t = 0; t < 40; ++t)
    slo_step(at(t, 0.2, 1000), m);  // climbs from 1 core to the node
  const int64_t high = *m.allowance_milli;
  slo_step(at(40, 8), m);  // one cut
  const auto sustained = slo_sustained_allowance(m);
  ASSERT_TRUE(sustained);
  EXPECT_LT(*sustained, high);  // the climb counts, not only the peak
  // A minute later, the old climb has left the window.
  for (int t = 41; t < 110; ++t)
    slo_step(at(t, 1.8), m);
  EXPECT_EQ(*slo_sustained_allowance(m), *m.allowance_milli);
}

TEST(SloController, PodTargetsComeFromTheAnnotationOrTheDefault) {
  EXPECT_DOUBLE_EQ(slo_pod_target("web/api", std::nullopt, kTargetNs, kMinNs).ns, kTargetNs);
  const PodTarget own = slo_pod_target("web/api", "500us", kTargetNs, kMinNs);
  EXPECT_DOUBLE_EQ(own.ns, 5e5);
  EXPECT_FALSE(own.warning);
  for (const std::string bad : {"fast", "0ms", "5s", "-1ms", ""}) {
    const PodTarget t = slo_pod_target("web/api", bad, kTargetNs, kMinNs);
    EXPECT_DOUBLE_EQ(t.ns, kTargetNs) << bad;
    ASSERT_TRUE(t.warning) << bad;
    EXPECT_EQ(t.warning->pod, "web/api");
    EXPECT_NE(t.warning->message.find("web/api"), std::string::npos) << bad;
    EXPECT_NE(t.warning->message.find("\"" + bad + "\""), std::string::npos) << bad;
    EXPECT_FALSE(t.warning->clamped);
  }
}

// Issue #61: one LS pod's "1ns" held BE at its floor node-wide. A target below the bound is
// raised to it, with a warning naming the pod and the value; the bound never exceeds what
// every pod gets (the default).
TEST(SloController, ATargetBelowTheBoundIsRaisedToIt) {
  const PodTarget t = slo_pod_target("web/api", "1ns", 4e6, 1e6);
  EXPECT_DOUBLE_EQ(t.ns, 1e6);
  ASSERT_TRUE(t.warning);
  EXPECT_TRUE(t.warning->clamped);
  EXPECT_NE(t.warning->message.find("pod web/api: run-queue wait target \"1ns\" is below"),
            std::string::npos)
      << t.warning->message;
  EXPECT_FALSE(slo_pod_target("web/api", "1ms", 4e6, 1e6).warning);
  // The default is 500 us: a pod may ask for 800 us, and 400 us is raised to 500.
  const PodTarget own = slo_pod_target("web/api", "800us", 5e5, 1e6);
  EXPECT_DOUBLE_EQ(own.ns, 8e5);
  EXPECT_FALSE(own.warning);
  EXPECT_DOUBLE_EQ(slo_pod_target("web/api", "400us", 5e5, 1e6).ns, 5e5);
}

// Issue #59: a pod states the latency it promises; its wait target is a share of it
// (cpuSloObjectiveWaitPercent, 25% by default), bounded as an explicit target is. A pod's own
// wait target, when it names one too, is the more specific and wins.
TEST(SloController, ALatencyObjectiveGivesItsShareAsTheWaitTarget) {
  const TargetBounds bounds{kTargetNs, 1e6, 25};
  const PodTarget from_objective = slo_pod_target("web/api", {std::nullopt, "12ms"}, bounds);
  EXPECT_DOUBLE_EQ(from_objective.ns, 3e6);
  EXPECT_FALSE(from_objective.warning);
  EXPECT_DOUBLE_EQ(slo_pod_target("web/api", {"2ms", "12ms"}, bounds).ns, 2e6);
  EXPECT_DOUBLE_EQ(slo_pod_target("web/api", {std::nullopt, "12ms"}, {kTargetNs, 1e6, 50}).ns, 6e6);
  // 2 ms leaves 500 us, below the 1 ms a pod may ask for: raised, with a warning.
  const PodTarget tight = slo_pod_target("web/api", {std::nullopt, "2ms"}, bounds);
  EXPECT_DOUBLE_EQ(tight.ns, 1e6);
  ASSERT_TRUE(tight.warning);
  EXPECT_TRUE(tight.warning->clamped);
  EXPECT_NE(tight.warning->message.find("pod web/api: latency objective \"2ms\""),
            std::string::npos)
      << tight.warning->message;
  for (const std::string bad : {"soon", "0ms", "61s", "500ns", ""}) {
    const PodTarget t = slo_pod_target("web/api", {std::nullopt, bad}, bounds);
    EXPECT_DOUBLE_EQ(t.ns, kTargetNs) << bad;
    ASSERT_TRUE(t.warning) << bad;
    EXPECT_FALSE(t.warning->clamped) << bad;
    EXPECT_NE(t.warning->message.find("\"" + bad + "\""), std::string::npos) << bad;
  }
}

// Issue #61: the value is the tenant's, of any length. The warning quotes its head, escaped,
// with its length; distinct values keep distinct hashes for the daemon's book.
TEST(SloController, ABadTargetsWarningQuotesItTruncated) {
  const std::string huge = "\n" + std::string(256 * 1024, 'x');
  const PodTarget t = slo_pod_target("web/api", huge, kTargetNs, kMinNs);
  EXPECT_DOUBLE_EQ(t.ns, kTargetNs);
  ASSERT_TRUE(t.warning);
  EXPECT_LT(t.warning->message.size(), 300u) << t.warning->message.size();
  EXPECT_NE(t.warning->message.find("pod web/api: run-queue wait target \"\\x0axxx"),
            std::string::npos)
      << t.warning->message.substr(0, 300);
  EXPECT_NE(t.warning->message.find("...\" (262145 bytes)"), std::string::npos);
  EXPECT_EQ(t.warning->message.find('\n'), std::string::npos);
  EXPECT_NE(slo_pod_target("web/api", huge + "y", kTargetNs, kMinNs).warning->value_hash,
            t.warning->value_hash);
}

}  // namespace
}  // namespace gleaner::agent::step
