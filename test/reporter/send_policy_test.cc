#include "reporter/client/send_policy.h"

#include <gtest/gtest.h>

#include "common/clock.h"
#include "test/reporter/report_fixtures.h"

namespace gleaner::reporter {
namespace {

using namespace std::chrono_literals;
using testing::sample_report;

class ShouldSendTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  SendThresholds t_{.cpu_millicores = 200, .memory_bytes = 1 << 20, .heartbeat = 10s};
  NodeReport sent_ = sample_report();
  SteadyTime sent_at_ = clock_.now();
};

TEST_F(ShouldSendTest, FirstReportIsAlwaysSent) {
  EXPECT_EQ(should_send(std::nullopt, {}, sent_, clock_.now(), t_), SendReason::kFirst);
}

TEST_F(ShouldSendTest, SmallMovesWaitForTheHeartbeat) {
  NodeReport cur = sent_;
  cur.usage.node.cpu_millicores += 200;  // == threshold: not "more than"
  cur.usage.be.memory_bytes += 1 << 20;
  cur.sequence += 1;
  clock_.advance(9999ms);
  EXPECT_EQ(should_send(sent_, sent_at_, cur, clock_.now(), t_), SendReason::kNone);
  clock_.advance(1ms);
  EXPECT_EQ(should_send(sent_, sent_at_, cur, clock_.now(), t_), SendReason::kHeartbeat);
}

TEST_F(ShouldSendTest, CpuMoveBeyondThresholdSendsAtOnce) {
  NodeReport cur = sent_;
  cur.usage.ls.cpu_millicores -= 201;
  EXPECT_EQ(should_send(sent_, sent_at_, cur, clock_.now(), t_), SendReason::kChanged);
}

TEST_F(ShouldSendTest, MemoryMoveOfBatchAllocatableSendsAtOnce) {
  NodeReport cur = sent_;
  cur.batch_allocatable->memory_bytes += (1 << 20) + 1;
  EXPECT_EQ(should_send(sent_, sent_at_, cur, clock_.now(), t_), SendReason::kChanged);
}

TEST_F(ShouldSendTest, DiscreteStateChangesSendAtOnce) {
  NodeReport lost = sent_;
  lost.batch_allocatable.reset();
  lost.batch_unavailable_reason = BatchUnavailableReason::kDegraded;
  EXPECT_EQ(should_send(sent_, sent_at_, lost, clock_.now(), t_), SendReason::kChanged);

  NodeReport suppress = sent_;
  suppress.suppress.active = false;
  EXPECT_EQ(should_send(sent_, sent_at_, suppress, clock_.now(), t_), SendReason::kChanged);

  NodeReport reason = lost;
  reason.batch_unavailable_reason = BatchUnavailableReason::kStale;
  EXPECT_EQ(should_send(lost, sent_at_, reason, clock_.now(), t_), SendReason::kChanged);
}

TEST_F(ShouldSendTest, IdenticalStateOnlyOnHeartbeat) {
  EXPECT_EQ(should_send(sent_, sent_at_, sent_, clock_.now(), t_), SendReason::kNone);
  clock_.advance(10s);
  EXPECT_EQ(should_send(sent_, sent_at_, sent_, clock_.now(), t_), SendReason::kHeartbeat);
}

TEST(Backoff, DoublesFromInitialUntilTheCap) {
  BackoffPolicy p{.initial = 500ms, .max = 30s, .multiplier = 2.0, .jitter = 0.0};
  EXPECT_EQ(backoff_delay(p, 0, 0.5), 0ms);
  EXPECT_EQ(backoff_delay(p, 1, 0.5), 500ms);
  EXPECT_EQ(backoff_delay(p, 2, 0.5), 1000ms);
  EXPECT_EQ(backoff_delay(p, 3, 0.5), 2000ms);
  EXPECT_EQ(backoff_delay(p, 7, 0.5), 30000ms);  // 32 s capped
  EXPECT_EQ(backoff_delay(p, 1000, 0.5), 30000ms);
}

TEST(Backoff, JitterSpreadsWithinTheConfiguredFraction) {
  BackoffPolicy p{.initial = 1000ms, .max = 30s, .multiplier = 2.0, .jitter = 0.2};
  EXPECT_EQ(backoff_delay(p, 1, 0.0), 800ms);
  EXPECT_EQ(backoff_delay(p, 1, 0.5), 900ms);
  EXPECT_EQ(backoff_delay(p, 1, 1.0), 1000ms);
  // The cap bounds the jittered delay too.
  EXPECT_LE(backoff_delay(p, 20, 0.999), 30000ms);
  EXPECT_GE(backoff_delay(p, 20, 0.0), 24000ms);
}

}  // namespace
}  // namespace gleaner::reporter
