// `gleaner-agent report`: a one-shot description of this node as the agent sees it:
// cgroup hierarchy and kubelet driver, kernel features, CPU and memory usage.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>
#include <sys/utsname.h>

#include "agent/cli/commands.h"
#include "agent/edge/node_environment.h"
#include "agent/metrics/node_sampler.h"
#include "cgroup/layout.h"
#include "cgroup/version.h"
#include "common/file_io.h"
#include "common/json_util.h"
#include "resctrl/availability.h"
#include "resctrl/resctrl_fs.h"

namespace gleaner::agent {
namespace {

struct ReportOptions {
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string proc_root = "/proc";
  std::string resctrl_root = "/sys/fs/resctrl";
  std::string btf_path = "/sys/kernel/btf/vmlinux";
  std::string cgroup_version;
  int window_ms = 500;
  bool json = false;
};

Json build_report(const ReportOptions& opt) {
  Json out;
  utsname uts{};
  if (::uname(&uts) == 0) {
    out["node"] = uts.nodename;
    out["kernel"] = uts.release;
  }
  auto env = edge::discover_environment(edge::EnvironmentFlags{
      .cgroup_root = opt.cgroup_root,
      .cgroup_version = opt.cgroup_version,
      .resctrl_root = opt.resctrl_root,
  });
  out["cgroup"]["root"] = opt.cgroup_root;
  if (env) {
    out["cgroup"]["version"] = cgroup::to_string(env->version);
    out["cgroup"]["kubeletDriver"] =
        env->driver ? cgroup::to_string(*env->driver) : "none (no kubepods)";
  } else {
    out["cgroup"]["error"] = env.error().message;
  }
  NodeSampler sampler(opt.proc_root);
  auto first = sampler.sample();
  std::this_thread::sleep_for(std::chrono::milliseconds(opt.window_ms));
  auto usage = sampler.sample();
  if (first && usage) {
    out["cpu"] = {{"cpus", sampler.cpus()},
                  {"usageMillicores", usage->cpu_milli},
                  {"windowMs", opt.window_ms}};
    out["memory"] = {{"totalBytes", usage->memory_total_bytes}, {"usedBytes", usage->memory_bytes}};
    if (usage->cpu_pressure) out["cpu"]["psiSomeAvg10"] = usage->cpu_pressure->some.avg10;
  } else {
    out["usageError"] = (first ? usage.error() : first.error()).message;
  }
  out["features"]["psi"] = sampler.has_psi();
  out["features"]["btf"] = path_exists(opt.btf_path);
  // Looked for on its own: a cgroup root not recognised says nothing about RDT.
  std::optional<resctrl::Capability> found;
  if (!env) found = edge::discover_resctrl(opt.resctrl_root);
  const std::optional<resctrl::Capability>& resctrl = env ? env->resctrl : found;
  if (resctrl) {
    const resctrl::Capability& rdt = *resctrl;
    out["features"]["resctrl"] =
        rdt.l3 ? (rdt.mba ? "L3 CAT + MBA" : "L3 CAT") : (rdt.mba ? "MBA" : "mounted");
  } else {
    auto cpuinfo = read_file(join_path(opt.proc_root, "cpuinfo"));
    out["features"]["resctrl"] = resctrl::describe(resctrl::classify(
        is_directory(opt.resctrl_root), false, cpuinfo ? *cpuinfo : std::string()));
  }
  return out;
}

void print_human(const Json& r) {
  auto gib = [](const Json& v) { return v.get<double>() / (1024.0 * 1024 * 1024); };
  std::printf("node       %s (kernel %s)\n", r.value("node", "?").c_str(),
              r.value("kernel", "?").c_str());
  if (r["cgroup"].contains("version")) {
    std::printf("cgroup     %s at %s, kubelet driver: %s\n",
                r["cgroup"]["version"].get<std::string>().c_str(),
                r["cgroup"]["root"].get<std::string>().c_str(),
                r["cgroup"]["kubeletDriver"].get<std::string>().c_str());
  } else {
    std::printf("cgroup     %s\n", r["cgroup"]["error"].get<std::string>().c_str());
  }
  if (r.contains("cpu")) {
    std::printf("cpu        %d CPUs, %.2f cores in use\n", r["cpu"]["cpus"].get<int>(),
                r["cpu"]["usageMillicores"].get<double>() / 1000.0);
    std::printf("memory     %.2f GiB of %.2f GiB in use\n", gib(r["memory"]["usedBytes"]),
                gib(r["memory"]["totalBytes"]));
  }
  std::printf("features   PSI %s, BTF %s, resctrl %s\n",
              r["features"]["psi"].get<bool>() ? "yes" : "no",
              r["features"]["btf"].get<bool>() ? "yes" : "no",
              r["features"]["resctrl"].get<std::string>().c_str());
}

}  // namespace

void register_report_command(CLI::App& app) {
  auto opt = std::make_shared<ReportOptions>();
  auto* cmd = app.add_subcommand("report", "Print a one-shot report of this node and exit");
  cmd->add_option("--cgroup-root", opt->cgroup_root, "cgroup filesystem root")
      ->capture_default_str();
  cmd->add_option("--proc-root", opt->proc_root, "procfs root")->capture_default_str();
  cmd->add_option("--resctrl-root", opt->resctrl_root, "resctrl root")->capture_default_str();
  cmd->add_option("--cgroup-version", opt->cgroup_version, "override detection: v1, v2, hybrid")
      ->check(CLI::IsMember({"v1", "v2", "hybrid"}));
  cmd->add_option("--window-ms", opt->window_ms, "CPU measurement window")
      ->check(CLI::Range(50, 10000))
      ->capture_default_str();
  cmd->add_flag("--json", opt->json, "print JSON instead of a table");
  cmd->callback([opt] {
    Json report = build_report(*opt);
    if (opt->json) {
      std::cout << report.dump(2) << '\n';
    } else {
      print_human(report);
    }
  });
}

}  // namespace gleaner::agent
