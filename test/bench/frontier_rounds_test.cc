// The frontier's method: shuffled rounds, ratios paired by round with bootstrap intervals, the
// A/A floor that makes a small difference "indistinguishable", and a noisy baseline that judges
// nothing.
#include <algorithm>
#include <numeric>

#include <gtest/gtest.h>

#include "bench/frontier/agent_process.h"
#include "bench/frontier/frontier_points.h"
#include "bench/frontier/rounds.h"

namespace gleaner::bench::frontier {
namespace {

TEST(FrontierRounds, EachRoundIsAPermutationOfItsOwnShuffledByTheSeed) {
  const auto first = round_order(10, 42, 0);
  std::vector<int> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> all(10);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);
  EXPECT_EQ(round_order(10, 42, 0), first) << "a seed repeats its run's order";
  bool rounds_differ = false;
  for (int r = 1; r < 5; ++r)
    rounds_differ = rounds_differ || round_order(10, 42, r) != first;
  EXPECT_TRUE(rounds_differ) << "every round is shuffled anew";
  EXPECT_NE(round_order(10, 43, 0), first);
  EXPECT_NE(first, all) << "a shuffle of ten that leaves them in order is 1 in 3.6 million";
}

TEST(FrontierRounds, APairedRatioIsBlindToDriftThatBothSidesShare) {
  // The machine drifts from 1 ms to 21 ms over the run; the configuration is always 10% worse
  // than LS alone in the same round. Unpaired, the spread would hide it; paired, it is exact.
  const std::vector<double> alone = {1, 6, 11, 16, 21};
  std::vector<double> config;
  for (double a : alone)
    config.push_back(1.1 * a);
  const auto r = paired_ratio(config, alone, 7);
  EXPECT_EQ(r.rounds, 5);
  EXPECT_NEAR(r.ratio, 1.1, 1e-9);
  EXPECT_NEAR(r.low, 1.1, 1e-9);
  EXPECT_NEAR(r.high, 1.1, 1e-9);
}

TEST(FrontierRounds, TheBootstrapIntervalHoldsTheEstimateAndWidensWithNoise) {
  const std::vector<double> ref = {3, 3, 3, 3, 3, 3};
  const auto tight = paired_ratio({3.3, 3.3, 3.2, 3.4, 3.3, 3.3}, ref, 1);
  const auto noisy = paired_ratio({2.0, 5.0, 3.0, 4.5, 2.5, 3.9}, ref, 1);
  for (const auto& r : {tight, noisy}) {
    EXPECT_LE(r.low, r.ratio);
    EXPECT_GE(r.high, r.ratio);
  }
  EXPECT_GT(noisy.high - noisy.low, 3 * (tight.high - tight.low));
  EXPECT_EQ(paired_ratio({1, 0, 2}, {1, 1, 0}, 1).rounds, 1)
      << "rounds without a value are left out";
  EXPECT_EQ(paired_ratio({}, {}, 1).rounds, 0);
}

TEST(FrontierRounds, AVerdictNeedsTheWholeIntervalBeyondOneAndTheEstimateBeyondTheFloor) {
  const RatioEstimate aa{0.97, 0.90, 1.06, 5};
  const double floor = aa_floor(aa);
  EXPECT_NEAR(floor, 1 / 0.90, 1e-9);
  EXPECT_EQ(judge({1.5, 1.3, 1.7, 5}, floor, true), Verdict::kWorse);
  EXPECT_EQ(judge({0.6, 0.5, 0.7, 5}, floor, true), Verdict::kBetter);
  // Whole interval above 1, but within what LS alone against LS alone shows: no claim.
  EXPECT_EQ(judge({1.08, 1.02, 1.12, 5}, floor, true), Verdict::kIndistinguishable);
  // Beyond the floor but the interval holds 1.
  EXPECT_EQ(judge({1.3, 0.95, 1.8, 5}, floor, true), Verdict::kIndistinguishable);
  EXPECT_EQ(judge({1.5, 1.3, 1.7, 5}, floor, false), Verdict::kNoVerdict);
  EXPECT_EQ(judge({}, floor, true), Verdict::kNoVerdict);
  EXPECT_EQ(aa_floor({}), 1);
}

TEST(FrontierRounds, ABaselineThatSpreadsTooWideJudgesNothing) {
  // The published run that called 4 of 6 cases "met": LS alone 1.00-21.20 ms.
  const auto noisy = judge_baseline({1.00, 10.94, 21.20, 4.0, 8.0}, 1.5);
  EXPECT_FALSE(noisy.valid);
  EXPECT_NEAR(noisy.spread, 21.2, 1e-9);
  EXPECT_NE(noisy.why.find("21.20"), std::string::npos) << noisy.why;
  const auto quiet = judge_baseline({2.70, 3.05, 3.21, 2.9, 3.0}, 1.5);
  EXPECT_TRUE(quiet.valid) << quiet.why;
  EXPECT_FALSE(judge_baseline({3.0}, 1.5).valid);
}

Point window(Family family, double p99, double harvest) {
  Point p;
  p.family = family;
  p.p99_ms = p99;
  p.be_share_of_idle = harvest;
  return p;
}

TEST(FrontierRounds, APointIsJudgedAgainstKubeletOnlyRoundByRound) {
  const std::vector<Config> configs = {{Family::kAlone, 0},
                                       {Family::kAloneTwin, 0},
                                       {Family::kKubelet, 0},
                                       {Family::kGleanerSlo, 4000}};
  std::vector<std::vector<Point>> windows(4);
  const double drift[] = {3.0, 3.2, 2.9, 3.1, 3.0};
  for (double d : drift) {
    windows[0].push_back(window(Family::kAlone, d, 0));
    windows[1].push_back(window(Family::kAloneTwin, d * 1.01, 0));
    windows[2].push_back(window(Family::kKubelet, d * 1.2, 0.95));
    windows[3].push_back(window(Family::kGleanerSlo, d * 2.4, 0.9));
  }
  const auto m = summarise(BeMix::kCpu, configs, windows, 3, 1.5);
  ASSERT_EQ(m.points.size(), 4u);
  EXPECT_TRUE(m.baseline.valid);
  EXPECT_NEAR(m.aa.ratio, 1.01, 1e-9);
  const Point& slo = m.points[3];
  EXPECT_EQ(slo.family, Family::kGleanerSlo);
  EXPECT_EQ(slo.rounds, 5);
  EXPECT_NEAR(slo.vs_alone.ratio, 2.4, 1e-9);
  EXPECT_NEAR(slo.vs_kubelet.ratio, 2.0, 1e-9);
  EXPECT_EQ(slo.verdict_vs_kubelet, Verdict::kWorse);
  EXPECT_NEAR(slo.be_share_of_idle, 0.9, 1e-9);
  EXPECT_NEAR(slo.p99_min_ms, 2.9 * 2.4, 1e-9);
  // The same points on a baseline that spread 1-21 ms: no verdict at all.
  windows[0][4].p99_ms = 21;
  windows[0][0].p99_ms = 1;
  EXPECT_EQ(summarise(BeMix::kCpu, configs, windows, 3, 1.5).points[3].verdict_vs_kubelet,
            Verdict::kNoVerdict);
}

TEST(FrontierRounds, TheCostSignalsArePairedByRoundAgainstLsAlone) {
  const std::vector<Config> configs = {
      {Family::kAlone, 0}, {Family::kAloneTwin, 0}, {Family::kKubelet, 0}};
  std::vector<std::vector<Point>> windows(3);
  const double drift[] = {20, 22, 19, 21, 40};  // the last round's machine is slower for all
  for (double d : drift) {
    for (size_t c = 0; c < 3; ++c) {
      Point w = window(configs[c].family, 1.0, 0);
      const double harm = c == 2 ? 1.5 : 1.0;  // kubelet only: 1.5x the CPU per request
      w.cpu_us_per_request = {d * harm, d * harm, d * harm, {}};
      w.cpu_us_per_run = {d / 2, d / 2, d / 2, {}};  // no change in CPU per run
      windows[c].push_back(w);
    }
  }
  const auto m = summarise(BeMix::kMemory, configs, windows, 3, 1.5);
  ASSERT_EQ(m.points.size(), 3u);
  const Point& kubelet = m.points[2];
  EXPECT_EQ(kubelet.family, Family::kKubelet);
  EXPECT_NEAR(kubelet.cpu_us_per_request.vs_alone.ratio, 1.5, 1e-9);
  EXPECT_NEAR(kubelet.cpu_us_per_request.vs_alone.low, 1.5, 1e-9);
  EXPECT_NEAR(kubelet.cpu_us_per_request.value, 21 * 1.5, 1e-9);  // the median window
  EXPECT_NEAR(kubelet.cpu_us_per_request.min, 19 * 1.5, 1e-9);
  EXPECT_NEAR(kubelet.cpu_us_per_request.max, 40 * 1.5, 1e-9);
  EXPECT_NEAR(kubelet.cpu_us_per_run.vs_alone.ratio, 1.0, 1e-9);
  EXPECT_NEAR(m.points[1].cpu_us_per_request.vs_alone.ratio, 1.0, 1e-9);  // the A/A twin
}

TEST(FrontierRounds, EveryConfigurationNameRoundTrips) {
  for (Family f : kFamilies) {
    auto parsed = parse_family(short_name(f));
    ASSERT_TRUE(parsed) << short_name(f);
    EXPECT_EQ(*parsed, f);
  }
  EXPECT_FALSE(parse_family("slo-nothing"));
  EXPECT_EQ(setting_label(Family::kFixedQuota, 900), "quota 900m");
  EXPECT_EQ(setting_label(Family::kSloNoProbe, 4000), "wait 4000us");
}

TEST(FrontierRounds, AMetricIsSummedOverItsLabelSetsAndNotOverItsNamesakes) {
  const std::string text =
      "# HELP gleaner_cgroup_writes_total x\n"
      "gleaner_cgroup_writes_total{resource=\"cpu_quota\"} 12\n"
      "gleaner_cgroup_writes_total{resource=\"cpu_shares\"} 3\n"
      "gleaner_cgroup_writes_total_other 100\n";
  EXPECT_DOUBLE_EQ(metric_sum(text, "gleaner_cgroup_writes_total"), 15);
  EXPECT_DOUBLE_EQ(metric_sum(text, "gleaner_absent"), 0);
}

}  // namespace
}  // namespace gleaner::bench::frontier
