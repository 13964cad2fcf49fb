#pragma once
// The node as every entry point of the agent finds it (`run`, `run --check-config`,
// `plan`, `report`): the cgroup hierarchy's version, kubelet's cgroup driver, RDT
// (resctrl) and the CPU topology, found in one place so that all four agree on one node
// and name a bad flag the same way.

#include <optional>
#include <string>
#include <vector>

#include "agent/qos/cpu_topology.h"
#include "cgroup/layout.h"
#include "cgroup/version.h"
#include "common/result.h"
#include "resctrl/resctrl_fs.h"

namespace gleaner::agent::edge {

// The flags that say where to look, as `run` takes them.
struct EnvironmentFlags {
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string cgroup_version;  // --cgroup-version: empty = detect; else v1 | v2 | hybrid
  std::string cgroup_driver;   // --cgroup-driver: empty = find kubepods; else systemd | cgroupfs
  std::string cgroup_parent;   // --cgroup-parent: kubelet's cgroup root, if not the default
  std::string resctrl_root;    // empty: RDT is not looked for
  std::string sys_root;        // sysfs under <sys_root>/sys; empty: no CPU topology
};

struct NodeEnvironment {
  cgroup::CgroupVersion version = cgroup::CgroupVersion::kV1;
  std::string cpu_root;  // the cpu controller's root, where kubepods is looked for
  // Kubelet's driver, forced or found from kubepods. Empty, with `driver_problem`, on a
  // node where kubelet has not created kubepods yet: each entry point decides what that
  // means (`run` assumes cgroupfs until it appears, `plan` refuses).
  std::optional<cgroup::CgroupDriver> driver;
  std::string driver_problem;
  std::optional<resctrl::Capability> resctrl;  // mounted: what it offers (L3 CAT, MBA)
  std::optional<qos::CpuTopology> topology;
  std::string topology_problem;
};

// Every flag value that cannot be used, each named by its flag ("--cgroup-driver: ..."):
// what `run --check-config` lists and what every entry point refuses.
std::vector<std::string> environment_flag_errors(const EnvironmentFlags& flags);

// RDT as mounted at `resctrl_root` (empty: not looked for): what it offers, nullopt when
// nothing is mounted there. Independent of the cgroup hierarchy, so `report` can tell it
// on a node whose cgroup root it does not recognise.
std::optional<resctrl::Capability> discover_resctrl(const std::string& resctrl_root);

// The node; an error names the first bad flag, or the cgroup root whose hierarchy cannot
// be recognised ("--cgroup-root /x: ...").
Result<NodeEnvironment> discover_environment(const EnvironmentFlags& flags);

}  // namespace gleaner::agent::edge
