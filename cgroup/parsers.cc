#include "cgroup/parsers.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>

namespace gleaner::cgroup {
namespace {

Error bad(std::string_view what, std::string_view text) {
  std::string shown(text.substr(0, 80));
  return make_error(ErrorCode::kParse, std::string(what) + ": \"" + shown + "\"");
}

template <typename Int>
bool to_int(std::string_view text, Int& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

bool to_double(std::string_view text, double& out) {
  std::string copy(text);
  char* end = nullptr;
  out = std::strtod(copy.c_str(), &end);
  return !copy.empty() && end == copy.c_str() + copy.size();
}

// Splits on any run of the given separators, skipping empty pieces.
std::vector<std::string_view> split(std::string_view text, std::string_view seps) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = text.find_first_not_of(seps, pos);
    if (start == std::string_view::npos) break;
    size_t end = text.find_first_of(seps, start);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    pos = end;
  }
  return out;
}

Result<PsiLine> parse_psi_fields(std::string_view line) {
  PsiLine out;
  auto fields = split(line, " ");
  bool have_avg10 = false;
  bool have_total = false;
  for (size_t i = 1; i < fields.size(); ++i) {
    auto eq = fields[i].find('=');
    if (eq == std::string_view::npos) return bad("malformed PSI field", fields[i]);
    auto key = fields[i].substr(0, eq);
    auto value = fields[i].substr(eq + 1);
    double d = 0;
    if (key == "total") {
      if (!to_int(value, out.total_us)) return bad("malformed PSI total", value);
      have_total = true;
    } else if (to_double(value, d)) {
      if (key == "avg10") {
        out.avg10 = d;
        have_avg10 = true;
      } else if (key == "avg60") {
        out.avg60 = d;
      } else if (key == "avg300") {
        out.avg300 = d;
      }
    } else {
      return bad("malformed PSI average", fields[i]);
    }
  }
  if (!have_avg10 || !have_total) return bad("PSI line lacks avg10 or total", line);
  return out;
}

}  // namespace

Result<int64_t> parse_int_value(std::string_view text) {
  auto t = trim(text);
  if (t == "max" || t == "-1") return kUnlimited;
  int64_t value = 0;
  if (!to_int(t, value)) return bad("expected an integer or max", text);
  return value;
}

std::string format_v2_value(int64_t value) {
  return value == kUnlimited ? "max" : std::to_string(value);
}

Result<std::map<std::string, int64_t>> parse_flat_keyed(std::string_view text) {
  std::map<std::string, int64_t> out;
  for (auto line : split(text, "\n")) {
    auto fields = split(line, " ");
    if (fields.size() != 2) return bad("expected \"key value\"", line);
    int64_t value = 0;
    if (!to_int(fields[1], value)) {
      // Huge unsigned counters (hierarchical_memory_limit) saturate instead of failing.
      uint64_t big = 0;
      if (!to_int(fields[1], big)) return bad("expected an integer value", line);
      value = INT64_MAX;
    }
    out[std::string(fields[0])] = value;
  }
  return out;
}

Result<CpuMax> parse_cpu_max(std::string_view text) {
  auto fields = split(trim(text), " ");
  if (fields.empty() || fields.size() > 2) return bad("cpu.max: expected \"quota period\"", text);
  CpuMax out;
  auto quota = parse_int_value(fields[0]);
  if (!quota) return quota.error();
  out.quota_us = *quota;
  if (fields.size() == 2 && !to_int(fields[1], out.period_us)) {
    return bad("cpu.max: bad period", text);
  }
  return out;
}

std::string format_cpu_max(const CpuMax& value) {
  return format_v2_value(value.quota_us) + " " + std::to_string(value.period_us);
}

Result<Psi> parse_psi(std::string_view text) {
  Psi out;
  bool have_some = false;
  for (auto line : split(text, "\n")) {
    auto kind = line.substr(0, line.find(' '));
    auto parsed = parse_psi_fields(line);
    if (!parsed) return parsed.error();
    if (kind == "some") {
      out.some = *parsed;
      have_some = true;
    } else if (kind == "full") {
      out.full = *parsed;
    } else {
      return bad("PSI line must start with some or full", line);
    }
  }
  if (!have_some) return bad("PSI file lacks a some line", text);
  return out;
}

