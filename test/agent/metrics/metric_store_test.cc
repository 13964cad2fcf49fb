#include "agent/metrics/metric_store.h"

#include <gtest/gtest.h>

namespace gleaner::agent {
namespace {
using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;
constexpr SteadyClock::time_point kEpoch{};

// A store of `capacity` samples per series, given the values 1..n of series `name`, one a
// second from kEpoch + 1 s.
MetricStore counted_up(size_t capacity, const std::string& name, int n) {
  MetricStore store(kEpoch, capacity);
  for (int i = 1; i <= n; ++i)
    store.add(name, kEpoch + std::chrono::seconds(i), i);
  return store;
}

TEST(MetricStore, AggregatesOverTrailingWindows) {
  const auto t0 = kEpoch;
  MetricStore store = counted_up(1800, "node/cpu", 100);
  auto all = store.aggregate("node/cpu", t0 + 100s, 30min);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->count, 100u);
  EXPECT_DOUBLE_EQ(all->avg, 50.5);
  EXPECT_DOUBLE_EQ(all->p50, 50);
  EXPECT_DOUBLE_EQ(all->p90, 90);
  EXPECT_DOUBLE_EQ(all->p99, 99);
  EXPECT_DOUBLE_EQ(all->last, 100);
  auto minute = store.aggregate("node/cpu", t0 + 100s, 1min);
  EXPECT_EQ(minute->count, 60u);  // samples 41..100
  EXPECT_DOUBLE_EQ(minute->avg, 70.5);
  EXPECT_FALSE(store.aggregate("node/cpu", t0 + 1000s, 1min).has_value());
  EXPECT_FALSE(store.aggregate("missing", t0 + 100s, 1min).has_value());
}

TEST(MetricStore, RingOverwritesOldestSoMemoryIsBounded) {
  const auto t0 = kEpoch;
  MetricStore store = counted_up(10, "s", 1000);
  auto agg = store.aggregate("s", t0 + 1000s, 30min);
  EXPECT_EQ(agg->count, 10u);
  EXPECT_DOUBLE_EQ(agg->avg, 995.5);
}

TEST(MetricStore, DropsDeletedAndSilentSeries) {
  SteadyClock::time_point t0{};
  MetricStore store(t0, 60);
  store.add("pod/web/a/cpu", t0 + 1s, 1);
  store.add("pod/web/a/memory", t0 + 1s, 1);
  store.add("pod/web/ab/cpu", t0 + 50s, 1);
  store.add("node/cpu", t0 + 50s, 1);
  store.drop_prefix("pod/web/a/");
  EXPECT_EQ(store.series_count(), 2u);
  store.drop_older_than(t0 + 200s, 60s);
  EXPECT_EQ(store.series_count(), 0u);
}

}  // namespace
}  // namespace gleaner::agent
