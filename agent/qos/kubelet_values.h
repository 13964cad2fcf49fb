#pragma once
// The values kubelet itself gives the cgroups the agent changes, for when the record of
// the values the agent found (agent/daemon/state_record.h) is lost: the values found now
// may then be an earlier agent's suppression, and restoring them would keep BE suppressed
// after the agent is gone. Pure: the pods and the layout in, a logical value out.
//
// Where kubelet's value comes from (kubernetes/kubernetes):
// - QoS level, pkg/kubelet/cm/qos_container_manager_linux.go (Start, setCPUCgroupConfig):
//   besteffort cpu.shares 2 (MinShares); burstable cpu.shares MilliCPUToShares(sum of the
//   burstable pods' cpu requests); no CFS quota at either (-1), no memory limit unless the
//   QOSReserved feature gate reserves memory (off by default: -1).
// - Pod level, pkg/kubelet/cm/helpers_linux.go (ResourceConfigForPod, MilliCPUToShares,
//   MilliCPUToQuota): shares from the pod's cpu requests (2 for BestEffort), a quota from
//   its cpu limits when every container declares one (Guaranteed always), a memory limit
//   likewise.
// - Container level, pkg/kubelet/kuberuntime/kuberuntime_container_linux.go
//   (calculateLinuxResources): the same conversions over the container's own
//   request and limit; a request left out but a limit given counts as the limit (as the
//   API server's defaulting makes it).
// Knobs kubelet never sets (cpu.idle, CFS burst, memory.min/low/high without the alpha
// MemoryQoS gate, memory.oom.group, the Anolis memcg extensions) get the kernel's default,
// which is also the loosest value; cpu.cfs_period_us gets kubelet's 100 ms. A cpuset is
// not derivable (kubelet's static CPU manager writes container cpusets from its own
// state, cpu_manager.go reconcileState, and puts them back itself): it gets every CPU
// kubepods has, the loosest safe value.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cgroup/layout.h"
#include "cgroup/resource.h"
#include "kube/objects.h"

namespace gleaner::agent::qos {

struct KubeletScene {
  const cgroup::KubeletLayout& layout;
  const std::vector<kube::Pod>& pods;
  std::string kubepods_cpus;  // kubepods' CPUs in force; "" when unknown
};

// kubelet's logical value of `resource` in `cgroup` (as cgroup/resource.h spells values),
// or nullopt where it is not known: kubepods itself (node allocatable, which the agent
// does not change), a pod or container not in `pods`, a cpuset when kubepods' is unknown.
std::optional<std::string> kubelet_value(cgroup::Resource resource, std::string_view cgroup,
                                         const KubeletScene& scene);

}  // namespace gleaner::agent::qos
