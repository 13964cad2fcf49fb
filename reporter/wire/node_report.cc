#include "reporter/wire/node_report.h"

#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "common/json_util.h"

namespace gleaner::reporter {
namespace {

Error field_error(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::kParse, "node report: " + path + ": " + what);
}

std::string join(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// Node and cluster names as Kubernetes spells them (DNS-1123: lowercase letters, digits,
// '-' and '.', at most `max` characters): a report cannot smuggle a 512 KiB name, a NUL or
// bytes that are not text into the scheduler's tables and answers.
Status check_name(const std::string& name, const char* field, size_t max) {
  if (name.size() > max)
    return field_error(field, "longer than " + std::to_string(max) + " characters");
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok) return field_error(field, "not a DNS-1123 name (lowercase letters, digits, '-', '.')");
  }
  return ok_status();
}

// Reads the members of one JSON object and, at the end, rejects any member nobody asked
// for: a typo in a field name must not silently read as "absent".
class ObjectReader {
 public:
  ObjectReader(const Json& json, std::string path) : json_(json), path_(std::move(path)) {}

  Status check_object() const {
    if (!json_.is_object())
      return field_error(label(), std::string("expected an object, got ") + json_.type_name());
    return ok_status();
  }

  Result<const Json*> member(const std::string& key) {
    seen_.insert(key);
    auto it = json_.find(key);
    if (it == json_.end()) return field_error(join(path_, key), "missing");
    return &*it;
  }

  Result<int64_t> non_negative_int(const std::string& key) {
    auto m = member(key);
    if (!m) return m.error();
    return read_non_negative(**m, join(path_, key));
  }

  Result<std::string> string(const std::string& key, bool allow_empty) {
    auto m = member(key);
    if (!m) return m.error();
    if (!(*m)->is_string()) return type_error(key, "a string", **m);
    std::string value = (*m)->get<std::string>();
    if (!allow_empty && value.empty()) return field_error(join(path_, key), "must not be empty");
    return value;
  }

  Result<bool> boolean(const std::string& key) {
    auto m = member(key);
    if (!m) return m.error();
    if (!(*m)->is_boolean()) return type_error(key, "a boolean", **m);
    return (*m)->get<bool>();
  }

  Status no_unknown_members() const {
    for (const auto& [key, value] : json_.items()) {
      if (!seen_.contains(key)) return field_error(join(path_, key), "unknown field");
    }
    return ok_status();
  }

  static Result<int64_t> read_non_negative(const Json& value, const std::string& path) {
    // Floats are refused even when integral: amounts are integers by contract.
    if (value.is_number_unsigned()) {
      if (value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return field_error(path, "out of range");
      }
      return static_cast<int64_t>(value.get<uint64_t>());
    }
    if (value.is_number_integer()) {
      if (value.get<int64_t>() < 0) return field_error(path, "must not be negative");
      return value.get<int64_t>();
    }
    return field_error(path,
                       std::string("expected a non-negative integer, got ") + value.type_name());
  }

  [[nodiscard]] std::string child(const std::string& key) const { return join(path_, key); }

 private:
  [[nodiscard]] std::string label() const { return path_.empty() ? "(root)" : path_; }
  Error type_error(const std::string& key, const char* expected, const Json& got) const {
    return field_error(join(path_, key),
                       std::string("expected ") + expected + ", got " + got.type_name());
  }

  const Json& json_;
  std::string path_;
  std::set<std::string> seen_;
};

#define GLEANER_TRY_ASSIGN(target, expr) \
  do {                                   \
    auto r_ = (expr);                    \
    if (!r_) return r_.error();          \
    (target) = std::move(r_.value());    \
  } while (0)

#define GLEANER_TRY_STATUS(expr) \
  do {                           \
    auto s_ = (expr);            \
    if (!s_) return s_.error();  \
  } while (0)

Json amounts_json(const ResourceAmounts& a) {
  return Json{{"cpuMillicores", a.cpu_millicores}, {"memoryBytes", a.memory_bytes}};
}

