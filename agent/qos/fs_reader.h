#pragma once
// QosReader over the real (or a fake) cgroup and resctrl trees. Reads only.

#include "agent/qos/qos_types.h"
#include "cgroup/cgroup_fs.h"
#include "resctrl/resctrl_fs.h"

namespace gleaner::agent::qos {

class FsQosReader : public QosReader {
 public:
  // `resctrl` may be null: no resctrl on this node (or not asked for).
  FsQosReader(cgroup::CgroupFs& fs, const resctrl::ResctrlFs* resctrl)
      : fs_(fs), resctrl_(resctrl) {}

  [[nodiscard]] cgroup::CgroupVersion version() const override { return fs_.version(); }
  std::optional<std::string> logical(cgroup::Resource resource, const std::string& cg) override;
  std::optional<int64_t> integer(cgroup::Resource resource, const std::string& cg) override;
  std::optional<std::vector<int>> ids(cgroup::Resource resource, const std::string& cg) override;
  [[nodiscard]] bool has(cgroup::Resource resource, const std::string& cg) const override;
  std::optional<resctrl::Capability> resctrl_capability() override;
  std::optional<resctrl::Schemata> resctrl_schemata(const std::string& group) override;
  std::optional<std::vector<int>> resctrl_tasks(const std::string& group) override;
  std::optional<CpuCounters> cpu_counters(const std::string& cg) override;

 private:
  cgroup::CgroupFs& fs_;
  const resctrl::ResctrlFs* resctrl_;
};

}  // namespace gleaner::agent::qos
