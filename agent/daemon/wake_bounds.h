#pragma once
// The LS demand bound the eBPF probe wakes the fast path at (docs/agent.md, "Reacting in
// milliseconds"), as a pure rule.

#include <chrono>
#include <cstdint>
#include <optional>

#include "agent/metrics/fast_sampler.h"

namespace gleaner::agent {

// A demand a wake-up carried, and when.
struct NotedDemand {
  std::chrono::steady_clock::time_point at;
  int64_t millicores = 0;
};

// How long a wake-up's demand keeps the bound above it: as long as that demand counts in
// the fast path's non-BE figure (and so holds BE down). A demand counts the time LS tasks
// waited for a CPU, which the cgroup counters never show: from the counters alone, LS that
// stays contended (more runnable LS threads than CPUs) would signal at every minimum gap
// (5 ms); above its last demand, at most once per this span while nothing rises. Longer
// would be worse: a surge that ends and comes back after the demand's hold would find the
// bound still above it, and wait for the 50 ms loop (measured: p99 154 ms at 1 s).
inline constexpr std::chrono::milliseconds kNotedDemandSpan = FastSampler::kNoteHold;

// The demand that wakes the fast path: one suppress step (a tenth of the node, at least
// 100 millicores) above the larger of the non-BE CPU the counters show and the demand a
// wake-up carried within kNotedDemandSpan. From the counters, not from the signal's rate
// alone, so a rising surge keeps signalling with its rising rate until the counters see it.
int64_t demand_wake_bound(int64_t counted_milli, const std::optional<NotedDemand>& noted,
                          std::chrono::steady_clock::time_point now, int cpus);

}  // namespace gleaner::agent
