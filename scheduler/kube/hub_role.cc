#include "scheduler/kube/hub_role.h"

#include <spdlog/spdlog.h>

#include "common/json_util.h"
#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::kube_glue {

namespace {

constexpr const char* kClustersPath = "/apis/cluster.karmada.io/v1alpha1/clusters";

// Handlers that call `changed` on any event: the role reads its informers' whole lists.
kube::InformerHandlers on_any(const std::function<void()>& changed) {
  return kube::InformerHandlers{[changed](const Json&) { changed(); },
                                [changed](const Json&, const Json&) { changed(); },
                                [changed](const Json&) { changed(); }};
}

}  // namespace

std::vector<std::string> HubRole::informer_paths() const {
  std::vector<std::string> paths{
      "/apis/" + options_.policy_group + "/v1alpha1/propagationpolicies",
      "/apis/" + options_.policy_group + "/v1alpha1/clusterpropagationpolicies"};
  if (options_.cluster_objects) paths.emplace_back(kClustersPath);
  return paths;
}

void HubRole::attach(RoleContext context) {
  context_ = std::move(context);
  const std::vector<std::string> paths = informer_paths();
  auto informer = [&](const std::string& path, const std::function<void()>& changed) {
    kube::InformerOptions o;
    o.path = path;
    return std::make_unique<kube::Informer>(*context_.client, o, on_any(changed));
  };
  propagation_policies_ = informer(paths[0], [this] { on_policies(); });
  cluster_propagation_policies_ = informer(paths[1], [this] { on_policies(); });
  if (options_.cluster_objects) member_clusters_ = informer(paths[2], [this] { on_clusters(); });
}

void HubRole::start() {
  // Policies before applications: an application no policy governs yet is not ours.
  propagation_policies_->start();
  cluster_propagation_policies_->start();
  if (!propagation_policies_->wait_for_sync(std::chrono::seconds(10)) ||
      !cluster_propagation_policies_->wait_for_sync(std::chrono::seconds(10))) {
    spdlog::warn("hub {}: propagation policies of {} not listed within 10 s", context_.cluster,
                 options_.policy_group);
  }
  if (member_clusters_) {
    member_clusters_->start();
    if (!member_clusters_->wait_for_sync(std::chrono::seconds(10))) {
      spdlog::warn(
          "hub {}: Karmada Cluster objects not listed within 10 s; members have no "
          "labels or taints until they are (--hub-cluster-objects=false if the hub "
          "has none)",
          context_.cluster);
    }
  }
}

void HubRole::stop() {
  if (propagation_policies_) propagation_policies_->stop();
  if (cluster_propagation_policies_) cluster_propagation_policies_->stop();
  if (member_clusters_) member_clusters_->stop();
}

bool HubRole::wait_for_sync(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (!propagation_policies_->wait_for_sync(timeout)) return false;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{}));
  return cluster_propagation_policies_->wait_for_sync(left);
}

void HubRole::on_policies() {
  std::lock_guard serial(serial_);
  std::vector<fleet::PropagationPolicy> parsed;
  for (const auto* informer : {propagation_policies_.get(), cluster_propagation_policies_.get()}) {
    for (const Json& obj : informer->list()) {
      auto policy = fleet::parse_propagation_policy(obj);
      if (policy) {
        parsed.push_back(std::move(*policy));
        continue;
      }
      // The policy governs nothing until it is fixed, and an application it would have
      // governed stays where it is (on the hub, unplaced).
      if (first_refusal(policy_refusals_, obj)) {
        context_.metrics->propagation_policy_rejected();
        spdlog::warn("hub {}: {}; it governs nothing until fixed", context_.cluster,
                     policy.error().message);
      }
    }
  }
  publish(policies_, std::move(parsed));
}

