#include "agent/bpf/running_slots.h"

#include <cstddef>

namespace gleaner::agent::bpf {

bool accounted_tasks_unchanged(const std::vector<gleaner_cpu_slot>& before,
                               const std::vector<gleaner_cpu_slot>& after) {
  if (before.size() != after.size()) return false;
  for (std::size_t cpu = 0; cpu < before.size(); ++cpu) {
    const auto& b = before[cpu];
    const auto& a = after[cpu];
    if (b.index == 0 && a.index == 0) continue;
    if (b.index != a.index || b.tid != a.tid || b.runtime_at_arrival_ns != a.runtime_at_arrival_ns)
      return false;
  }
  return true;
}

}  // namespace gleaner::agent::bpf