Json pod_json(const PodRef& p) {
  return Json{{"namespace", p.namespace_name}, {"name", p.name}, {"uid", p.uid}};
}

Result<ResourceAmounts> read_amounts(const Json& json, const std::string& path) {
  ObjectReader r(json, path);
  GLEANER_TRY_STATUS(r.check_object());
  ResourceAmounts a;
  GLEANER_TRY_ASSIGN(a.cpu_millicores, r.non_negative_int("cpuMillicores"));
  GLEANER_TRY_ASSIGN(a.memory_bytes, r.non_negative_int("memoryBytes"));
  GLEANER_TRY_STATUS(r.no_unknown_members());
  return a;
}

Result<ResourceAmounts> read_amounts_member(ObjectReader& r, const std::string& key) {
  auto m = r.member(key);
  if (!m) return m.error();
  return read_amounts(**m, r.child(key));
}

Result<PodRef> read_pod(ObjectReader& r) {
  PodRef p;
  GLEANER_TRY_ASSIGN(p.namespace_name, r.string("namespace", false));
  GLEANER_TRY_ASSIGN(p.name, r.string("name", false));
  GLEANER_TRY_ASSIGN(p.uid, r.string("uid", true));
  return p;
}

// Reads an array member, calling `read_item(element, path)` for each element.
template <typename T, typename F>
Result<std::vector<T>> read_array(ObjectReader& r, const std::string& key, F read_item) {
  auto m = r.member(key);
  if (!m) return m.error();
  if (!(*m)->is_array()) {
    return field_error(r.child(key), std::string("expected an array, got ") + (*m)->type_name());
  }
  std::vector<T> out;
  out.reserve((*m)->size());
  for (size_t i = 0; i < (*m)->size(); ++i) {
    auto item = read_item((**m)[i], r.child(key) + "[" + std::to_string(i) + "]");
    if (!item) return item.error();
    out.push_back(std::move(item.value()));
  }
  return out;
}

Result<BePodUsage> read_be_pod(const Json& json, const std::string& path) {
  ObjectReader r(json, path);
  GLEANER_TRY_STATUS(r.check_object());
  BePodUsage u;
  GLEANER_TRY_ASSIGN(u.pod, read_pod(r));
  GLEANER_TRY_ASSIGN(u.usage, read_amounts_member(r, "usage"));
  GLEANER_TRY_STATUS(r.no_unknown_members());
  return u;
}

Result<LsPodInterference> read_interference(const Json& json, const std::string& path) {
  ObjectReader r(json, path);
  GLEANER_TRY_STATUS(r.check_object());
  LsPodInterference i;
  GLEANER_TRY_ASSIGN(i.pod, read_pod(r));
  const Json* lat = nullptr;
  GLEANER_TRY_ASSIGN(lat, r.member("runqueueLatencyP99Micros"));
  if (!lat->is_null()) {
    GLEANER_TRY_ASSIGN(i.runqueue_latency_p99_us,
                       ObjectReader::read_non_negative(*lat, r.child("runqueueLatencyP99Micros")));
  }
  const Json* psi = nullptr;
  GLEANER_TRY_ASSIGN(psi, r.member("cpuPsiSomeAvg10"));
  if (!psi->is_null()) {
    if (!psi->is_number()) {
      return field_error(r.child("cpuPsiSomeAvg10"),
                         std::string("expected a number or null, got ") + psi->type_name());
    }
    double v = psi->get<double>();
    if (!std::isfinite(v) || v < 0 || v > 100) {
      return field_error(r.child("cpuPsiSomeAvg10"), "must be a percentage in [0, 100]");
    }
    i.cpu_psi_some_avg10 = v;
  }
  GLEANER_TRY_STATUS(r.no_unknown_members());
  return i;
}

