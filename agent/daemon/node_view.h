#pragma once
// Pure assembly of what one tick knows: the NodeSnapshot the decisions take (from the
// pods, the Node and the aggregated samples), and from the decisions the exported
// AgentState (Prometheus) and the NodeReport (scheduler).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/batch/batch_calculator.h"
#include "agent/metrics/pod_sampler.h"
#include "agent/snapshot/node_snapshot.h"
#include "reporter/metrics/agent_state.h"
#include "reporter/wire/node_report.h"

namespace gleaner::agent {

struct SampledUsage {
  snapshot::Usage node;                         // averaged over the aggregation window
  std::map<std::string, snapshot::Usage> pods;  // same, keyed namespace/name
  double age_seconds = 0;
};

snapshot::NodeSnapshot build_snapshot(const kube::Node& node, const std::vector<kube::Pod>& pods,
                                      const SampledUsage& usage);
snapshot::NodeMetrics metrics_of(const SampledUsage& usage);

struct TickOutcome {
  reporter::AgentState state;
  reporter::NodeReport report;
};

// 16 random hex digits, fixed for the life of one agent process.
std::string new_report_epoch();

// `latest`: this tick's raw per-pod samples (throttling, PSI) for the exported series.
TickOutcome describe_tick(const snapshot::NodeSnapshot& snap, const batch::BatchResult& batch,
                          const PodSamplingPass& latest, const std::string& cluster,
                          uint64_t sequence, double unix_seconds);

}  // namespace gleaner::agent
