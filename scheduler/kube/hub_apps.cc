// A cluster link's side of a hub's applications (the policies that govern them are the
// HubRole's, hub_role.h): looking at every application again when the role says which are
// ours, or where they may go, changed; and withdrawing a placement from a member (a
// reclaim), by its recorded annotation and, in Karmada mode, its ResourceBinding.
#include <algorithm>
#include <string>

#include <spdlog/spdlog.h>

#include "kube/well_known.h"
#include "scheduler/kube/cluster_link.h"
#include "scheduler/kube/job_kinds.h"

namespace gleaner::scheduler::kube_glue {

void ClusterLink::revisit_apps() {
  for (const AppKind& k : app_kinds()) {
    kube::Informer& informer = apps_of(k.kind);
    for (const Json& listed : informer.list()) {
      // As the cache has it now: one deleted since the list is not brought back.
      const std::string key =
          string_at(listed, "metadata/namespace") + "/" + string_at(listed, "metadata/name");
      auto app = informer.get(key);
      if (!app) continue;
      if (std::string(k.kind) == gang::kSparkKind) {
        on_spark_app(*app);
      } else {
        on_training_job(k.kind, *app);
      }
    }
  }
}

std::optional<fleet::HubObject> ClusterLink::app_object(const std::string& kind,
                                                        const std::string& ns,
                                                        const std::string& name) {
  auto obj = apps_of(kind).get(ns + "/" + name);
  if (!obj) return std::nullopt;
  return fleet::HubObject{app_api_version(kind), kind, ns, name, object_labels(*obj)};
}

void ClusterLink::unplace_app(const gang::Action& a) {
  const std::string path = app_object_path(a.app_kind, a.ns, a.name);
  const std::string what = "forget the placement of " + a.app_kind + " " + a.ns + "/" + a.name +
                           " in member " + a.peer + ": ";
  auto forward_delete = [&] {
    gang::Action del{gang::ActionKind::kDeleteCopy, a.peer, a.ns, a.name, a.uid};
    del.app_kind = a.app_kind;
    del.peer = options_.name;
    del.message = a.message;
    if (forward_) forward_(std::move(del));
  };
  // Read from the API server, not the cache: the annotation is removed only while it still
  // names that member, and only in the version read (a placement made since is kept).
  auto found = client_.find(path);
  if (!found) {
    defer(a, what + found.error().message);
    return;
  }
  if (placed_by_binding(a.app_kind, a.ns, a.name)) {
    // The binding first: Karmada withdraws the object from the member it no longer names,
    // and does not carry the annotation change below into that member's copy (which would
    // then look unplaced there).
    if (Status s = write_binding(a.app_kind, a.ns, a.name, a.uid, "", a.peer); !s) {
      defer(a, what + s.error().message);
      return;
    }
  }
  const bool same = *found && string_at(**found, "metadata/uid") == a.uid;
  if (same && annotation_of(**found, kube::kPlacementAnnotation) == a.peer) {
    // Counted on the object (`kubectl get` shows it), in the same conditional write.
    int64_t reclaims = 0;
    try {
      reclaims = std::stoll(annotation_of(**found, kube::kReclaimsAnnotation));
    } catch (const std::exception&) {
      reclaims = 0;  // none yet, or not ours to trust: start again
    }
    Json patch{{"metadata",
                {{"uid", a.uid},
                 {"resourceVersion", string_at(**found, "metadata/resourceVersion")},
                 {"annotations",
                  {{kube::kPlacementAnnotation, nullptr},
                   {kube::kRemoteStateAnnotation, nullptr},
                   {kube::kReclaimsAnnotation, std::to_string(std::max<int64_t>(reclaims, 0) + 1)},
                   {kube::kLastReclaimAnnotation, "member " + a.peer + ": " + a.message}}}}}};
    auto r = client_.patch(path, patch, kube::PatchType::kMerge);
    if (!r && r.error().code != ErrorCode::kNotFound) {
      defer(a, what + r.error().message);  // a conflict too: read again and decide again
      return;
    }
  }
  retry_done(a);
  {
    std::lock_guard lock(mu_);
    // Its next placement asks for a copy afresh.
    forwarded_.erase(a.ns + "/" + gang::gang_name(a.app_kind, a.name));
    recorded_states_.erase(a.uid);
  }
  role_->forget_app(a.uid);
  // The copy in that member goes, whatever the hub object says now (in Karmada mode too:
  // its pods must not hold the member's room while Karmada catches up).
  forward_delete();
}

}  // namespace gleaner::scheduler::kube_glue
