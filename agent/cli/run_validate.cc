// The checks `gleaner-agent run` and --check-config share (validate()), and the inputs only
// --check-config looks at (input_errors()). Everything here only reads: the node is not
// touched before the configuration is known to be whole.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "agent/bpf/interference.h"
#include "agent/cli/run_flags.h"
#include "agent/config/slo_config.h"
#include "agent/daemon/pod_source.h"
#include "agent/edge/node_environment.h"
#include "agent/metrics/node_sampler.h"
#include "common/cli_main.h"
#include "common/file_io.h"
#include "common/json_util.h"
#include "kube/config.h"
#include "kube/objects.h"
#include "net/listen_address.h"
#include "net/url.h"

namespace gleaner::agent {
namespace {

// A PEM CA bundle the flag names: readable and holding a certificate.
void check_ca(std::vector<std::string>& errors, const char* flag, const std::string& path) {
  if (auto ca = read_file(path); !ca) {
    errors.push_back(std::string(flag) + ": " + ca.error().message);
  } else if (ca->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    errors.push_back(std::string(flag) + ": " + path + " holds no PEM certificate");
  }
}

// Flags that only mean something with another one: given alone, or with one that makes
// them unused, they are a mistake in the command line (the daemon would ignore them).
void combination_errors(const DaemonOptions& o, std::vector<std::string>& errors) {
  if (!o.pods_file.empty() && !o.kubelet_host.empty())
    errors.emplace_back("--kubelet-host: not used with --pods-file (the pods come from the file)");
  if (!o.node_file.empty() && !o.kubeconfig.empty()) {
    errors.emplace_back(
        "--node-file: not used with --kubeconfig (the Node comes from the API server)");
  }
  if (!o.token_file.empty() && o.scheduler_url.empty())
    errors.emplace_back("--token-file: only used with --scheduler-url");
  if (o.kubelet_insecure_tls && !o.kubelet_https)
    errors.emplace_back("--kubelet-insecure-tls: only used over HTTPS, not --kubelet-read-only");
  if (!o.scheduler_ca_file.empty() && o.scheduler_url.rfind("https://", 0) != 0)
    errors.emplace_back("--scheduler-ca-file: only used with an https:// --scheduler-url");
}

}  // namespace

std::vector<std::string> validate(const RunFlags& flags) {
  const DaemonOptions& o = flags.daemon;
  const edge::EnvironmentFlags env_flags{.cgroup_root = o.cgroup_root,
                                         .cgroup_version = o.cgroup_version,
                                         .cgroup_driver = o.cgroup_driver,
                                         .cgroup_parent = o.cgroup_parent};
  std::vector<std::string> errors = edge::environment_flag_errors(env_flags);
  if (errors.empty()) {
    if (auto env = edge::discover_environment(env_flags); !env)
      errors.push_back(env.error().message);
  }
  if (auto usage = NodeSampler(o.proc_root).sample(); !usage)
    errors.push_back("--proc-root " + o.proc_root + ": " + usage.error().message);
  // The daemon's own parser; its errors name the --interference-* flag.
  if (auto i = bpf::parse_interference_config(o.interference_runq_p99_bound, o.interference_hold,
                                              o.interference_psi_bound);
      !i) {
    errors.push_back(i.error().message);
  }
  if (!o.metrics_addr.empty()) {
    if (auto a = net::parse_listen_address(o.metrics_addr, "--metrics-addr"); !a)
      errors.push_back(a.error().message);
  }
  if (!o.kubeconfig.empty() && o.kubeconfig != "in-cluster") {
    if (auto k = kube::load_kubeconfig(o.kubeconfig); !k)
      errors.push_back("--kubeconfig: " + k.error().message);
  }
  if (!o.node_file.empty()) {
    auto text = read_file(o.node_file);
    auto json = text ? parse_json(*text, o.node_file) : Result<Json>(text.error());
    auto node = json ? kube::parse_node(*json) : Result<kube::Node>(json.error());
    if (!node) errors.push_back("--node-file " + o.node_file + ": " + node.error().message);
  }
  if (!o.scheduler_url.empty()) {
    if (auto url = net::parse_http_url(o.scheduler_url, "scheduler URL"); !url)
      errors.push_back("--scheduler-url: " + url.error().message);
  }
  // A scheduler CA not there yet is waited for (a ConfigMap mounted optional: true that the
  // scheduler publishes); one that is there must be usable, or the report client refuses.
  if (!o.scheduler_ca_file.empty() && std::filesystem::exists(o.scheduler_ca_file))
    check_ca(errors, "--scheduler-ca-file", o.scheduler_ca_file);
  combination_errors(o, errors);
  return errors;
}

std::vector<std::string> input_errors(const RunFlags& flags) {
  const DaemonOptions& o = flags.daemon;
  std::vector<std::string> errors;
  if (!o.config_dir.empty()) {
    // A missing directory would load as all defaults; at check time it is a wrong path.
    if (!std::filesystem::is_directory(o.config_dir)) {
      errors.push_back("--config-dir " + o.config_dir + ": not a directory");
    } else {
      for (const auto& e : config::load_config_dir(o.config_dir).errors)
        errors.push_back("--config-dir: " + e.error.message);
    }
  }
  if (!o.pods_file.empty()) {
    if (auto pods = PodsFileSource(o.pods_file).fetch(); !pods)
      errors.push_back("--pods-file: " + pods.error().message);
  }
  if (!o.token_file.empty()) {
    if (auto token = read_file(o.token_file); !token)
      errors.push_back("--token-file: " + token.error().message);
  }
  // kubelet over HTTPS with verification: its CA must be readable, or every pod list fails.
  if (!o.kubelet_host.empty() && o.pods_file.empty() && o.kubelet_https && !o.kubelet_insecure_tls)
    check_ca(errors, "--kubelet-ca-file", o.kubelet_ca_file);
  return errors;
}

void print_config_error(const std::string& error) {
  std::fprintf(stderr, "gleaner-agent run: %s\n", error.c_str());
}

int check_config(const RunFlags& flags) {
  auto errors = validate(flags);
  for (auto& e : input_errors(flags))
    errors.push_back(std::move(e));
  // Loaded, but not all as written: said here as the daemon says it at start-up.
  if (!flags.daemon.config_dir.empty() && std::filesystem::is_directory(flags.daemon.config_dir)) {
    for (const auto& w : config::load_config_dir(flags.daemon.config_dir).warnings) {
      std::fprintf(stderr, "gleaner-agent run: warning: %s: %s\n", w.key.c_str(),
                   w.error.message.c_str());
    }
  }
  for (const auto& e : errors)
    print_config_error(e);
  if (!errors.empty()) return kExitUsage;
  std::printf("config OK\n");
  return kExitOk;
}

}  // namespace gleaner::agent
