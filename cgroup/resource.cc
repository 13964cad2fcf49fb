#include "cgroup/resource.h"

#include <algorithm>
#include <array>
#include <string>

#include "cgroup/parsers.h"

namespace gleaner::cgroup {
namespace {

// v1 prints "no limit" as the largest page-aligned value; anything this large is unlimited.
constexpr int64_t kV1UnlimitedFloor = int64_t{1} << 62;
constexpr int64_t kMaxQuotaUs = int64_t{1} << 40;

constexpr std::array<ResourceSpec, 26> kTable{{
    {Resource::kCpuUsage, "cpu_usage", "cpuacct", "cpuacct.usage", "cpu.stat", 0, false},
    {Resource::kCpuStat, "cpu_stat", "cpu", "cpu.stat", "cpu.stat", 0, false},
    {Resource::kCpuQuota, "cpu_quota", "cpu", "cpu.cfs_quota_us", "cpu.max", 1, true},
    {Resource::kCpuPeriod, "cpu_period", "cpu", "cpu.cfs_period_us", "cpu.max", 2, true},
    {Resource::kCpuShares, "cpu_shares", "cpu", "cpu.shares", "cpu.weight", 0, true},
    {Resource::kCpuIdle, "cpu_idle", "cpu", "cpu.idle", "cpu.idle", 0, true},
    {Resource::kCpuBurst, "cpu_burst", "cpu", "cpu.cfs_burst_us", "cpu.max.burst", 0, true},
    {Resource::kCpusetCpus, "cpuset_cpus", "cpuset", "cpuset.cpus", "cpuset.cpus", 0, true},
    {Resource::kMemoryUsage, "memory_usage", "memory", "memory.usage_in_bytes", "memory.current", 0,
     false},
    {Resource::kMemoryLimit, "memory_limit", "memory", "memory.limit_in_bytes", "memory.max", 0,
     true},
    {Resource::kMemoryHigh, "memory_high", "memory", "memory.high", "memory.high", 0, true},
    {Resource::kMemoryMin, "memory_min", "memory", "memory.min", "memory.min", 0, true},
    {Resource::kMemoryLow, "memory_low", "memory", "memory.low", "memory.low", 0, true},
    {Resource::kMemoryStat, "memory_stat", "memory", "memory.stat", "memory.stat", 0, false},
    {Resource::kMemoryOomGroup, "memory_oom_group", "memory", "memory.oom.group",
     "memory.oom.group", 0, true},
    {Resource::kMemoryWmarkRatio, "memory_wmark_ratio", "memory", "memory.wmark_ratio",
     "memory.wmark_ratio", 0, true},
    {Resource::kMemoryWmarkScaleFactor, "memory_wmark_scale_factor", "memory",
     "memory.wmark_scale_factor", "memory.wmark_scale_factor", 0, true},
    {Resource::kMemoryWmarkMinAdj, "memory_wmark_min_adj", "memory", "memory.wmark_min_adj",
     "memory.wmark_min_adj", 0, true},
    {Resource::kMemoryUsePriorityOom, "memory_use_priority_oom", "memory",
     "memory.use_priority_oom", "memory.use_priority_oom", 0, true},
    {Resource::kMemoryPriority, "memory_priority", "memory", "memory.priority", "memory.priority",
     0, true},
    {Resource::kCpuPressure, "cpu_pressure", "cpu", nullptr, "cpu.pressure", 0, false},
    {Resource::kMemoryPressure, "memory_pressure", "memory", nullptr, "memory.pressure", 0, false},
    {Resource::kIoPressure, "io_pressure", "blkio", nullptr, "io.pressure", 0, false},
    {Resource::kThreads, "threads", "cpu", "tasks", "cgroup.threads", 0, false},
    {Resource::kProcs, "procs", "cpu", "cgroup.procs", "cgroup.procs", 0, false},
    {Resource::kCpusetEffective, "cpuset_effective", "cpuset", "cpuset.effective_cpus",
     "cpuset.cpus.effective", 0, false},
}};

bool is_numeric(Resource r) {
  return r != Resource::kCpusetCpus && r != Resource::kCpuStat && r != Resource::kMemoryStat &&
         r != Resource::kThreads && r != Resource::kProcs && r < Resource::kCpuPressure;
}

Error invalid(Resource r, std::string_view value, const std::string& why) {
  return make_error(ErrorCode::kInvalidArgument,
                    std::string(to_string(r)) + " value \"" + std::string(value) + "\": " + why);
}

// Field `field` (1-based) of a whitespace-separated line.
std::string_view field_of(std::string_view content, int field) {
  auto t = trim(content);
  for (int i = 1; i < field; ++i) {
    auto space = t.find(' ');
    if (space == std::string_view::npos) return {};
    t = trim(t.substr(space + 1));
  }
  return t.substr(0, t.find(' '));
}

}  // namespace

const ResourceSpec& spec_of(Resource resource) {
  return kTable[static_cast<size_t>(resource)];
}

const char* to_string(Resource resource) {
  return spec_of(resource).name;
}

std::optional<Resource> resource_named(std::string_view name) {
  for (const auto& spec : kTable) {
    if (name == spec.name) return spec.resource;
  }
  return std::nullopt;
}

Status validate_value(Resource resource, std::string_view value) {
  if (!spec_of(resource).writable) return invalid(resource, value, "not a writable resource");
  if (resource == Resource::kCpusetCpus) {
    auto cpus = parse_cpu_list(value);
    if (!cpus) return invalid(resource, value, cpus.error().message);
    if (cpus->empty()) return invalid(resource, value, "an empty cpuset starves its tasks");
    return ok_status();
  }
  auto number = parse_int_value(value);
  if (!number) return invalid(resource, value, "not an integer");
  int64_t v = *number;
  switch (resource) {
    case Resource::kCpuQuota:
      if (v != kUnlimited && (v < 1000 || v > kMaxQuotaUs)) {
        return invalid(resource, value, "must be -1 or 1000..2^40 us");
      }
      break;
    case Resource::kCpuPeriod:
      if (v < 1000 || v > 1000000) return invalid(resource, value, "must be 1000..1000000 us");
      break;
    case Resource::kCpuShares:
      if (v < 2 || v > 262144) return invalid(resource, value, "must be 2..262144");
      break;
    case Resource::kCpuIdle:
      if (v != 0 && v != 1) return invalid(resource, value, "must be 0 or 1");
      break;
    case Resource::kCpuBurst:
      if (v < 0 || v > kMaxQuotaUs) return invalid(resource, value, "must be 0..2^40 us");
      break;
    case Resource::kMemoryOomGroup:
    case Resource::kMemoryUsePriorityOom:
      if (v != 0 && v != 1) return invalid(resource, value, "must be 0 or 1");
      break;
    case Resource::kMemoryWmarkRatio:
      if (v < 0 || v > 100) return invalid(resource, value, "must be 0..100");
      break;
    case Resource::kMemoryWmarkScaleFactor:
      if (v < 1 || v > 1000) return invalid(resource, value, "must be 1..1000");
      break;
    case Resource::kMemoryWmarkMinAdj:
      if (v < -25 || v > 50) return invalid(resource, value, "must be -25..50");
      break;
    case Resource::kMemoryPriority:
      if (v < 0 || v > 12) return invalid(resource, value, "must be 0..12");
      break;
    default:  // memory byte values
      if (v != kUnlimited && v < 0) return invalid(resource, value, "must be -1 or >= 0");
      break;
  }
  return ok_status();
}

Result<std::string> logical_from_file(Resource resource, CgroupVersion version,
                                      std::string_view content) {
  const bool v2 = version == CgroupVersion::kV2;
  if (resource == Resource::kCpusetCpus || resource == Resource::kCpusetEffective) {
    auto cpus = parse_cpu_list(content);
    if (!cpus) return cpus.error();
    return format_cpu_list(*cpus);
  }
  if (!is_numeric(resource)) return std::string(trim(content));
  std::string_view text = content;
  int field = spec_of(resource).v2_field;
  if (v2 && field > 0) text = field_of(content, field);
  auto number = parse_int_value(text);
  if (!number) return number.error();
  int64_t v = *number;
  if (!v2 && v >= kV1UnlimitedFloor) v = kUnlimited;
  if (v2 && resource == Resource::kCpuShares) v = weight_to_shares(v);
  return std::to_string(v);
}

Result<std::string> file_from_logical(Resource resource, CgroupVersion version,
                                      std::string_view logical, std::string_view current) {
  if (auto ok = validate_value(resource, logical); !ok) return ok.error();
  if (resource == Resource::kCpusetCpus) return format_cpu_list(*parse_cpu_list(logical));
  int64_t v = *parse_int_value(logical);
  if (version != CgroupVersion::kV2) return std::to_string(v);
  // Plain numbers with no "max": -1 is a value (wmark_min_adj), not unlimited.
  if (resource >= Resource::kMemoryOomGroup && resource <= Resource::kMemoryPriority)
    return std::to_string(v);
  if (resource == Resource::kCpuShares) return std::to_string(shares_to_weight(v));
  if (resource == Resource::kCpuQuota || resource == Resource::kCpuPeriod) {
    CpuMax max;
    if (auto parsed = parse_cpu_max(current)) max = *parsed;
    if (resource == Resource::kCpuQuota) max.quota_us = v;
    if (resource == Resource::kCpuPeriod) max.period_us = v;
    return format_cpu_max(max);
  }
  return format_v2_value(v);
}

int64_t shares_to_weight(int64_t shares) {
  shares = std::clamp<int64_t>(shares, 2, 262144);
  return 1 + ((shares - 2) * 9999) / 262142;
}

int64_t weight_to_shares(int64_t weight) {
  weight = std::clamp<int64_t>(weight, 1, 10000);
  return 2 + ((weight - 1) * 262142) / 9999;
}

Direction direction_of(Resource resource, std::string_view old_logical,
                       std::string_view new_logical) {
  if (resource == Resource::kCpusetCpus) {
    auto before = parse_cpu_list(old_logical);
    auto after = parse_cpu_list(new_logical);
    if (!before || !after) return Direction::kNeutral;
    bool grows = std::includes(after->begin(), after->end(), before->begin(), before->end());
    bool shrinks = std::includes(before->begin(), before->end(), after->begin(), after->end());
    if (grows && shrinks) return Direction::kNeutral;
    if (grows) return Direction::kWiden;
    if (shrinks) return Direction::kNarrow;
    return Direction::kMixed;
  }
  if (resource != Resource::kCpuQuota && resource != Resource::kMemoryLimit &&
      resource != Resource::kMemoryHigh) {
    return Direction::kNeutral;
  }
  auto before = parse_int_value(old_logical);
  auto after = parse_int_value(new_logical);
  if (!before || !after || *before == *after) return Direction::kNeutral;
  if (*after == kUnlimited) return Direction::kWiden;
  if (*before == kUnlimited) return Direction::kNarrow;
  return *after > *before ? Direction::kWiden : Direction::kNarrow;
}

}  // namespace gleaner::cgroup
