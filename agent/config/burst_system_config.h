#pragma once
// cpu-burst-config and system-config, as clusterStrategy + nodeStrategies[]
// (Koordinator's CPUBurstStrategy and SystemStrategy).

#include <cstdint>
#include <optional>
#include <string>

#include "agent/config/strategy_set.h"
#include "common/result.h"

namespace gleaner::agent::config {

enum class CpuBurstPolicy { kNone, kCpuBurstOnly, kCfsQuotaBurstOnly, kAuto };
const char* to_string(CpuBurstPolicy policy);

struct CpuBurstStrategy {
  CpuBurstPolicy policy = CpuBurstPolicy::kNone;
  int64_t cpu_burst_percent = 1000;
  int64_t cfs_quota_burst_percent = 300;
  int64_t cfs_quota_burst_period_seconds = -1;  // -1: unlimited
  int64_t share_pool_threshold_percent = 50;
};

// koordlet's safe ranges (its validators): values outside are not written.
inline constexpr int64_t kWatermarkScaleFactorMin = 10;
inline constexpr int64_t kWatermarkScaleFactorMax = 400;
inline constexpr int64_t kMinFreeKbytesMin = 10 * 1024;         // 10 MiB
inline constexpr int64_t kMinFreeKbytesMax = 10 * 1024 * 1024;  // 10 GiB

// Each knob is left as the node has it unless the ConfigMap sets it (Koordinator's
// default SystemStrategy sets none of them).
struct SystemStrategy {
  std::optional<int64_t> min_free_kbytes_factor;  // vm.min_free_kbytes = MemTotal * f / 10000
  std::optional<int64_t> watermark_scale_factor;  // vm.watermark_scale_factor
  std::optional<int64_t> memcg_reap_background;   // Alibaba Cloud Linux memcg_reaper, 0/1
};

using CpuBurstConfig = StrategySet<CpuBurstStrategy>;
using SystemConfig = StrategySet<SystemStrategy>;

Result<CpuBurstConfig> parse_cpu_burst_config(std::string_view text, const std::string& file);
Result<SystemConfig> parse_system_config(std::string_view text, const std::string& file);

}  // namespace gleaner::agent::config
