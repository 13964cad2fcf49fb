#pragma once
// Run-queue latency histograms as the BPF program keeps them (log2 slots of ns) and the
// percentile estimates drawn from them. Pure; no libbpf.

#include <array>
#include <cstdint>
#include <optional>

#include "agent/bpf/sched_probe_abi.h"

namespace gleaner::agent::bpf {

inline constexpr int kRunqSlots = GLEANER_RUNQ_SLOTS;

struct RunqHistogram {
  // slots[k] counts waits in [2^k, 2^(k+1)) ns; slot 0 also holds 0 ns, the last slot
  // everything longer.
  std::array<uint64_t, kRunqSlots> slots{};
  uint64_t count = 0;
  uint64_t sum_ns = 0;

  [[nodiscard]] bool empty() const { return count == 0; }
  // Mean wait, or nothing without samples.
  [[nodiscard]] std::optional<double> mean_ns() const;
  // Adds one wait (for tests and for merging user-side).
  void record(uint64_t wait_ns);
  void add(const RunqHistogram& other);
};

// Index of the slot a wait falls in, exactly as the BPF program computes it.
int runq_slot(uint64_t wait_ns);
// Lower and upper bound (exclusive) of a slot in ns.
uint64_t slot_lower_ns(int slot);
uint64_t slot_upper_ns(int slot);

// later - earlier, slot by slot, for cumulative counters read at two times. A counter
// that went backwards (the map entry was recreated) yields `later` unchanged.
RunqHistogram histogram_delta(const RunqHistogram& later, const RunqHistogram& earlier);

// All of `all`'s waits with only the `caused` subset keeping its length, the others
// counted as no wait (slot 0): the quantiles of what the cause added to the waits.
// `caused` is a subset of `all` (a count above all's is taken as all's).
RunqHistogram attributed_waits(const RunqHistogram& all, const RunqHistogram& caused);

// The q-quantile (0 < q <= 1) estimated by linear interpolation inside the slot that holds
// the rank; nothing for an empty histogram or q outside (0, 1]. The error is bounded by the
// slot width: the estimate is always inside the slot of the true quantile.
std::optional<double> histogram_quantile_ns(const RunqHistogram& h, double q);

}  // namespace gleaner::agent::bpf
