#include "agent/config/burst_system_config.h"

#include <limits>
#include <string>
#include <vector>

#include "agent/config/strategy_set_reader.h"

namespace gleaner::agent::config {
namespace {

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

void read_burst(FieldReader& r, const Json& obj, const std::string& path, CpuBurstStrategy& out) {
  if (auto p =
          r.read_enum(obj, path, "policy", {"none", "cpuBurstOnly", "cfsQuotaBurstOnly", "auto"})) {
    out.policy = static_cast<CpuBurstPolicy>(*p);
  }
  r.read_int(obj, path, "cpuBurstPercent", out.cpu_burst_percent, 0, kMaxInt32);
  // A burst quota below 100% of the limit would throttle instead of burst.
  r.read_int(obj, path, "cfsQuotaBurstPercent", out.cfs_quota_burst_percent, 100, kMaxInt32);
  r.read_int(obj, path, "cfsQuotaBurstPeriodSeconds", out.cfs_quota_burst_period_seconds, -1,
             kMaxInt32);
  r.read_percent(obj, path, "sharePoolThresholdPercent", out.share_pool_threshold_percent);
}

void read_system(FieldReader& r, const Json& obj, const std::string& path, SystemStrategy& out) {
  r.read_int(obj, path, "minFreeKbytesFactor", out.min_free_kbytes_factor, 0, kMaxInt32);
  // The kernel accepts vm.watermark_scale_factor in 1..3000 (mm/page_alloc.c).
  r.read_int(obj, path, "watermarkScaleFactor", out.watermark_scale_factor, 1, 3000);
  r.read_int(obj, path, "memcgReapBackGround", out.memcg_reap_background, 0, 1);
}

// Values the kernel accepts but koordlet never writes (its validators), and so neither does
// the agent: said at load, where --check-config shows them.
void note_system(const SystemStrategy& s, const std::string& file, const std::string& where,
                 std::vector<std::string>& warnings) {
  if (s.watermark_scale_factor && (*s.watermark_scale_factor < kWatermarkScaleFactorMin ||
                                   *s.watermark_scale_factor > kWatermarkScaleFactorMax)) {
    warnings.push_back(file + ": " + where + ".watermarkScaleFactor " +
                       std::to_string(*s.watermark_scale_factor) + " is outside " +
                       std::to_string(kWatermarkScaleFactorMin) + ".." +
                       std::to_string(kWatermarkScaleFactorMax) +
                       " (koordlet's safe range): vm.watermark_scale_factor is left as it is");
  }
}

template <typename S, typename Read>
Result<StrategySet<S>> parse(std::string_view text, const std::string& file, Read read) {
  auto json = parse_json_object(text, file);
  if (!json) return json.error();
  FieldReader reader(file);
  const Json* cluster = reader.object(*json, "", "clusterStrategy");
  auto set = read_strategy_set<S>(reader, *json, cluster, "clusterStrategy", "nodeStrategies", S{},
                                  read, [](FieldReader&, const std::string&, const S&) {});
  if (reader.failed()) return reader.error();
  return set;
}

}  // namespace

const char* to_string(CpuBurstPolicy policy) {
  switch (policy) {
    case CpuBurstPolicy::kNone:
      return "none";
    case CpuBurstPolicy::kCpuBurstOnly:
      return "cpuBurstOnly";
    case CpuBurstPolicy::kCfsQuotaBurstOnly:
      return "cfsQuotaBurstOnly";
    case CpuBurstPolicy::kAuto:
      return "auto";
  }
  return "none";
}

Result<CpuBurstConfig> parse_cpu_burst_config(std::string_view text, const std::string& file) {
  return parse<CpuBurstStrategy>(text, file, read_burst);
}

Result<SystemConfig> parse_system_config(std::string_view text, const std::string& file) {
  auto set = parse<SystemStrategy>(text, file, read_system);
  if (!set) return set;
  note_system(set->cluster, file, "clusterStrategy", set->warnings);
  for (size_t i = 0; i < set->nodes.size(); ++i) {
    if (set->nodes[i].strategy.watermark_scale_factor == set->cluster.watermark_scale_factor) {
      continue;  // inherited: said once, for the cluster
    }
    note_system(set->nodes[i].strategy, file, "nodeStrategies[" + std::to_string(i) + "]",
                set->warnings);
  }
  return set;
}

}  // namespace gleaner::agent::config
