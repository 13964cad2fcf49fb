#pragma once
// The resctrl filesystem (Intel RDT / AMD PQoS): capability detection, control groups,
// schemata writes that happen only when the parsed content differs, task placement and
// monitoring counters. The root is configurable (default /sys/fs/resctrl) so tests run on
// directory trees that reproduce the kernel's files.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "resctrl/capability.h"
#include "resctrl/schemata.h"

namespace gleaner::resctrl {

struct MonData {
  std::map<int, uint64_t> llc_occupancy_bytes;  // by cache id
  std::map<int, uint64_t> mbm_total_bytes;
  std::map<int, uint64_t> mbm_local_bytes;
};

class ResctrlFs {
 public:
  explicit ResctrlFs(std::string root) : root_(std::move(root)) {}
  [[nodiscard]] const std::string& root() const { return root_; }

  // kUnsupported when resctrl is not mounted at the root (this kernel or CPU lacks RDT).
  [[nodiscard]] Result<Capability> detect() const;

  // Directory of a control group ("" is the root group).
  [[nodiscard]] std::string group_dir(const std::string& group) const;
  Status create_group(const std::string& group) const;
  Status remove_group(const std::string& group) const;

  Result<Schemata> read_schemata(const std::string& group) const;
  // Writes each resource line whose parsed values differ from the group's current ones;
  // returns the lines written (empty when nothing changed).
  Result<std::vector<std::string>> apply_schemata(const std::string& group,
                                                  const Schemata& desired) const;

  Result<std::vector<int>> read_tasks(const std::string& group) const;
  // The kernel takes one task id per write(2) on the tasks file.
  Status add_task(const std::string& group, int tid) const;

  // mon_data/mon_L3_<id>/{llc_occupancy,mbm_total_bytes,mbm_local_bytes} where present.
  Result<MonData> read_mon_data(const std::string& group) const;

 private:
  std::string root_;
};

}  // namespace gleaner::resctrl
