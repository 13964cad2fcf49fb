// A cluster link's part as a fleet's hub (docs/fleet.md): the hub's PropagationPolicies and
// ClusterPropagationPolicies say which of its SparkApplications the scheduler places into
// the member clusters, and where they may go. A governed application is an origin of the
// multi-cluster protocol that no operator holds (the hub runs no workloads), so it needs no
// spec.suspend; its copy runs in the member the core chose, and the copy's state comes back
// as the hub object's status.
#include <algorithm>
#include <string>

#include <spdlog/spdlog.h>

#include "kube/well_known.h"
#include "scheduler/kube/cluster_link.h"
#include "scheduler/kube/job_kinds.h"

namespace gleaner::scheduler::kube_glue {

void ClusterLink::on_hub_policies() {
  // Both policy informers call this, each on its own thread: one at a time, so that the
  // policies assigned last are the newest lists of both.
  std::lock_guard serial(hub_policies_mu_);
  std::vector<fleet::PropagationPolicy> parsed;
  for (const auto* informer : {propagation_policies_.get(), cluster_propagation_policies_.get()}) {
    for (const Json& obj : informer->list()) {
      auto policy = fleet::parse_propagation_policy(obj);
      if (policy) {
        parsed.push_back(std::move(*policy));
        continue;
      }
      // Logged once per version: the policy governs nothing until it is fixed, and an
      // application it would have governed stays where it is (on the hub, unplaced).
      const std::string version =
          string_at(obj, "metadata/name") + "@" + string_at(obj, "metadata/resourceVersion");
      bool first = false;
      {
        std::lock_guard lock(mu_);
        first = policy_refusals_.insert(version).second;
      }
      if (first) {
        metrics_.propagation_policy_rejected();
        spdlog::warn("hub {}: {}; it governs nothing until fixed", options_.name,
                     policy.error().message);
      }
    }
  }
  {
    std::lock_guard lock(mu_);
    hub_policies_ = std::move(parsed);
  }
  revisit_hub_apps();
}

void ClusterLink::on_hub_clusters() {
  std::lock_guard serial(hub_policies_mu_);
  std::map<std::string, fleet::MemberCluster> parsed;
  for (const Json& obj : member_clusters_->list()) {
    const std::string name = string_at(obj, "metadata/name");
    auto cluster = fleet::parse_member_cluster(obj);
    if (cluster) {
      parsed[name] = std::move(*cluster);
      continue;
    }
    const std::string version = name + "@" + string_at(obj, "metadata/resourceVersion");
    std::lock_guard lock(mu_);
    // Bad input loses nothing: the member keeps the labels and taints last read well.
    if (auto last = member_objects_.find(name); last != member_objects_.end())
      parsed[name] = last->second;
    if (cluster_refusals_.insert(version).second) {
      metrics_.member_cluster_rejected();
      spdlog::warn("hub {}: {}; the member keeps its last good labels and taints", options_.name,
                   cluster.error().message);
    }
  }
  {
    std::lock_guard lock(mu_);
    member_objects_ = std::move(parsed);
  }
  revisit_hub_apps();
}

std::map<std::string, fleet::MemberCluster> ClusterLink::member_clusters() {
  std::lock_guard lock(mu_);
  return member_objects_;
}

void ClusterLink::revisit_hub_apps() {
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

std::optional<std::optional<std::vector<std::string>>> ClusterLink::hub_allowed(
    const fleet::HubObject& object) {
  std::lock_guard lock(mu_);
  const fleet::PropagationPolicy* policy = fleet::governing_policy(hub_policies_, object);
  if (policy == nullptr) return std::nullopt;
  std::vector<fleet::MemberCluster> members;
  for (const std::string& m : options_.members) {
    auto found = member_objects_.find(m);
    members.push_back(found != member_objects_.end() ? found->second
                                                     : fleet::MemberCluster{m, {}, {}});
  }
  return fleet::allowed_clusters(*policy, members);
}

std::optional<gang::AppView> ClusterLink::hub_app_view(const kube::SparkApplication& app) {
  auto allowed = hub_allowed(fleet::HubObject{kube::kSparkApiVersion, gang::kSparkKind,
                                              app.namespace_, app.name, app.labels});
  if (!allowed) return std::nullopt;
  auto view = app_view(app, options_.name, /*labelled_only=*/false);
  if (!view) return std::nullopt;
  view->hub = true;
  view->allowed_clusters = std::move(*allowed);
  return view;
}

void ClusterLink::record_hub_status(const std::string& ns, const std::string& name,
                                    const std::string& uid, const std::string& state,
                                    const Json& copy_status) {
  // The status spark-operator writes (SparkApplicationStatus, kubeflow/spark-operator
  // api/v1beta2), as the member's operator wrote it on the copy: the application's state
  // and error, the driver (pod, web UI), each executor's state, the Spark application id,
  // attempts and times. What the copy does not say is removed (a copy made after a reclaim
  // has no driver yet), so the hub never shows another run's details.
  Json status{{"applicationState", {{"state", state}, {"errorMessage", nullptr}}}};
  if (const Json* error = find_path(copy_status, "applicationState/errorMessage");
      error != nullptr && error->is_string() && !error->get_ref<const std::string&>().empty())
    status["applicationState"]["errorMessage"] = *error;
  for (const char* key : {"driverInfo", "executorState", "sparkApplicationId", "submissionID",
                          "lastSubmissionAttemptTime", "terminationTime", "executionAttempts",
                          "submissionAttempts"}) {
    auto it = copy_status.is_object() ? copy_status.find(key) : copy_status.end();
    status[key] = copy_status.is_object() && it != copy_status.end() ? *it : Json(nullptr);
  }
  const std::string written = status.dump();
  {
    std::lock_guard lock(mu_);
    auto last = recorded_hub_status_.find(uid);
    if (last != recorded_hub_status_.end() && last->second == written) return;
  }
  // The uid makes the write conditional, as for the annotation: a hub object re-created
  // under this name since is another application.
  Json patch{{"metadata", {{"uid", uid}}}, {"status", std::move(status)}};
  auto r = client_.patch(kube::spark_application_path(ns, name) + "/status", patch,
                         kube::PatchType::kMerge);
  if (r) {
    std::lock_guard lock(mu_);
    recorded_hub_status_[uid] = written;
  } else if (r.error().code != ErrorCode::kNotFound && r.error().code != ErrorCode::kConflict) {
    spdlog::warn("hub {}: record the state {} of SparkApplication {}/{} in its status: {}",
                 options_.name, state, ns, name, r.error().message);
  }
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
  if (by_karmada(a.app_kind, a.ns, a.name)) {
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
    recorded_hub_status_.erase(a.uid);
  }
  // The copy in that member goes, whatever the hub object says now (in Karmada mode too:
  // its pods must not hold the member's room while Karmada catches up).
  forward_delete();
}

}  // namespace gleaner::scheduler::kube_glue
