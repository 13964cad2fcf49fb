// `gleaner-agent run`: the node daemon. The flags (run_flags.cc) and the configuration
// (validate(), run_validate.cc) are checked before anything is made; this file is the
// composition root: the daemon, its signals, the event loop.
#include <csignal>
#include <cstdio>
#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>

#include "agent/bpf/sched_probe.h"
#include "agent/cli/commands.h"
#include "agent/cli/run_flags.h"
#include "agent/daemon/daemon.h"
#include "common/cli_main.h"
#include "common/clock.h"
#include "common/log.h"

namespace gleaner::agent {
namespace {

int run(RunFlags& flags) {
  if (flags.check_config) return check_config(flags);
  // The one validation path: what --check-config reports, run refuses to start with,
  // before anything on the node is touched (resctrl mount, cgroup writes, BPF load).
  if (auto errors = validate(flags); !errors.empty()) {
    for (const auto& e : errors)
      print_config_error(e);
    return kExitUsage;
  }
  if (auto ok = init_logging(flags.log_level, flags.log_format); !ok) {
    std::fprintf(stderr, "%s\n", ok.error().message.c_str());
    return kExitUsage;
  }
  flags.daemon.interval = std::chrono::milliseconds(flags.interval_ms);
  flags.daemon.fast_interval = std::chrono::milliseconds(flags.fast_interval_ms);
  boost::asio::io_context io;
  const SystemClock clock;
  auto daemon =
      Daemon::create(io, flags.daemon, {.clock = &clock, .open_probe = bpf::open_runq_probe});
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
  flags->daemon.state_dir = "/var/lib/gleaner";
  auto* cmd = app.add_subcommand("run", "Run the node agent (the DaemonSet's command)");
  cmd->footer(
      "Exit codes: 0 stopped (SIGTERM, SIGINT or --max-ticks); 1 could not start (e.g. the Node "
      "not found on the API server); 2 a flag, a "
      "combination of flags or a file they name refused, before anything on the node is "
      "touched.\n");
  add_run_flags(*cmd, *flags);
  cmd->callback([flags] { set_exit_code(run(*flags)); });
}
}  // namespace gleaner::agent
