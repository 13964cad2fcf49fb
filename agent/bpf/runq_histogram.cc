#include "agent/bpf/runq_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace gleaner::agent::bpf {

int runq_slot(uint64_t wait_ns) {
  if (wait_ns < 2) return 0;
  int slot = 63 - std::countl_zero(wait_ns);
  return slot < kRunqSlots ? slot : kRunqSlots - 1;
}

uint64_t slot_lower_ns(int slot) {
  return slot <= 0 ? 0 : uint64_t{1} << slot;
}

uint64_t slot_upper_ns(int slot) {
  return uint64_t{1} << (slot + 1);
}

std::optional<double> RunqHistogram::mean_ns() const {
  if (count == 0) return std::nullopt;
  return static_cast<double>(sum_ns) / static_cast<double>(count);
}

void RunqHistogram::record(uint64_t wait_ns) {
  slots[static_cast<size_t>(runq_slot(wait_ns))] += 1;
  count += 1;
  sum_ns += wait_ns;
}

void RunqHistogram::add(const RunqHistogram& other) {
  for (size_t i = 0; i < slots.size(); ++i)
    slots[i] += other.slots[i];
  count += other.count;
  sum_ns += other.sum_ns;
}

RunqHistogram histogram_delta(const RunqHistogram& later, const RunqHistogram& earlier) {
  if (later.count < earlier.count || later.sum_ns < earlier.sum_ns) return later;
  RunqHistogram d;
  for (size_t i = 0; i < d.slots.size(); ++i) {
    if (later.slots[i] < earlier.slots[i]) return later;
    d.slots[i] = later.slots[i] - earlier.slots[i];
  }
  d.count = later.count - earlier.count;
  d.sum_ns = later.sum_ns - earlier.sum_ns;
  return d;
}

RunqHistogram attributed_waits(const RunqHistogram& all, const RunqHistogram& caused) {
  RunqHistogram out = caused;
  const uint64_t caused_count = std::min(caused.count, all.count);
  out.count = all.count;
  out.slots[0] += all.count - caused_count;
  return out;
}

std::optional<double> histogram_quantile_ns(const RunqHistogram& h, double q) {
  if (!(q > 0.0 && q <= 1.0)) return std::nullopt;
  uint64_t total = 0;
  for (uint64_t c : h.slots)
    total += c;
  if (total == 0) return std::nullopt;
  // Rank of the quantile among `total` ordered samples (1-based, nearest-rank).
  double rank = std::ceil(q * static_cast<double>(total));
  uint64_t seen = 0;
  for (int slot = 0; slot < kRunqSlots; ++slot) {
    uint64_t c = h.slots[static_cast<size_t>(slot)];
    if (c == 0) continue;
    if (static_cast<double>(seen + c) >= rank) {
      // The slot's samples are taken as spread evenly over it, each at the middle of its
      // share, so the estimate stays strictly inside the slot.
      double within = (rank - static_cast<double>(seen) - 0.5) / static_cast<double>(c);
      double lo = static_cast<double>(slot_lower_ns(slot));
      double hi = static_cast<double>(slot_upper_ns(slot));
      return lo + within * (hi - lo);
    }
    seen += c;
  }
  return static_cast<double>(slot_upper_ns(kRunqSlots - 1));
}

}  // namespace gleaner::agent::bpf
