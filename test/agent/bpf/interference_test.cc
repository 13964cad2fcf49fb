#include "agent/bpf/interference.h"

#include <gtest/gtest.h>

namespace gleaner::agent::bpf {
namespace {
using namespace std::chrono_literals;

InterferenceInput ls(std::optional<double> p99_ns, bool be_running = true) {
  InterferenceInput in;
  in.ls_pods.push_back({"default/web-0", p99_ns});
  in.ls_pods.push_back({"default/web-1", 100'000.0});
  in.be_running = be_running;
  return in;
}

class InterferenceRuleTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  InterferenceConfig config_{.runq_p99_bound = 2ms, .cpu_psi_some_avg10_bound = 20.0, .hold = 30s};
  InterferenceRule rule_{config_, clock_};
};

TEST_F(InterferenceRuleTest, QuietNodeAllowsRelax) {
  EXPECT_EQ(rule_.evaluate(ls(500'000.0)).action, InterferenceAction::kRelaxAllowed);
  EXPECT_EQ(rule_.evaluate(ls(std::nullopt)).action, InterferenceAction::kRelaxAllowed);
}

TEST_F(InterferenceRuleTest, LatencyAboveBoundWhileBeRunsTightensAtOnce) {
  auto d = rule_.evaluate(ls(5'000'000.0));
  EXPECT_EQ(d.action, InterferenceAction::kTightenNow);
  EXPECT_NE(d.reason.find("web-0"), std::string::npos) << d.reason;
  // Still above on the next tick: tighten again (one more step per tick).
  clock_.advance(1s);
  EXPECT_EQ(rule_.evaluate(ls(5'000'000.0)).action, InterferenceAction::kTightenNow);
}

TEST_F(InterferenceRuleTest, LatencyAtTheBoundIsNotABreach) {
  EXPECT_EQ(rule_.evaluate(ls(2'000'000.0)).action, InterferenceAction::kRelaxAllowed);
}

TEST_F(InterferenceRuleTest, WithoutBeThereIsNothingToTightenButTheHoldStarts) {
  EXPECT_EQ(rule_.evaluate(ls(5'000'000.0, false)).action, InterferenceAction::kHold);
  clock_.advance(10s);
  EXPECT_EQ(rule_.evaluate(ls(100'000.0, true)).action, InterferenceAction::kHold);
}

TEST_F(InterferenceRuleTest, RelaxesOnlyAfterStayingBelowForTheHoldTime) {
  EXPECT_EQ(rule_.evaluate(ls(5'000'000.0)).action, InterferenceAction::kTightenNow);
  clock_.advance(29s);
  EXPECT_EQ(rule_.evaluate(ls(100'000.0)).action, InterferenceAction::kHold);
  clock_.advance(1s);
  EXPECT_EQ(rule_.evaluate(ls(100'000.0)).action, InterferenceAction::kRelaxAllowed);
}

TEST_F(InterferenceRuleTest, ABreachDuringTheHoldRestartsIt) {
  EXPECT_EQ(rule_.evaluate(ls(5'000'000.0)).action, InterferenceAction::kTightenNow);
  clock_.advance(20s);
  EXPECT_EQ(rule_.evaluate(ls(3'000'000.0)).action, InterferenceAction::kTightenNow);
  clock_.advance(20s);  // 40 s after the first breach, 20 s after the last
  EXPECT_EQ(rule_.evaluate(ls(100'000.0)).action, InterferenceAction::kHold);
  clock_.advance(10s);
  EXPECT_EQ(rule_.evaluate(ls(100'000.0)).action, InterferenceAction::kRelaxAllowed);
}

TEST_F(InterferenceRuleTest, CpuPsiAboveItsBoundIsInterference) {
  auto in = ls(100'000.0);
  in.cpu_psi_some_avg10 = 35.0;
  auto d = rule_.evaluate(in);
  EXPECT_EQ(d.action, InterferenceAction::kTightenNow);
  EXPECT_NE(d.reason.find("PSI"), std::string::npos) << d.reason;
  in.cpu_psi_some_avg10 = 10.0;
  clock_.advance(31s);
  EXPECT_EQ(rule_.evaluate(in).action, InterferenceAction::kRelaxAllowed);
}

TEST(InterferenceConfig, PsiIgnoredWhenNoBoundConfigured) {
  FakeClock clock;
  InterferenceRule rule(
      {.runq_p99_bound = 2ms, .cpu_psi_some_avg10_bound = std::nullopt, .hold = 30s}, clock);
  InterferenceInput in = ls(100'000.0);
  in.cpu_psi_some_avg10 = 90.0;
  EXPECT_EQ(rule.evaluate(in).action, InterferenceAction::kRelaxAllowed);
}

TEST(InterferenceConfig, ParsesFlags) {
  auto c = parse_interference_config("500us", "1m", "25");
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_EQ(c->runq_p99_bound, 500us);
  EXPECT_EQ(c->hold, 60s);
  EXPECT_EQ(c->cpu_psi_some_avg10_bound, 25.0);
  auto plain = parse_interference_config("2000000", "30s");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->runq_p99_bound, 2ms);
  EXPECT_FALSE(plain->cpu_psi_some_avg10_bound.has_value());
}

TEST(InterferenceConfig, BadFlagsNameTheFlag) {
  auto unit = parse_interference_config("5 parsecs", "30s");
  ASSERT_FALSE(unit.ok());
  EXPECT_NE(unit.error().message.find("--interference-runq-p99-bound"), std::string::npos);
  auto zero = parse_interference_config("0ms", "30s");
  ASSERT_FALSE(zero.ok());
  auto hold = parse_interference_config("5ms", "-3s");
  ASSERT_FALSE(hold.ok());
  EXPECT_NE(hold.error().message.find("--interference-hold"), std::string::npos);
  auto psi = parse_interference_config("5ms", "30s", "150");
  ASSERT_FALSE(psi.ok());
  EXPECT_NE(psi.error().message.find("--interference-psi-bound"), std::string::npos);
}

}  // namespace
}  // namespace gleaner::agent::bpf
