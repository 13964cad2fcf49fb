// `gleaner-agent plan`: what the QoS strategies would write and evict on this node, from
// a snapshot file, a config dir and the current cgroup (and resctrl) trees.
#include <iostream>
#include <memory>

#include "agent/cli/commands.h"
#include "agent/cli/plan_runner.h"
#include "common/cli_checks.h"

namespace gleaner::agent {

void register_plan_command(CLI::App& app) {
  auto opts = std::make_shared<step::PlanOptions>();
  auto* cmd = app.add_subcommand(
      "plan", "Print the cgroup/resctrl writes and evictions the QoS strategies would make");
  cmd->add_option("--snapshot", opts->snapshot, "Snapshot JSON (node, pods, metrics)")->required();
  cmd->add_option("--config-dir", opts->config_dir,
                  "ack-slo-config directory, one file per key (missing files: defaults)")
      ->required();
  cmd->add_option("--cgroup-root", opts->cgroup_root, "cgroup root (e.g. /sys/fs/cgroup)")
      ->required();
  cmd->add_option("--resctrl-root", opts->resctrl_root, "resctrl root (e.g. /sys/fs/resctrl)");
  cmd->add_option("--sys-root", opts->sys_root,
                  "root holding sys/devices/system/{cpu,node} for the CPU topology")
      ->capture_default_str();
  cmd->add_option("--proc-root", opts->proc_root,
                  "procfs root holding sys/vm (system-config's vm.min_free_kbytes and "
                  "vm.watermark_scale_factor)")
      ->capture_default_str();
  cmd->add_option("--cgroup-version", opts->cgroup_version,
                  "v1, v2 or hybrid (default: detected from the tree)");
  cmd->add_option("--metrics-interval", opts->metrics_interval_s,
                  "sampling interval in seconds; metrics older than 3 intervals are stale")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_flag("--apply", opts->apply, "make the writes (evictions are only reported)");
  cmd->add_option("--interference-runq-p99-bound", opts->interference_runq_p99_bound,
                  "as gleaner-agent run: an LS pod's run-queue p99 above this is interference")
      ->capture_default_str();
  cmd->add_option("--interference-hold", opts->interference_hold,
                  "as gleaner-agent run: how long the ceiling holds after interference")
      ->capture_default_str();
  cmd->add_option("--interference-psi-bound", opts->interference_psi_bound,
                  "as gleaner-agent run: node cpu PSI some avg10 (%) above this is interference");
  cmd->callback([opts] { set_exit_code(step::run_plan(*opts, std::cout, std::cerr)); });
}

}  // namespace gleaner::agent
