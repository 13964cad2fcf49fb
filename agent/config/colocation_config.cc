#include "agent/config/colocation_config.h"

#include <cstdlib>
#include <limits>
#include <string>

#include "agent/config/strategy_set_reader.h"
#include "common/json_util.h"
#include "kube/well_known.h"

namespace gleaner::agent::config {

// Reads fields of `obj` over `out` (used for the cluster, nodeConfigs and the node annotation).
void read_colocation_fields(FieldReader& r, const Json& obj, const std::string& path,
                            ColocationStrategy& out);
void check_colocation(FieldReader& r, const std::string& path, const ColocationStrategy& s);
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxReclaimPercent = 10000;

// Koordinator reads the label as a float ratio and truncates ratio*100 to an integer
// percent. We also ignore ratios above 1, which would make the safety margin negative.
std::optional<int64_t> reclaim_percent_from_label(const kube::Node& node, const char* label,
                                                  std::vector<std::string>& notes) {
  auto it = node.metadata.labels.find(label);
  if (it == node.metadata.labels.end()) return std::nullopt;
  const std::string& text = it->second;
  char* end = nullptr;
  double ratio = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(ratio >= 0.0) || ratio > 1.0) {
    notes.push_back(std::string("ignored label ") + label + "=\"" + text + "\" (want 0..1)");
    return std::nullopt;
  }
  auto percent = static_cast<int64_t>(ratio * 100);
  notes.push_back(std::string("label ") + label + " sets the reclaim percent to " +
                  std::to_string(percent));
  return percent;
}

std::string entry_name(const std::string& name, size_t index) {
  if (!name.empty()) return "nodeConfigs " + name;
  return "nodeConfigs[" + std::to_string(index) + "]";
}

}  // namespace

const char* to_string(CalculatePolicy policy) {
  switch (policy) {
    case CalculatePolicy::kUsage:
      return "usage";
    case CalculatePolicy::kRequest:
      return "request";
    case CalculatePolicy::kMaxUsageRequest:
      return "maxUsageRequest";
  }
  return "usage";
}

void read_colocation_fields(FieldReader& r, const Json& obj, const std::string& path,
                            ColocationStrategy& out) {
  r.read_bool(obj, path, "enable", out.enable);
  r.read_int(obj, path, "metricAggregateDurationSeconds", out.metric_aggregate_duration_seconds, 1,
             kMax);
  r.read_int(obj, path, "metricReportIntervalSeconds", out.metric_report_interval_seconds, 1, kMax);
  // slo-controller only requires >= 0: above 100 lends more than the margin (a negative
  // safety margin). Bounded so the margin stays a finite number of cores and bytes.
  r.read_int(obj, path, "cpuReclaimThresholdPercent", out.cpu_reclaim_threshold_percent, 0,
             kMaxReclaimPercent);
  r.read_int(obj, path, "memoryReclaimThresholdPercent", out.memory_reclaim_threshold_percent, 0,
             kMaxReclaimPercent);
  if (auto p = r.read_enum(obj, path, "cpuCalculatePolicy", {"usage", "maxUsageRequest"})) {
    out.cpu_calculate_policy =
        *p == 0 ? CalculatePolicy::kUsage : CalculatePolicy::kMaxUsageRequest;
  }
  if (auto p = r.read_enum(obj, path, "memoryCalculatePolicy",
                           {"usage", "request", "maxUsageRequest"})) {
    out.memory_calculate_policy = static_cast<CalculatePolicy>(*p);
  }
  r.read_int(obj, path, "degradeTimeMinutes", out.degrade_time_minutes, 1, kMax / 60);
  r.read_int(obj, path, "updateTimeThresholdSeconds", out.update_time_threshold_seconds, 1, kMax);
  r.read_double(obj, path, "resourceDiffThreshold", out.resource_diff_threshold, 0.0, 1.0);
  r.read_percent(obj, path, "batchCPUThresholdPercent", out.batch_cpu_threshold_percent);
  r.read_percent(obj, path, "batchMemoryThresholdPercent", out.batch_memory_threshold_percent);
}

void check_colocation(FieldReader& /*r*/, const std::string& /*path*/,
                      const ColocationStrategy& /*s*/) {
  // Every colocation field is range-checked on its own; there is no cross-field rule.
}

Result<ColocationConfig> parse_colocation_config(std::string_view text, const std::string& file) {
  auto json = parse_json_object(text, file);
  if (!json) return json.error();
  FieldReader reader(file);
  auto set = read_strategy_set<ColocationStrategy>(
      reader, *json, &*json, "", "nodeConfigs", ColocationStrategy{}, read_colocation_fields,
      check_colocation, InvalidNodeStrategy::kUseCluster);
  if (reader.failed()) return reader.error();
  return set;
}

NodeColocation resolve_colocation(const ColocationConfig& config, const kube::Node& node) {
  NodeColocation out;
  out.cluster_enabled = config.cluster.enable;
  auto index = config.match(node.metadata.labels);
  out.strategy = index ? config.nodes[*index].strategy : config.cluster;
  out.matched = index ? entry_name(config.nodes[*index].name, *index) : "clusterStrategy";

  auto ann = node.metadata.annotations.find(kube::kColocationStrategyAnnotation);
  if (ann != node.metadata.annotations.end()) {
    // An invalid annotation is ignored as a whole, as Koordinator does.
    FieldReader reader(std::string("annotation ") + kube::kColocationStrategyAnnotation);
    ColocationStrategy merged = out.strategy;
    auto json = parse_json(ann->second, reader.file());
    if (json && json->is_object()) {
      read_colocation_fields(reader, *json, "", merged);
      if (!reader.failed()) {
        out.strategy = merged;
        out.notes.push_back(std::string("merged annotation ") +
                            kube::kColocationStrategyAnnotation);
      } else {
        out.notes.push_back("ignored " + reader.error().message);
      }
    } else {
      out.notes.push_back(std::string("ignored unparsable annotation ") +
                          kube::kColocationStrategyAnnotation);
    }
  }
  if (auto p = reclaim_percent_from_label(node, kube::kCpuReclaimRatioLabel, out.notes)) {
    out.strategy.cpu_reclaim_threshold_percent = *p;
  }
  if (auto p = reclaim_percent_from_label(node, kube::kMemoryReclaimRatioLabel, out.notes)) {
    out.strategy.memory_reclaim_threshold_percent = *p;
  }
  out.enabled = out.cluster_enabled && out.strategy.enable;
  return out;
}

}  // namespace gleaner::agent::config
