#pragma once
// What a pass reads from the kernel before it decides: the knobs each strategy looks at,
// over the cgroups of this snapshot. The edge reads exactly these into a KnobSnapshot once
// per pass; the strategies then take that value and read nothing themselves.

#include "agent/qos/cpu_suppress.h"
#include "agent/qos/qos_types.h"

namespace gleaner::agent::qos {

// A full pass's common part: the cgroup knobs of kubepods, its QoS dirs and every pod and
// container (each strategy declares what it reads beyond them).
KnobReads full_pass_reads(const QosInputs& in, const NodeFacts& ctx);

// The fast path: BE's quota and period; under the cpuset policy (or a CPU-count ceiling)
// also the CPU lists of kubepods and BE's pods and containers.
KnobReads suppress_reads(const NodeFacts& ctx, bool cpusets);

}  // namespace gleaner::agent::qos
