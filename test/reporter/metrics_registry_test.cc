#include "reporter/metrics/metrics_registry.h"

#include <cmath>
#include <functional>
#include <sstream>

#include <gtest/gtest.h>

#include "common/clock.h"
#include "reporter/metrics/health.h"
#include "reporter/metrics/routes.h"
#include "test/reporter/report_fixtures.h"

namespace gleaner::reporter {
namespace {

using namespace std::chrono_literals;
using testing::sample_pod;
using testing::sample_state;

std::vector<std::string> sample_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') out.push_back(line);
  }
  return out;
}

int count_containing(const std::string& text, const std::string& needle) {
  int n = 0;
  for (const auto& l : sample_lines(text))
    n += l.find(needle) != std::string::npos;
  return n;
}

// The value of the sample line that starts with `series` (name plus labels), or NaN.
double value_of(const std::string& text, const std::string& series) {
  for (const auto& l : sample_lines(text)) {
    if (l.rfind(series + " ", 0) == 0) return std::stod(l.substr(series.size() + 1));
  }
  return std::nan("");
}

TEST(MetricsRegistry, ExportsEveryDocumentedFamilyWithItsType) {
  MetricsRegistry reg;
  reg.update(sample_state(2));
  std::string text = reg.serialize();
  for (const char* f : {"gleaner_node_cpu_usage_cores gauge",
                        "gleaner_node_memory_usage_bytes gauge",
                        "gleaner_node_cpu_capacity_cores gauge",
                        "gleaner_system_cpu_usage_cores gauge",
                        "gleaner_batch_cpu_allocatable_cores gauge",
                        "gleaner_batch_memory_allocatable_bytes gauge",
                        "gleaner_colocation_state gauge",
                        "gleaner_pod_cpu_usage_cores gauge",
                        "gleaner_pod_cpu_throttled_seconds_total counter",
                        "gleaner_pod_cpu_pressure_some_ratio gauge",
                        "gleaner_be_suppress_cpu_cores gauge",
                        "gleaner_evictions_total counter",
                        "gleaner_cgroup_writes_total counter",
                        "gleaner_cgroup_write_failures_total counter",
                        "gleaner_config_load_errors_total counter",
                        "gleaner_sampling_pass_duration_seconds histogram",
                        "gleaner_report_sends_total counter",
                        "gleaner_report_send_failures_total counter",
                        "gleaner_agent_cpu_seconds_total counter",
                        "gleaner_agent_resident_memory_bytes gauge"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + f), std::string::npos) << f;
  }
}

TEST(MetricsRegistry, ConvertsToBaseUnits) {
  MetricsRegistry reg;
  reg.update(sample_state(2));
  std::string text = reg.serialize();
  EXPECT_DOUBLE_EQ(value_of(text, "gleaner_batch_cpu_allocatable_cores"), 12.2);
  EXPECT_DOUBLE_EQ(value_of(text, "gleaner_batch_memory_allocatable_bytes"), 42090679501.0);
  EXPECT_DOUBLE_EQ(
      value_of(text, "gleaner_pod_cpu_usage_cores{namespace=\"spark\",pod=\"pod-1\",qos=\"BE\"}"),
      0.101);
  EXPECT_DOUBLE_EQ(
      value_of(
          text,
          "gleaner_pod_runqueue_latency_p99_seconds{namespace=\"web\",pod=\"pod-0\",qos=\"LS\"}"),
      0.00025);
  EXPECT_DOUBLE_EQ(value_of(text,
                            "gleaner_pod_memory_pressure_some_ratio{namespace=\"web\","
                            "pod=\"pod-0\",qos=\"LS\"}"),
                   0.02);
  EXPECT_DOUBLE_EQ(value_of(text, "gleaner_colocation_state{state=\"enabled\"}"), 1);
  EXPECT_DOUBLE_EQ(value_of(text, "gleaner_colocation_state{state=\"degraded\"}"), 0);
  EXPECT_DOUBLE_EQ(value_of(text, "gleaner_be_suppress_cpu_cores{policy=\"cfsQuota\"}"), 14);
  EXPECT_DOUBLE_EQ(value_of(text, "gleaner_sampling_pass_duration_seconds_count"), 2);
}

