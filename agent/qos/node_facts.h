#pragma once
// The facts of a node that change slowly, handed to every QoS strategy with each pass
// (strategy.h, Pass::node): its CPU capacity and reservations, the system's usage, the
// kubepods and besteffort cgroups and the BE pods' directories, the CPU topology. Kept
// between full passes, so the fast path needs only node and non-BE CPU usage. Pure.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/qos/cpu_topology.h"
#include "agent/snapshot/node_snapshot.h"
#include "cgroup/layout.h"

namespace gleaner::agent::qos {

struct NodeFacts {
  int64_t capacity_milli = 0;
  int64_t node_reserved_milli = 0;  // max(capacity - allocatable, reservation annotation)
  int64_t system_usage_milli = 0;   // from the last full snapshot
  std::vector<int> reserved_cpus;   // reservation annotation reservedCPUs
  std::string kubepods_dir;
  std::string be_qos_dir;
  std::vector<std::string> be_dirs;  // BE pods' pod and container dirs
  std::optional<CpuTopology> topology;
};

// The facts of `snap` every strategy plans with.
NodeFacts node_facts(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                     std::optional<CpuTopology> topology);

}  // namespace gleaner::agent::qos
