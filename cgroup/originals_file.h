#pragma once
// The agent's record of the values it found before changing them, kept on the node (a
// hostPath such as /var/lib/gleaner) so that an agent killed without a chance to restore,
// or replaced by a newer one, still puts back kubelet's values and not its own. Written
// atomically (temporary file, fsync, rename) before the first write to each file.
// Format (docs/operations.md): JSON
//   {"format": 1, "bootId": "<kernel boot id>", "cgroups": [
//      {"path": "/sys/fs/cgroup/cpu/kubepods/besteffort/cpu.cfs_quota_us",
//       "resource": "cpu_quota", "cgroup": "kubepods/besteffort", "content": "-1"}, ...],
//    ...other sections, opaque here (the agent keeps resctrl's in "resctrl")}
// A record from another boot describes cgroups that no longer exist and is ignored.

#include <string>

#include "cgroup/executor.h"
#include "common/json_util.h"
#include "common/result.h"

namespace gleaner::cgroup {

struct LoadedOriginals {
  Originals originals;
  bool other_boot = false;  // recorded before the last reboot: nothing to restore
  // Other top-level keys, kept for the modules that wrote them (the agent's "resctrl").
  Json sections = Json::object();
};

// Parses a record. Errors name what is wrong and where.
Result<LoadedOriginals> parse_originals(std::string_view text, std::string_view where,
                                        std::string_view boot_id);
std::string format_originals(const Originals& originals, std::string_view boot_id,
                             const Json& sections = Json::object());

class OriginalsFile {
 public:
  // `boot_id`: /proc/sys/kernel/random/boot_id (trimmed).
  OriginalsFile(std::string path, std::string boot_id)
      : path_(std::move(path)), boot_id_(std::move(boot_id)) {}

  // kNotFound when there is no record; kParse when it is corrupt.
  [[nodiscard]] Result<LoadedOriginals> load() const;
  // Replaces the record (creating its directory), atomically.
  [[nodiscard]] Status save(const Originals& originals,
                            const Json& sections = Json::object()) const;
  // Removes the record (nothing left to restore). Absent is fine.
  [[nodiscard]] Status remove() const;
  // Moves a corrupt record aside (<path>.corrupt) so it is kept for inspection.
  [[nodiscard]] Status set_aside() const;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string boot_id_;
};

// This boot's id, or "" when the kernel does not say.
std::string read_boot_id(const std::string& proc_root = "/proc");

}  // namespace gleaner::cgroup
