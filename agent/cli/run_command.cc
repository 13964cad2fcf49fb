// `gleaner-agent run`: the node daemon.
#include <csignal>
#include <cstdlib>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>

#include "agent/cli/commands.h"
#include "agent/daemon/daemon.h"
#include "common/log.h"

namespace gleaner::agent {
namespace {

struct RunFlags {
  DaemonOptions daemon;
  int interval_ms = 1000;
  std::string log_level = "info";
};

int run(RunFlags& flags) {
  if (auto ok = init_logging(flags.log_level); !ok) {
    std::fprintf(stderr, "%s\n", ok.error().message.c_str());
    return 2;
  }
  flags.daemon.interval = std::chrono::milliseconds(flags.interval_ms);
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
  env(cmd->add_option("--config-dir", o.config_dir, "mounted ack-slo-config directory"),
      "GLEANER_CONFIG_DIR");
  cmd->add_option("--pods-file", o.pods_file, "PodList JSON file instead of kubelet");
  cmd->add_option("--node-file", o.node_file, "Node JSON file instead of the machine's own");
  cmd->add_option("--kubelet-host", o.kubelet_host,
                  "kubelet address for /pods (empty: pods from the cgroup tree)");
  cmd->add_option("--kubelet-port", o.kubelet_port, "kubelet port")->capture_default_str();
  cmd->add_flag("!--kubelet-read-only", o.kubelet_https,
                "plain HTTP (the read-only port) instead of HTTPS");
  env(cmd->add_option("--metrics-addr", o.metrics_addr, "address for /metrics, /healthz, /readyz")
          ->capture_default_str(),
      "GLEANER_METRICS_ADDR");
  env(cmd->add_option("--scheduler-url", o.scheduler_url, "gleaner-scheduler report endpoint"),
      "GLEANER_SCHEDULER_URL");
  cmd->add_option("--token-file", o.token_file, "bearer token file for the scheduler");
  cmd->add_option("--interval", flags->interval_ms, "sampling interval in milliseconds")
      ->check(CLI::Range(50, 60000))
      ->capture_default_str();
  cmd->add_flag("--dry-run", o.dry_run, "log every decision, change nothing");
  cmd->add_option("--max-ticks", o.max_ticks, "exit after this many sampling passes (0: never)");
  cmd->add_option("--log-level", flags->log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  cmd->callback([flags] { set_exit_code(run(*flags)); });
}
}  // namespace gleaner::agent