Result<std::vector<int>> parse_cpu_list(std::string_view text) {
  std::vector<int> cpus;
  for (auto range : split(trim(text), ",")) {
    auto dash = range.find('-');
    int first = 0;
    int last = 0;
    if (dash == std::string_view::npos) {
      if (!to_int(range, first)) return bad("bad CPU list", text);
      last = first;
    } else if (!to_int(range.substr(0, dash), first) || !to_int(range.substr(dash + 1), last) ||
               last < first) {
      return bad("bad CPU range", text);
    }
    if (first < 0 || last > 65535) return bad("CPU id out of range", text);
    for (int c = first; c <= last; ++c)
      cpus.push_back(c);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::vector<int> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1)
      ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(sorted[i]);
    if (j > i) out += '-' + std::to_string(sorted[j]);
    i = j + 1;
  }
  return out;
}

Result<ProcStatCpu> parse_proc_stat_cpu(std::string_view text) {
  auto line = text.substr(0, text.find('\n'));
  auto fields = split(line, " ");
  if (fields.size() < 5 || fields[0] != "cpu")
    return bad("/proc/stat: no aggregate cpu line", line);
  // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
  // already included in user/nice, so it is not added again.
  uint64_t v[8] = {};
  for (size_t i = 1; i < fields.size() && i <= 8; ++i) {
    if (!to_int(fields[i], v[i - 1])) return bad("/proc/stat: bad counter", line);
  }
  ProcStatCpu out;
  out.busy_ticks = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  out.total_ticks = out.busy_ticks + v[3] + v[4];
  return out;
}

Result<MemInfo> parse_meminfo(std::string_view text) {
  MemInfo out;
  bool total = false;
  bool available = false;
  for (auto line : split(text, "\n")) {
    auto fields = split(line, " ");
    if (fields.size() < 2) continue;
    uint64_t kib = 0;
    if (fields[0] == "MemTotal:" && to_int(fields[1], kib)) {
      out.total_bytes = kib * 1024;
      total = true;
    } else if (fields[0] == "MemAvailable:" && to_int(fields[1], kib)) {
      out.available_bytes = kib * 1024;
      available = true;
    }
  }
  if (!total || !available) return bad("/proc/meminfo lacks MemTotal or MemAvailable", text);
  return out;
}

Result<int64_t> memory_working_set(const std::map<std::string, int64_t>& stat, bool v1) {
  const std::string prefix = v1 ? "total_" : "";
  int64_t sum = 0;
  for (const char* key : {"inactive_anon", "active_anon", "unevictable"}) {
    auto it = stat.find(prefix + key);
    if (it == stat.end()) {
      return make_error(ErrorCode::kParse, "memory.stat lacks " + prefix + key);
    }
    sum += it->second;
  }
  return sum;
}

Result<int64_t> memory_working_set_from_text(std::string_view text, bool v1) {
  const std::string_view prefix = v1 ? "total_" : "";
  constexpr std::string_view kKeys[] = {"inactive_anon", "active_anon", "unevictable"};
  int64_t sum = 0;
  int found = 0;
  size_t pos = 0;
  while (pos < text.size() && found < 3) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.substr(0, prefix.size()) != prefix) continue;
    size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    std::string_view key = line.substr(prefix.size(), space - prefix.size());
    for (auto wanted : kKeys) {
      if (key != wanted) continue;
      int64_t value = 0;
      if (!to_int(line.substr(space + 1), value)) return bad("memory.stat: bad value", line);
      sum += value;
      ++found;
    }
  }
  if (found < 3) {
    return make_error(ErrorCode::kParse, "memory.stat lacks " + std::string(prefix) +
                                             "inactive_anon, active_anon or unevictable");
  }
  return sum;
}

Result<std::vector<int>> parse_id_list(std::string_view text) {
  std::vector<int> ids;
  for (auto field : split(text, "\n ")) {
    int id = 0;
    if (!to_int(field, id) || id <= 0) return bad("bad task id", field);
    ids.push_back(id);
  }
  return ids;
}

}  // namespace gleaner::cgroup
