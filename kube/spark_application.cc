#include "kube/spark_application.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "common/json_util.h"

namespace gleaner::kube {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<std::string> string_at(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

Result<int64_t> cores_milli(const Json& value, const std::string& where) {
  if (value.is_number()) {
    const double cores = value.get<double>();
    if (!std::isfinite(cores) || cores <= 0 || cores > 1e6) {
      return make_error(ErrorCode::kParse, where + ": cores must be a positive number");
    }
    return static_cast<int64_t>(std::ceil(cores * 1000));
  }
  auto q = quantity_from_json(value, where);
  if (!q) return q.error();
  return q->milli_value();
}

Result<SparkRole> parse_role(const Json& spec, const std::string& where, bool executor) {
  SparkRole role;
  auto fail = [&](const std::string& why) {
    return make_error(ErrorCode::kParse, where + ": " + why);
  };
  if (spec.is_null()) return role;
  if (!spec.is_object()) return fail("must be an object");
  if (auto it = spec.find("cores"); it != spec.end() && !it->is_null()) {
    auto c = cores_milli(*it, where + ".cores");
    if (!c) return c.error();
    role.cpu_request_milli = *c;
  }
  if (auto it = spec.find("coreRequest"); it != spec.end() && !it->is_null()) {
    auto c = cores_milli(*it, where + ".coreRequest");
    if (!c) return c.error();
    role.cpu_request_milli = *c;
  }
  if (auto it = spec.find("coreLimit"); it != spec.end() && !it->is_null()) {
    auto c = cores_milli(*it, where + ".coreLimit");
    if (!c) return c.error();
    role.cpu_limit_milli = *c;
  }
  for (auto [key, target] : {std::pair{"memory", &role.memory_mib}}) {
    if (auto it = spec.find(key); it != spec.end() && !it->is_null()) {
      if (!it->is_string()) return fail(std::string(key) + " must be a string such as \"2g\"");
      auto mib = parse_spark_memory_mib(it->get<std::string>());
      if (!mib) return fail(std::string(key) + ": " + mib.error().message);
      *target = *mib;
    }
  }
  if (auto it = spec.find("memoryOverhead"); it != spec.end() && !it->is_null()) {
    if (!it->is_string()) return fail("memoryOverhead must be a string such as \"512m\"");
    auto mib = parse_spark_memory_mib(it->get<std::string>());
    if (!mib) return fail("memoryOverhead: " + mib.error().message);
    role.memory_overhead_mib = *mib;
  }
  if (auto it = spec.find("gpu"); it != spec.end() && !it->is_null()) {
    if (!it->is_object()) return fail("gpu must be an object with name and quantity");
    const auto name = string_at(*it, "name");
    // Other vendors' devices are not counted anywhere: placing such a pod could land it
    // where kubelet refuses it.
    if (name != "nvidia.com/gpu") {
      return fail("gpu.name: only nvidia.com/gpu is placed, got \"" + name.value_or("") + "\"");
    }
    auto q = it->find("quantity");
    if (q == it->end() || !q->is_number_integer() || q->get<int64_t>() < 0 ||
        q->get<int64_t>() > 1024) {
      return fail("gpu.quantity must be a whole number of devices");
    }
    role.gpus = q->get<int64_t>();
  }
  if (executor) {
    if (auto it = spec.find("instances"); it != spec.end() && !it->is_null()) {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 100000) {
        return fail("instances must be a non-negative integer");
      }
      role.instances = it->get<int32_t>();
    }
  }
  return role;
}

// spec.dynamicAllocation, else the sparkConf keys the operator would have written.
Result<DynamicAllocation> parse_dynamic_allocation(const Json& spec,
                                                   const std::map<std::string, std::string>& conf,
                                                   const std::string& where) {
  DynamicAllocation d;
  auto fail = [&](const std::string& why) {
    return make_error(ErrorCode::kParse, where + ": " + why);
  };
  auto conf_int = [&](const char* key, std::optional<int32_t>& out) -> Status {
    auto it = conf.find(key);
    if (it == conf.end()) return ok_status();
    int32_t v = 0;
    auto [ptr, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
    if (ec != std::errc() || ptr != it->second.data() + it->second.size() || v < 0)
      return fail(std::string("sparkConf ") + key + " must be a non-negative integer");
    out = v;
    return ok_status();
  };
  if (auto it = conf.find("spark.dynamicAllocation.enabled"); it != conf.end())
    d.enabled = lower(it->second) == "true";
  std::optional<int32_t> min;
  for (auto [key, out] :
       {std::pair{"spark.dynamicAllocation.minExecutors", &min},
        std::pair{"spark.dynamicAllocation.initialExecutors", &d.initial_executors},
        std::pair{"spark.dynamicAllocation.maxExecutors", &d.max_executors}})
    if (Status s = conf_int(key, *out); !s) return s.error();
  const Json* da = find_path(spec, "dynamicAllocation");
  if (da != nullptr && !da->is_null()) {
    if (!da->is_object()) return fail("spec.dynamicAllocation must be an object");
    if (const Json* e = find_path(*da, "enabled"); e != nullptr && !e->is_null()) {
      if (!e->is_boolean()) return fail("spec.dynamicAllocation.enabled must be a boolean");
      d.enabled = e->get<bool>();
    }
    for (auto [key, out] :
         {std::pair{"minExecutors", &min}, std::pair{"initialExecutors", &d.initial_executors},
          std::pair{"maxExecutors", &d.max_executors}}) {
      const Json* v = find_path(*da, key);
      if (v == nullptr || v->is_null()) continue;
      if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > 100000) {
        return fail(std::string("spec.dynamicAllocation.") + key +
                    " must be a non-negative integer");
      }
      *out = v->get<int32_t>();
    }
  }
  d.min_executors = min.value_or(0);
  // spark.executor.instances, as the operator passes it: spec.executor.instances when set
  // (written after sparkConf), else sparkConf's own.
  if (Status s = conf_int("spark.executor.instances", d.executor_instances); !s) return s.error();
  if (const Json* n = find_path(spec, "executor/instances");
      n != nullptr && n->is_number_integer() && n->get<int64_t>() >= 0 &&
      n->get<int64_t>() <= 100000) {
    d.executor_instances = n->get<int32_t>();
  }
  return d;
}

}  // namespace

