#pragma once
// Which cgroup hierarchy a root holds: v1 (one mount per controller), v2 (unified), or
// hybrid (v1 controllers plus a controller-less unified mount at <root>/unified).

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gleaner::cgroup {

enum class CgroupVersion { kV1, kV2, kHybrid };

const char* to_string(CgroupVersion version);
Result<CgroupVersion> parse_version(std::string_view text);  // "v1", "v2", "hybrid"

// Detects the hierarchy at `root`. On a real mount the filesystem magic decides
// (cgroup2 -> v2; tmpfs holding cgroup mounts -> v1, or hybrid when <root>/unified is a
// cgroup2 mount). On a plain directory (tests, a copied tree for `plan`) the layout
// decides: cgroup.controllers at the root -> v2; per-controller directories (cpu/,
// memory/) -> v1, hybrid when unified/cgroup.controllers also exists.
// `forced` (the --cgroup-version flag) wins over both.
Result<CgroupVersion> detect_version(const std::string& root,
                                     std::optional<CgroupVersion> forced = std::nullopt);

}  // namespace gleaner::cgroup
