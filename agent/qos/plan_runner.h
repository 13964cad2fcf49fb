#pragma once
// `gleaner-agent plan`: loads a snapshot file and an ack-slo-config directory, reads the
// current values under the given roots, runs every enabled strategy once (QosEngine::run,
// the daemon's code) and prints the writes and evictions as in spec/node-snapshot.md.
// With `apply` the writes are made through the same executors the daemon uses.

#include <optional>
#include <ostream>
#include <string>

namespace gleaner::agent::qos {

struct PlanOptions {
  std::string snapshot;
  std::string config_dir;
  std::string cgroup_root;
  std::string resctrl_root;       // empty: no resctrl
  std::string sys_root = "/";     // sysfs topology under <sys_root>/sys/devices/system
  std::string cgroup_version;     // empty: detect; else v1 | v2 | hybrid
  double metrics_interval_s = 1;  // metrics older than 3 intervals are stale
  bool apply = false;
};

// Exit code: 0 done, 1 some write failed (with --apply), 2 bad input.
int run_plan(const PlanOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace gleaner::agent::qos
