// A saved run's tables back into points, so its charts can be drawn again (or for the first
// time) without measuring: the markdown frontier_bench prints is the record of a run.
#include <cstdlib>
#include <istream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/frontier/frontier_points.h"
#include "bench/frontier/services.h"

namespace gleaner::bench::frontier {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

// The cells of a markdown table row, without the outer bars.
std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::stringstream in(row.substr(1));
  for (std::string cell; std::getline(in, cell, '|');)
    out.push_back(trim(cell));
  return out;
}

std::optional<Family> family_of(const std::string& label) {
  for (Family f : kFamilies) {
    if (label == to_string(f)) return f;
  }
  return std::nullopt;
}

// "65%" -> 65, "wait 500us" -> 500, "quota 900m" -> 900, "-" -> 0.
int setting_of(const std::string& label) {
  const auto digit = label.find_first_of("0123456789");
  return digit == std::string::npos ? 0 : std::atoi(label.c_str() + digit);
}

}  // namespace

Result<std::vector<SavedService>> parse_saved_run(std::istream& in) {
  std::vector<SavedService> out;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.rfind("### ", 0) == 0) {
      auto kind = parse_service(trim(line.substr(4)));
      if (kind) out.push_back({*kind, {}});
      continue;
    }
    if (out.empty() || line.rfind("| ", 0) != 0) continue;
    const auto row = cells(line);
    if (row.size() < 7 || row[0] == "BE" || row[0].rfind("---", 0) == 0) continue;
    auto mix = parse_be_mix(row[0]);
    auto family = family_of(row[1]);
    if (!mix || !family) {
      return make_error(ErrorCode::kParse, "line " + std::to_string(line_no) +
                                               ": not a frontier point (BE \"" + row[0] +
                                               "\", configuration \"" + row[1] + "\")");
    }
    Point p;
    p.mix = *mix;
    p.family = *family;
    p.setting = setting_of(row[2]);
    p.p50_ms = std::atof(row[3].c_str());
    p.p99_ms = std::atof(row[4].c_str());
    p.vs_alone.ratio = std::atof(row[5].c_str());  // "1.02" or "1.02 [0.95-1.10]"
    p.vs_alone.rounds = 1;
    p.be_share_of_idle = std::atof(row[6].c_str());
    out.back().points.push_back(p);
  }
  return out;
}

}  // namespace gleaner::bench::frontier
