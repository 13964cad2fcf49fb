#pragma once
// The flags of `gleaner-agent run` and the checks on them. What one flag alone allows is
// checked by CLI11 as the command line is parsed (add_run_flags); what depends on several
// flags, or on the node and the files they name, is validate(). `run` and --check-config
// both call it before anything touches the node, and both exit 2 on what it finds.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "agent/daemon/daemon.h"

namespace gleaner::agent {

struct RunFlags {
  DaemonOptions daemon;
  int interval_ms = 1000;
  int fast_interval_ms = 50;
  std::string log_level = "info";
  std::string log_format = "text";
  bool check_config = false;
};

// Registers the flags on `run`, each with the CLI11 check of its own values (run_flags.cc).
void add_run_flags(CLI::App& cmd, RunFlags& flags);

// Every problem the daemon would stop at, found read-only (no cgroup or resctrl write, no
// BPF load, no server, no API call): flags that conflict or need one another, a cgroup or
// proc root that is not one, and the files Daemon::create reads once and cannot start
// without (--kubeconfig, --node-file, an existing --scheduler-ca-file). Each error names
// its flag. `run` starts only when this is empty.
std::vector<std::string> validate(const RunFlags& flags);

// What the running daemon reads again and again and survives being wrong (it keeps the
// last good value, or waits): the config dir's keys, --pods-file, --token-file, the kubelet
// CA. Not a reason to refuse to start, but --check-config reports them too.
std::vector<std::string> input_errors(const RunFlags& flags);

// --check-config: validate() and input_errors(), each error on stderr, then "config OK"
// (0) or 2; the config dir's warnings on stderr. Starts nothing.
int check_config(const RunFlags& flags);

// How each error is printed, by `run` and --check-config alike.
void print_config_error(const std::string& error);

}  // namespace gleaner::agent