Result<SuppressState> read_suppress(const Json& json, const std::string& path) {
  ObjectReader r(json, path);
  GLEANER_TRY_STATUS(r.check_object());
  SuppressState s;
  GLEANER_TRY_ASSIGN(s.active, r.boolean("active"));
  GLEANER_TRY_ASSIGN(s.policy, r.string("policy", false));
  if (s.policy != "cpuset" && s.policy != "cfsQuota" && s.policy != "none") {
    return field_error(r.child("policy"),
                       "unknown policy '" + s.policy + "' (expected cpuset, cfsQuota or none)");
  }
  GLEANER_TRY_ASSIGN(s.be_cpu_limit_millicores, r.non_negative_int("beCpuLimitMillicores"));
  GLEANER_TRY_STATUS(r.no_unknown_members());
  return s;
}

Result<UsageBreakdown> read_usage(const Json& json, const std::string& path) {
  ObjectReader r(json, path);
  GLEANER_TRY_STATUS(r.check_object());
  UsageBreakdown u;
  GLEANER_TRY_ASSIGN(u.node, read_amounts_member(r, "node"));
  GLEANER_TRY_ASSIGN(u.system, read_amounts_member(r, "system"));
  GLEANER_TRY_ASSIGN(u.ls, read_amounts_member(r, "ls"));
  GLEANER_TRY_ASSIGN(u.be, read_amounts_member(r, "be"));
  GLEANER_TRY_STATUS(r.no_unknown_members());
  return u;
}

}  // namespace

const char* to_string(BatchUnavailableReason reason) {
  switch (reason) {
    case BatchUnavailableReason::kDisabled:
      return "disabled";
    case BatchUnavailableReason::kDegraded:
      return "degraded";
    case BatchUnavailableReason::kStale:
      return "stale";
  }
  return "unknown";
}

Result<BatchUnavailableReason> parse_batch_unavailable_reason(std::string_view text) {
  if (text == "disabled") return BatchUnavailableReason::kDisabled;
  if (text == "degraded") return BatchUnavailableReason::kDegraded;
  if (text == "stale") return BatchUnavailableReason::kStale;
  return make_error(ErrorCode::kParse, "unknown batch unavailable reason '" + std::string(text) +
                                           "' (expected disabled, degraded or stale)");
}

Json to_json(const NodeReport& report) {
  Json be_pods = Json::array();
  for (const auto& p : report.be_pods) {
    Json item = pod_json(p.pod);
    item["usage"] = amounts_json(p.usage);
    be_pods.push_back(std::move(item));
  }
  Json interference = Json::array();
  for (const auto& i : report.interference) {
    Json item = pod_json(i.pod);
    item["runqueueLatencyP99Micros"] =
        i.runqueue_latency_p99_us ? Json(*i.runqueue_latency_p99_us) : Json(nullptr);
    item["cpuPsiSomeAvg10"] = i.cpu_psi_some_avg10 ? Json(*i.cpu_psi_some_avg10) : Json(nullptr);
    interference.push_back(std::move(item));
  }
  Json j = {
      {"version", report.version},
      {"node", report.node},
      {"cluster", report.cluster},
      {"sequence", report.sequence},
      {"timestampUnixMillis", report.timestamp_unix_ms},
      {"capacity", amounts_json(report.capacity)},
      {"allocatable", amounts_json(report.allocatable)},
      {"batchAllocatable",
       report.batch_allocatable ? amounts_json(*report.batch_allocatable) : Json(nullptr)},
      {"batchUnavailableReason", report.batch_unavailable_reason
                                     ? Json(to_string(*report.batch_unavailable_reason))
                                     : Json(nullptr)},
      {"usage",
       {{"node", amounts_json(report.usage.node)},
        {"system", amounts_json(report.usage.system)},
        {"ls", amounts_json(report.usage.ls)},
        {"be", amounts_json(report.usage.be)}}},
      {"bePods", std::move(be_pods)},
      {"suppress",
       {{"active", report.suppress.active},
        {"policy", report.suppress.policy},
        {"beCpuLimitMillicores", report.suppress.be_cpu_limit_millicores}}},
      {"interference", {{"lsPods", std::move(interference)}}},
  };
  if (!report.epoch.empty()) j["epoch"] = report.epoch;
  return j;
}