TEST(MetricsRegistry, ExportsProbeStateAndBpfProgramCosts) {
  MetricsRegistry reg;
  AgentState s = sample_state(1);
  reg.update(s);
  std::string text = reg.serialize();
  EXPECT_DOUBLE_EQ(value_of(text, "gleaner_ebpf_probe_loaded"), 0);
  EXPECT_EQ(count_containing(text, "gleaner_bpf_program_runs_total"), 0);  // stats off

  s.ebpf_probe_loaded = true;
  s.bpf_program_costs["sched_switch"] = {2.5, 1000000, 108.0};
  reg.update(s);
  text = reg.serialize();
  EXPECT_DOUBLE_EQ(value_of(text, "gleaner_ebpf_probe_loaded"), 1);
  EXPECT_DOUBLE_EQ(
      value_of(text, "gleaner_bpf_program_run_seconds_total{program=\"sched_switch\"}"), 2.5);
  EXPECT_DOUBLE_EQ(value_of(text, "gleaner_bpf_program_runs_total{program=\"sched_switch\"}"), 1e6);
  EXPECT_DOUBLE_EQ(value_of(text, "gleaner_bpf_program_seconds_per_run{program=\"sched_switch\"}"),
                   108e-9);
}

TEST(MetricsRegistry, AtMostTwentySeriesPerPodWithBoundedLabels) {
  MetricsRegistry reg;
  AgentState s = sample_state(3);
  s.pods[0].qos = "made-up-class";  // unknown classes must not add label values
  reg.update(s);
  std::string text = reg.serialize();
  for (const char* pod : {"pod=\"pod-0\"", "pod=\"pod-1\"", "pod=\"pod-2\""}) {
    int n = count_containing(text, pod);
    EXPECT_GT(n, 5) << pod;
    EXPECT_LE(n, kMaxSeriesPerPod) << pod;
  }
  EXPECT_EQ(count_containing(text, "made-up-class"), 0);
  EXPECT_GT(count_containing(text, "pod=\"pod-0\",qos=\"NONE\""), 0);
  for (const auto& l : sample_lines(text)) {
    if (l.find("pod=") == std::string::npos) continue;
    EXPECT_EQ(l.find("container"), std::string::npos) << l;
    EXPECT_EQ(l.find("uid"), std::string::npos) << l;
  }
}

TEST(MetricsRegistry, SeriesOfDeletedPodsDisappear) {
  MetricsRegistry reg;
  reg.update(sample_state(3));
  EXPECT_GT(count_containing(reg.serialize(), "pod=\"pod-2\""), 0);
  AgentState s = sample_state(3);
  s.pods.pop_back();
  reg.update(s);
  std::string text = reg.serialize();
  EXPECT_EQ(count_containing(text, "pod=\"pod-2\""), 0);
  EXPECT_GT(count_containing(text, "pod=\"pod-1\""), 0);
}

TEST(MetricsRegistry, NoBatchSeriesWhenColocationIsOff) {
  MetricsRegistry reg;
  AgentState s = sample_state(1);
  s.colocation = ColocationState::kDegraded;
  s.batch_allocatable.reset();
  s.suppress = {false, "none", 0};
  reg.update(s);
  std::string text = reg.serialize();
  EXPECT_EQ(count_containing(text, "gleaner_batch_cpu_allocatable_cores"), 0);
  EXPECT_EQ(count_containing(text, "gleaner_be_suppress_cpu_cores"), 0);
  EXPECT_DOUBLE_EQ(value_of(text, "gleaner_colocation_state{state=\"degraded\"}"), 1);
}

