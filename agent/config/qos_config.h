#pragma once
// resource-qos-config: per-class CPU, memory and resctrl QoS (Koordinator's
// ResourceQOSStrategy) as clusterStrategy + nodeStrategies[]. Each class object
// (lsrClass, lsClass, beClass) is merged field by field, one level deep per QoS kind.

#include <cstdint>
#include <optional>
#include <string>

#include "agent/config/strategy_set.h"
#include "common/result.h"

namespace gleaner::agent::config {

struct CpuQoS {
  bool enable = false;
  int64_t group_identity = 0;         // -1..2 (bvt.warp_ns)
  std::optional<int64_t> sched_idle;  // 0 or 1
  bool core_expeller = false;
};

struct MemoryQoS {
  bool enable = false;
  int64_t min_limit_percent = 0;
  int64_t low_limit_percent = 0;
  int64_t throttling_percent = 0;
  int64_t wmark_ratio = 95;
  int64_t wmark_scale_permill = 20;
  int64_t wmark_min_adj = 0;  // -25..50
  int64_t priority_enable = 0;
  int64_t priority = 0;  // 0..12
  int64_t oom_kill_group = 0;
};

struct ResctrlQoS {
  bool enable = false;
  int64_t cat_range_start_percent = 0;
  int64_t cat_range_end_percent = 100;
  int64_t mba_percent = 100;
};

struct ResourceQoS {
  CpuQoS cpu;
  MemoryQoS memory;
  ResctrlQoS resctrl;
};

enum class CpuQoSPolicy { kGroupIdentity, kCoreSched };

struct ResourceQoSStrategy {
  CpuQoSPolicy cpu_policy = CpuQoSPolicy::kGroupIdentity;
  ResourceQoS lsr;
  ResourceQoS ls;
  ResourceQoS be;

  ResourceQoSStrategy();  // Koordinator's per-class defaults
};

using ResourceQoSConfig = StrategySet<ResourceQoSStrategy>;

Result<ResourceQoSConfig> parse_qos_config(std::string_view text, const std::string& file);

}  // namespace gleaner::agent::config
