#include "agent/bpf/runq_histogram.h"

#include <gtest/gtest.h>

namespace gleaner::agent::bpf {
namespace {

TEST(RunqHistogram, SlotsAreLog2OfNanoseconds) {
  EXPECT_EQ(runq_slot(0), 0);
  EXPECT_EQ(runq_slot(1), 0);
  EXPECT_EQ(runq_slot(2), 1);
  EXPECT_EQ(runq_slot(3), 1);
  EXPECT_EQ(runq_slot(1024), 10);
  EXPECT_EQ(runq_slot(2047), 10);
  EXPECT_EQ(runq_slot(UINT64_MAX), kRunqSlots - 1);  // longer waits land in the last slot
  EXPECT_EQ(slot_lower_ns(10), 1024u);
  EXPECT_EQ(slot_upper_ns(10), 2048u);
}

TEST(RunqHistogram, EmptyHistogramHasNoQuantile) {
  RunqHistogram h;
  EXPECT_FALSE(histogram_quantile_ns(h, 0.5).has_value());
  EXPECT_FALSE(h.mean_ns().has_value());
}

TEST(RunqHistogram, QuantileOutsideRangeIsRejected) {
  RunqHistogram h;
  h.record(1000);
  EXPECT_FALSE(histogram_quantile_ns(h, 0.0).has_value());
  EXPECT_FALSE(histogram_quantile_ns(h, 1.5).has_value());
}

TEST(RunqHistogram, QuantileInterpolatesInsideTheSlotOfTheRank) {
  RunqHistogram h;
  for (int i = 0; i < 90; ++i)
    h.record(1500);  // slot 10: [1024, 2048)
  for (int i = 0; i < 10; ++i)
    h.record(100'000);  // slot 16: [65536, 131072)
  // p50: rank 50 of 90 in slot 10 -> 1024 + (49.5 / 90) * 1024.
  EXPECT_DOUBLE_EQ(*histogram_quantile_ns(h, 0.5), 1024.0 + 49.5 / 90.0 * 1024.0);
  // p99: rank 99 is the 9th of 10 in slot 16 -> 65536 + (8.5 / 10) * 65536.
  EXPECT_DOUBLE_EQ(*histogram_quantile_ns(h, 0.99), 65536.0 + 0.85 * 65536.0);
  // p90 is the last sample of the first slot: still inside it.
  double p90 = *histogram_quantile_ns(h, 0.9);
  EXPECT_GE(p90, 1024.0);
  EXPECT_LT(p90, 2048.0);
  EXPECT_DOUBLE_EQ(*h.mean_ns(), (90.0 * 1500 + 10.0 * 100'000) / 100.0);
}

TEST(RunqHistogram, QuantileOfSingleSampleIsInItsSlot) {
  for (uint64_t v : {3ull, 777ull, 5'000'000ull}) {
    RunqHistogram h;
    h.record(v);
    int slot = runq_slot(v);
    double q = *histogram_quantile_ns(h, 0.99);
    EXPECT_GE(q, static_cast<double>(slot_lower_ns(slot))) << v;
    EXPECT_LT(q, static_cast<double>(slot_upper_ns(slot))) << v;
  }
}

TEST(RunqHistogram, DeltaSubtractsCumulativeCounters) {
  RunqHistogram earlier;
  earlier.record(1000);
  RunqHistogram later = earlier;
  later.record(1'000'000);
  later.record(1'000'000);
  RunqHistogram d = histogram_delta(later, earlier);
  EXPECT_EQ(d.count, 2u);
  EXPECT_EQ(d.sum_ns, 2'000'000u);
  EXPECT_EQ(d.slots[static_cast<size_t>(runq_slot(1000))], 0u);
  EXPECT_EQ(d.slots[static_cast<size_t>(runq_slot(1'000'000))], 2u);
}

TEST(RunqHistogram, DeltaAfterResetTakesTheNewCounters) {
  RunqHistogram earlier;
  for (int i = 0; i < 5; ++i)
    earlier.record(1000);
  RunqHistogram later;  // the map entry was recreated: counters restarted
  later.record(4000);
  RunqHistogram d = histogram_delta(later, earlier);
  EXPECT_EQ(d.count, 1u);
  EXPECT_EQ(d.slots[static_cast<size_t>(runq_slot(4000))], 1u);
}

}  // namespace
TEST(RunqHistogram, AttributedWaitsCountTheOthersAsNone) {
  RunqHistogram all;
  RunqHistogram caused;
  for (int i = 0; i < 95; ++i)
    all.record(3'000'000);  // 95 waits of 3 ms behind other LS work
  for (int i = 0; i < 5; ++i) {
    all.record(1'000'000);  // 5 of 1 ms behind BE
    caused.record(1'000'000);
  }
  // All waits: p99 in the 3 ms slot; what BE added: 95 waits of none, 5 of 1 ms.
  EXPECT_GE(*histogram_quantile_ns(all, 0.99), 2'097'152.0);
  const RunqHistogram attributed = attributed_waits(all, caused);
  EXPECT_EQ(attributed.count, 100U);
  EXPECT_EQ(attributed.slots[0], 95U);
  EXPECT_EQ(attributed.slots[runq_slot(1'000'000)], 5U);
  const double p99 = *histogram_quantile_ns(attributed, 0.99);
  EXPECT_GE(p99, 524'288.0);
  EXPECT_LT(p99, 1'048'576.0 + 1);
  EXPECT_LT(*histogram_quantile_ns(attributed, 0.90), 2.0);
  // A subset larger than the whole (counters read at different times) is capped.
  EXPECT_EQ(attributed_waits(caused, all).slots[0], 0U);
}

}  // namespace gleaner::agent::bpf