TEST(MetricsRegistry, FoldsRunawayLabelValuesIntoOther) {
  MetricsRegistry reg;
  AgentState s = sample_state(0);
  s.cgroup_writes_total.clear();
  for (int i = 0; i < 100; ++i)
    s.cgroup_writes_total["knob-" + std::to_string(1000 + i)] = 1;
  reg.update(s);
  std::string text = reg.serialize();
  int n = count_containing(text, "gleaner_cgroup_writes_total{");
  EXPECT_EQ(n, static_cast<int>(kMaxLabelValuesPerFamily));
  double other = value_of(text, "gleaner_cgroup_writes_total{resource=\"other\"}");
  EXPECT_DOUBLE_EQ(other, 100 - (kMaxLabelValuesPerFamily - 1));
}

TEST(MetricsRegistry, HistogramAccumulatesAcrossUpdates) {
  MetricsRegistry reg;
  reg.update(sample_state(0));
  reg.update(sample_state(0));
  EXPECT_DOUBLE_EQ(value_of(reg.serialize(), "gleaner_sampling_pass_duration_seconds_count"), 4);
}

TEST(Health, LivenessFailsWhenALoopStopsTicking) {
  FakeClock clock;
  HealthMonitor health(clock, 5s);
  health.register_loop("sampler");
  health.register_loop("enforcer");
  EXPECT_TRUE(health.liveness().ok);
  clock.advance(4s);
  health.beat("sampler");
  clock.advance(2s);  // enforcer last ticked 6 s ago
  auto v = health.liveness();
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("enforcer: stalled"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("sampler: ok"), std::string::npos) << v.detail;
  health.beat("enforcer");
  EXPECT_TRUE(health.liveness().ok);
}

TEST(Health, ReadinessNeedsFirstSampleAndConfig) {
  FakeClock clock;
  HealthMonitor health(clock, 5s);
  EXPECT_FALSE(health.readiness().ok);
  health.mark_first_sample();
  EXPECT_FALSE(health.readiness().ok);
  health.mark_config_loaded();
  EXPECT_TRUE(health.readiness().ok);
  EXPECT_NE(health.readiness().detail.find("config: loaded\n"), std::string::npos);
}

// Issue #60: a rejected key is named with its error; the agent stays ready, since the last
// good version or the safe fallback protects LS in its place.
TEST(Health, ReadinessNamesTheConfigKeysRejected) {
  FakeClock clock;
  HealthMonitor health(clock, 5s);
  health.mark_first_sample();
  health.mark_config_loaded("resource-threshold-config: field cpuSuppressPolicy: bad");
  HealthVerdict v = health.readiness();
  EXPECT_TRUE(v.ok);
  EXPECT_NE(v.detail.find("config: not fully loaded: resource-threshold-config: field "
                          "cpuSuppressPolicy: bad\n"),
            std::string::npos)
      << v.detail;
  health.mark_config_loaded();
  EXPECT_NE(health.readiness().detail.find("config: loaded\n"), std::string::npos);
}

TEST(Routes, ServesMetricsAndProbes) {
  FakeClock clock;
  HealthMonitor health(clock, 5s);
  MetricsRegistry reg;
  reg.update(sample_state(1));
  auto m = route_request("GET", "/metrics", reg, health);
  EXPECT_EQ(m.status, 200u);
  EXPECT_EQ(m.content_type, net::kPrometheusTextType);
  EXPECT_NE(m.body.find("gleaner_node_cpu_usage_cores"), std::string::npos);
  EXPECT_EQ(route_request("GET", "/readyz", reg, health).status, 503u);
  health.mark_first_sample();
  health.mark_config_loaded();
  EXPECT_EQ(route_request("GET", "/readyz?verbose", reg, health).status, 200u);
  health.register_loop("sampler");
  EXPECT_EQ(route_request("GET", "/healthz", reg, health).status, 200u);
  clock.advance(6s);
  EXPECT_EQ(route_request("GET", "/healthz", reg, health).status, 503u);
  EXPECT_EQ(route_request("GET", "/nope", reg, health).status, 404u);
  EXPECT_EQ(route_request("POST", "/metrics", reg, health).status, 405u);
}

}  // namespace
}  // namespace gleaner::reporter
