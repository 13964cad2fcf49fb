#include "scheduler/admission/colocation_profile.h"

#include <set>

#include "common/json_util.h"

namespace gleaner::scheduler::admission {

namespace {

Error profile_error(const std::string& profile, const std::string& message) {
  return make_error(
      ErrorCode::kParse,
      "ClusterColocationProfile " + (profile.empty() ? "<unnamed>" : profile) + ": " + message);
}

Result<std::map<std::string, std::string>> string_map(const Json& spec, const char* field,
                                                      const std::string& profile) {
  std::map<std::string, std::string> out;
  if (!spec.contains(field) || spec[field].is_null()) return out;
  if (!spec[field].is_object())
    return profile_error(profile, std::string("spec.") + field + " must be an object");
  for (const auto& [k, v] : spec[field].items()) {
    if (!v.is_string())
      return profile_error(profile, std::string("spec.") + field + "." + k + " must be a string");
    out[k] = v.get<std::string>();
  }
  return out;
}

Result<std::string> string_field(const Json& spec, const char* field, const std::string& profile) {
  if (!spec.contains(field) || spec[field].is_null()) return std::string();
  if (!spec[field].is_string())
    return profile_error(profile, std::string("spec.") + field + " must be a string");
  return spec[field].get<std::string>();
}

// Koordinator's QoS classes.
const std::set<std::string>& qos_classes() {
  static const std::set<std::string> classes{"LSE", "LSR", "LS", "BE", "SYSTEM"};
  return classes;
}

// Fields of Koordinator's spec that Gleaner does not carry out.
const std::set<std::string>& honoured_fields() {
  static const std::set<std::string> fields{
      "namespaceSelector",   "selector",      "qosClass", "priorityClassName",
      "koordinatorPriority", "schedulerName", "labels",   "annotations"};
  return fields;
}

}  // namespace

Result<ColocationProfile> parse_colocation_profile(const Json& object) {
  if (!object.is_object()) return profile_error("", "not a JSON object");
  ColocationProfile p;
  if (const Json* name = find_path(object, "metadata/name"); name != nullptr && name->is_string())
    p.name = name->get<std::string>();
  if (p.name.empty()) return profile_error("", "metadata.name is missing");
  if (string_at(object, "kind", "ClusterColocationProfile") != "ClusterColocationProfile") {
    return profile_error(p.name, "kind " + string_at(object, "kind", "<not a string>") +
                                     " is not ClusterColocationProfile");
  }
  const Json spec = object.value("spec", Json::object());
  if (!spec.is_object()) return profile_error(p.name, "spec must be an object");

  for (const char* field : {"namespaceSelector", "selector"}) {
    if (!spec.contains(field) || spec[field].is_null()) continue;
    auto sel = kube::LabelSelector::from_json(spec[field], std::string("spec.") + field);
    if (!sel) return profile_error(p.name, sel.error().message);
    (std::string_view(field) == "selector" ? p.selector : p.namespace_selector) = std::move(*sel);
  }
  auto qos = string_field(spec, "qosClass", p.name);
  if (!qos) return qos.error();
  if (!qos->empty() && !qos_classes().contains(*qos)) {
    return profile_error(p.name,
                         "spec.qosClass " + *qos + " is not one of LSE, LSR, LS, BE, SYSTEM");
  }
  p.qos_class = *qos;
  auto pc = string_field(spec, "priorityClassName", p.name);
  if (!pc) return pc.error();
  p.priority_class_name = *pc;
  auto sched = string_field(spec, "schedulerName", p.name);
  if (!sched) return sched.error();
  p.scheduler_name = *sched;
  if (spec.contains("koordinatorPriority") && !spec["koordinatorPriority"].is_null()) {
    const Json& kp = spec["koordinatorPriority"];
    if (!kp.is_number_integer() || kp.get<int64_t>() < 0 || kp.get<int64_t>() > INT32_MAX)
      return profile_error(p.name, "spec.koordinatorPriority must be a non-negative int32");
    p.koordinator_priority = kp.get<int32_t>();
  }
  auto labels = string_map(spec, "labels", p.name);
  if (!labels) return labels.error();
  p.labels = std::move(*labels);
  auto annotations = string_map(spec, "annotations", p.name);
  if (!annotations) return annotations.error();
  p.annotations = std::move(*annotations);
  for (const auto& [key, value] : spec.items()) {
    if (!honoured_fields().contains(key)) {
      p.warnings.push_back("ClusterColocationProfile " + p.name + ": spec." + key +
                           " is not supported by Gleaner and is ignored");
    }
  }
  return p;
}

Result<ProfileSet> parse_colocation_profiles(const std::vector<ManifestObject>& objects) {
  ProfileSet out;
  std::set<std::string> names;
  for (const ManifestObject& m : objects) {
    const Json& obj = m.object;
    if (obj.is_object()) {
      const std::string kind = string_at(obj, "kind", "ClusterColocationProfile");
      if (kind != "ClusterColocationProfile") {
        out.skipped.push_back(m.where + ": " + kind + " " +
                              string_at(obj, "metadata/name", "<unnamed>") +
                              " is not a ClusterColocationProfile; skipped");
        continue;
      }
    }
    auto p = parse_colocation_profile(obj);
    if (!p) return make_error(p.error().code, m.where + ": " + p.error().message);
    if (!names.insert(p->name).second) {
      return make_error(ErrorCode::kParse,
                        m.where + ": ClusterColocationProfile " + p->name + " twice");
    }
    out.profiles.push_back(std::move(*p));
  }
  return out;
}

}  // namespace gleaner::scheduler::admission
