#include "agent/qos/fs_reader.h"

#include "common/file_io.h"

namespace gleaner::agent::qos {

std::optional<std::string> FsQosReader::logical(cgroup::Resource resource, const std::string& cg) {
  auto v = fs_.read_logical(resource, cg);
  if (!v) return std::nullopt;
  return *v;
}

std::optional<int64_t> FsQosReader::integer(cgroup::Resource resource, const std::string& cg) {
  auto v = fs_.read_int(resource, cg);
  if (!v) return std::nullopt;
  return *v;
}

std::optional<std::vector<int>> FsQosReader::ids(cgroup::Resource resource, const std::string& cg) {
  auto v =
      resource == cgroup::Resource::kCpusetCpus ? fs_.read_cpuset(cg) : fs_.read_ids(resource, cg);
  if (!v) return std::nullopt;
  return *v;
}

std::optional<CpuCounters> FsQosReader::cpu_counters(const std::string& cg) {
  auto usage = fs_.read_cpu_usage_ns(cg);
  auto throttle = fs_.read_cpu_throttle(cg);
  if (!usage || !throttle) return std::nullopt;
  return CpuCounters{*usage, throttle->nr_throttled};
}

bool FsQosReader::has(cgroup::Resource resource, const std::string& cg) const {
  return fs_.has(resource, cg);
}

std::optional<resctrl::Capability> FsQosReader::resctrl_capability() {
  if (resctrl_ == nullptr) return std::nullopt;
  auto cap = resctrl_->detect();
  if (!cap) return std::nullopt;
  return *cap;
}

std::optional<resctrl::Schemata> FsQosReader::resctrl_schemata(const std::string& group) {
  if (resctrl_ == nullptr || !is_directory(resctrl_->group_dir(group))) return std::nullopt;
  auto s = resctrl_->read_schemata(group);
  // A group directory without a readable schemata is treated as empty: every line differs.
  return s ? *s : resctrl::Schemata{};
}

std::optional<std::vector<int>> FsQosReader::resctrl_tasks(const std::string& group) {
  if (resctrl_ == nullptr) return std::nullopt;
  auto t = resctrl_->read_tasks(group);
  if (!t) return std::nullopt;
  return *t;
}

}  // namespace gleaner::agent::qos
