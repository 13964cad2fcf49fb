#pragma once
// CPU burst (cpu-burst-config, policy cpuBurstOnly or auto), as koordlet sets it: an LS pod
// with a CPU limit may carry unused quota of earlier periods into a burst of
// cpuBurstPercent of its limit (v1 cpu.cfs_burst_us, v2 cpu.max.burst), per container and
// for the pod. Never above the cgroup's own quota: the kernel refuses a burst larger than
// the quota (koordlet's v2 bug, koordinator#2778), so 1000% of a limit is one period's
// quota. With the policy none (or cfsQuotaBurstOnly) the bursts go back to 0, kubelet's
// value. The quota scaling of cfsQuotaBurstOnly and auto is agent/qos/cfs_quota_burst.h; the
// burst is never above kubelet's quota for the limit, so that scaling can always go back.
//
// kubelet lowering a pod's quota (an in-place resize) below the burst set here is refused
// by the kernel until the next pass lowers the burst with the new limit; kubelet retries.

#include "agent/config/burst_system_config.h"
#include "agent/qos/qos_types.h"

namespace gleaner::agent::qos {

inline constexpr const char* kReasonCpuBurst = "cpu-burst";

Plan plan_cpu_burst(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                    const config::CpuBurstStrategy& burst, const KnobSnapshot& knobs);

}  // namespace gleaner::agent::qos