int32_t SparkApplication::gang_executors() const {
  if (!dynamic_allocation.enabled) return executor.instances;
  // Spark's initial target under dynamic allocation (Utils.getDynamicAllocationInitialExecutors,
  // which ExecutorAllocationManager starts from): the largest of minExecutors,
  // initialExecutors (which defaults to minExecutors) and spark.executor.instances (0 when
  // unset). Spark asks for that many executors as soon as the driver runs.
  const DynamicAllocation& d = dynamic_allocation;
  return std::max({d.min_executors, d.initial_executors.value_or(d.min_executors),
                   d.executor_instances.value_or(0)});
}

Result<int64_t> parse_spark_memory_mib(std::string_view text) {
  const std::string t = lower(text);
  size_t digits = 0;
  while (digits < t.size() && std::isdigit(static_cast<unsigned char>(t[digits])))
    ++digits;
  auto fail = [&] {
    return make_error(ErrorCode::kParse, "invalid JVM memory size \"" + std::string(text) +
                                             "\" (expected e.g. 512m, 2g)");
  };
  if (digits == 0 || digits > 15) return fail();
  int64_t n = 0;
  std::from_chars(t.data(), t.data() + digits, n);
  const std::string unit = t.substr(digits);
  // Spark's JavaUtils.byteStringAs: binary units, an optional trailing "b".
  static constexpr std::pair<const char*, int> kUnits[] = {
      {"b", -20}, {"k", -10}, {"kb", -10}, {"", 0},    {"m", 0},  {"mb", 0},
      {"g", 10},  {"gb", 10}, {"t", 20},   {"tb", 20}, {"p", 30}, {"pb", 30}};
  for (const auto& [suffix, shift] : kUnits) {
    if (unit != suffix) continue;
    if (shift < 0) return n >> -shift;
    if (n > (int64_t{1} << (62 - shift))) return fail();
    return n << shift;
  }
  return fail();
}

