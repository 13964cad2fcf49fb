// The flags of `gleaner-agent run`. What one flag alone allows is checked here, by CLI11
// as the command line is parsed (a refused value exits 2 naming the flag, before anything
// starts, for `run` and --check-config alike); what depends on several flags, the node or
// the files they name is validate() (run_validate.cc).
#include "agent/cli/run_flags.h"

#include "common/cli_checks.h"

namespace gleaner::agent {

void add_run_flags(CLI::App& cmd, RunFlags& flags) {
  auto& o = flags.daemon;
  auto env = [](CLI::Option* opt, const char* name) { return opt->envname(name); };
  env(cmd.add_option("--node-name", o.node_name, "this node's name (default: hostname)"),
      "NODE_NAME");
  env(cmd.add_option("--cluster", o.cluster, "cluster name put in reports")->capture_default_str(),
      "GLEANER_CLUSTER");
  env(cmd.add_option("--cgroup-root", o.cgroup_root, "cgroup filesystem root")
          ->capture_default_str(),
      "GLEANER_CGROUP_ROOT");
  cmd.add_option("--cgroup-version", o.cgroup_version, "override detection: v1, v2, hybrid")
      ->check(CLI::IsMember({"v1", "v2", "hybrid"}));
  cmd.add_option("--cgroup-driver", o.cgroup_driver, "override detection: systemd, cgroupfs")
      ->check(CLI::IsMember({"systemd", "cgroupfs"}));
  cmd.add_option("--cgroup-parent", o.cgroup_parent, "kubelet's --cgroup-root, if set");
  env(cmd.add_option("--proc-root", o.proc_root, "procfs root")->capture_default_str(),
      "GLEANER_PROC_ROOT");
  cmd.add_option("--resctrl-root", o.resctrl_root, "resctrl root")->capture_default_str();
  cmd.add_flag("!--no-resctrl-mount", o.resctrl_mount,
               "do not mount resctrl at --resctrl-root when the CPU has RDT and it is not mounted");
  env(cmd.add_option("--config-dir", o.config_dir, "mounted ack-slo-config directory"),
      "GLEANER_CONFIG_DIR");
  cmd.add_option("--pods-file", o.pods_file, "PodList JSON file instead of kubelet");
  cmd.add_option("--node-file", o.node_file, "Node JSON file instead of the machine's own");
  env(cmd.add_option("--kubeconfig", o.kubeconfig,
                     "API server access for the Node object and evictions: a kubeconfig "
                     "path or \"in-cluster\" (empty: none)"),
      "GLEANER_KUBECONFIG");
  cmd.add_option("--kubelet-host", o.kubelet_host,
                 "kubelet address for /pods (empty: pods from the cgroup tree)");
  cmd.add_option("--kubelet-port", o.kubelet_port, "kubelet port")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  cmd.add_flag("!--kubelet-read-only", o.kubelet_https,
               "plain HTTP (the read-only port) instead of HTTPS");
  cmd.add_option("--kubelet-ca-file", o.kubelet_ca_file,
                 "PEM CA bundle that signed kubelet's serving certificate")
      ->capture_default_str();
  cmd.add_flag("--kubelet-insecure-tls", o.kubelet_insecure_tls,
               "do not verify kubelet's serving certificate (self-signed kubelet "
               "certificates; the token is then sent to whoever answers)");
  env(cmd.add_option("--metrics-addr", o.metrics_addr, "address for /metrics, /healthz, /readyz")
          ->capture_default_str(),
      "GLEANER_METRICS_ADDR");
  env(cmd.add_option("--scheduler-url", o.scheduler_url, "gleaner-scheduler report endpoint"),
      "GLEANER_SCHEDULER_URL");
  cmd.add_option("--token-file", o.token_file, "bearer token file for the scheduler");
  cmd.add_option("--scheduler-ca-file", o.scheduler_ca_file,
                 "PEM CA bundle to verify an https:// scheduler with (default: the system "
                 "trust store)");
  cmd.add_option("--interval", flags.interval_ms, "sampling interval in milliseconds")
      ->check(CLI::Range(50, 60000))
      ->capture_default_str();
  cmd.add_flag("--dry-run", o.dry_run, "log every decision, change nothing");
  env(cmd.add_option("--state-dir", o.state_dir,
                     "where original cgroup values are recorded before the first change "
                     "(a hostPath; empty: not recorded)")
          ->capture_default_str(),
      "GLEANER_STATE_DIR");
  cmd.add_option("--on-stop", o.on_stop,
                 "on SIGTERM: restore every value (restore), or leave them for the agent "
                 "replacing this one in a DaemonSet rolling update (auto)")
      ->check(CLI::IsMember({"auto", "restore"}))
      ->capture_default_str();
  env(cmd.add_option("--pod-name", o.pod_name, "this agent's Pod name (for --on-stop auto)"),
      "POD_NAME");
  env(cmd.add_option("--pod-namespace", o.pod_namespace,
                     "this agent's Pod namespace (for --on-stop auto)"),
      "POD_NAMESPACE");
  cmd.add_option("--fast-interval", flags.fast_interval_ms,
                 "fast CPU-suppress loop in milliseconds (0: off)")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  cmd.add_option("--sys-root", o.sys_root,
                 "directory holding sys/ (CPU topology, system-config's memcg_reaper)")
      ->capture_default_str();
  cmd.add_flag("!--no-enforce", o.enforce, "measure and report only; no QoS writes");
  cmd.add_flag("!--no-ebpf", o.ebpf, "do not load the eBPF run-queue latency probe");
  cmd.add_flag("!--no-ebpf-wakeups", o.ebpf_wakeups,
               "do not let the eBPF probe wake the fast path between ticks (an LS wait beyond "
               "the interference bound, LS demand beyond the last plan)");
  cmd.add_flag("!--no-node-metric", o.node_metric,
               "with --kubeconfig: do not keep the node's NodeMetric (slo.koordinator.sh) "
               "status, which koord-scheduler and koord-descheduler read");
  cmd.add_flag("--bpf-stats", o.bpf_stats, "enable kernel BPF run-time statistics");
  cmd.add_option("--interference-runq-p99-bound", o.interference_runq_p99_bound,
                 "LS run-queue latency p99 above which BE is tightened at once (e.g. 5ms)")
      ->capture_default_str();
  cmd.add_option("--interference-hold", o.interference_hold,
                 "how long LS latency must stay below the bound before BE may grow again")
      ->capture_default_str();
  cmd.add_option("--interference-psi-bound", o.interference_psi_bound,
                 "node cpu PSI some avg10 (percent) that also counts as interference");
  cmd.add_option("--max-ticks", o.max_ticks, "exit after this many sampling passes (0: never)")
      ->check(kNonNegative);
  cmd.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error, critical, off")
      ->check(kLogLevel)
      ->capture_default_str();
  cmd.add_option("--log-format", flags.log_format,
                 "text, or json (one object per line: time, level, msg)")
      ->check(kLogFormat)
      ->capture_default_str();
  cmd.add_flag("--check-config", flags.check_config,
               "validate the flags, the cgroup and proc roots, the config dir and the input files, "
               "print \"config OK\" (exit 0) or every error (exit 2); start nothing");
}

}  // namespace gleaner::agent
