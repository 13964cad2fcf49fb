#pragma once
// Resctrl QoS (resource-qos-config resctrlQOS per class): control groups LSR (LSE and LSR
// pods), LS and BE; per class an L3 way mask from catRangeStartPercent..EndPercent and an
// MBA value from mbaPercent, for every cache / MBA domain id the hardware reports (ids
// need not be contiguous); and every task of every container of a pod placed in its
// class's group. Nothing at all where resctrl is absent.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/qos/qos_types.h"

namespace gleaner::agent::qos {

inline constexpr const char* kGroupLSR = "LSR";
inline constexpr const char* kGroupLS = "LS";
inline constexpr const char* kGroupBE = "BE";

Plan plan_resctrl(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                  const config::ResourceQoSStrategy& qos, const KnobSnapshot& knobs);
// Adds what plan_resctrl reads: the groups' schemata and tasks and the threads of the
// containers of enabled classes, when any class enables resctrl.
void declare_resctrl_reads(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                           const config::ResourceQoSStrategy& qos, KnobReads& reads);

}  // namespace gleaner::agent::qos
