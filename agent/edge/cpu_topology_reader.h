#pragma once
// The node's CPU topology read from sysfs, under a configurable root so tests use fake trees.

#include <string>

#include "agent/qos/cpu_topology.h"
#include "common/result.h"

namespace gleaner::agent::edge {

// Reads <sys_root>/sys/devices/system/cpu/cpu*/topology and
// <sys_root>/sys/devices/system/node/node*/cpulist. Errors name the file.
Result<qos::CpuTopology> read_cpu_topology(const std::string& sys_root);

}  // namespace gleaner::agent::edge
