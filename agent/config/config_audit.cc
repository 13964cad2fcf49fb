#include "agent/config/config_audit.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "common/json_util.h"
#include "common/strings.h"

namespace gleaner::agent::config {
namespace {

using enum FieldStatus;

struct Field {
  std::string path;  // relative to a strategy; "x.**": x and anything beneath it
  FieldStatus status;
};

// Koordinator v1.8's fields (apis/configuration/slo_controller_config.go,
// apis/slo/v1alpha1/nodeslo_types.go), with what this version does with each.
const std::vector<Field>& colocation_fields() {
  static const std::vector<Field> f = {
      {"enable", kEnforced},
      {"metricAggregateDurationSeconds", kEnforced},
      {"metricReportIntervalSeconds", kEnforced},
      {"metricAggregatePolicy.**", kNotEnforced},
      {"metricMemoryCollectPolicy", kNotEnforced},
      {"cpuReclaimThresholdPercent", kEnforced},
      {"cpuCalculatePolicy", kEnforced},
      {"memoryReclaimThresholdPercent", kEnforced},
      {"memoryCalculatePolicy", kEnforced},
      {"degradeTimeMinutes", kEnforced},
      {"updateTimeThresholdSeconds", kEnforced},  // by gleaner-scheduler (--slo-config)
      {"resourceDiffThreshold", kEnforced},       // by gleaner-scheduler (--slo-config)
      {"midReclaimMode", kNotEnforced},
      {"midCPUThresholdPercent", kNotEnforced},
      {"midMemoryThresholdPercent", kNotEnforced},
      {"midUnallocatedPercent", kNotEnforced},
      {"midStaticCPUReservedPercent", kNotEnforced},
      {"midStaticMemoryReservedPercent", kNotEnforced},
      {"batchCPUThresholdPercent", kEnforced},
      {"batchMemoryThresholdPercent", kEnforced},
      {"extensions.**", kNotEnforced},
  };
  return f;
}

const std::vector<Field>& threshold_fields() {
  static const std::vector<Field> f = {
      {"enable", kEnforced},
      {"cpuSuppressThresholdPercent", kEnforced},
      {"cpuSuppressMinPercent", kEnforced},
      {"cpuSuppressPolicy", kEnforced},
      {"cpuSuppressMode", kEnforced},             // Gleaner's
      {"cpuSuppressMinCPUs", kEnforced},          // Gleaner's
      {"cpuSloWaitTargetMicros", kEnforced},      // Gleaner's (cpuSuppressMode slo)
      {"cpuSloMinWaitTargetMicros", kEnforced},   // Gleaner's
      {"cpuSloObjectiveWaitPercent", kEnforced},  // Gleaner's
      {"cpuSloFloorPercent", kEnforced},          // Gleaner's
      {"cpuSloThresholdCeiling", kEnforced},      // Gleaner's
      {"memoryEvictThresholdPercent", kEnforced},
      {"memoryEvictLowerPercent", kEnforced},
      {"memoryAllocatableEvictThresholdPercent", kNotEnforced},
      {"memoryAllocatableEvictLowerPercent", kNotEnforced},
      {"cpuEvictBESatisfactionUpperPercent", kEnforced},
      {"cpuEvictBESatisfactionLowerPercent", kEnforced},
      {"cpuEvictBEUsageThresholdPercent", kEnforced},
      {"cpuEvictTimeWindowSeconds", kEnforced},
      {"cpuEvictThresholdPercent", kNotEnforced},
      {"cpuEvictLowerPercent", kNotEnforced},
      {"cpuAllocatableEvictThresholdPercent", kNotEnforced},
      {"cpuAllocatableEvictLowerPercent", kNotEnforced},
      {"cpuEvictPolicy", kNotEnforced},
      {"evictEnabledPriorityThreshold", kNotEnforced},
      {"allocatableEvictPriorityThreshold", kNotEnforced},
  };
  return f;
}

std::vector<Field> qos_fields() {
  std::vector<Field> f = {{"policies.cpuPolicy", kNotEnforced},
                          {"policies.netQOSPolicy", kNotEnforced},
                          {"systemClass.**", kNotEnforced},
                          {"cgroupRoot.**", kNotEnforced}};
  for (std::string cls : {"lsrClass", "lsClass", "beClass"}) {
    // CPU QoS acts on BE only (cpu.idle); group identity and core scheduling are kernel
    // features this version does not drive.
    const FieldStatus cpu_enable = cls == "beClass" ? kEnforced : kNotEnforced;
    auto add = [&](const std::string& rest, FieldStatus s) {
      std::string field = cls;
      f.push_back({field.append(".").append(rest), s});
    };
    add("cpuQOS.enable", cpu_enable);
    add("cpuQOS.schedIdle", cpu_enable);
    add("cpuQOS.groupIdentity", kNotEnforced);
    add("cpuQOS.coreExpeller", kNotEnforced);
    // The watermark and OOM priority knobs where the kernel has the files (Alibaba Cloud
    // Linux); oomKillGroup as memory.oom.group on v2.
    for (const char* m :
         {"enable", "minLimitPercent", "lowLimitPercent", "throttlingPercent", "wmarkRatio",
          "wmarkScalePermill", "wmarkMinAdj", "priorityEnable", "priority", "oomKillGroup"})
      add(std::string("memoryQOS.") + m, kEnforced);
    for (const char* m :
         {"pageCacheEnable", "pageCacheLimitPercent", "pageCacheLimitSize", "pageCacheReclaimSync"})
      add(std::string("memoryQOS.") + m, kNotEnforced);
    for (const char* r : {"enable", "catRangeStartPercent", "catRangeEndPercent", "mbaPercent"})
      add(std::string("resctrlQOS.") + r, kEnforced);
    add("blkioQOS.**", kNotEnforced);
    add("networkQOS.**", kNotEnforced);
  }
  return f;
}

const std::vector<Field>& cpu_burst_fields() {
  static const std::vector<Field> f = {{"policy", kEnforced},
                                       {"cpuBurstPercent", kEnforced},
                                       {"cfsQuotaBurstPercent", kEnforced},
                                       {"cfsQuotaBurstPeriodSeconds", kEnforced},
                                       {"sharePoolThresholdPercent", kEnforced}};
  return f;
}

const std::vector<Field>& system_fields() {
  static const std::vector<Field> f = {
      {"minFreeKbytesFactor", kEnforced},      {"watermarkScaleFactor", kEnforced},
      {"memcgReapBackGround", kEnforced},      {"schedGroupIdentityEnabled", kNotEnforced},
      {"schedIdleSaverWmark", kNotEnforced},   {"schedFeatures.**", kNotEnforced},
      {"pageCacheLimitEnabled", kNotEnforced}, {"totalNetworkBandwidth", kNotEnforced}};
  return f;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// One key's schema: every known path (lower case, list indexes as "[]") with its status;
// containers (objects holding known fields) have no notice of their own.
struct Schema {
  struct Entry {
    FieldStatus status = kEnforced;
    bool container = false;
    bool subtree = false;
  };
  std::map<std::string, Entry> paths;
  std::map<std::string, std::vector<std::string>> children;  // parent -> spelled names

  void add(const std::string& path, FieldStatus status) {
    std::string p = path;
    bool subtree = false;
    if (p.size() > 3 && p.ends_with(".**")) {
      p.resize(p.size() - 3);
      subtree = true;
    }
    // Every prefix is a container.
    std::string parent;
    size_t start = 0;
    while (true) {
      const size_t dot = p.find('.', start);
      const std::string name = p.substr(start, dot == std::string::npos ? dot : dot - start);
      const std::string here = parent.empty() ? lower(name) : parent + "." + lower(name);
      auto& kids = children[parent];
      const std::string spelled = name.ends_with("[]") ? name.substr(0, name.size() - 2) : name;
      if (std::find(kids.begin(), kids.end(), spelled) == kids.end()) kids.push_back(spelled);
      if (dot == std::string::npos) {
        paths[here] = Entry{status, false, subtree};
        return;
      }
      // A list ("nodeConfigs[]") is known as itself too ("nodeConfigs").
      if (here.ends_with("[]"))
        paths.try_emplace(here.substr(0, here.size() - 2), Entry{kEnforced, true});
      paths.try_emplace(here, Entry{kEnforced, true, false});
      parent = here;
      start = dot + 1;
    }
  }
  // A strategy's fields under `prefix` ("" for the top level), and per-node entries.
  void add_strategy(const std::string& prefix, const std::vector<Field>& fields) {
    for (const auto& f : fields)
      add(prefix + f.path, f.status);
  }
  void add_node_list(const std::string& list, const std::vector<Field>& fields) {
    add(list + "[].name", kEnforced);
    add(list + "[].nodeSelector.**", kEnforced);
    add_strategy(list + "[].", fields);
  }
};

const Schema* schema_of(std::string_view key) {
  static const std::map<std::string, Schema, std::less<>> schemas = [] {
    std::map<std::string, Schema, std::less<>> m;
    m["colocation-config"].add_strategy("", colocation_fields());
    m["colocation-config"].add_node_list("nodeConfigs", colocation_fields());
    const std::pair<const char*, std::vector<Field>> cluster_node[] = {
        {"resource-threshold-config", threshold_fields()},
        {"resource-qos-config", qos_fields()},
        {"cpu-burst-config", cpu_burst_fields()},
        {"system-config", system_fields()}};
    for (const auto& [key, fields] : cluster_node) {
      m[key].add_strategy("clusterStrategy.", fields);
      m[key].add_node_list("nodeStrategies", fields);
    }
    return m;
  }();
  auto it = schemas.find(key);
  return it == schemas.end() ? nullptr : &it->second;
}

// The entry for `norm` (lower case, "[]" indexes), or the subtree one of its ancestors.
const Schema::Entry* find_entry(const Schema& schema, const std::string& norm) {
  if (auto it = schema.paths.find(norm); it != schema.paths.end()) return &it->second;
  for (size_t dot = norm.rfind('.'); dot != std::string::npos && dot > 0;
       dot = norm.rfind('.', dot - 1)) {
    auto it = schema.paths.find(norm.substr(0, dot));
    if (it != schema.paths.end() && it->second.subtree) return &it->second;
  }
  return nullptr;
}

std::string closest(const std::vector<std::string>& names, std::string_view name) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, name.size() / 4) + 1;
  for (const auto& n : names) {
    const size_t d = edit_distance(n, name);
    if (d < best_distance) {
      best_distance = d;
      best = n;
    }
  }
  return best;
}

void walk(const Schema& schema, const Json& value, const std::string& shown,
          const std::string& norm, std::vector<FieldNotice>& out) {
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i)
      walk(schema, value[i], shown + "[" + std::to_string(i) + "]", norm + "[]", out);
    return;
  }
  if (!value.is_object()) return;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it->is_null()) continue;
    const std::string& name = it.key();
    const std::string shown_child = join_below(shown, ".", name);
    const std::string norm_child = join_below(norm, ".", lower(name));
    const Schema::Entry* entry = find_entry(schema, norm_child);
    if (entry == nullptr) {
      auto kids = schema.children.find(norm);
      const std::string guess =
          kids == schema.children.end() ? std::string() : closest(kids->second, name);
      out.push_back({shown_child, "unknown field " + shown_child +
                                      (guess.empty() ? "" : " (did you mean " + guess + "?)") +
                                      "; ignored, as Koordinator ignores it"});
      continue;
    }
    if (entry->status == kNotEnforced) {
      out.push_back({shown_child, shown_child +
                                      " is Koordinator's but not enforced by this version of "
                                      "gleaner-agent; it has no effect"});
      continue;
    }
    if (!entry->subtree) walk(schema, *it, shown_child, norm_child, out);
  }
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<FieldNotice> audit_key(std::string_view key, const Json& value) {
  std::vector<FieldNotice> out;
  if (const Schema* schema = schema_of(key)) walk(*schema, value, "", "", out);
  return out;
}

