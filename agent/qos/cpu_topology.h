#pragma once
// CPU topology as sysfs describes it (cpuN/topology/{core_id,physical_package_id,
// thread_siblings_list}, nodeN/cpulist; read by agent/edge/cpu_topology_reader.h), and the
// order in which the cpuset suppress policy hands CPUs to BE work.

#include <string>
#include <vector>

#include "common/result.h"

namespace gleaner::agent::qos {

struct CpuInfo {
  int cpu = 0;
  int core = 0;    // core_id (unique only within a package)
  int socket = 0;  // physical_package_id
  int node = 0;    // NUMA node, 0 when the kernel has no node directories
};

struct CpuTopology {
  std::vector<CpuInfo> cpus;  // sorted by cpu id
  [[nodiscard]] std::vector<int> ids() const;
};

// A topology without structure: every CPU its own core, one socket, one node. Used when
// no sysfs is available (the CPU list then comes from the cgroup tree).
CpuTopology flat_topology(const std::vector<int>& cpus);

// The order BE work receives CPUs, excluding `reserved`: whole cores (both hyperthreads)
// one at a time, round-robin over NUMA nodes (and over sockets within them). A BE set
// of k CPUs is always the first k of this order, so growing adds CPUs and shrinking
// removes them without moving the others, and the same k gives the same set on restart.
std::vector<int> be_cpu_order(const CpuTopology& topology, const std::vector<int>& reserved);

}  // namespace gleaner::agent::qos
