// A hub link's Karmada mode (docs/fleet.md, "Karmada mode"): an application whose governing
// policy names this scheduler (spec.schedulerName) is placed by writing the spec.clusters of
// its ResourceBinding, which Karmada's detector created from the policy; Karmada's binding
// and execution controllers then propagate the hub object to that member, and withdraw it
// from a member the binding no longer names. The hub object carries the placement and its
// own cluster and uid as annotations, which Karmada propagates with it, so the member link
// knows the propagated object as this hub's copy (its pods take the room reserved for it,
// its state comes back to the hub, a driver that does not start is reclaimed).

#include "common/time_format.h"
#include "kube/well_known.h"
#include "scheduler/fleet/resource_binding.h"
#include "scheduler/kube/cluster_link.h"
#include "scheduler/kube/job_kinds.h"

namespace gleaner::scheduler::kube_glue {

namespace {

std::string bindings_path(const std::string& ns) {
  return "/apis/work.karmada.io/v1alpha2/namespaces/" + ns + "/resourcebindings";
}

}  // namespace

bool ClusterLink::placed_by_binding(const std::string& kind, const std::string& ns,
                                    const std::string& name) {
  auto object = app_object(kind, ns, name);
  return object && role_->placement_means(*object) == PlacementMeans::kBinding;
}

Status ClusterLink::write_binding(const std::string& kind, const std::string& ns,
                                  const std::string& name, const std::string& uid,
                                  const std::string& target, const std::string& only_from) {
  auto listed = client_.list_all(bindings_path(ns), {});
  if (!listed) return listed.error();
  auto binding = fleet::binding_of(listed->items, kind, name, uid);
  const std::string what = "the ResourceBinding of " + kind + " " + ns + "/" + name;
  if (!binding) {
    return make_error(ErrorCode::kNotFound,
                      "no ResourceBinding of " + kind + " " + ns + "/" + name +
                          " yet (Karmada's detector creates it from the policy)");
  }
  if (binding->scheduler_name != options_.scheduler_name) {
    return make_error(ErrorCode::kInvalidArgument, what + " names scheduler \"" +
                                                       binding->scheduler_name + "\", not \"" +
                                                       options_.scheduler_name + "\"");
  }
  const std::vector<std::string> wanted =
      target.empty() ? std::vector<std::string>{} : std::vector<std::string>{target};
  const bool placed = binding->clusters == wanted;
  // Done only once the status says so too: Karmada's controllers take a binding whose
  // schedulerObservedGeneration lags its generation as not scheduled yet, so a status write
  // that failed after the spec's is made again, alone.
  if (placed && binding->observed_generation >= binding->generation) return ok_status();
  // Withdrawing from a member: only while the binding still names it alone (a placement
  // written since stays).
  if (!placed && !only_from.empty() && binding->clusters != std::vector<std::string>{only_from}) {
    return ok_status();
  }
  const std::string path = bindings_path(ns) + "/" + binding->name;
  fleet::ResourceBinding written = *binding;
  if (!placed) {
    auto r = client_.patch(path, fleet::schedule_patch(*binding, target), kube::PatchType::kMerge);
    if (!r) return r.error();
    // The generation the schedule answers: the one our own write made.
    if (const Json* g = find_path(*r, "metadata/generation");
        g != nullptr && g->is_number_integer())
      written.generation = g->get<int64_t>();
  }
  // The condition `kubectl get resourcebinding` shows. A failure is the caller's to retry,
  // as Karmada's scheduler retries a schedule whose status patch failed
  // (pkg/scheduler/scheduler.go, scheduleResourceBinding).
  auto s = client_.patch(path + "/status",
                         fleet::scheduled_status_patch(written, target, rfc3339(clock_.wall_now())),
                         kube::PatchType::kMerge);
  if (!s) {
    return make_error(s.error().code, "status of ResourceBinding " + ns + "/" + binding->name +
                                          ": " + s.error().message);
  }
  return ok_status();
}

void ClusterLink::place_by_binding(const gang::Action& a) {
  // The decision is recorded on the hub object first (a restart finds it there and makes
  // sure the binding says the same); Karmada copies these annotations to the member.
  const auto before = apps_of(a.app_kind).get(a.ns + "/" + a.name);
  const bool recorded_before =
      before && annotation_of(*before, kube::kPlacementAnnotation) == a.target;
  Json patch{{"metadata",
              {{"uid", a.uid},
               {"annotations",
                {{kube::kPlacementAnnotation, a.target},
                 {kube::kOriginAnnotation, options_.name},
                 {kube::kOriginUidAnnotation, a.uid}}}}}};
  auto r = client_.patch(app_object_path(a.app_kind, a.ns, a.name), patch, kube::PatchType::kMerge);
  if (!r) {
    if (r.error().code == ErrorCode::kNotFound || r.error().code == ErrorCode::kConflict) {
      // Gone, or another object by now.
      live_.forget_app(options_.name, a.ns, a.name, a.app_kind);
      return;
    }
    defer(a, "record placement of " + a.app_kind + " " + a.ns + "/" + a.name + ": " +
                 r.error().message);
    return;
  }
  if (Status s = write_binding(a.app_kind, a.ns, a.name, a.uid, a.target, ""); !s) {
    defer(a, "schedule " + a.app_kind + " " + a.ns + "/" + a.name + " into member " + a.target +
                 ": " + s.error().message);
    return;
  }
  retry_done(a);
  live_.app_recorded(options_.name, a.ns, a.name, a.app_kind);
  if (!recorded_before) {
    app_event(a.app_kind, a.ns, a.name, a.uid, "GleanerPlacedRemote",
              a.message + "; Karmada propagates it (ResourceBinding)");
  }
}

}  // namespace gleaner::scheduler::kube_glue
