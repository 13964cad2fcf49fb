#pragma once
// What the CPU's resctrl offers (cache ways, bandwidth steps, monitoring): a pure value,
// detected by ResctrlFs and read by the decisions without any I/O of their own.

#include <cstdint>
#include <optional>
#include <vector>

namespace gleaner::resctrl {

struct L3Info {
  uint64_t cbm_mask = 0;
  int ways = 0;
  int min_cbm_bits = 1;
  std::vector<int> cache_ids;  // from the root schemata; need not be contiguous
};

struct MbaInfo {
  int min_bandwidth = 10;
  int bandwidth_granularity = 10;
  std::vector<int> domain_ids;
};

struct Capability {
  std::optional<L3Info> l3;
  std::optional<MbaInfo> mba;
  bool monitoring = false;  // info/L3_MON present
  [[nodiscard]] bool any() const { return l3 || mba; }
};

}  // namespace gleaner::resctrl
