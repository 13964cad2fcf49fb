// A cluster link's applications of every kind: SparkApplications, and Kubeflow's training
// jobs (gang/training_kinds.h: PyTorchJob, TFJob, MPIJob). On a fleet's hub, a training
// job that a PropagationPolicy governs is placed like a SparkApplication: one gang of all
// its roles, into a member whose batch capacity (and free GPUs) fits the whole job; its copy, or in
// Karmada mode its ResourceBinding, takes it there, and the copy's state comes back. In a
// member, a hub's copy reports its state back; the cluster's own job whose pods name this
// scheduler is a gang too: its pods carry its roles (pod_view.h), and the first to come
// queues the whole job in this cluster. Either is checked here, and one the scheduler
// cannot read gets a Warning Event.
#include <spdlog/spdlog.h>

#include "kube/well_known.h"
#include "scheduler/kube/cluster_link.h"
#include "scheduler/kube/job_kinds.h"

namespace gleaner::scheduler::kube_glue {

void ClusterLink::on_training_job(const std::string& kind, const Json& obj) {
  const std::string ns = string_at(obj, "metadata/namespace");
  const std::string name = string_at(obj, "metadata/name");
  if (ns.empty() || name.empty()) return;
  const std::string origin = annotation_of(obj, kube::kOriginAnnotation);
  auto scope =
      role_->scope(fleet::HubObject{app_api_version(kind), kind, ns, name, object_labels(obj)});
  if (!scope) return;  // not ours (on a hub, no policy governs it)
  const bool own = scope->own_only && (origin.empty() || origin == options_.name);
  if (own && !names_scheduler(obj, options_.scheduler_name)) return;  // another scheduler's
  auto job = parse_training_job(obj);
  if (job && component_set(*job).empty()) {
    job = make_error(ErrorCode::kInvalidArgument,
                     kind + " " + ns + "/" + name + ": no role has replicas");
  }
  if (!job) {
    // Bad input loses nothing: the job stays where it is, unplaced; told once per version
    // (every resync shows it again).
    const std::string version =
        kind + "/" + ns + "/" + name + "@" + string_at(obj, "metadata/resourceVersion");
    bool first = false;
    {
      std::lock_guard lock(mu_);
      first = job_refusals_.insert(version).second;
    }
    if (first) {
      metrics_.hub_job_rejected();
      spdlog::warn("cluster {}: {}; not placed until fixed", options_.name, job.error().message);
      // Queued: the worker thread writes the Event, not the informer's.
      gang::Action note{gang::ActionKind::kEvent, options_.name, ns, name,
                        string_at(obj, "metadata/uid")};
      note.object_kind = kind;
      note.reason = "GleanerInvalid";
      note.message = job.error().message + "; not placed until fixed";
      note.warning = true;
      enqueue(std::move(note));
    }
    return;
  }
  if (own) return;  // its pods bring its roles to the live loop (training_job below)
  gang::AppView view = training_app_view(*job, obj, options_.name);
  view.hub = scope->hub;
  view.allowed_clusters = std::move(scope->allowed);
  // The leader's PriorityClass: the first role with replicas.
  for (const JobRole& r : job->roles) {
    if (r.replicas <= 0) continue;
    view.priority = priority_of_class(r.priority_class);
    break;
  }
  route_app(obj, view);
}

std::optional<gang::AppView> ClusterLink::training_job(const std::string& kind,
                                                       const std::string& ns,
                                                       const std::string& name) {
  auto obj = apps_of(kind).get(ns + "/" + name);
  if (!obj) return std::nullopt;
  auto job = parse_training_job(*obj);  // unreadable: on_training_job wrote why, once
  if (!job || component_set(*job).empty()) return std::nullopt;
  return training_app_view(*job, *obj, options_.name);
}

kube::Informer& ClusterLink::apps_of(const std::string& kind) {
  auto it = training_jobs_.find(kind);
  return it != training_jobs_.end() ? *it->second : *apps_;
}

void ClusterLink::route_app(const Json& obj, gang::AppView& view) {
  if (view.placement.empty()) {
    live_.observe_app(view);
  } else if (!view.origin.empty() && view.origin != options_.name) {
    if (find_path(obj, "metadata/deletionTimestamp") == nullptr) observe_copy(view, obj);
  } else if (view.placement != options_.name && (view.suspended || view.hub)) {
    // An origin whose copy should exist in another cluster (a restart may have come
    // between recording the decision and creating the copy): make sure it does,
    // once per process. Creating an existing copy is harmless.
    bool first = false;
    {
      std::lock_guard lock(mu_);
      first = forwarded_.insert(view.ns + "/" + gang::gang_name(view.kind, view.name)).second;
    }
    if (first && placed_by_binding(view.kind, view.ns, view.name)) {
      gang::Action again{gang::ActionKind::kPlaceApp, options_.name, view.ns, view.name,
                         string_at(obj, "metadata/uid")};
      again.app_kind = view.kind;
      again.target = view.placement;
      enqueue(std::move(again));  // the binding must say the same
    } else if (first) {
      forward_copy(obj, view.placement);
    }
  }
}

}  // namespace gleaner::scheduler::kube_glue
