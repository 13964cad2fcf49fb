#include "scheduler/kube/job_kinds.h"

#include "kube/api_client.h"
#include "kube/well_known.h"
#include "scheduler/gang/training_kinds.h"
#include "scheduler/kube/pod_view.h"

namespace gleaner::scheduler::kube_glue {

const std::vector<AppKind>& app_kinds() {
  static const std::vector<AppKind> kinds = [] {
    std::vector<AppKind> k = {{gang::kSparkKind, kube::kSparkApiVersion, "sparkapplications"}};
    for (const gang::TrainingKind& t : gang::training_kinds())
      k.push_back({t.kind, t.api_version, t.plural});
    return k;
  }();
  return kinds;
}

const AppKind* find_app_kind(const std::string& kind) {
  for (const AppKind& k : app_kinds())
    if (kind == k.kind) return &k;
  return nullptr;
}

std::string app_api_version(const std::string& kind) {
  const AppKind* k = find_app_kind(kind);
  return k != nullptr ? k->api_version : kube::kSparkApiVersion;
}

std::string app_object_path(const std::string& kind, const std::string& ns,
                            const std::string& name) {
  const AppKind* k = find_app_kind(kind);
  if (k == nullptr) k = &app_kinds().front();
  std::string path = std::string("/apis/").append(k->api_version);
  if (!ns.empty()) path.append("/namespaces/").append(ns);
  path.append("/").append(k->plural);
  if (!name.empty()) path.append("/").append(name);
  return path;
}

Labels object_labels(const Json& object) {
  Labels labels;
  const Json& meta = object.value("metadata", Json::object());
  const Json& l = meta.is_object() ? meta.value("labels", Json::object()) : Json::object();
  if (!l.is_object()) return labels;
  for (const auto& [k, v] : l.items())
    if (v.is_string()) labels.emplace(k, v.get<std::string>());
  return labels;
}

std::string training_job_state(const Json& object) {
  const Json* conditions = find_path(object, "status/conditions");
  if (conditions == nullptr || !conditions->is_array()) return "";
  // The operator appends conditions as the job moves on; the newest true one is its state.
  for (auto it = conditions->rbegin(); it != conditions->rend(); ++it) {
    if (!it->is_object() || it->value("status", "") != "True") continue;
    std::string type = it->value("type", "");
    if (!type.empty()) return type;
  }
  return "";
}

gang::AppView training_app_view(const TrainingJob& job, const Json& object,
                                const std::string& cluster) {
  gang::AppView v;
  v.kind = job.kind;
  v.cluster = cluster;
  v.ns = job.ns;
  v.name = job.name;
  v.uid = string_at(object, "metadata/uid");
  v.placement = annotation_of(object, kube::kPlacementAnnotation);
  v.origin = annotation_of(object, kube::kOriginAnnotation);
  v.state = training_job_state(object);
  const Json& meta = object.value("metadata", Json::object());
  const Json& labels = meta.is_object() ? meta.value("labels", Json::object()) : Json::object();
  if (labels.is_object()) {
    for (const char* key : {kube::kQueueLabel, kube::kKoordQuotaLabel}) {
      auto q = labels.find(key);
      if (q != labels.end() && q->is_string()) {
        v.queue = q->get<std::string>();
        break;
      }
    }
  }
  for (const JobRole& r : job.roles) {
    if (r.replicas <= 0) continue;
    RoleSpec role;
    role.name = r.name;
    role.replicas = r.replicas;
    role.batch = Resources{r.request.cpu_milli, r.request.memory_bytes, 0};
    role.regular.gpus = r.request.gpus;
    v.shape.roles.push_back(std::move(role));
    v.selector = merge_selectors(std::move(v.selector), r.selector);
  }
  return v;
}

}  // namespace gleaner::scheduler::kube_glue
