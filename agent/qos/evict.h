#pragma once
// BE eviction when the node runs short: by memory usage, and by BE CPU satisfaction.
// Victims are pods labelled BE: lowest spec.priority first, then the largest user of the
// contended resource. Pods being deleted (deletionTimestamp set, or whose eviction the API
// server accepted and still listed) are not chosen again; what they hold counts as already
// released. A pod whose eviction is still unanswered is not chosen again either, but holds
// what it holds; one the API server refused (a PodDisruptionBudget, an overloaded server)
// is chosen again at a decision after its back-off (1 s, doubling, at most 10 s: kubelet's
// eviction manager retries every 10 s housekeeping interval).

#include <deque>
#include <map>
#include <optional>
#include <string>

#include "agent/qos/qos_types.h"

namespace gleaner::agent::qos {

// One full pass's BE CPU figures, kept for cpuEvictTimeWindowSeconds.
struct BeCpuSample {
  double at_s = 0;
  int64_t usage_milli = 0;
  int64_t limit_milli = 0;
};

// A pod whose eviction the API server refused (a PodDisruptionBudget's 429, a 5xx): how
// often in a row, and when it may be asked again.
struct EvictionRefusal {
  int refusals = 0;
  double retry_at_s = 0;
};

// The eviction strategy's memory across passes (cool-downs, evicted pods, the BE CPU window).
struct EvictionMemory {
  std::optional<double> last_memory_evict_s;
  std::optional<double> last_cpu_evict_s;
  // Pod key -> when the API server accepted its eviction: it is going, and what it holds
  // counts as released.
  std::map<std::string, double> evicted_at_s;
  // Pod key -> when its eviction was asked for, until the API server answers: not chosen
  // again meanwhile, and nothing counted as released yet.
  std::map<std::string, double> eviction_asked_s;
  std::map<std::string, EvictionRefusal> eviction_refused;  // pod key -> its back-off
  std::deque<BeCpuSample> be_cpu_history;                   // oldest first, earlier passes only
};

inline constexpr double kMemoryEvictCooldownS = 4;
inline constexpr double kCpuEvictCooldownS = 20;
inline constexpr double kEvictRetryMinS = 1;
inline constexpr double kEvictRetryMaxS = 10;

// When node memory usage >= threshold%, frees usage - capacity * lower% (lower defaults
// to threshold - 2).
Plan plan_memory_evict(const snapshot::NodeSnapshot& snap,
                       const config::ResourceThresholdStrategy& strategy,
                       const EvictionMemory& state, double now_s, bool stale);

// BE's real CPU limit in millicores as the current cgroup values set it: the besteffort
// quota when limited, else its cpuset size, else the node capacity.
int64_t be_cpu_real_limit(const std::string& be_qos_dir, int64_t capacity_milli,
                          const KnobSnapshot& knobs);

// When BE usage >= usageThreshold% of its real limit and limit / Σ batch-cpu requests <=
// lower%, frees batch-cpu requests worth requests * (upper% - satisfaction%).
// With cpuEvictTimeWindowSeconds set, usage and limit are the averages of this pass and the
// earlier passes in `state.be_cpu_history` within the window, and nothing is evicted until
// the history covers at least half the window: one starved sample is not a trend.
Plan plan_cpu_evict(const snapshot::NodeSnapshot& snap,
                    const config::ResourceThresholdStrategy& strategy, int64_t be_limit_milli,
                    const EvictionMemory& state, double now_s, bool stale);

// Σ CPU usage of the pods labelled BE, from the snapshot.
int64_t be_cpu_usage(const snapshot::NodeSnapshot& snap);

// Appends this pass's BE figures to the history and drops samples older than the window
// (all of them when no window is configured).
void record_be_cpu(EvictionMemory& state, const config::ResourceThresholdStrategy& strategy,
                   BeCpuSample sample);

// Records the evictions of `plan` in `state` (cool-downs, pods asked to leave) and drops
// pods that are gone from the snapshot.
void record_evictions(const Plan& plan, const snapshot::NodeSnapshot& snap, double now_s,
                      EvictionMemory& state);

// Records the API server's answer to the eviction of `pod`: accepted (the pod is going) or
// refused (asked again after the back-off).
void record_eviction_answer(const std::string& pod, bool accepted, double now_s,
                            EvictionMemory& state);

}  // namespace gleaner::agent::qos
