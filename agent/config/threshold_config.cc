#include "agent/config/threshold_config.h"

#include <limits>
#include <string>

#include "agent/config/strategy_set_reader.h"

namespace gleaner::agent::config {
namespace {

void read_threshold_fields(FieldReader& r, const Json& obj, const std::string& path,
                           ResourceThresholdStrategy& out) {
  r.read_bool(obj, path, "enable", out.enable);
  r.read_percent(obj, path, "cpuSuppressThresholdPercent", out.cpu_suppress_threshold_percent);
  r.read_percent(obj, path, "cpuSuppressMinPercent", out.cpu_suppress_min_percent);
  if (auto p = r.read_enum(obj, path, "cpuSuppressPolicy", {"cpuset", "cfsQuota"})) {
    out.cpu_suppress_policy = static_cast<CpuSuppressPolicy>(*p);
  }
  if (auto m = r.read_enum(obj, path, "cpuSuppressMode", {"always", "onInterference", "slo"})) {
    out.cpu_suppress_mode = static_cast<CpuSuppressMode>(*m);
  }
  r.read_int(obj, path, "cpuSuppressMinCPUs", out.cpu_suppress_min_cpus, 1, 4096);
  r.read_int(obj, path, "cpuSloWaitTargetMicros", out.cpu_slo_wait_target_micros, 1, 1000000);
  r.read_int(obj, path, "cpuSloMinWaitTargetMicros", out.cpu_slo_min_wait_target_micros, 1,
             1000000);
  r.read_int(obj, path, "cpuSloObjectiveWaitPercent", out.cpu_slo_objective_wait_percent, 1, 100);
  r.read_percent(obj, path, "cpuSloFloorPercent", out.cpu_slo_floor_percent);
  r.read_bool(obj, path, "cpuSloThresholdCeiling", out.cpu_slo_threshold_ceiling);
  r.read_percent(obj, path, "memoryEvictThresholdPercent", out.memory_evict_threshold_percent);
  r.read_percent(obj, path, "memoryEvictLowerPercent", out.memory_evict_lower_percent);
  r.read_percent(obj, path, "cpuEvictBESatisfactionLowerPercent",
                 out.cpu_evict_be_satisfaction_lower_percent);
  r.read_percent(obj, path, "cpuEvictBESatisfactionUpperPercent",
                 out.cpu_evict_be_satisfaction_upper_percent);
  r.read_percent(obj, path, "cpuEvictBEUsageThresholdPercent",
                 out.cpu_evict_be_usage_threshold_percent);
  r.read_int(obj, path, "cpuEvictTimeWindowSeconds", out.cpu_evict_time_window_seconds, 1,
             std::numeric_limits<int32_t>::max());
}

// Cross-field rules, checked on the resolved (merged) strategy so that a node strategy
// cannot produce an inverted pair by overriding only one side.
void check_threshold(FieldReader& r, const std::string& path, const ResourceThresholdStrategy& s) {
  if (s.memory_evict_lower_percent &&
      *s.memory_evict_lower_percent >= s.memory_evict_threshold_percent) {
    r.fail(FieldReader::join(path, "memoryEvictLowerPercent"),
           std::to_string(*s.memory_evict_lower_percent) +
               " must be below memoryEvictThresholdPercent " +
               std::to_string(s.memory_evict_threshold_percent),
           ErrorCode::kInvalidArgument);
  }
  if (s.cpu_evict_be_satisfaction_lower_percent && s.cpu_evict_be_satisfaction_upper_percent &&
      *s.cpu_evict_be_satisfaction_lower_percent >= *s.cpu_evict_be_satisfaction_upper_percent) {
    r.fail(FieldReader::join(path, "cpuEvictBESatisfactionLowerPercent"),
           std::to_string(*s.cpu_evict_be_satisfaction_lower_percent) +
               " must be below cpuEvictBESatisfactionUpperPercent " +
               std::to_string(*s.cpu_evict_be_satisfaction_upper_percent),
           ErrorCode::kInvalidArgument);
  }
  if (s.cpu_suppress_min_percent &&
      *s.cpu_suppress_min_percent > s.cpu_suppress_threshold_percent) {
    r.fail(FieldReader::join(path, "cpuSuppressMinPercent"),
           std::to_string(*s.cpu_suppress_min_percent) +
               " must not exceed cpuSuppressThresholdPercent " +
               std::to_string(s.cpu_suppress_threshold_percent),
           ErrorCode::kInvalidArgument);
  }
}

}  // namespace

const char* to_string(CpuSuppressPolicy policy) {
  return policy == CpuSuppressPolicy::kCpuset ? "cpuset" : "cfsQuota";
}

const char* to_string(CpuSuppressMode mode) {
  switch (mode) {
    case CpuSuppressMode::kOnInterference:
      return "onInterference";
    case CpuSuppressMode::kSlo:
      return "slo";
    case CpuSuppressMode::kAlways:
      break;
  }
  return "always";
}

Result<ResourceThresholdConfig> parse_threshold_config(std::string_view text,
                                                       const std::string& file) {
  auto json = parse_json_object(text, file);
  if (!json) return json.error();
  FieldReader reader(file);
  const Json* cluster = reader.object(*json, "", "clusterStrategy");
  auto set = read_strategy_set<ResourceThresholdStrategy>(
      reader, *json, cluster, "clusterStrategy", "nodeStrategies", ResourceThresholdStrategy{},
      read_threshold_fields, check_threshold);
  if (reader.failed()) return reader.error();
  return set;
}

}  // namespace gleaner::agent::config
