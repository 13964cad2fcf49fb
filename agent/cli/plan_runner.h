#pragma once
// `gleaner-agent plan`: loads a snapshot file (with the probe's readings and the agent's
// memory when it carries them) and an ack-slo-config directory, reads the current values
// under the given roots, runs the daemon's own step once (AgentStep::tick) and prints the
// writes, as the daemon's executor would order and fit them, and the evictions; then each
// fast pass the snapshot records after that tick (AgentStep::fast) and its writes.
// With `apply` the writes are made through the same executors the daemon uses, in order.

#include <optional>
#include <ostream>
#include <string>

namespace gleaner::agent::step {

struct PlanOptions {
  std::string snapshot;
  std::string config_dir;
  std::string cgroup_root;
  std::string resctrl_root;         // empty: no resctrl
  std::string sys_root = "/";       // sysfs topology under <sys_root>/sys/devices/system
  std::string proc_root = "/proc";  // system-config knobs under <proc_root>/sys/vm
  std::string cgroup_version;       // empty: detect; else v1 | v2 | hybrid
  double metrics_interval_s = 1;    // metrics older than 3 intervals are stale
  bool apply = false;
  // The daemon's interference flags (--interference-*), as `run` takes them.
  std::string interference_runq_p99_bound = "5ms";
  std::string interference_hold = "30s";
  std::string interference_psi_bound;
};

// Exit code: 0 done, 1 some write failed (with --apply), 2 bad input.
int run_plan(const PlanOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace gleaner::agent::step
