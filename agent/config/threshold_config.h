#pragma once
// resource-threshold-config: when to suppress and evict BE pods (Koordinator's
// ResourceThresholdStrategy), as clusterStrategy + nodeStrategies[].

#include <cstdint>
#include <optional>
#include <string>

#include "agent/config/strategy_set.h"
#include "common/result.h"

namespace gleaner::agent::config {

enum class CpuSuppressPolicy { kCpuset, kCfsQuota };
const char* to_string(CpuSuppressPolicy policy);

// When the suppress ceiling applies (a Gleaner extension; koordlet always applies it).
// kOnInterference leaves BE unbounded, below LS in the kernel's CPU priority, until the
// interference rule sees an LS pod waiting for CPU, and then applies the ceiling until the
// rule's hold time has passed without a breach.
// kSlo leaves the threshold formula aside (or keeps it only as a hard ceiling) and steers
// BE's CPU allowance by each LS pod's run-queue wait against its target (docs/qos.md).
enum class CpuSuppressMode { kAlways, kOnInterference, kSlo };
const char* to_string(CpuSuppressMode mode);

struct ResourceThresholdStrategy {
  bool enable = false;
  int64_t cpu_suppress_threshold_percent = 65;
  std::optional<int64_t> cpu_suppress_min_percent;
  CpuSuppressPolicy cpu_suppress_policy = CpuSuppressPolicy::kCpuset;
  CpuSuppressMode cpu_suppress_mode = CpuSuppressMode::kAlways;
  // With the cpuset policy, the fewest CPUs BE keeps (a Gleaner extension; koordlet keeps
  // 2). 1 lets a 2-CPU node take a CPU from BE.
  int64_t cpu_suppress_min_cpus = 2;
  // cpuSuppressMode slo (Gleaner extensions): an LS pod's run-queue wait p99 target unless
  // its annotation sets its own, the least BE keeps (percent of the node), and whether the
  // threshold formula stays a hard ceiling over the allowance.
  // Just above one BE slice on the scheduler (about 3 ms measured on kernel 6.18): below it
  // BE is held at its floor whenever more than 1% of LS wake-ups meet a BE slice, which no
  // CPU weight avoids (docs/qos.md, "Feedback mode").
  int64_t cpu_slo_wait_target_micros = 4000;
  // The lowest target a pod's annotation may ask for; lower ones are raised to it (never
  // above cpu_slo_wait_target_micros: a pod may always ask for what every pod gets). Below
  // a BE slice every target holds BE at its floor whenever 1% of the pod's wake-ups meet
  // one; below 1 ms it cuts BE as well for waits shorter than any slice, which no cut
  // relieves: one tenant's "1ns" held BE at the floor node-wide for no LS gain (#61).
  int64_t cpu_slo_min_wait_target_micros = 1000;
  // A pod that states its latency objective (annotation) gets this share of it as its
  // run-queue wait target: the p99 delay BE may add to a wake-up, leaving the rest of the
  // objective to the service's own work (docs/qos.md, "Latency objectives").
  int64_t cpu_slo_objective_wait_percent = 25;
  int64_t cpu_slo_floor_percent = 10;
  bool cpu_slo_threshold_ceiling = false;
  int64_t memory_evict_threshold_percent = 70;
  // Evict down to this usage; when unset, consumers use threshold - 2 (koordlet's rule).
  std::optional<int64_t> memory_evict_lower_percent;
  std::optional<int64_t> cpu_evict_be_satisfaction_lower_percent;
  std::optional<int64_t> cpu_evict_be_satisfaction_upper_percent;
  int64_t cpu_evict_be_usage_threshold_percent = 90;
  std::optional<int64_t> cpu_evict_time_window_seconds;
};

using ResourceThresholdConfig = StrategySet<ResourceThresholdStrategy>;

Result<ResourceThresholdConfig> parse_threshold_config(std::string_view text,
                                                       const std::string& file);

}  // namespace gleaner::agent::config
