#pragma once
// BE CPU suppression (resource-threshold-config): how much CPU best-effort work may use
// right now, enforced either as a CFS quota on the besteffort QoS cgroup or as a cpuset.
//
//   suppress = capacity * threshold% - usage of non-BE pods - max(system usage, nodeReserved)
//   floored at capacity * minPercent% when set, else at 0 (all in millicores).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/qos/node_facts.h"
#include "agent/qos/qos_types.h"

namespace gleaner::agent::qos {

inline constexpr int64_t kMinSuppressQuotaUs = 2000;
inline constexpr int kMinSuppressCpus = 2;  // cpuSuppressMinCPUs' default (koordlet's)

// Σ usage of the pods that are not BE (labelled BE or kube BestEffort), millicores.
int64_t non_be_cpu_usage(const snapshot::NodeSnapshot& snap);

struct SuppressTerms {
  int64_t threshold_milli = 0;
  int64_t non_be_milli = 0;
  int64_t system_used_milli = 0;  // max(system usage, nodeReserved)
  int64_t floor_milli = 0;
  int64_t suppress_milli = 0;
};
SuppressTerms suppress_terms(const NodeFacts& ctx,
                             const config::ResourceThresholdStrategy& strategy,
                             int64_t non_be_milli, int64_t system_usage_milli);

// Whether the suppress ceiling is in force: the strategy is enabled, and either its mode
// is `always` or `slo` (whose ceiling is the feedback allowance), or the interference rule
// holds it armed.
bool suppress_ceiling_applies(const config::ResourceThresholdStrategy& strategy, bool armed);

// The writes that enforce `strategy` given current values; only changes are returned
// (plus values the executor will find equal and drop). `stale`: never grow BE. `armed`:
// see suppress_ceiling_applies; a disarmed ceiling gives BE back what kubelet gave it.
// `full_pass`: false on the 50 ms fast path, where the cfsQuota policy plans the quota alone
// (two reads of the besteffort cgroup): giving BE's pods back their full CPU lists after a
// switch from the cpuset policy walks every BE pod and container, and is left to the full
// pass.
Plan plan_cpu_suppress(const NodeFacts& ctx, const config::ResourceThresholdStrategy& strategy,
                       int64_t non_be_milli, int64_t system_usage_milli, const KnobSnapshot& knobs,
                       bool stale, bool armed = true, bool full_pass = true);

// Enforces `allowance_milli` for BE in the strategy's policy (the part of
// plan_cpu_suppress after the formula; cpuSuppressMode slo gives its own allowance).
Plan plan_be_allowance(const NodeFacts& ctx, const config::ResourceThresholdStrategy& strategy,
                       int64_t allowance_milli, const KnobSnapshot& knobs, bool stale,
                       bool full_pass = true);

// The cfsQuota decision alone, exposed for tests: the quota to write, or nullopt to keep
// `current` (-1: unlimited).
std::optional<int64_t> next_quota(int64_t suppress_milli, int64_t capacity_milli, int64_t period_us,
                                  int64_t current, bool stale);
// The cpuset decision alone: how many CPUs BE gets, from `current_count` and the number
// of CPUs BE may use at all, keeping at least `min_cpus` (or all of them when fewer).
int next_cpu_count(int64_t suppress_milli, int current_count, int available, bool stale,
                   int min_cpus = kMinSuppressCpus);

// An outside ceiling on the BE cpuset (the interference rule's): BE keeps at most
// `max_cpus` of the `available` CPUs, never fewer than `min_cpus` (or all of them when
// there are fewer), and never more than `count`, what it would get otherwise.
int capped_cpu_count(int count, int max_cpus, int available, int min_cpus = kMinSuppressCpus);

// Applies that ceiling to a cpuset-policy plan, in the policy's CPU order: BE cpuset writes
// above it are replaced, and writes are added when BE holds more CPUs now and the plan did
// not change them. `reason` labels the writes.
void cap_be_cpuset(Plan& plan, const NodeFacts& ctx, const KnobSnapshot& knobs, int max_cpus,
                   const std::string& reason, int min_cpus = kMinSuppressCpus);

}  // namespace gleaner::agent::qos
