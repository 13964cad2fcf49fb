#include "cgroup/hierarchy.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "cgroup/parsers.h"

namespace gleaner::cgroup {
namespace {

constexpr int64_t kDefaultPeriodUs = 100000;
constexpr int64_t kMinQuotaUs = 1000;  // the kernel's smallest CFS quota (1 ms)

// The ancestors of `cgroup` that are in `values`, nearest first.
std::vector<std::string> ancestors_in(const std::string& cgroup,
                                      const std::map<std::string, LimitNode>& values) {
  std::vector<std::string> out;
  std::string p = cgroup;
  while (!p.empty()) {
    p = parent_cgroup(p);
    if (values.count(p) > 0) out.push_back(p);
  }
  return out;
}

int64_t period_of(const LimitNode& node) {
  return node.period_us > 0 ? node.period_us : kDefaultPeriodUs;
}

// The largest quota `cgroup` (with period `period`) may hold under its limited ancestors'
// final values; nullopt when none is limited.
std::optional<int64_t> quota_ceiling(const std::string& cgroup, int64_t period,
                                     const std::map<std::string, LimitNode>& final_values) {
  std::optional<int64_t> ceiling;
  for (const auto& a : ancestors_in(cgroup, final_values)) {
    const LimitNode& node = final_values.at(a);
    auto quota = parse_int_value(node.value);
    if (!quota || *quota == kUnlimited) continue;
    const int64_t allowed = *quota * period / period_of(node);
    ceiling = std::min(ceiling.value_or(std::numeric_limits<int64_t>::max()), allowed);
  }
  return ceiling;
}

std::string fit_quota(const std::string& cgroup, const std::string& desired, int64_t period,
                      const std::map<std::string, LimitNode>& final_values) {
  auto wish = parse_int_value(desired);
  if (!wish) return desired;  // not a quota: leave it to validation
  auto ceiling = quota_ceiling(cgroup, period, final_values);
  if (!ceiling) return desired;
  if (*wish != kUnlimited && *wish <= *ceiling) return desired;
  // An unlimited child inherits the ancestor's limit: the kernel accepts it as it is.
  if (*wish == kUnlimited) return desired;
  // Below the kernel's smallest quota (a child with a shorter period than its ancestor's),
  // no own quota fits: unlimited inherits the ancestor's limit, which is the same bound.
  if (*ceiling < kMinQuotaUs) return "-1";
  return std::to_string(*ceiling);
}

std::string fit_cpus(const std::string& cgroup, const std::string& desired,
                     const std::map<std::string, LimitNode>& final_values) {
  auto wish = parse_cpu_list(desired);
  if (!wish || wish->empty()) return desired;
  for (const auto& a : ancestors_in(cgroup, final_values)) {
    auto allowed = parse_cpu_list(final_values.at(a).value);
    if (!allowed || allowed->empty()) continue;  // the nearest ancestor that has CPUs
    std::vector<int> inside;
    std::set_intersection(wish->begin(), wish->end(), allowed->begin(), allowed->end(),
                          std::back_inserter(inside));
    if (inside.size() == wish->size()) return desired;
    // With nothing left, the parent's CPUs: a cgroup with tasks may not be left without any.
    return format_cpu_list(inside.empty() ? *allowed : inside);
  }
  return desired;
}

bool same_value(HierarchyRule rule, const std::string& a, const std::string& b) {
  if (rule == HierarchyRule::kCpusWithinParent) {
    auto x = parse_cpu_list(a);
    auto y = parse_cpu_list(b);
    if (x && y) return *x == *y;
  } else {
    auto x = parse_int_value(a);
    auto y = parse_int_value(b);
    if (x && y) return *x == *y;
  }
  return a == b;
}

}  // namespace

HierarchyRule hierarchy_rule(Resource resource, CgroupVersion version) {
  if (version == CgroupVersion::kV2) return HierarchyRule::kNone;
  if (resource == Resource::kCpuQuota) return HierarchyRule::kQuotaWithinParent;
  if (resource == Resource::kCpusetCpus) return HierarchyRule::kCpusWithinParent;
  return HierarchyRule::kNone;
}

std::string parent_cgroup(const std::string& cgroup) {
  auto slash = cgroup.rfind('/');
  return slash == std::string::npos ? std::string() : cgroup.substr(0, slash);
}

std::map<std::string, FittedValue> fit_to_ancestors(
    HierarchyRule rule, const std::map<std::string, LimitNode>& tree,
    const std::map<std::string, std::string>& requests, std::map<std::string, std::string>& held) {
  std::map<std::string, FittedValue> out;
  std::map<std::string, LimitNode> final_values;
  // A map orders every path before the paths it is a prefix of: parents come first.
  for (const auto& [cgroup, node] : tree) {
    auto req = requests.find(cgroup);
    auto kept = held.find(cgroup);
    const bool requested = req != requests.end();
    std::string desired = requested ? req->second : kept != held.end() ? kept->second : node.value;
    std::string value = desired;
    if (rule == HierarchyRule::kQuotaWithinParent) {
      value = fit_quota(cgroup, desired, period_of(node), final_values);
    } else if (rule == HierarchyRule::kCpusWithinParent) {
      value = fit_cpus(cgroup, desired, final_values);
    }
    final_values[cgroup] = LimitNode{value, node.period_us};
    FittedValue::Kind kind = FittedValue::Kind::kRequested;
    if (!same_value(rule, value, desired)) {
      held[cgroup] = desired;
      kind = FittedValue::Kind::kClamped;
    } else if (kept != held.end()) {
      held.erase(kept);
      if (!requested) kind = FittedValue::Kind::kReleased;
    }
    if (!same_value(rule, value, node.value)) out[cgroup] = FittedValue{value, kind};
  }
  return out;
}

}  // namespace gleaner::cgroup