double SparkApplication::memory_overhead_factor() const {
  if (overhead_factor) return *overhead_factor;
  return jvm() ? 0.1 : 0.4;
}

int64_t SparkApplication::memory_overhead_mib(const SparkRole& role) const {
  if (role.memory_overhead_mib) return *role.memory_overhead_mib;
  const auto scaled =
      static_cast<int64_t>(memory_overhead_factor() * static_cast<double>(role.memory_mib));
  return std::max(scaled, kMinMemoryOverheadMiB);
}

int64_t SparkApplication::pod_memory_bytes(const SparkRole& role) const {
  return (role.memory_mib + memory_overhead_mib(role)) * kMi;
}

Result<SparkApplication> parse_spark_application(const Json& json) {
  auto fail = [](const std::string& why) {
    return make_error(ErrorCode::kParse, "SparkApplication: " + why);
  };
  if (!json.is_object()) return fail("expected an object");
  const Json* meta = find_path(json, "metadata");
  if (meta == nullptr || !meta->is_object()) return fail("no metadata");
  SparkApplication app;
  app.name = string_at(*meta, "name").value_or("");
  if (app.name.empty()) return fail("no metadata.name");
  const std::string where = "SparkApplication " + app.name;
  app.namespace_ = string_at(*meta, "namespace").value_or("");
  app.uid = string_at(*meta, "uid").value_or("");
  app.resource_version = string_at(*meta, "resourceVersion").value_or("");
  if (auto labels = meta->find("labels"); labels != meta->end() && labels->is_object()) {
    for (const auto& [k, v] : labels->items()) {
      if (v.is_string()) app.labels[k] = v.get<std::string>();
    }
  }
  const Json* spec = find_path(json, "spec");
  if (spec == nullptr || !spec->is_object()) return fail(app.name + ": no spec");
  app.type = string_at(*spec, "type").value_or("Scala");
  if (auto conf = spec->find("sparkConf"); conf != spec->end() && !conf->is_null()) {
    if (!conf->is_object()) return fail(app.name + ": spec.sparkConf must be a map");
    for (const auto& [k, v] : conf->items()) {
      if (!v.is_string()) return fail(app.name + ": spec.sparkConf." + k + " must be a string");
      app.spark_conf[k] = v.get<std::string>();
    }
  }
  auto parse_factor = [&](const std::string& text, const std::string& field) -> Status {
    double f = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), f);
    if (ec != std::errc() || ptr != text.data() + text.size() || !(f > 0) || f > 100) {
      return fail(app.name + ": " + field + " must be a positive number, got \"" + text + "\"");
    }
    app.overhead_factor = f;
    return ok_status();
  };
  if (auto it = app.spark_conf.find("spark.kubernetes.memoryOverheadFactor");
      it != app.spark_conf.end()) {
    if (auto st = parse_factor(it->second, "sparkConf spark.kubernetes.memoryOverheadFactor");
        !st) {
      return st.error();
    }
  }
  // The operator passes spec.memoryOverheadFactor to spark-submit after sparkConf: it wins.
  if (auto f = string_at(*spec, "memoryOverheadFactor")) {
    if (auto st = parse_factor(*f, "spec.memoryOverheadFactor"); !st) return st.error();
  }
  auto driver = parse_role(spec->value("driver", Json()), where + " spec.driver", false);
  if (!driver) return driver.error();
  app.driver = *driver;
  auto executor = parse_role(spec->value("executor", Json()), where + " spec.executor", true);
  if (!executor) return executor.error();
  app.executor = *executor;
  auto dynamic = parse_dynamic_allocation(*spec, app.spark_conf, where);
  if (!dynamic) return dynamic.error();
  app.dynamic_allocation = *dynamic;
  if (const Json* state = find_path(json, "status/applicationState/state");
      state && state->is_string()) {
    app.state = state->get<std::string>();
  }
  app.raw = std::make_shared<const Json>(json);
  return app;
}

}  // namespace gleaner::kube
