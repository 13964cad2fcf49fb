#include "agent/edge/node_environment.h"

#include "agent/edge/cpu_topology_reader.h"
#include "cgroup/cgroup_fs.h"
#include "common/file_io.h"

namespace gleaner::agent::edge {

std::vector<std::string> environment_flag_errors(const EnvironmentFlags& flags) {
  std::vector<std::string> errors;
  if (!flags.cgroup_version.empty()) {
    if (auto v = cgroup::parse_version(flags.cgroup_version); !v)
      errors.push_back("--cgroup-version: " + v.error().message);
  }
  if (!is_directory(flags.cgroup_root))
    errors.push_back("--cgroup-root " + flags.cgroup_root + ": not a directory");
  if (!flags.cgroup_driver.empty()) {
    if (auto d = cgroup::parse_driver(flags.cgroup_driver); !d)
      errors.push_back("--cgroup-driver: " + d.error().message);
  }
  return errors;
}

std::optional<resctrl::Capability> discover_resctrl(const std::string& resctrl_root) {
  if (resctrl_root.empty()) return std::nullopt;
  auto rdt = resctrl::ResctrlFs(resctrl_root).detect();
  if (!rdt) return std::nullopt;
  return *rdt;
}

Result<NodeEnvironment> discover_environment(const EnvironmentFlags& flags) {
  if (auto errors = environment_flag_errors(flags); !errors.empty())
    return make_error(ErrorCode::kInvalidArgument, errors.front());
  std::optional<cgroup::CgroupVersion> forced;
  if (!flags.cgroup_version.empty()) forced = *cgroup::parse_version(flags.cgroup_version);
  auto version = cgroup::detect_version(flags.cgroup_root, forced);
  if (!version) {
    return make_error(version.error().code,
                      "--cgroup-root " + flags.cgroup_root + ": " + version.error().message);
  }
  NodeEnvironment env;
  env.version = *version;
  env.cpu_root =
      cgroup::CgroupFs(flags.cgroup_root, env.version).dir_of(cgroup::Resource::kCpuShares, "");
  if (!flags.cgroup_driver.empty()) {
    env.driver = *cgroup::parse_driver(flags.cgroup_driver);
  } else if (auto driver = cgroup::detect_driver(env.cpu_root, flags.cgroup_parent)) {
    env.driver = *driver;
  } else {
    env.driver_problem = driver.error().message;
  }
  env.resctrl = discover_resctrl(flags.resctrl_root);
  if (!flags.sys_root.empty()) {
    if (auto topology = read_cpu_topology(flags.sys_root)) {
      env.topology = std::move(*topology);
    } else {
      env.topology_problem = topology.error().message;
    }
  }
  return env;
}

}  // namespace gleaner::agent::edge
