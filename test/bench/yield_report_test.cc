// yield_bench's verdict on a mechanism's LS wake-up p99: against kubelet's run of the same
// round, and only beyond what kubelet run twice (the A/A twin) differs by.
#include "bench/yield/yield_report.h"

#include <gtest/gtest.h>

namespace gleaner::bench::yield {
namespace {

// A run whose p99 is `p99_us` (every sample at that latency).
Run run_at(double p99_us) {
  Run r;
  r.latency_us.assign(200, p99_us);
  return r;
}

Config config(char letter, const std::vector<double>& p99s) {
  Config c{letter, std::string(1, letter), {}};
  for (double p : p99s)
    c.runs.push_back(run_at(p));
  return c;
}

TEST(YieldVerdict, ARatioBeyondEveryTwinRatioIsBetterOrWorse) {
  const Config kubelet = config('a', {100, 200, 150});
  const Config twin = config('A', {90, 220, 150});  // ratios 0.9, 1.1, 1.0
  EXPECT_EQ(p99_verdict(config('b', {50, 100, 75}), &kubelet, &twin), "better");   // all 0.5
  EXPECT_EQ(p99_verdict(config('e', {120, 240, 180}), &kubelet, &twin), "worse");  // all 1.2
}

TEST(YieldVerdict, ARatioThatOverlapsTheTwinsIsIndistinguishable) {
  const Config kubelet = config('a', {100, 200, 150});
  const Config twin = config('A', {90, 220, 150});
  // Rounds at 0.5, 0.5 and 1.05: two far better, one inside the floor.
  EXPECT_EQ(p99_verdict(config('d', {50, 100, 157.5}), &kubelet, &twin), "indistinguishable");
  // The whole spread inside the floor.
  EXPECT_EQ(p99_verdict(config('c', {95, 210, 150}), &kubelet, &twin), "indistinguishable");
}

TEST(YieldVerdict, WithoutATwinNothingIsJudged) {
  const Config kubelet = config('a', {100, 200, 150});
  EXPECT_EQ(p99_verdict(config('b', {10, 20, 15}), &kubelet, nullptr), "no A/A floor");
  EXPECT_EQ(p99_verdict(config('b', {10, 20, 15}), nullptr, nullptr), "no A/A floor");
  const Config empty_twin = config('A', {});
  EXPECT_EQ(p99_verdict(config('b', {10, 20, 15}), &kubelet, &empty_twin), "no A/A floor");
}

TEST(YieldVerdict, TheBaselineAndTheTwinAreNotJudgedAgainstThemselves) {
  const Config kubelet = config('a', {100});
  const Config twin = config('A', {300});
  EXPECT_EQ(p99_verdict(kubelet, &kubelet, &twin), "-");
  EXPECT_EQ(p99_verdict(config('0', {10}), &kubelet, &twin), "-");
  EXPECT_EQ(p99_verdict(twin, &kubelet, &twin), "the A/A floor");
}

}  // namespace
}  // namespace gleaner::bench::yield
