#pragma once
// The level of a cgroup directory: how far below its hierarchy's root it sits (the root is
// 0), the number the kernel keeps as struct cgroup's `level` and indexes its table of
// ancestors by. Read from the filesystem; no libbpf.

#include <cstdint>
#include <string>

#include "common/result.h"

namespace gleaner::agent::bpf {

// Levels past this are refused (a loop in the path, or no cgroup filesystem at all).
inline constexpr uint32_t kMaxCgroupLevel = 255;

// Counts the `..` steps from `dir` up to the root of the mount it is on (where `..` leaves
// the filesystem, or is the directory itself). Symbolic links on the way are followed, so
// a directory reached through one counts from its real place. The count is the kernel's
// level when the mount's root is the hierarchy's root, as it is for a host's cgroup mounts
// and a bind mount of them (a DaemonSet's hostPath); a cgroup filesystem mounted inside a
// cgroup namespace starts at the namespace's root and counts short.
Result<uint32_t> cgroup_level(const std::string& dir);

}  // namespace gleaner::agent::bpf
