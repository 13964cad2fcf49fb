#pragma once
// BE's CPU ceiling: the BE QoS cgroup's CFS quota and period and its CPU list. A full pass
// states it as it read it (what was in force when it began); the daemon puts the writes its
// executor made over that, and reports the result as the suppress status: what the pass
// planned from and put in force, not a read of the tree after it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/qos/qos_types.h"
#include "cgroup/version.h"

namespace gleaner::agent::step {

struct BeCeiling {
  std::optional<int64_t> quota_us;  // -1: unlimited; nullopt: no quota file
  std::optional<int64_t> period_us;
  std::optional<std::vector<int>> cpus;  // empty: inherits its parent's (cgroup v2)
  friend bool operator==(const BeCeiling&, const BeCeiling&) = default;
};

// BE's ceiling as `knobs` hold it.
BeCeiling be_ceiling_read(const qos::KnobSnapshot& knobs, const std::string& be_qos_dir);
// `ceiling` once `logical_value` is written to the BE QoS cgroup's `resource`: the quota
// or the CPU list change, other knobs and a value that does not parse leave it as it is.
void note_be_write(BeCeiling& ceiling, cgroup::Resource resource, std::string_view logical_value);

// Where the executor's writes to BE's ceiling land: the BE QoS cgroup's quota and CPU-list
// files (empty: not offered on this hierarchy), and the hierarchy's version, which says how
// a file's content reads as the logical value ("max 100000" is quota -1 on v2).
struct BeCeilingFiles {
  std::string quota;
  std::string cpus;
  cgroup::CgroupVersion version = cgroup::CgroupVersion::kV1;
};
// `ceiling` once the executor wrote `content` to the cgroup file `path`, as its report
// states the write: a file other than BE's quota or CPU list leaves it as it is. The daemon
// and `plan` both put a pass's writes over what it read with this, so that they report the
// same ceiling in force.
void note_be_file_write(BeCeiling& ceiling, const BeCeilingFiles& files, std::string_view path,
                        std::string_view content);

}  // namespace gleaner::agent::step