void HubRole::on_clusters() {
  std::lock_guard serial(serial_);
  // Only this handler (under serial_) writes member_objects_: a copy is the last good state.
  const std::map<std::string, fleet::MemberCluster> last_good = member_clusters();
  std::map<std::string, fleet::MemberCluster> parsed;
  for (const Json& obj : member_clusters_->list()) {
    const std::string name = string_at(obj, "metadata/name");
    auto cluster = fleet::parse_member_cluster(obj);
    if (cluster) {
      parsed[name] = std::move(*cluster);
      continue;
    }
    // Bad input loses nothing: the member keeps the labels and taints last read well.
    if (auto last = last_good.find(name); last != last_good.end()) parsed[name] = last->second;
    if (first_refusal(cluster_refusals_, obj)) {
      context_.metrics->member_cluster_rejected();
      spdlog::warn("hub {}: {}; the member keeps its last good labels and taints", context_.cluster,
                   cluster.error().message);
    }
  }
  publish(member_objects_, std::move(parsed));
}

bool HubRole::first_refusal(std::set<std::string>& refused, const Json& obj) {
  // Logged and counted once per version of the object, not on every resync.
  const std::string version =
      string_at(obj, "metadata/name") + "@" + string_at(obj, "metadata/resourceVersion");
  std::lock_guard lock(mu_);
  return refused.insert(version).second;
}

template <typename T>
void HubRole::publish(T& books, T parsed) {
  {
    std::lock_guard lock(mu_);
    books = std::move(parsed);
  }
  context_.revisit_apps();
}

std::map<std::string, fleet::MemberCluster> HubRole::member_clusters() {
  std::lock_guard lock(mu_);
  return member_objects_;
}

std::optional<AppScope> HubRole::scope(const fleet::HubObject& object) {
  std::lock_guard lock(mu_);
  const fleet::PropagationPolicy* policy = fleet::governing_policy(policies_, object);
  if (policy == nullptr) return std::nullopt;  // no policy governs it: not ours
  std::vector<fleet::MemberCluster> members;
  for (const std::string& m : options_.members) {
    auto found = member_objects_.find(m);
    members.push_back(found != member_objects_.end() ? found->second
                                                     : fleet::MemberCluster{m, {}, {}});
  }
  return AppScope{
      .hub = true, .own_only = false, .allowed = fleet::allowed_clusters(*policy, members)};
}

PlacementMeans HubRole::placement_means(const fleet::HubObject& object) {
  std::lock_guard lock(mu_);
  const fleet::PropagationPolicy* policy = fleet::governing_policy(policies_, object);
  return policy != nullptr && policy->scheduler_name == context_.scheduler_name
             ? PlacementMeans::kBinding
             : PlacementMeans::kCopy;
}

void HubRole::show_copy_state(const std::string& kind, const std::string& ns,
                              const std::string& name, const std::string& uid,
                              const std::string& state, const Json& copy_status) {
  // A training job's conditions belong to its operator: its state is the annotation alone.
  if (kind != gang::kSparkKind) return;
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
    auto last = recorded_status_.find(uid);
    if (last != recorded_status_.end() && last->second == written) return;
  }
  // The uid makes the write conditional, as for the annotation: a hub object re-created
  // under this name since is another application.
  Json patch{{"metadata", {{"uid", uid}}}, {"status", std::move(status)}};
  auto r = context_.client->patch(kube::spark_application_path(ns, name) + "/status", patch,
                                  kube::PatchType::kMerge);
  if (r) {
    std::lock_guard lock(mu_);
    recorded_status_[uid] = written;
  } else if (r.error().code != ErrorCode::kNotFound && r.error().code != ErrorCode::kConflict) {
    spdlog::warn("hub {}: record the state {} of SparkApplication {}/{} in its status: {}",
                 context_.cluster, state, ns, name, r.error().message);
  }
}

void HubRole::forget_app(const std::string& uid) {
  std::lock_guard lock(mu_);
  recorded_status_.erase(uid);
}

}  // namespace gleaner::scheduler::kube_glue
