#pragma once
// BE pod cgroups from batch resources, and cpu.idle on BE pod directories.
//
// For pods labelled koordinator.sh/qosClass=BE, at pod and container level:
//   cpu.shares = batch-cpu request * 1024 / 1000, 2 when none, clamped to 2..262144
//                (cpu.weight on v2 through the standard conversion, done by the executor);
//                not at pod level while the pod is idle (cpu.idle 1): the kernel fixes an
//                idle group's weight and refuses writes to it
//   cfs quota  = batch-cpu limit * period / 1000, -1 when a container has none; the pod
//                level stays -1 while cfsQuota suppression is active (the QoS-level quota
//                governs then, and a pod quota would only double-throttle)
//   memory limit = batch-memory limit, -1 when a container has none.

#include "agent/qos/qos_types.h"

namespace gleaner::agent::qos {

inline constexpr int64_t kMinShares = 2;
inline constexpr int64_t kMaxShares = 262144;

int64_t shares_from_milli(int64_t milli);

Plan plan_be_cgroups(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                     bool cfs_quota_suppress_active, bool pods_sched_idle,
                     const KnobSnapshot& knobs);

// Whether plan_cpu_idle makes BE pod directories idle under `qos`.
bool be_pods_sched_idle(const config::ResourceQoSStrategy& qos);

// cpu.idle=1 (or beClass.cpuQOS.schedIdle) on BE pods' pod directories where the kernel
// offers the file, when beClass.cpuQOS is enabled, and 0 when it is not (kubelet never sets
// it). Never on kubelet's QoS directories: kubelet writes their cpu.shares, which the
// kernel refuses for an idle group.
Plan plan_cpu_idle(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                   const config::ResourceQoSStrategy& qos, const KnobSnapshot& knobs);

}  // namespace gleaner::agent::qos
