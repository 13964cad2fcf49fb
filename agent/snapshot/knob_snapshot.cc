#include "agent/snapshot/knob_snapshot.h"

#include "cgroup/parsers.h"

namespace gleaner::agent::snapshot {

using cgroup::Resource;

const std::optional<std::string>* KnobSnapshot::raw(Resource resource,
                                                    const std::string& cgroup) const {
  auto it = files_.find({cgroup, resource});
  return it == files_.end() ? nullptr : &it->second;
}

bool KnobSnapshot::has(Resource resource, const std::string& cgroup) const {
  return raw(resource, cgroup) != nullptr;
}

std::optional<std::string> KnobSnapshot::logical(Resource resource,
                                                 const std::string& cgroup) const {
  const auto* r = raw(resource, cgroup);
  if (r == nullptr || !*r) return std::nullopt;
  auto v = cgroup::logical_from_file(resource, version_, **r);
  if (!v) return std::nullopt;
  return *v;
}

std::optional<int64_t> KnobSnapshot::integer(Resource resource, const std::string& cgroup) const {
  auto l = logical(resource, cgroup);
  if (!l) return std::nullopt;
  auto v = cgroup::parse_int_value(*l);
  if (!v) return std::nullopt;
  return *v;
}

std::optional<std::vector<int>> KnobSnapshot::ids(Resource resource,
                                                  const std::string& cgroup) const {
  const auto* r = raw(resource, cgroup);
  if (r == nullptr || !*r) return std::nullopt;
  auto v = resource == Resource::kCpusetCpus || resource == Resource::kCpusetEffective
               ? cgroup::parse_cpu_list(**r)
               : cgroup::parse_id_list(**r);
  if (!v) return std::nullopt;
  return *v;
}

std::optional<CpuCounters> KnobSnapshot::cpu_counters(const std::string& cgroup) const {
  auto it = counters_.find(cgroup);
  if (it == counters_.end()) return std::nullopt;
  return it->second;
}

std::optional<resctrl::Schemata> KnobSnapshot::resctrl_schemata(const std::string& group) const {
  auto it = schemata_.find(group);
  if (it == schemata_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::vector<int>> KnobSnapshot::resctrl_tasks(const std::string& group) const {
  auto it = tasks_.find(group);
  if (it == tasks_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gleaner::agent::snapshot
