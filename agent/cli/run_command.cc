// `gleaner-agent run`: the node daemon.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>

#include "agent/bpf/interference.h"
#include "agent/cli/commands.h"
#include "agent/config/slo_config.h"
#include "agent/daemon/daemon.h"
#include "agent/daemon/pod_source.h"
#include "agent/metrics/node_sampler.h"
#include "agent/step/node_environment.h"
#include "common/cli_main.h"
#include "common/file_io.h"
#include "common/json_util.h"
#include "common/log.h"
#include "kube/config.h"
#include "kube/objects.h"
#include "net/listen_address.h"
#include "net/url.h"

namespace gleaner::agent {
namespace {

struct RunFlags {
  DaemonOptions daemon;
  int interval_ms = 1000;
  int fast_interval_ms = 50;
  std::string log_level = "info";
  std::string log_format = "text";
  bool check_config = false;
};

// --check-config: what the daemon would fail on at start-up, checked without starting
// anything (no servers, no cgroup writes, no kubelet or scheduler calls), so a
// DaemonSet's args can be validated offline. Returns every problem found, not only the first.
std::vector<std::string> check_config(const DaemonOptions& o) {
  const step::EnvironmentFlags flags{.cgroup_root = o.cgroup_root,
                                     .cgroup_version = o.cgroup_version,
                                     .cgroup_driver = o.cgroup_driver,
                                     .cgroup_parent = o.cgroup_parent};
  std::vector<std::string> errors = step::environment_flag_errors(flags);
  if (errors.empty()) {
    if (auto env = step::discover_environment(flags); !env) errors.push_back(env.error().message);
  }
  if (auto usage = NodeSampler(o.proc_root).sample(); !usage) {
    errors.push_back("--proc-root " + o.proc_root + ": " + usage.error().message);
  }
  if (!o.config_dir.empty()) {
    // A missing directory would load as all defaults; at check time it is a wrong path.
    if (!std::filesystem::is_directory(o.config_dir)) {
      errors.push_back("--config-dir " + o.config_dir + ": not a directory");
    } else {
      for (const auto& e : config::load_config_dir(o.config_dir, config::SloConfig{}).errors) {
        errors.push_back("--config-dir: " + e.error.message);
      }
    }
  }
  // What Daemon::create would refuse at start-up.
  if (auto i = bpf::parse_interference_config(o.interference_runq_p99_bound, o.interference_hold,
                                              o.interference_psi_bound);
      !i) {
    errors.push_back("--interference-*: " + i.error().message);
  }
  if (!o.metrics_addr.empty()) {
    if (auto a = net::parse_listen_address(o.metrics_addr, "--metrics-addr"); !a)
      errors.push_back(a.error().message);
  }
  if (!o.kubeconfig.empty() && o.kubeconfig != "in-cluster") {
    if (auto k = kube::load_kubeconfig(o.kubeconfig); !k)
      errors.push_back("--kubeconfig: " + k.error().message);
  }
  if (!o.pods_file.empty()) {
    if (auto pods = PodsFileSource(o.pods_file).fetch(); !pods) {
      errors.push_back("--pods-file: " + pods.error().message);
    }
  }
  if (!o.node_file.empty()) {
    auto text = read_file(o.node_file);
    auto json = text ? parse_json(*text, o.node_file) : Result<Json>(text.error());
    auto node = json ? kube::parse_node(*json) : Result<kube::Node>(json.error());
    if (!node) errors.push_back("--node-file " + o.node_file + ": " + node.error().message);
  }
  if (!o.scheduler_url.empty()) {
    if (auto url = net::parse_http_url(o.scheduler_url, "scheduler URL"); !url) {
      errors.push_back("--scheduler-url: " + url.error().message);
    }
  }
  if (!o.token_file.empty()) {
    if (auto token = read_file(o.token_file); !token) {
      errors.push_back("--token-file: " + token.error().message);
    }
  }
  auto check_ca = [&](const char* flag, const std::string& path) {
    if (auto ca = read_file(path); !ca) {
      errors.push_back(std::string(flag) + ": " + ca.error().message);
    } else if (ca->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      errors.push_back(std::string(flag) + ": " + path + " holds no PEM certificate");
    }
  };
  // kubelet over HTTPS with verification: its CA must be readable, or every pod list fails.
  if (!o.kubelet_host.empty() && o.pods_file.empty() && o.kubelet_https && !o.kubelet_insecure_tls)
    check_ca("--kubelet-ca-file", o.kubelet_ca_file);
  // A scheduler CA not there yet is waited for (a ConfigMap mounted optional: true that
  // the scheduler publishes); one that is there must be usable.
  if (!o.scheduler_ca_file.empty()) {
    if (std::filesystem::exists(o.scheduler_ca_file))
      check_ca("--scheduler-ca-file", o.scheduler_ca_file);
    if (o.scheduler_url.rfind("https://", 0) != 0)
      errors.emplace_back("--scheduler-ca-file: only used with an https:// --scheduler-url");
  }
  return errors;
}

int run_check_config(const RunFlags& flags) {
  auto errors = check_config(flags.daemon);
  // Loaded, but not all as written: said here as the daemon says it at start-up.
  if (!flags.daemon.config_dir.empty() && std::filesystem::is_directory(flags.daemon.config_dir)) {
    for (const auto& w :
         config::load_config_dir(flags.daemon.config_dir, config::SloConfig{}).warnings) {
      std::fprintf(stderr, "gleaner-agent run --check-config: warning: %s: %s\n", w.key.c_str(),
                   w.error.message.c_str());
    }
  }
  if (auto ok = init_logging(flags.log_level, flags.log_format); !ok) {
    errors.push_back("--log-level/--log-format: " + ok.error().message);
  }
  for (const auto& e : errors)
    std::fprintf(stderr, "gleaner-agent run --check-config: %s\n", e.c_str());
  if (!errors.empty()) return kExitUsage;
  std::printf("config OK\n");
  return 0;
}

int run(RunFlags& flags) {
  if (flags.check_config) return run_check_config(flags);
  if (auto ok = init_logging(flags.log_level, flags.log_format); !ok) {
    std::fprintf(stderr, "%s\n", ok.error().message.c_str());
    return kExitUsage;
  }
  flags.daemon.interval = std::chrono::milliseconds(flags.interval_ms);
  flags.daemon.fast_interval = std::chrono::milliseconds(flags.fast_interval_ms);
  boost::asio::io_context io;
  auto daemon = Daemon::create(io, flags.daemon);
  if (!daemon) {
    spdlog::error("cannot start: {}", daemon.error().describe());
    return 1;
  }
  spdlog::info("{}", (*daemon)->describe());
  boost::asio::signal_set stop_signals(io, SIGTERM, SIGINT);
  boost::asio::signal_set reload_signal(io, SIGHUP);
  // Once the daemon stops (signal, or --max-ticks) nothing else keeps io.run() busy.
  (*daemon)->set_on_stop([&] {
    stop_signals.cancel();
    reload_signal.cancel();
  });
  stop_signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    spdlog::info("signal {}: restoring cgroups and exiting", signo);
    (*daemon)->stop();
  });
  std::function<void()> wait_reload = [&] {
    reload_signal.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      spdlog::info("SIGHUP: reloading the ack-slo-config");
      (*daemon)->reload_config();
      wait_reload();
    });
  };
  wait_reload();
  (*daemon)->start();
  io.run();
  spdlog::info("gleaner-agent stopped");
  return 0;
}

}  // namespace

