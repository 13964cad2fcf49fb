#pragma once
// resctrl schemata: parsing and formatting of "L3:0=7ff;1=7ff" / "MB:0=100;1=100" lines,
// and the math that turns a class's percent ranges into cache-way masks and MBA values.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gleaner::resctrl {

// resource ("L3", "MB", ...) -> cache/domain id -> value text as the kernel prints it.
using Schemata = std::map<std::string, std::map<int, std::string>>;

// Parses a whole schemata file (one line per resource; ids need not be contiguous).
Result<Schemata> parse_schemata(std::string_view text);
// "L3:0=f;2=f" for one resource of a schemata.
std::string format_schemata_line(const std::string& resource, const std::map<int, std::string>& v);

// A contiguous way mask covering [start%, end%) of the ways in `cbm_mask`:
// ways = bit length of cbm_mask; start = ceil(ways*start%/100); end = ceil(ways*end%/100);
// mask = (1<<end) - (1<<start). Widened upwards to min_cbm_bits ways when narrower, since
// the kernel rejects masks below that.
Result<uint64_t> cat_mask(uint64_t cbm_mask, int start_percent, int end_percent,
                          int min_cbm_bits = 1);

// The MBA value to write: percent rounded up to the granularity, within [min, 100].
Result<int> mba_value(int percent, int min_bandwidth, int granularity);

// Whether two masks/values mean the same ("f" vs "0000f", "60" vs "60").
bool same_value(std::string_view resource, std::string_view a, std::string_view b);

}  // namespace gleaner::resctrl
