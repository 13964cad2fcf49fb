#pragma once
// cpu-burst-config and system-config, as clusterStrategy + nodeStrategies[]
// (Koordinator's CPUBurstStrategy and SystemStrategy).

#include <cstdint>
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

struct SystemStrategy {
  int64_t min_free_kbytes_factor = 100;
  int64_t watermark_scale_factor = 150;
  int64_t memcg_reap_background = 0;
};

using CpuBurstConfig = StrategySet<CpuBurstStrategy>;
using SystemConfig = StrategySet<SystemStrategy>;

Result<CpuBurstConfig> parse_cpu_burst_config(std::string_view text, const std::string& file);
Result<SystemConfig> parse_system_config(std::string_view text, const std::string& file);

}  // namespace gleaner::agent::config
