#include "scheduler/sim/scenario_fields.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "common/json_util.h"

namespace gleaner::scheduler::sim::fields {

// Typos must not silently fall back to defaults: every object lists the keys it knows.
Status only_known(const Json& obj, const std::string& path,
                  std::initializer_list<const char*> known) {
  if (!obj.is_object())
    return invalid_field(path, std::string("expected an object, got ") + obj.type_name());
  for (const auto& [key, value] : obj.items()) {
    (void)value;
    bool ok = std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; });
    if (!ok) return invalid_field(std::string(path).append(".").append(key), "unknown field");
  }
  return ok_status();
}

Result<std::string> get_string(const Json& obj, const std::string& path, const char* key,
                               bool required) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) return invalid_field(path + "." + key, "required");
    return std::string();
  }
  if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
    return invalid_field(path + "." + key, "expected a non-empty string");
  }
  return it->get<std::string>();
}

// Seconds and counts: non-negative integers (1e9 is plenty and keeps sums in range).
Result<std::optional<int64_t>> get_count(const Json& obj, const std::string& path,
                                         const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::optional<int64_t>();
  const std::string where = path + "." + key;
  if (it->is_number_float()) {
    double d = it->get<double>();
    if (std::floor(d) != d) return invalid_field(where, "expected a whole number");
    if (d < 0 || d > 1e9) return invalid_field(where, "out of range 0..1e9");
    return std::optional<int64_t>(static_cast<int64_t>(d));
  }
  if (!it->is_number_integer()) {
    return invalid_field(where, std::string("expected a number, got ") + it->type_name());
  }
  auto v = it->get<int64_t>();
  if (v < 0 || v > 1'000'000'000) return invalid_field(where, "out of range 0..1e9");
  return std::optional<int64_t>(v);
}

Result<Resources> get_resources(const Json& obj, const std::string& path,
                                std::initializer_list<const char*> extra, int64_t unnamed) {
  std::vector<const char*> known{"cpu", "memory", kResourceGpu};
  known.insert(known.end(), extra.begin(), extra.end());
  if (!obj.is_object()) return invalid_field(path, "expected an object with cpu and memory");
  for (const auto& [key, value] : obj.items()) {
    (void)value;
    if (std::find_if(known.begin(), known.end(), [&](const char* k) { return key == k; }) ==
        known.end()) {
      return invalid_field(std::string(path).append(".").append(key), "unknown field");
    }
  }
  Resources r{unnamed, unnamed, unnamed};
  for (const char* key : {"cpu", "memory", kResourceGpu}) {
    auto it = obj.find(key);
    if (it == obj.end()) continue;
    auto q = quantity_from_json(*it, path + "." + key);
    if (!q) return q.error();
    if (q->milli_value() < 0) return invalid_field(path + "." + key, "must not be negative");
    if (std::string_view(key) == "cpu") {
      r.cpu_milli = q->milli_value();
    } else if (std::string_view(key) == "memory") {
      r.memory_bytes = q->value();
    } else if (q->milli_value() % 1000 != 0) {
      return invalid_field(path + "." + key, "expected whole devices");
    } else {
      r.gpus = q->value();
    }
  }
  return r;
}

Result<Labels> get_labels(const Json& obj, const std::string& path, const char* key) {
  Labels labels;
  auto it = obj.find(key);
  if (it == obj.end()) return labels;
  if (!it->is_object()) return invalid_field(path + "." + key, "expected an object of strings");
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string()) {
      return invalid_field(std::string(path).append(".").append(key).append(".").append(k),
                           "expected a string");
    }
    labels.emplace(k, v.get<std::string>());
  }
  return labels;
}

}  // namespace gleaner::scheduler::sim::fields
