// A cluster link's part in multi-cluster SparkApplications (docs/scheduler.md,
// "Multi-cluster placement"): recording the decision on the origin, creating the copy in
// the chosen cluster, mirroring the copy's state back onto the origin, and deleting the
// copy when its origin is deleted. A copy is known by the origin's cluster and uid
// (annotations gleaner.io/origin-cluster and gleaner.io/origin-uid), so an unrelated
// application of the same name, or one re-created under it, is not touched (copies made
// before the uid was recorded are known by the cluster alone).
#include <algorithm>

#include <spdlog/spdlog.h>

#include "kube/well_known.h"
#include "scheduler/kube/cluster_link.h"
#include "scheduler/kube/job_kinds.h"

namespace gleaner::scheduler::kube_glue {

namespace {

// A failed mirror or delete is tried again this much later (a newer one replaces it).
constexpr auto kAppRetry = std::chrono::seconds(5);

// The multi-cluster step an action is, as gleaner_scheduler_fleet_retries_total names it.
const char* fleet_step(gang::ActionKind kind) {
  switch (kind) {
    case gang::ActionKind::kPlaceApp:
      return "place";
    case gang::ActionKind::kCreateApp:
      return "create";
    case gang::ActionKind::kMirrorAppState:
      return "mirror";
    case gang::ActionKind::kDeleteCopy:
      return "delete";
    case gang::ActionKind::kUnplaceApp:
      return "unplace";
    default:
      return nullptr;
  }
}

std::string uid_of(const Json& obj) {
  const Json* uid = find_path(obj, "metadata/uid");
  return uid != nullptr && uid->is_string() ? uid->get<std::string>() : "";
}

}  // namespace

void ClusterLink::place_app(const gang::Action& a) {
  if (placed_by_binding(a.app_kind, a.ns, a.name)) {
    place_by_binding(a);
    return;
  }
  // The decision is written on the origin first: it is the record that this application
  // is placed (a restart finds it there), and it keeps the origin suspended when the
  // application goes elsewhere. The copy is created only after it is recorded. The live
  // loop sends this again until the placement is complete, so every step is idempotent.
  {
    std::lock_guard lock(mu_);
    forwarded_.insert(a.ns + "/" + gang::gang_name(a.app_kind, a.name));
  }
  const auto before = apps_of(a.app_kind).get(a.ns + "/" + a.name);
  const bool recorded_before =
      before && annotation_of(*before, kube::kPlacementAnnotation) == a.target;
  Json patch{{"metadata", {{"annotations", {{kube::kPlacementAnnotation, a.target}}}}}};
  if (a.target == options_.name) patch["spec"] = Json{{"suspend", false}};
  auto r = client_.patch(app_object_path(a.app_kind, a.ns, a.name), patch, kube::PatchType::kMerge);
  if (!r) {
    spdlog::warn("cluster {}: record placement of {} {}/{}: {}", options_.name, a.app_kind, a.ns,
                 a.name, r.error().message);
    // Gone: its job gives the room back. Otherwise the live loop sends this again.
    if (r.error().code == ErrorCode::kNotFound)
      live_.forget_app(options_.name, a.ns, a.name, a.app_kind);
    return;
  }
  const bool here = a.target == options_.name;
  if (here) live_.app_recorded(options_.name, a.ns, a.name, a.app_kind);
  if (!here) forward_copy(*r, a.target);
  if (recorded_before) return;  // the Event was written the first time
  app_event(
      a.app_kind, a.ns, a.name, a.uid, here ? "GleanerPlaced" : "GleanerPlacedRemote",
      a.message + (here ? std::string("; released here") : std::string(role_->placed_elsewhere())));
}

void ClusterLink::app_event(const std::string& kind, const std::string& ns, const std::string& name,
                            const std::string& uid, const std::string& reason,
                            const std::string& message, bool warning) {
  gang::Action note{gang::ActionKind::kEvent, options_.name, ns, name, uid};
  note.object_kind = kind;
  note.reason = reason;
  note.message = message;
  note.warning = warning;
  perform(note);
}

void ClusterLink::forward_copy(const Json& origin, const std::string& target) {
  // The copy: same name, namespace, labels and spec, released (not suspended), and
  // annotated with its origin and the decision so nobody places it again.
  const Json& meta = origin.value("metadata", Json::object());
  Json annotations = meta.value("annotations", Json::object());
  if (!annotations.is_object()) annotations = Json::object();
  annotations.erase("kubectl.kubernetes.io/last-applied-configuration");
  annotations.erase(kube::kRemoteStateAnnotation);
  annotations[kube::kPlacementAnnotation] = target;
  annotations[kube::kOriginAnnotation] = options_.name;
  annotations[kube::kOriginUidAnnotation] = uid_of(origin);
  const std::string kind = origin.value("kind", gang::kSparkKind);
  Json copy{{"apiVersion", app_api_version(kind)},
            {"kind", kind},
            {"metadata",
             {{"name", meta.value("name", "")},
              {"namespace", meta.value("namespace", "")},
              {"labels", meta.value("labels", Json::object())},
              {"annotations", annotations}}},
            {"spec", origin.value("spec", Json::object())}};
  if (kind == gang::kSparkKind) copy["spec"]["suspend"] = false;
  gang::Action create{gang::ActionKind::kCreateApp, target, meta.value("namespace", ""),
                      meta.value("name", "")};
  create.app_kind = kind;
  create.object = std::make_shared<const Json>(std::move(copy));
  if (forward_) forward_(std::move(create));
}

bool ClusterLink::is_copy_of(const Json& app, const std::string& origin_cluster,
                             const std::string& origin_uid) {
  const std::string uid = annotation_of(app, kube::kOriginUidAnnotation);
  // Copies made before the uid was recorded are known by the origin's cluster alone.
  return annotation_of(app, kube::kOriginAnnotation) == origin_cluster &&
         (uid.empty() || origin_uid.empty() || uid == origin_uid);
}

void ClusterLink::create_app(const gang::Action& a) {
  const Json& object = object_or_empty(a.object);
  const std::string origin = annotation_of(object, kube::kOriginAnnotation);
  const std::string origin_uid = annotation_of(object, kube::kOriginUidAnnotation);
  const std::string what =
      "create " + a.app_kind + " " + a.ns + "/" + a.name + " (from cluster " + origin + "): ";
  auto r = client_.create(app_object_path(a.app_kind, a.ns), object);
  if (r) {
    retry_done(a);
    live_.app_recorded(origin, a.ns, a.name, a.app_kind);
    return;
  }
  if (r.error().code != ErrorCode::kConflict) {
    // Sent again by the live loop until the placement is complete; after a restart
    // (the origin found recorded and suspended) only this retry creates it.
    defer(a, what + r.error().message);
    return;
  }
  // Created before (a retry, or after a restart) when it names the same origin.
  auto existing = client_.get(app_object_path(a.app_kind, a.ns, a.name));
  if (!existing) {
    defer(a, what + "it exists and cannot be read: " + existing.error().message);
    return;
  }
  if (is_copy_of(*existing, origin, origin_uid)) {
    retry_done(a);
    live_.app_recorded(origin, a.ns, a.name, a.app_kind);
    return;
  }
  if (annotation_of(*existing, kube::kOriginAnnotation) == origin) {
    // The copy of an earlier origin of this name, deleted since: that copy is deleted as
    // soon as its origin is found gone, and this one is created after it.
    defer(a, what +
                 "the copy of an earlier application of that name is still there; created once "
                 "it is gone");
    return;
  }
  spdlog::warn("cluster {}: {}an application of that name from elsewhere exists; left alone",
               options_.name, what);
}

void ClusterLink::observe_copy(const gang::AppView& copy, const Json& obj) {
  // Every change of a copy goes to its origin's link, which records the state there and
  // answers with a delete when the origin is gone (also one deleted while no scheduler
  // was running: the informer's first list shows every copy).
  gang::Action mirror{gang::ActionKind::kMirrorAppState, copy.origin, copy.ns, copy.name,
                      annotation_of(obj, kube::kOriginUidAnnotation)};
  mirror.app_kind = copy.kind;
  mirror.peer = options_.name;
  mirror.message = copy.state;
  // A SparkApplication's whole status goes along: a hub shows it on its own object.
  if (const Json* status = find_path(obj, "status"); status != nullptr && status->is_object())
    mirror.object = std::make_shared<const Json>(*status);
  if (forward_) forward_(std::move(mirror));
}

void ClusterLink::observe_origin_gone(const Json& obj) {
  const std::string placement = annotation_of(obj, kube::kPlacementAnnotation);
  if (placement.empty() || placement == options_.name ||
      !annotation_of(obj, kube::kOriginAnnotation).empty()) {
    return;  // not an origin placed elsewhere
  }
  const Json& meta = obj.value("metadata", Json::object());
  gang::Action del{gang::ActionKind::kDeleteCopy, placement, meta.value("namespace", ""),
                   meta.value("name", ""), uid_of(obj)};
  del.app_kind = obj.value("kind", gang::kSparkKind);
  del.peer = options_.name;
  if (forward_) forward_(std::move(del));
}

void ClusterLink::mirror_app_state(const gang::Action& a) {
  const std::string path = app_object_path(a.app_kind, a.ns, a.name);
  const std::string what = a.app_kind + " " + a.ns + "/" + a.name;
  const auto same_origin = [&](const Json& o) { return a.uid.empty() || uid_of(o) == a.uid; };
  std::optional<Json> origin = apps_of(a.app_kind).get(a.ns + "/" + a.name);
  if (!origin || !same_origin(*origin) ||
      (!a.message.empty() && annotation_of(*origin, kube::kPlacementAnnotation) != a.peer)) {
    // The cache says the origin is gone, replaced or not yet placed there; it may lag, so
    // ask the API server, which is authoritative, before a copy is deleted on its word.
    auto found = client_.find(path);
    if (!found) {
      defer(a, "look up " + what + " for its copy in cluster " + a.peer + ": " +
                   found.error().message);
      return;
    }
    retry_done(a);
    if (!*found || !same_origin(**found)) {
      gang::Action del{gang::ActionKind::kDeleteCopy, a.peer, a.ns, a.name, a.uid};
      del.app_kind = a.app_kind;
      del.peer = options_.name;
      if (forward_) forward_(std::move(del));
      return;
    }
    origin = std::move(*found);
  }
  const std::string uid = uid_of(*origin);
  bool recorded = annotation_of(*origin, kube::kRemoteStateAnnotation) == a.message;
  {
    std::lock_guard lock(mu_);
    auto it = recorded_states_.find(uid);
    if (it != recorded_states_.end()) recorded = it->second == a.message;
  }
  if (annotation_of(*origin, kube::kPlacementAnnotation) != a.peer || a.message.empty()) {
    return;  // not placed there, or nothing reported yet
  }
  // On a hub, a SparkApplication's state is also its status, which every client shows.
  role_->show_copy_state(a.app_kind, a.ns, a.name, uid, a.message, object_or_empty(a.object));
  if (recorded) return;  // the state is already recorded
  // The uid makes the write conditional: an origin re-created under this name since it
  // was read is another application (the server answers 409).
  Json patch{
      {"metadata", {{"uid", uid}, {"annotations", {{kube::kRemoteStateAnnotation, a.message}}}}}};
  auto r = client_.patch(path, patch, kube::PatchType::kMerge);
  if (!r) {
    // Deleted or replaced meanwhile: its informer event follows and settles the copy.
    if (r.error().code == ErrorCode::kNotFound || r.error().code == ErrorCode::kConflict) return;
    defer(a, "record the state of " + what + " in cluster " + a.peer + ": " + r.error().message);
    return;
  }
  retry_done(a);
  {
    std::lock_guard lock(mu_);
    recorded_states_[uid] = a.message;
  }
  app_event(a.app_kind, a.ns, a.name, uid, "GleanerRemoteState",
            "its copy in member cluster " + a.peer + " is " + a.message);
}

void ClusterLink::delete_copy(const gang::Action& a) {
  const std::string path = app_object_path(a.app_kind, a.ns, a.name);
  const std::string what = "delete " + a.app_kind + " " + a.ns + "/" + a.name +
                           " (its origin in cluster " + a.peer + " is gone): ";
  auto copy = client_.find(path);
  if (!copy) {
    defer(a, what + copy.error().message);
    return;
  }
  retry_done(a);
  if (!*copy || !is_copy_of(**copy, a.peer, a.uid)) return;  // gone, or not that origin's copy
  // The uid precondition: a copy re-created under this name since the get stays.
  Status s = client_.remove(path, uid_of(**copy));
  if (!s && s.error().code != ErrorCode::kNotFound && s.error().code != ErrorCode::kConflict) {
    defer(a, what + s.error().message);
    return;
  }
  if (s) {
    spdlog::info("cluster {}: deleted {} {}/{}: {}", options_.name, a.app_kind, a.ns, a.name,
                 a.message.empty() ? "its origin in cluster " + a.peer + " is gone" : a.message);
  }
}

void ClusterLink::defer(const gang::Action& a, const std::string& why) {
  if (const char* step = fleet_step(a.kind)) metrics_.fleet_retry(step);
  const std::string key = deferral_key(a);
  const bool first = retry_warned_.insert(key).second;  // worker thread only
  if (first) {
    spdlog::warn("cluster {}: {}; trying again every {} s", options_.name, why,
                 std::chrono::seconds(kAppRetry).count());
  } else {
    spdlog::debug("cluster {}: {}", options_.name, why);
  }
  std::lock_guard lock(mu_);
  // A newer action for this application, queued while this one was tried, replaces it.
  if (!worker_.waiting(key)) deferred_[key] = {clock_.now() + kAppRetry, a};
}

void ClusterLink::retry_done(const gang::Action& a) {
  retry_warned_.erase(deferral_key(a));
}

std::size_t ClusterLink::retries_waiting() {
  std::lock_guard lock(mu_);
  return deferred_.size();
}

void ClusterLink::requeue_due() {
  const auto now = clock_.now();
  std::lock_guard lock(mu_);
  for (auto it = deferred_.begin(); it != deferred_.end();) {
    if (it->second.first > now) {
      ++it;
      continue;
    }
    queue_action(it->first, std::move(it->second.second));
    it = deferred_.erase(it);
  }
}

}  // namespace gleaner::scheduler::kube_glue