void register_run_command(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  auto& o = flags->daemon;
  o.state_dir = "/var/lib/gleaner";
  auto* cmd = app.add_subcommand("run", "Run the node agent (the DaemonSet's command)");
  auto env = [](CLI::Option* opt, const char* name) { return opt->envname(name); };
  env(cmd->add_option("--node-name", o.node_name, "this node's name (default: hostname)"),
      "NODE_NAME");
  env(cmd->add_option("--cluster", o.cluster, "cluster name put in reports")->capture_default_str(),
      "GLEANER_CLUSTER");
  env(cmd->add_option("--cgroup-root", o.cgroup_root, "cgroup filesystem root")
          ->capture_default_str(),
      "GLEANER_CGROUP_ROOT");
  cmd->add_option("--cgroup-version", o.cgroup_version, "override detection: v1, v2, hybrid")
      ->check(CLI::IsMember({"v1", "v2", "hybrid"}));
  cmd->add_option("--cgroup-driver", o.cgroup_driver, "override detection: systemd, cgroupfs")
      ->check(CLI::IsMember({"systemd", "cgroupfs"}));
  cmd->add_option("--cgroup-parent", o.cgroup_parent, "kubelet's --cgroup-root, if set");
  env(cmd->add_option("--proc-root", o.proc_root, "procfs root")->capture_default_str(),
      "GLEANER_PROC_ROOT");
  cmd->add_option("--resctrl-root", o.resctrl_root, "resctrl root")->capture_default_str();
  cmd->add_flag(
      "!--no-resctrl-mount", o.resctrl_mount,
      "do not mount resctrl at --resctrl-root when the CPU has RDT and it is not mounted");
  env(cmd->add_option("--config-dir", o.config_dir, "mounted ack-slo-config directory"),
      "GLEANER_CONFIG_DIR");
  cmd->add_option("--pods-file", o.pods_file, "PodList JSON file instead of kubelet");
  cmd->add_option("--node-file", o.node_file, "Node JSON file instead of the machine's own");
  env(cmd->add_option("--kubeconfig", o.kubeconfig,
                      "API server access for the Node object and evictions: a kubeconfig "
                      "path or \"in-cluster\" (empty: none)"),
      "GLEANER_KUBECONFIG");
  cmd->add_option("--kubelet-host", o.kubelet_host,
                  "kubelet address for /pods (empty: pods from the cgroup tree)");
  cmd->add_option("--kubelet-port", o.kubelet_port, "kubelet port")->capture_default_str();
  cmd->add_flag("!--kubelet-read-only", o.kubelet_https,
                "plain HTTP (the read-only port) instead of HTTPS");
  cmd->add_option("--kubelet-ca-file", o.kubelet_ca_file,
                  "PEM CA bundle that signed kubelet's serving certificate")
      ->capture_default_str();
  cmd->add_flag("--kubelet-insecure-tls", o.kubelet_insecure_tls,
                "do not verify kubelet's serving certificate (self-signed kubelet "
                "certificates; the token is then sent to whoever answers)");
  env(cmd->add_option("--metrics-addr", o.metrics_addr, "address for /metrics, /healthz, /readyz")
          ->capture_default_str(),
      "GLEANER_METRICS_ADDR");
  env(cmd->add_option("--scheduler-url", o.scheduler_url, "gleaner-scheduler report endpoint"),
      "GLEANER_SCHEDULER_URL");
  cmd->add_option("--token-file", o.token_file, "bearer token file for the scheduler");
  cmd->add_option("--scheduler-ca-file", o.scheduler_ca_file,
                  "PEM CA bundle to verify an https:// scheduler with (default: the system "
                  "trust store)");
  cmd->add_option("--interval", flags->interval_ms, "sampling interval in milliseconds")
      ->check(CLI::Range(50, 60000))
      ->capture_default_str();
  cmd->add_flag("--dry-run", o.dry_run, "log every decision, change nothing");
  env(cmd->add_option("--state-dir", o.state_dir,
                      "where original cgroup values are recorded before the first change "
                      "(a hostPath; empty: not recorded)")
          ->capture_default_str(),
      "GLEANER_STATE_DIR");
  cmd->add_option("--on-stop", o.on_stop,
                  "on SIGTERM: restore every value (restore), or leave them for the agent "
                  "replacing this one in a DaemonSet rolling update (auto)")
      ->check(CLI::IsMember({"auto", "restore"}))
      ->capture_default_str();
  env(cmd->add_option("--pod-name", o.pod_name, "this agent's Pod name (for --on-stop auto)"),
      "POD_NAME");
  env(cmd->add_option("--pod-namespace", o.pod_namespace,
                      "this agent's Pod namespace (for --on-stop auto)"),
      "POD_NAMESPACE");
  cmd->add_option("--fast-interval", flags->fast_interval_ms,
                  "fast CPU-suppress loop in milliseconds (0: off)")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  cmd->add_option("--sys-root", o.sys_root,
                  "directory holding sys/ (CPU topology, system-config's memcg_reaper)")
      ->capture_default_str();
  cmd->add_flag("!--no-enforce", o.enforce, "measure and report only; no QoS writes");
  cmd->add_flag("!--no-ebpf", o.ebpf, "do not load the eBPF run-queue latency probe");
  cmd->add_flag("!--no-ebpf-wakeups", o.ebpf_wakeups,
                "do not let the eBPF probe wake the fast path between ticks (an LS wait beyond "
                "the interference bound, LS demand beyond the last plan)");
  cmd->add_flag("!--no-node-metric", o.node_metric,
                "with --kubeconfig: do not keep the node's NodeMetric (slo.koordinator.sh) "
                "status, which koord-scheduler and koord-descheduler read");
  cmd->add_flag("--bpf-stats", o.bpf_stats, "enable kernel BPF run-time statistics");
  cmd->add_option("--interference-runq-p99-bound", o.interference_runq_p99_bound,
                  "LS run-queue latency p99 above which BE is tightened at once (e.g. 5ms)")
      ->capture_default_str();
  cmd->add_option("--interference-hold", o.interference_hold,
                  "how long LS latency must stay below the bound before BE may grow again")
      ->capture_default_str();
  cmd->add_option("--interference-psi-bound", o.interference_psi_bound,
                  "node cpu PSI some avg10 (percent) that also counts as interference");
  cmd->add_option("--max-ticks", o.max_ticks, "exit after this many sampling passes (0: never)");
  cmd->add_option("--log-level", flags->log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  cmd->add_option("--log-format", flags->log_format,
                  "text, or json (one object per line: time, level, msg)")
      ->capture_default_str();
  cmd->add_flag("--check-config", flags->check_config,
                "validate flags, cgroup root, config dir and input files; start nothing");
  cmd->callback([flags] { set_exit_code(run(*flags)); });
}
}  // namespace gleaner::agent
