#pragma once
// colocation-config: how much of a node may be lent to batch work, per Koordinator's
// ColocationStrategy. The top-level object is the cluster strategy; nodeConfigs[] hold
// per-node overrides selected by nodeSelector.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/config/strategy_set.h"
#include "common/result.h"
#include "kube/objects.h"
#include "kube/well_known.h"

namespace gleaner::agent::config {

enum class CalculatePolicy { kUsage, kRequest, kMaxUsageRequest };
const char* to_string(CalculatePolicy policy);

struct ColocationStrategy {
  bool enable = false;
  int64_t metric_aggregate_duration_seconds = 300;
  int64_t metric_report_interval_seconds = 60;
  int64_t cpu_reclaim_threshold_percent = 60;
  int64_t memory_reclaim_threshold_percent = 65;
  CalculatePolicy cpu_calculate_policy = CalculatePolicy::kUsage;  // usage | maxUsageRequest
  CalculatePolicy memory_calculate_policy = CalculatePolicy::kUsage;
  int64_t degrade_time_minutes = 15;
  int64_t update_time_threshold_seconds = 300;
  double resource_diff_threshold = 0.1;
  std::optional<int64_t> batch_cpu_threshold_percent;
  std::optional<int64_t> batch_memory_threshold_percent;
};

using ColocationConfig = StrategySet<ColocationStrategy>;

// Parses the key's JSON text; the error names `file` and the field.
Result<ColocationConfig> parse_colocation_config(std::string_view text, const std::string& file);

// The strategy that applies to one node, with where each part came from.
struct NodeColocation {
  ColocationStrategy strategy;
  bool cluster_enabled = false;
  // On only when both the cluster strategy and the node's resolved strategy enable it.
  bool enabled = false;
  std::string matched;             // "clusterStrategy", "nodeConfigs NAME" or "nodeConfigs[i]"
  std::vector<std::string> notes;  // node-level overrides applied or ignored
};

// nodeConfigs first match, then the node annotation node.koordinator.sh/colocation-strategy,
// then the reclaim-ratio labels (Koordinator's precedence).
NodeColocation resolve_colocation(const ColocationConfig& config, const kube::Node& node);

}  // namespace gleaner::agent::config
