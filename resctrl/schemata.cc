#include "resctrl/schemata.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdio>

#include "common/strings.h"

namespace gleaner::resctrl {
namespace {

Error bad(std::string_view why, std::string_view text) {
  return make_error(ErrorCode::kParse,
                    "schemata: " + std::string(why) + ": \"" + std::string(text) + "\"");
}

bool parse_hex(std::string_view text, uint64_t& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  return ec == std::errc() && ptr == text.data() + text.size() && !text.empty();
}

}  // namespace

Result<Schemata> parse_schemata(std::string_view text) {
  Schemata out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return bad("line lacks ':'", line);
    std::string resource(trim(line.substr(0, colon)));
    auto& domains = out[resource];
    std::string_view rest = line.substr(colon + 1);
    while (!rest.empty()) {
      size_t semi = rest.find(';');
      std::string_view item = trim(rest.substr(0, semi));
      rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
      size_t eq = item.find('=');
      if (eq == std::string_view::npos) return bad("domain lacks '='", item);
      int id = 0;
      auto id_text = trim(item.substr(0, eq));
      auto [ptr, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
      if (ec != std::errc() || ptr != id_text.data() + id_text.size() || id < 0) {
        return bad("bad domain id", item);
      }
      domains[id] = std::string(trim(item.substr(eq + 1)));
    }
  }
  return out;
}

std::string format_schemata_line(const std::string& resource, const std::map<int, std::string>& v) {
  std::string out = resource + ":";
  bool first = true;
  for (const auto& [id, value] : v) {
    if (!first) out += ';';
    first = false;
    out += std::to_string(id) + "=" + value;
  }
  return out;
}

Result<uint64_t> cat_mask(uint64_t cbm_mask, int start_percent, int end_percent, int min_cbm_bits) {
  if (start_percent < 0 || end_percent > 100 || start_percent >= end_percent) {
    return make_error(ErrorCode::kInvalidArgument, "cat range " + std::to_string(start_percent) +
                                                       "-" + std::to_string(end_percent) +
                                                       "% must satisfy 0 <= start < end <= 100");
  }
  const int ways = 64 - std::countl_zero(cbm_mask);
  if (ways == 0) return make_error(ErrorCode::kInvalidArgument, "cbm_mask is empty");
  int start = (ways * start_percent + 99) / 100;
  int end = (ways * end_percent + 99) / 100;
  if (end - start < min_cbm_bits) end = start + min_cbm_bits;
  if (end > ways) {
    end = ways;
    start = std::max(0, end - std::max(min_cbm_bits, 1));
  }
  const uint64_t top = end >= 64 ? ~uint64_t{0} : (uint64_t{1} << end) - 1;
  const uint64_t bottom = (uint64_t{1} << start) - 1;
  return top & ~bottom;
}

Result<int> mba_value(int percent, int min_bandwidth, int granularity) {
  if (percent <= 0 || percent > 100) {
    return make_error(ErrorCode::kInvalidArgument,
                      "mbaPercent " + std::to_string(percent) + " must be 1..100");
  }
  if (granularity <= 0) granularity = 1;
  int value = (percent + granularity - 1) / granularity * granularity;
  if (value < min_bandwidth) value = min_bandwidth;
  return value > 100 ? 100 : value;
}

bool same_value(std::string_view resource, std::string_view a, std::string_view b) {
  if (resource.substr(0, 2) == "L3" || resource.substr(0, 2) == "L2") {
    uint64_t x = 0;
    uint64_t y = 0;
    return parse_hex(a, x) && parse_hex(b, y) && x == y;
  }
  return trim(a) == trim(b);
}

}  // namespace gleaner::resctrl
