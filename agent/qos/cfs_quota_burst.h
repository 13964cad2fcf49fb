#pragma once
// CFS quota burst (cpu-burst-config policy cfsQuotaBurstOnly or auto), as koordlet scales
// it: an LS container with a CPU limit that was throttled since the last pass gets its CFS
// quota raised by 20%, up to cfsQuotaBurstPercent of its limit, while the node's share pool
// (the CPUs not held by LSE/LSR pods, used by everything but LSE/LSR/BE pods) is below
// sharePoolThresholdPercent busy; it goes back down by 20% a pass while the pool is at or
// above the threshold, and stays where it is in between (the cooling band, 90% of the
// threshold up to it, or an unknown pool). The pod's own quota moves by the same amount.
// With cfsQuotaBurstPeriodSeconds >= 0 a token bucket per container bounds how long it may
// run above its limit: running at or above the limit spends (usage% - 100) tokens a second,
// running below 60% of it saves (100 - usage%), the bucket holds
// periodSeconds * (percent - 100) either way, and an empty bucket scales the quota down.
//
// Where this differs from koordlet, on purpose: the bucket starts a quarter full (koordlet
// draws a random fill in [0, 0.5)), elapsed time counts in fractions of a second (koordlet
// truncates to whole seconds, so passes under a second never move the bucket), and with the
// policy off a quota is put back to its limit only where it stands above it (only scaling
// puts it there) rather than on every container. The quota never goes below the limit's
// (kubelet's value), so the CPU burst, capped at that, never blocks a scale-down.

#include <map>
#include <string>

#include "agent/qos/qos_types.h"

namespace gleaner::agent::qos {

inline constexpr const char* kReasonCfsQuotaBurst = "cfs-quota-burst";

enum class SharePool { kOverload, kCooling, kIdle, kUnknown };
const char* to_string(SharePool pool);

// The share pool's state from the snapshot's usage and the node's CPU capacity.
SharePool share_pool_state(const snapshot::NodeSnapshot& snap, int64_t threshold_percent);

// `memory`: each container's counters and bucket from the last pass, updated in place
// (containers gone are dropped). `hold`: stale metrics, nothing is scaled up.
Plan plan_cfs_quota_burst(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                          const config::CpuBurstStrategy& burst, const KnobSnapshot& knobs,
                          double now_s, bool hold, std::map<std::string, QuotaBurstMemory>& memory);
// Adds what plan_cfs_quota_burst reads beyond the cgroup knobs: the CPU counters of LS
// containers, only while the policy scales quotas.
void declare_quota_burst_reads(const snapshot::NodeSnapshot& snap,
                               const cgroup::KubeletLayout& layout,
                               const config::CpuBurstStrategy& burst, KnobReads& reads);

}  // namespace gleaner::agent::qos
