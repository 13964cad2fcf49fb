#pragma once
// Time in flight: the on-CPU time of accounted tasks that are running right now, which the
// BPF program only adds to a cgroup's counters when they switch out. The reader adds it
// from the per-CPU `running` slots. Pure; no libbpf.
//
// The counters and the slots are two reads, not one snapshot. A task that switches out
// and back in between them has its slice added to counters already read, and comes back
// with a new arrival: that slice is missing from this reading (it shows up in the next
// one). For a task that rarely switches (a lone spinner) the slice can be most of a
// sampling interval, so the reader brackets the counters with two reads of the slots and
// reads again when an accounted task's slot changed in between.

#include <cstdint>
#include <vector>

#include "agent/bpf/sched_probe_abi.h"

namespace gleaner::agent::bpf {

// Whether no CPU changed its accounted task between two reads of the slots: same task,
// same arrival, wherever either read shows an accounted task (index != 0). Switches among
// tasks that are not accounted do not touch the counters and do not count.
bool accounted_tasks_unchanged(const std::vector<gleaner_cpu_slot>& before,
                               const std::vector<gleaner_cpu_slot>& after);

}  // namespace gleaner::agent::bpf
