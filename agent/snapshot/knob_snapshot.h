#pragma once
// KnobSnapshot: the kernel's current knob values a decision needs (cgroup files, CPU
// counters, resctrl capability, schemata and tasks), read once per pass at the edge and
// handed to the strategies as a value. The strategies never read the kernel themselves, so
// a recorded pass plans the same on any host. KnobReads is what a pass asks the edge to
// read; a knob not read answers as absent.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cgroup/resource.h"
#include "cgroup/version.h"
#include "resctrl/capability.h"
#include "resctrl/schemata.h"

namespace gleaner::agent::snapshot {

// A cgroup's cumulative CPU counters (the CFS quota burst reads their deltas).
struct CpuCounters {
  int64_t usage_ns = 0;
  int64_t nr_throttled = 0;
  friend bool operator==(const CpuCounters&, const CpuCounters&) = default;
};

// What one pass reads: per cgroup the files, the cgroups whose CPU counters count, and the
// resctrl groups (with resctrl = false the node's resctrl is not looked at).
struct KnobReads {
  std::map<std::string, std::set<cgroup::Resource>> files;
  std::set<std::string> counters;
  bool resctrl = false;
  std::set<std::string> resctrl_groups;

  void add(const std::string& cgroup, std::initializer_list<cgroup::Resource> resources) {
    files[cgroup].insert(resources.begin(), resources.end());
  }
  // Everything `other` reads as well.
  void merge(const KnobReads& other) {
    for (const auto& [cgroup, resources] : other.files)
      files[cgroup].insert(resources.begin(), resources.end());
    counters.insert(other.counters.begin(), other.counters.end());
    resctrl = resctrl || other.resctrl;
    resctrl_groups.insert(other.resctrl_groups.begin(), other.resctrl_groups.end());
  }
};

class KnobSnapshot {
 public:
  explicit KnobSnapshot(cgroup::CgroupVersion version = cgroup::CgroupVersion::kV1)
      : version_(version) {}

  // Filled at the edge. A file recorded is present; `raw` nullopt when it could not be read.
  void set_file(cgroup::Resource resource, const std::string& cgroup,
                std::optional<std::string> raw) {
    files_[{cgroup, resource}] = std::move(raw);
  }
  void set_counters(const std::string& cgroup, CpuCounters counters) {
    counters_[cgroup] = counters;
  }
  void set_resctrl_capability(resctrl::Capability capability) {
    capability_ = std::move(capability);
  }
  void set_resctrl_schemata(const std::string& group, resctrl::Schemata schemata) {
    schemata_[group] = std::move(schemata);
  }
  void set_resctrl_tasks(const std::string& group, std::vector<int> tasks) {
    tasks_[group] = std::move(tasks);
  }

  [[nodiscard]] cgroup::CgroupVersion version() const { return version_; }
  // Whether the file exists for this cgroup (kernels differ: cpu.idle, memory.high on v1).
  [[nodiscard]] bool has(cgroup::Resource resource, const std::string& cgroup) const;
  // Logical value (see cgroup/resource.h); nullopt when absent, unreadable or not read.
  [[nodiscard]] std::optional<std::string> logical(cgroup::Resource resource,
                                                   const std::string& cgroup) const;
  [[nodiscard]] std::optional<int64_t> integer(cgroup::Resource resource,
                                               const std::string& cgroup) const;
  // Task or process ids, or CPU lists for the cpuset resources.
  [[nodiscard]] std::optional<std::vector<int>> ids(cgroup::Resource resource,
                                                    const std::string& cgroup) const;
  [[nodiscard]] std::optional<CpuCounters> cpu_counters(const std::string& cgroup) const;
  // resctrl: nullopt when absent on this node (or not read).
  [[nodiscard]] const std::optional<resctrl::Capability>& resctrl_capability() const {
    return capability_;
  }
  [[nodiscard]] std::optional<resctrl::Schemata> resctrl_schemata(const std::string& group) const;
  [[nodiscard]] std::optional<std::vector<int>> resctrl_tasks(const std::string& group) const;

 private:
  [[nodiscard]] const std::optional<std::string>* raw(cgroup::Resource resource,
                                                      const std::string& cgroup) const;

  cgroup::CgroupVersion version_;
  std::map<std::pair<std::string, cgroup::Resource>, std::optional<std::string>> files_;
  std::map<std::string, CpuCounters> counters_;
  std::optional<resctrl::Capability> capability_;
  std::map<std::string, resctrl::Schemata> schemata_;
  std::map<std::string, std::vector<int>> tasks_;
};

}  // namespace gleaner::agent::snapshot
