#pragma once
// Memory QoS (resource-qos-config memoryQOS per class), where the kernel offers the files
// (cgroup v2, or v1 kernels with the memcg QoS extensions); silently nothing elsewhere.
//
// Per container, with request R (batch-memory for pods labelled BE) and limit L:
//   memory.min  = R * minLimitPercent / 100
//   memory.low  = R * lowLimitPercent / 100
//   memory.high = R + (L - R) * throttlingPercent / 100 when L is set and throttling > 0,
//                 else unlimited
// Container and pod level, where the kernel has the file: memory.oom.group (oomKillGroup),
// and the Alibaba Cloud Linux watermark and OOM priority files (wmarkRatio,
// wmarkScalePermill, wmarkMinAdj, priorityEnable, priority).
// Pod level: the sums (high unlimited when any container's is). QoS level (burstable,
// besteffort, and kubepods for all): the sums of min and low of the pods beneath, since
// the kernel caps a child's effective protection at its parent's.

#include "agent/qos/qos_types.h"

namespace gleaner::agent::qos {

const config::ResourceQoS* class_qos(const config::ResourceQoSStrategy& qos, states::QoSClass c);

Plan plan_memory_qos(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                     const config::ResourceQoSStrategy& qos, const KnobSnapshot& knobs);

}  // namespace gleaner::agent::qos
