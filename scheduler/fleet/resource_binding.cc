#include "scheduler/fleet/resource_binding.h"

#include "common/json_util.h"

namespace gleaner::scheduler::fleet {
Result<ResourceBinding> parse_resource_binding(const Json& object) {
  if (!object.is_object()) return invalid_field("ResourceBinding", "expected an object");
  ResourceBinding b;
  b.ns = string_at(object, "metadata/namespace");
  b.name = string_at(object, "metadata/name");
  const std::string where = "ResourceBinding " + b.ns + "/" + b.name;
  if (b.name.empty()) return invalid_field(where, "metadata.name is required");
  b.resource_version = string_at(object, "metadata/resourceVersion");
  if (const Json* g = find_path(object, "metadata/generation"); g != nullptr && !g->is_null()) {
    if (!g->is_number_integer())
      return invalid_field(where + ": metadata.generation", "expected an integer");
    b.generation = g->get<int64_t>();
  }
  const Json* resource = find_path(object, "spec/resource");
  if (resource == nullptr || !resource->is_object()) {
    return invalid_field(where + ": spec.resource", "required");
  }
  for (const auto& [field, target] :
       {std::pair{"apiVersion", &b.resource_api_version}, std::pair{"kind", &b.resource_kind},
        std::pair{"name", &b.resource_name}, std::pair{"uid", &b.resource_uid}}) {
    auto it = resource->find(field);
    if (it == resource->end() || it->is_null()) continue;
    if (!it->is_string())
      return invalid_field(where + ": spec.resource." + field, "expected a string");
    *target = it->get<std::string>();
  }
  if (b.resource_kind.empty() || b.resource_name.empty()) {
    return invalid_field(where + ": spec.resource", "kind and name are required");
  }
  if (const Json* s = find_path(object, "spec/schedulerName"); s != nullptr && !s->is_null()) {
    if (!s->is_string()) return invalid_field(where + ": spec.schedulerName", "expected a string");
    b.scheduler_name = s->get<std::string>();
  }
  if (const Json* r = find_path(object, "spec/replicas"); r != nullptr && !r->is_null()) {
    if (!r->is_number_integer() || r->get<int64_t>() < 0 || r->get<int64_t>() > INT32_MAX) {
      return invalid_field(where + ": spec.replicas", "expected a non-negative 32-bit integer");
    }
    b.replicas = r->get<int32_t>();
  }
  if (const Json* c = find_path(object, "spec/clusters"); c != nullptr && !c->is_null()) {
    if (!c->is_array()) return invalid_field(where + ": spec.clusters", "expected a list");
    for (size_t i = 0; i < c->size(); ++i) {
      const Json* n = find_path((*c)[i], "name");
      if (n == nullptr || !n->is_string()) {
        return invalid_field(where + ": spec.clusters[" + std::to_string(i) + "].name",
                             "expected a string");
      }
      b.clusters.push_back(n->get<std::string>());
    }
  }
  // Lenient, unlike the spec: a scheduler wrote it, and a value we cannot read is one we
  // write again rather than a binding we cannot place.
  if (const Json* o = find_path(object, "status/schedulerObservedGeneration");
      o != nullptr && o->is_number_integer()) {
    b.observed_generation = o->get<int64_t>();
  }
  return b;
}

std::optional<ResourceBinding> binding_of(const std::vector<Json>& bindings,
                                          const std::string& kind, const std::string& name,
                                          const std::string& uid) {
  for (const Json& item : bindings) {
    auto b = parse_resource_binding(item);
    if (!b || b->resource_kind != kind || b->resource_name != name) continue;
    if (!b->resource_uid.empty() && !uid.empty() && b->resource_uid != uid) continue;
    return std::move(*b);
  }
  return std::nullopt;
}

Json schedule_patch(const ResourceBinding& binding, const std::string& target) {
  Json clusters = Json::array();
  if (!target.empty()) {
    Json one{{"name", target}};
    // The whole job goes to one member: every replica the template declares.
    if (binding.replicas > 0) one["replicas"] = binding.replicas;
    clusters.push_back(std::move(one));
  }
  return Json{{"metadata", {{"resourceVersion", binding.resource_version}}},
              {"spec", {{"clusters", std::move(clusters)}}}};
}

Json scheduled_status_patch(const ResourceBinding& binding, const std::string& target,
                            const std::string& now_rfc3339) {
  Json condition{
      {"type", "Scheduled"},
      {"status", target.empty() ? "False" : "True"},
      {"reason", target.empty() ? "Unscheduled" : "Success"},
      {"message", target.empty() ? "withdrawn by " + binding.scheduler_name + " to place it again"
                                 : "placed by " + binding.scheduler_name + " into " + target},
      {"lastTransitionTime", now_rfc3339}};
  return Json{{"status",
               {{"schedulerObservedGeneration", binding.generation},
                {"conditions", Json::array({condition})}}}};
}

}  // namespace gleaner::scheduler::fleet
