#include "scheduler/kube/job_roles.h"

#include <array>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "common/json_util.h"
#include "kube/objects.h"
#include "kube/spark_application.h"
#include "scheduler/gang/training_kinds.h"
#include "scheduler/kube/node_affinity.h"

namespace gleaner::scheduler::kube_glue {
namespace {

Result<JobRole> role(const std::string& name, const Json& spec, const std::string& where) {
  if (!spec.is_object()) return invalid_field(where, "expected an object");
  JobRole r;
  r.name = name;
  if (auto n = spec.find("replicas"); n != spec.end() && !n->is_null()) {
    if (!n->is_number_integer() || n->get<int64_t>() < 0 || n->get<int64_t>() > 100000) {
      return invalid_field(where + ".replicas", "expected an integer in 0..100000");
    }
    r.replicas = n->get<int>();
  }
  auto tmpl = spec.find("template");
  if (tmpl == spec.end() || !tmpl->is_object() || !tmpl->contains("spec")) {
    return invalid_field(where + ".template", "a pod template with a spec is required");
  }
  // The template as a pod: what the scheduler will count of each of the role's pods.
  Json pod = {{"metadata", tmpl->value("metadata", Json::object())}, {"spec", (*tmpl)["spec"]}};
  if (!pod["metadata"].contains("name")) pod["metadata"]["name"] = name;
  auto parsed = kube::parse_pod(pod);
  if (!parsed) return invalid_field(where + ".template", parsed.error().message);
  if (parsed->containers.empty()) return invalid_field(where + ".template.spec", "no containers");
  // A template sized in batch resources (kubernetes.io/batch-cpu in millicores,
  // batch-memory in bytes, as the colocation webhook writes them) counts those.
  const int64_t batch_cpu = kube::pod_request(*parsed, kube::kResourceBatchCpu).value();
  const int64_t batch_memory = kube::pod_request(*parsed, kube::kResourceBatchMemory).value();
  r.request = {
      batch_cpu > 0 ? batch_cpu : kube::pod_request(*parsed, kube::kResourceCpu).milli_value(),
      batch_memory > 0 ? batch_memory : kube::pod_request(*parsed, kube::kResourceMemory).value(),
      kube::pod_request(*parsed, kResourceGpu).value()};
  r.priority_class = parsed->priority_class_name;
  const Json& pod_spec = (*tmpl)["spec"];
  auto selector = node_selector_of(pod_spec, where + ".template.spec");
  if (!selector) return invalid_field(where + ".template.spec", selector.error().message);
  auto tolerations = tolerations_of(pod_spec, where + ".template.spec");
  if (!tolerations) return invalid_field(where + ".template.spec", tolerations.error().message);
  r.selector = std::move(*selector);
  r.selector.tolerations = {std::move(*tolerations)};
  return r;
}

}  // namespace

bool names_scheduler(const Json& object, const std::string& scheduler) {
  for (const gang::TrainingKind& k : gang::training_kinds()) {
    const Json* specs = find_path(object, std::string("spec/") + k.specs_field);
    if (specs == nullptr || !specs->is_object()) continue;
    for (const auto& [role, spec] : specs->items()) {
      const Json* name = find_path(spec, "template/spec/schedulerName");
      if (name != nullptr && name->is_string() && name->get<std::string>() == scheduler)
        return true;
    }
  }
  return false;
}

Result<TrainingJob> parse_training_job(const Json& object) {
  if (!object.is_object()) return invalid_field("job", "expected an object");
  TrainingJob job;
  job.kind = object.value("kind", "");
  const Json meta = object.value("metadata", Json::object());
  job.ns = meta.is_object() ? meta.value("namespace", "") : "";
  job.name = meta.is_object() ? meta.value("name", "") : "";
  const std::string where = job.kind + " " + job.ns + "/" + job.name;
  const gang::TrainingKind* kind = gang::find_training_kind(job.kind);
  if (kind == nullptr) {
    return invalid_field(where + ": kind", "expected " + gang::training_kind_names());
  }
  if (object.value("apiVersion", "") != kind->api_version) {
    return invalid_field(where + ": apiVersion", std::string("expected ") + kind->api_version);
  }
  const Json spec = object.value("spec", Json::object());
  auto specs = spec.is_object() ? spec.find(kind->specs_field) : spec.end();
  if (!spec.is_object() || specs == spec.end() || !specs->is_object() || specs->empty()) {
    return invalid_field(where + ": spec." + kind->specs_field,
                         "expected the replica specs by role");
  }
  for (const char* field : kind->refused_switches) {
    if (auto on = spec.find(field); on != spec.end() && on->is_boolean() && on->get<bool>()) {
      return invalid_field(where + ": spec." + field,
                           "not supported: its pods are labelled otherwise (set it false)");
    }
  }
  for (const auto& [name, _] : specs->items()) {
    bool known = false;
    for (const char* r : kind->roles)
      known = known || name == r;
    if (!known) {
      return invalid_field(fmt::format("{}: spec.{}.{}", where, kind->specs_field, name),
                           "unknown role");
    }
  }
  for (const char* r : kind->roles) {
    auto it = specs->find(r);
    if (it == specs->end()) continue;
    auto parsed = role(r, *it, where + ": spec." + kind->specs_field + "." + r);
    if (!parsed) return parsed.error();
    job.roles.push_back(std::move(*parsed));
  }
  return job;
}

Result<TrainingJob> parse_spark_job(const Json& object) {
  auto app = kube::parse_spark_application(object);
  if (!app) return invalid_field("SparkApplication", app.error().message);
  TrainingJob job;
  job.kind = "SparkApplication";
  job.ns = app->namespace_;
  job.name = app->name;
  const std::string where = "SparkApplication " + job.ns + "/" + job.name + ": spec.";
  const Json spec = object.value("spec", Json::object());
  for (const auto& [name, field, role, replicas] :
       {std::tuple{"Driver", "driver", &app->driver, 1},
        std::tuple{"Executor", "executor", &app->executor, app->gang_executors()}}) {
    JobRole r;
    r.name = name;
    r.replicas = replicas;
    r.request = {role->cpu_request_milli, app->pod_memory_bytes(*role)};
    const Json section = spec.is_object() ? spec.value(field, Json::object()) : Json::object();
    if (section.is_object()) r.priority_class = section.value("priorityClassName", "");
    auto selector = node_selector_of(section, where + field);
    if (!selector) return invalid_field(where + field, selector.error().message);
    auto tolerations = tolerations_of(section, where + field);
    if (!tolerations) return invalid_field(where + field, tolerations.error().message);
    r.selector = std::move(*selector);
    r.selector.tolerations = {std::move(*tolerations)};
    job.roles.push_back(std::move(r));
  }
  return job;
}

Result<TrainingJob> parse_hub_job(const Json& object) {
  if (object.is_object() && object.value("kind", "") == "SparkApplication") {
    return parse_spark_job(object);
  }
  return parse_training_job(object);
}

ComponentSet component_set(const TrainingJob& job) {
  ComponentSet set;
  for (const auto& r : job.roles) {
    if (r.replicas > 0) set.push_back({r.name, r.request, r.replicas, r.selector});
  }
  return set;
}

}  // namespace gleaner::scheduler::kube_glue
