#include "agent/daemon/wake_bounds.h"

#include <algorithm>

namespace gleaner::agent {

int64_t demand_wake_bound(int64_t counted_milli, const std::optional<NotedDemand>& noted,
                          std::chrono::steady_clock::time_point now, int cpus) {
  int64_t base = counted_milli;
  if (noted && now - noted->at < kNotedDemandSpan) base = std::max(base, noted->millicores);
  return base + std::max<int64_t>(100, int64_t{100} * cpus);
}

}  // namespace gleaner::agent
