#include "scheduler/admission/priority_class.h"

#include <cstdint>

namespace gleaner::scheduler::admission {

Result<std::pair<std::string, PriorityClassInfo>> parse_priority_class(const Json& object) {
  const Json* name = find_path(object, "metadata/name");
  if (name == nullptr || !name->is_string() || name->get<std::string>().empty())
    return make_error(ErrorCode::kParse, "PriorityClass: metadata.name is missing");
  const std::string n = name->get<std::string>();
  PriorityClassInfo info;
  const Json value = object.value("value", Json(nullptr));
  // The API's limit for user classes is 1e9; system classes go up to 2e9 (int32).
  if (!value.is_number_integer() || value.get<int64_t>() < INT32_MIN ||
      value.get<int64_t>() > INT32_MAX)
    return make_error(ErrorCode::kParse, "PriorityClass " + n + ": value must be an int32");
  info.value = value.get<int32_t>();
  if (object.contains("preemptionPolicy") && !object["preemptionPolicy"].is_null()) {
    const Json& p = object["preemptionPolicy"];
    if (!p.is_string() || (p != "PreemptLowerPriority" && p != "Never")) {
      return make_error(
          ErrorCode::kParse,
          "PriorityClass " + n + ": preemptionPolicy must be PreemptLowerPriority or Never");
    }
    info.preemption_policy = p.get<std::string>();
  }
  return std::make_pair(n, info);
}

Result<PriorityClasses> parse_priority_classes(const std::vector<Json>& objects) {
  PriorityClasses out;
  for (const Json& o : objects) {
    if (!o.is_object() || string_at(o, "kind", "PriorityClass") != "PriorityClass") continue;
    auto pc = parse_priority_class(o);
    if (!pc) return pc.error();
    out[pc->first] = pc->second;
  }
  return out;
}

}  // namespace gleaner::scheduler::admission
