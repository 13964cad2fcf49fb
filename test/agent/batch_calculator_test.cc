#include "agent/batch/batch_calculator.h"

#include <gtest/gtest.h>

#include "common/quantity.h"
#include "kube/well_known.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent::batch {
namespace {

using gleaner::kGi;

snapshot::NodeSnapshot worked_example() {
  auto snap =
      snapshot::load_snapshot_file(testing::fixture_path("agent/snapshots/worked-example.json"));
  EXPECT_TRUE(snap.ok()) << (snap.ok() ? "" : snap.error().message);
  return snap.ok() ? *snap : snapshot::NodeSnapshot{};
}

config::NodeColocation enabled(config::ColocationStrategy s = {}) {
  config::NodeColocation c;
  s.enable = true;
  c.strategy = s;
  c.cluster_enabled = true;
  c.enabled = true;
  return c;
}

TEST(BatchCalculator, SpecWorkedExampleUsagePolicy) {
  auto r = calculate_batch(worked_example(), enabled());
  ASSERT_EQ(r.state, ColocationState::kEnabled);
  EXPECT_EQ(r.cpu.safety_margin, 12800);
  EXPECT_EQ(r.cpu.node_reserved, 1000);
  EXPECT_EQ(r.cpu.system_used, 1000);
  EXPECT_EQ(r.cpu.hp_used, 6000);
  EXPECT_EQ(r.cpu.hp_request, 16000);
  EXPECT_EQ(r.memory.safety_margin, 48103633715);
  EXPECT_EQ(r.memory.system_used, 4 * kGi);
  EXPECT_EQ(r.memory.hp_used, 40 * kGi);
  EXPECT_EQ(r.batch_cpu_milli, 12200);
  EXPECT_EQ(r.batch_memory_bytes, 42090679501);
  EXPECT_EQ(r.hp_pods, 2);  // the BE pod and the Succeeded pod are not counted
}

TEST(BatchCalculator, SpecWorkedExampleRequestAndMaxUsageRequestPolicies) {
  config::ColocationStrategy s;
  s.memory_calculate_policy = config::CalculatePolicy::kRequest;
  auto r = calculate_batch(worked_example(), enabled(s));
  EXPECT_EQ(r.batch_memory_bytes, 16320875725);
  EXPECT_EQ(r.batch_cpu_milli, 12200);

  s = {};
  s.cpu_calculate_policy = config::CalculatePolicy::kMaxUsageRequest;
  s.memory_calculate_policy = config::CalculatePolicy::kMaxUsageRequest;
  r = calculate_batch(worked_example(), enabled(s));
  EXPECT_EQ(r.batch_cpu_milli, 2200);
  // 128Gi - margin - max(3Gi, 4Gi) - (max(32Gi, 24Gi) + max(32Gi, 16Gi))
  EXPECT_EQ(r.batch_memory_bytes, 128 * kGi - 48103633715 - 4 * kGi - 64 * kGi);
}

TEST(BatchCalculator, PodsWithoutMetricsCountTheirRequestInEveryPolicy) {
  auto snap = worked_example();
  snap.metrics.pods.erase("web/api-1");  // requests 8 CPU / 32Gi, used 2.5 / 16Gi
  auto usage = calculate_batch(snap, enabled());
  EXPECT_EQ(usage.hp_pods_without_metrics, 1);
  EXPECT_EQ(usage.batch_cpu_milli, 32000 - 12800 - 1000 - (3500 + 8000));
  config::ColocationStrategy s;
  s.cpu_calculate_policy = config::CalculatePolicy::kMaxUsageRequest;
  auto max = calculate_batch(snap, enabled(s));
  EXPECT_EQ(max.batch_cpu_milli, 2200);  // unchanged: request counted, not zero
}

TEST(BatchCalculator, LSEPodCpuUsageIsItsRequest) {
  auto snap = worked_example();
  for (auto& p : snap.pods) {
    if (p.pod.key() == "web/api-0") p.qos = states::QoSClass::kLSE;  // requests 8, uses 3.5
  }
  auto r = calculate_batch(snap, enabled());
  EXPECT_EQ(r.cpu.hp_used, 8000 + 2500);
  EXPECT_EQ(r.memory.hp_used, 40 * kGi);
}

TEST(BatchCalculator, ReservationAnnotationRaisesNodeReserved) {
  auto snap = worked_example();
  snap.node.metadata.annotations[kube::kReservationAnnotation] =
      R"({"resources": {"cpu": "500m", "memory": "10Gi"}, "reservedCPUs": "0-1,4"})";
  auto reserved = reservation_from_annotation(snap.node.metadata.annotations);
  EXPECT_EQ(reserved.cpu_milli, 3000);  // reservedCPUs wins over resources.cpu
  EXPECT_EQ(reserved.memory_bytes, 10 * kGi);
  auto r = calculate_batch(snap, enabled());
  EXPECT_EQ(r.cpu.node_reserved, 3000);
  EXPECT_EQ(r.batch_cpu_milli, 32000 - 12800 - 3000 - 6000);
  EXPECT_EQ(r.memory.system_used, 10 * kGi);

  snap.node.metadata.annotations[kube::kReservationAnnotation] = "{not json";
  EXPECT_EQ(reservation_from_annotation(snap.node.metadata.annotations), snapshot::Usage{});
}

TEST(BatchCalculator, SystemUsageDefaultsToNodeMinusPods) {
  auto snap = worked_example();
  snap.metrics.system.reset();
  // node 10400m - pods (3500 + 2500 + 3900) = 500m; 50Gi - 47Gi = 3Gi.
  EXPECT_EQ(snap.system_usage(), (snapshot::Usage{500, 3 * kGi}));
  snap.metrics.node = {1000, kGi};
  EXPECT_EQ(snap.system_usage(), (snapshot::Usage{0, 0}));
}

TEST(BatchCalculator, DanglingMetricsCountAsHighPriorityUsage) {
  auto snap = worked_example();
  snap.metrics.pods["gone/old-0"] = {1000, 2 * kGi};
  auto r = calculate_batch(snap, enabled());
  ASSERT_EQ(r.dangling_pods.size(), 1u);
  EXPECT_EQ(r.cpu.dangling_used, 1000);
  EXPECT_EQ(r.batch_cpu_milli, 12200 - 1000);
}

TEST(BatchCalculator, FloorAtZeroAndThresholdCaps) {
  auto snap = worked_example();
  snap.metrics.pods["web/api-0"].cpu_milli = 40000;
  auto r = calculate_batch(snap, enabled());
  EXPECT_EQ(r.batch_cpu_milli, 0);

  config::ColocationStrategy s;
  s.batch_cpu_threshold_percent = 25;     // cap 8000 < 12200
  s.batch_memory_threshold_percent = 50;  // cap 64Gi > 42090679501
  r = calculate_batch(worked_example(), enabled(s));
  EXPECT_EQ(r.batch_cpu_milli, 8000);
  EXPECT_EQ(r.batch_memory_bytes, 42090679501);
}

TEST(BatchCalculator, NullWhenDisabledOrDegraded) {
  config::NodeColocation off = enabled();
  off.enabled = false;
  auto r = calculate_batch(worked_example(), off);
  EXPECT_EQ(r.state, ColocationState::kDisabled);
  EXPECT_FALSE(r.batch_cpu_milli.has_value());

  auto snap = worked_example();
  snap.metrics.age_seconds = 15 * 60;
  r = calculate_batch(snap, enabled());
  EXPECT_EQ(r.state, ColocationState::kDegraded);
  EXPECT_FALSE(r.batch_memory_bytes.has_value());
  snap.metrics.age_seconds = 15 * 60 - 1;
  EXPECT_EQ(calculate_batch(snap, enabled()).state, ColocationState::kEnabled);
}

TEST(BatchCalculator, ReclaimPercentChangesTheMargin) {
  config::ColocationStrategy s;
  s.cpu_reclaim_threshold_percent = 100;
  s.memory_reclaim_threshold_percent = 0;
  auto r = calculate_batch(worked_example(), enabled(s));
  EXPECT_EQ(r.cpu.safety_margin, 0);
  EXPECT_EQ(r.batch_cpu_milli, 32000 - 1000 - 6000);
  EXPECT_EQ(r.batch_memory_bytes, 0);
}

TEST(BatchCalculator, TheSafetyMarginIsSloControllersFloatingPointProduct) {
  // slo-controller: int64(float64(capacity) * (float64(100 - reclaim) / 100)). On this
  // capacity exact arithmetic would give one byte more.
  auto snap = worked_example();
  snap.node.capacity[kube::kResourceMemory] = *Quantity::parse("21849688900");
  config::ColocationStrategy s;
  s.memory_reclaim_threshold_percent = 43;
  auto r = calculate_batch(snap, enabled(s));
  EXPECT_EQ(r.memory.safety_margin, 12454322672);
  // Above 100 (slo-controller accepts it) the margin is negative: more is lent.
  s.cpu_reclaim_threshold_percent = 150;
  auto over = calculate_batch(worked_example(), enabled(s));
  EXPECT_EQ(over.cpu.safety_margin, -16000);
  auto at_100 = worked_example();
  s.cpu_reclaim_threshold_percent = 100;
  EXPECT_GT(over.batch_cpu_milli, calculate_batch(at_100, enabled(s)).batch_cpu_milli);
}

}  // namespace
}  // namespace gleaner::agent::batch
