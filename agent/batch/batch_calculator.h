#pragma once
// Batch allocatable (kubernetes.io/batch-cpu, kubernetes.io/batch-memory): Koordinator's
// slo-controller formula, as a pure function of a node snapshot and the node's resolved
// colocation strategy. Every intermediate term is returned so `calc` can explain it.
//
//   margin       = capacity * (100 - reclaimPercent) / 100          (truncated)
//   nodeReserved = max(capacity - allocatable, node.koordinator.sh/reservation)
//   systemUsed   = max(system usage, nodeReserved)
//   usage:           capacity - margin - systemUsed   - sum(HP usage)
//   request:         capacity - margin - nodeReserved - sum(HP request)
//   maxUsageRequest: capacity - margin - systemUsed   - sum(max(HP request, HP usage))
//   floor 0, then min(.., capacity * batchXThresholdPercent / 100) when set.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/config/colocation_config.h"
#include "agent/snapshot/node_snapshot.h"
#include "common/colocation_state.h"
#include "kube/well_known.h"

namespace gleaner::agent::batch {

using gleaner::ColocationState;

// One resource's terms, CPU in millicores, memory in bytes.
struct ResourceTerms {
  config::CalculatePolicy policy = config::CalculatePolicy::kUsage;
  int64_t reclaim_percent = 0;
  int64_t capacity = 0;
  int64_t allocatable = 0;
  int64_t safety_margin = 0;
  int64_t kubelet_reserved = 0;     // capacity - allocatable
  int64_t annotation_reserved = 0;  // node.koordinator.sh/reservation
  int64_t node_reserved = 0;
  int64_t system_usage = 0;  // measured (or node - pods)
  int64_t system_used = 0;   // max(system usage, nodeReserved)
  int64_t hp_request = 0;
  int64_t hp_used = 0;
  int64_t hp_max_used_request = 0;
  int64_t dangling_used = 0;  // metrics of pods not in the list, included in the HP sums
  int64_t by_policy = 0;      // after the floor at 0
  std::optional<int64_t> threshold_cap;
  int64_t batch = 0;
};

struct BatchResult {
  ColocationState state = ColocationState::kDisabled;
  std::string reason;
  // Set only when state is kEnabled.
  std::optional<int64_t> batch_cpu_milli;
  std::optional<int64_t> batch_memory_bytes;
  ResourceTerms cpu;
  ResourceTerms memory;
  int hp_pods = 0;
  int hp_pods_without_metrics = 0;
  std::vector<std::string> dangling_pods;
  // The bound BE's CPU decision put on the batch CPU (step/batch_bound.h), when one applies.
  std::optional<int64_t> cpu_bound_milli;
};

// The reservation annotation as (millicores, bytes); reservedCPUs ("0-3,8") counts whole
// CPUs and takes precedence over resources.cpu. An invalid annotation reserves nothing.
snapshot::Usage reservation_from_annotation(const kube::StringMap& annotations);

BatchResult calculate_batch(const snapshot::NodeSnapshot& snap,
                            const config::NodeColocation& colocation);

// The intermediate terms as a JSON object (the `explain` of `gleaner-agent calc`).
nlohmann::ordered_json explain(const BatchResult& result, const config::NodeColocation& colocation);

}  // namespace gleaner::agent::batch
