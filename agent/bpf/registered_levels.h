#pragma once
// The distinct cgroup levels (depths below the hierarchy's root) of the cgroups registered
// with the sched probe, counted: the kernel side reads a task's ancestors at these levels
// only (sched_probe.bpf.c, resolve_cgroup), so it needs the set, deepest first, and at most
// GLEANER_MAX_TRACKED_LEVELS of them. Pure; no libbpf.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "agent/bpf/sched_probe_abi.h"

namespace gleaner::agent::bpf {

class RegisteredLevels {
 public:
  explicit RegisteredLevels(size_t capacity = GLEANER_MAX_TRACKED_LEVELS) : capacity_(capacity) {}

  // Counts one more cgroup at `level`; false (and nothing counted) when that would make one
  // distinct level more than the capacity.
  [[nodiscard]] bool add(uint32_t level);
  // Counts one cgroup at `level` less (a level no cgroup is counted at is ignored).
  void remove(uint32_t level);
  // Every level with a cgroup counted, deepest first.
  [[nodiscard]] std::vector<uint32_t> deepest_first() const;
  [[nodiscard]] size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  std::map<uint32_t, size_t, std::greater<>> counts_;  // level -> cgroups, deepest first
};

}  // namespace gleaner::agent::bpf
