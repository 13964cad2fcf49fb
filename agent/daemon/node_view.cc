#include "agent/daemon/node_view.h"

#include <cmath>
#include <cstdio>
#include <random>

namespace gleaner::agent {
namespace {

reporter::ResourceAmounts amounts(const snapshot::Usage& u) {
  return {u.cpu_milli, u.memory_bytes};
}

reporter::ResourceAmounts amounts_of(const kube::ResourceList& list) {
  reporter::ResourceAmounts out;
  if (auto it = list.find(kube::kResourceCpu); it != list.end()) {
    out.cpu_millicores = it->second.milli_value();
  }
  if (auto it = list.find(kube::kResourceMemory); it != list.end()) {
    out.memory_bytes = it->second.value();
  }
  return out;
}

void add(reporter::ResourceAmounts& to, const snapshot::Usage& u) {
  to.cpu_millicores += u.cpu_milli;
  to.memory_bytes += u.memory_bytes;
}

}  // namespace

snapshot::NodeSnapshot build_snapshot(const kube::Node& node, const std::vector<kube::Pod>& pods,
                                      const SampledUsage& usage) {
  snapshot::NodeSnapshot snap;
  snap.node = node;
  snap.pods.reserve(pods.size());
  for (const auto& pod : pods)
    snap.pods.push_back(snapshot::classify_pod(pod));
  snap.metrics = metrics_of(usage);
  return snap;
}

snapshot::NodeMetrics metrics_of(const SampledUsage& usage) {
  snapshot::NodeMetrics metrics;
  metrics.age_seconds = usage.age_seconds;
  metrics.node = usage.node;
  metrics.pods = usage.pods;
  return metrics;
}

std::string new_report_epoch() {
  std::random_device rd;
  const uint64_t value = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

TickOutcome describe_tick(const snapshot::NodeSnapshot& snap, const batch::BatchResult& batch,
                          const PodSamplingPass& latest, const std::string& cluster,
                          uint64_t sequence, double unix_seconds) {
  TickOutcome out;
  auto& state = out.state;
  auto& report = out.report;
  state.node_capacity = amounts_of(snap.node.capacity);
  state.node_allocatable = amounts_of(snap.node.allocatable);
  state.node_usage = amounts(snap.metrics.node);
  state.system_usage = amounts(snap.system_usage());

  std::map<std::string, const PodSample*> raw;
  for (const auto& s : latest.pods)
    raw[s.key] = &s;
  for (const auto& pod : snap.pods) {
    const std::string key = pod.pod.key();
    const snapshot::Usage* usage = snap.pod_usage(key);
    if (usage == nullptr) continue;
    const bool be = pod.qos == states::QoSClass::kBE;
    add(be ? state.be_usage : state.ls_usage, *usage);
    reporter::PodState ps;
    ps.namespace_name = pod.pod.metadata.namespace_name;
    ps.name = pod.pod.metadata.name;
    ps.qos = states::to_string(pod.qos);
    ps.cpu_usage_millicores = usage->cpu_milli;
    ps.memory_usage_bytes = usage->memory_bytes;
    if (auto it = raw.find(key); it != raw.end()) {
      ps.cpu_throttled_seconds_total = static_cast<double>(it->second->throttle.throttled_ns) / 1e9;
      ps.cpu_throttled_periods_total = static_cast<uint64_t>(it->second->throttle.nr_throttled);
      if (it->second->cpu_pressure) {
        ps.pressure.cpu_some = it->second->cpu_pressure->some.avg10;
        if (it->second->cpu_pressure->full) {
          ps.pressure.cpu_full = it->second->cpu_pressure->full->avg10;
        }
      }
      if (it->second->memory_pressure) {
        ps.pressure.memory_some = it->second->memory_pressure->some.avg10;
      }
    }
    state.pods.push_back(ps);
    if (be) {
      report.be_pods.push_back(
          {{ps.namespace_name, ps.name, pod.pod.metadata.uid}, amounts(*usage)});
    }
  }

  state.colocation = batch.state;
  switch (batch.state) {
    case ColocationState::kEnabled:
      state.batch_allocatable = reporter::ResourceAmounts{batch.batch_cpu_milli.value_or(0),
                                                          batch.batch_memory_bytes.value_or(0)};
      report.batch_allocatable = state.batch_allocatable;
      break;
    case ColocationState::kDisabled:
      report.batch_unavailable_reason = reporter::BatchUnavailableReason::kDisabled;
      break;
    case ColocationState::kDegraded:
      report.batch_unavailable_reason = reporter::BatchUnavailableReason::kDegraded;
      break;
  }
  state.last_sample_unix_seconds = unix_seconds;

  report.node = snap.node.metadata.name;
  report.cluster = cluster;
  report.sequence = sequence;
  report.timestamp_unix_ms = static_cast<int64_t>(std::llround(unix_seconds * 1000.0));
  report.capacity = state.node_capacity;
  report.allocatable = state.node_allocatable;
  report.usage = {state.node_usage, state.system_usage, state.ls_usage, state.be_usage};
  report.suppress.policy = "none";
  return out;
}

}  // namespace gleaner::agent
