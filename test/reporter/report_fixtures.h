#pragma once
// Sample values shared by the reporter tests.

#include <string>

#include "reporter/metrics/agent_state.h"
#include "reporter/wire/node_report.h"

namespace gleaner::reporter::testing {

inline NodeReport sample_report(uint64_t sequence = 7) {
  NodeReport r;
  r.node = "node-1";
  r.cluster = "prod-a";
  r.sequence = sequence;
  r.timestamp_unix_ms = 1700000000123;
  r.capacity = {32000, 137438953472};
  r.allocatable = {31000, 133143986176};
  r.batch_allocatable = ResourceAmounts{12200, 42090679501};
  r.usage.node = {9000, 60LL << 30};
  r.usage.system = {500, 3LL << 30};
  r.usage.ls = {6000, 40LL << 30};
  r.usage.be = {2500, 17LL << 30};
  r.be_pods = {{{"spark", "exec-1", "uid-1"}, {2500, 17LL << 30}}};
  r.suppress = {true, "cfsQuota", 14000};
  r.interference = {{{"web", "api-0", "uid-2"}, 180, 3.5},
                    {{"web", "api-1", "uid-3"}, std::nullopt, std::nullopt}};
  return r;
}

inline PodState sample_pod(const std::string& ns, const std::string& name, const std::string& qos,
                           int64_t cpu_milli) {
  PodState p;
  p.namespace_name = ns;
  p.name = name;
  p.qos = qos;
  p.cpu_usage_millicores = cpu_milli;
  p.memory_usage_bytes = 512LL << 20;
  p.cpu_throttled_seconds_total = 1.5;
  p.cpu_throttled_periods_total = 30;
  p.pressure = {1.0, 0.5, 2.0, 1.0, 0.25, 0.0};
  p.runqueue_latency_p99_us = 250;
  return p;
}

inline AgentState sample_state(int pods) {
  AgentState s;
  s.node_capacity = {32000, 137438953472};
  s.node_allocatable = {31000, 133143986176};
  s.node_usage = {9000, 60LL << 30};
  s.system_usage = {500, 3LL << 30};
  s.ls_usage = {6000, 40LL << 30};
  s.be_usage = {2500, 17LL << 30};
  s.colocation = ColocationState::kEnabled;
  s.batch_allocatable = ResourceAmounts{12200, 42090679501};
  for (int i = 0; i < pods; ++i) {
    s.pods.push_back(sample_pod(i % 2 ? "spark" : "web", "pod-" + std::to_string(i),
                                i % 2 ? "BE" : "LS", 100 + i));
  }
  s.suppress = {true, "cfsQuota", 14000};
  s.evictions_total = {{"memory-evict", 2}, {"cpu-evict", 1}};
  s.cgroup_writes_total = {{"cpu.cfs_quota_us", 40}};
  s.cgroup_write_failures_total = {{"cpu.cfs_quota_us", 1}};
  s.config_load_errors_total = {{"colocation-config", 1}};
  s.config_key_valid = {{"colocation-config", 0}, {"resource-threshold-config", 1}};
  s.sampling_pass_seconds = {0.004, 0.006};
  s.report_sends_total = 10;
  s.report_send_failures_total = 2;
  s.agent_cpu_seconds_total = 12.5;
  s.agent_resident_memory_bytes = 40 << 20;
  s.last_sample_unix_seconds = 1700000000.5;
  return s;
}

}  // namespace gleaner::reporter::testing