std::string to_json_text(const NodeReport& report) {
  return to_json(report).dump();
}

Result<NodeReport> node_report_from_json(const Json& json) {
  ObjectReader r(json, "");
  GLEANER_TRY_STATUS(r.check_object());
  NodeReport out;
  int64_t version = 0;
  GLEANER_TRY_ASSIGN(version, r.non_negative_int("version"));
  if (version != kNodeReportVersion) {
    return field_error("version", "unsupported version " + std::to_string(version) +
                                      " (this build reads version " +
                                      std::to_string(kNodeReportVersion) + ")");
  }
  out.version = static_cast<int>(version);
  GLEANER_TRY_ASSIGN(out.node, r.string("node", false));
  GLEANER_TRY_STATUS(check_name(out.node, "node", 253));
  GLEANER_TRY_ASSIGN(out.cluster, r.string("cluster", true));
  GLEANER_TRY_STATUS(check_name(out.cluster, "cluster", 63));
  if (json.contains("epoch")) {
    GLEANER_TRY_ASSIGN(out.epoch, r.string("epoch", false));
    if (out.epoch.size() > 64) return field_error("epoch", "longer than 64 characters");
  }
  int64_t sequence = 0;
  GLEANER_TRY_ASSIGN(sequence, r.non_negative_int("sequence"));
  out.sequence = static_cast<uint64_t>(sequence);
  GLEANER_TRY_ASSIGN(out.timestamp_unix_ms, r.non_negative_int("timestampUnixMillis"));
  GLEANER_TRY_ASSIGN(out.capacity, read_amounts_member(r, "capacity"));
  GLEANER_TRY_ASSIGN(out.allocatable, read_amounts_member(r, "allocatable"));

  const Json* batch = nullptr;
  GLEANER_TRY_ASSIGN(batch, r.member("batchAllocatable"));
  const Json* reason = nullptr;
  GLEANER_TRY_ASSIGN(reason, r.member("batchUnavailableReason"));
  if (batch->is_null() == reason->is_null()) {
    return field_error("batchAllocatable",
                       "exactly one of batchAllocatable and batchUnavailableReason must be "
                       "non-null");
  }
  if (!batch->is_null()) {
    GLEANER_TRY_ASSIGN(out.batch_allocatable, read_amounts(*batch, "batchAllocatable"));
  } else {
    if (!reason->is_string()) {
      return field_error("batchUnavailableReason",
                         std::string("expected a string, got ") + reason->type_name());
    }
    auto parsed = parse_batch_unavailable_reason(reason->get<std::string>());
    if (!parsed) return field_error("batchUnavailableReason", parsed.error().message);
    out.batch_unavailable_reason = *parsed;
  }

  const Json* usage = nullptr;
  GLEANER_TRY_ASSIGN(usage, r.member("usage"));
  GLEANER_TRY_ASSIGN(out.usage, read_usage(*usage, "usage"));
  GLEANER_TRY_ASSIGN(out.be_pods, read_array<BePodUsage>(r, "bePods", read_be_pod));
  const Json* suppress = nullptr;
  GLEANER_TRY_ASSIGN(suppress, r.member("suppress"));
  GLEANER_TRY_ASSIGN(out.suppress, read_suppress(*suppress, "suppress"));

  const Json* interference = nullptr;
  GLEANER_TRY_ASSIGN(interference, r.member("interference"));
  ObjectReader ir(*interference, "interference");
  GLEANER_TRY_STATUS(ir.check_object());
  GLEANER_TRY_ASSIGN(out.interference,
                     read_array<LsPodInterference>(ir, "lsPods", read_interference));
  GLEANER_TRY_STATUS(ir.no_unknown_members());
  GLEANER_TRY_STATUS(r.no_unknown_members());
  return out;
}

Result<NodeReport> parse_node_report(std::string_view text) {
  auto json = parse_json(text, "node report");
  if (!json) return json.error();
  return node_report_from_json(*json);
}

}  // namespace gleaner::reporter