std::string audit_other_key(std::string_view file_name) {
  static const std::map<std::string, const char*, std::less<>> others = {
      {"host-application-config", "QoS of applications outside Kubernetes"},
      {"cpu-normalization-config", "CPU normalization by CPU model"},
      {"resource-amplification-config", "allocatable amplification"}};
  if (auto it = others.find(file_name); it != others.end()) {
    return "data key " + std::string(file_name) + " (Koordinator's " + it->second +
           ") is not enforced by this version of gleaner-agent; it has no effect";
  }
  std::vector<std::string> names = {"colocation-config", "resource-threshold-config",
                                    "resource-qos-config", "cpu-burst-config", "system-config"};
  for (const auto& [k, v] : others)
    names.push_back(k);
  const std::string guess = closest(names, file_name);
  return "unknown data key " + std::string(file_name) +
         (guess.empty() ? "" : " (did you mean " + guess + "?)") + "; ignored";
}

std::vector<std::pair<std::string, FieldStatus>> koordinator_fields(std::string_view key) {
  std::vector<Field> fields;
  if (key == "colocation-config") fields = colocation_fields();
  if (key == "resource-threshold-config") fields = threshold_fields();
  if (key == "resource-qos-config") fields = qos_fields();
  if (key == "cpu-burst-config") fields = cpu_burst_fields();
  if (key == "system-config") fields = system_fields();
  std::vector<std::pair<std::string, FieldStatus>> out;
  for (auto& f : fields) {
    if (f.path.ends_with(".**")) f.path.resize(f.path.size() - 3);
    out.emplace_back(std::move(f.path), f.status);
  }
  return out;
}

FieldLookup lookup_field(std::string_view key, std::string_view path) {
  FieldLookup out;
  const Schema* schema = schema_of(key);
  if (schema == nullptr) return out;
  const Schema::Entry* entry = find_entry(*schema, lower(path));
  if (entry == nullptr) return out;
  out.known = true;
  out.status = entry->status;
  return out;
}

}  // namespace gleaner::agent::config
