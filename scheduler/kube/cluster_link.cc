#include "scheduler/kube/cluster_link.h"

#include <spdlog/spdlog.h>

#include "kube/well_known.h"
#include "scheduler/kube/job_kinds.h"
#include "scheduler/kube/node_affinity.h"

namespace gleaner::scheduler::kube_glue {

namespace {

// How often node values are re-checked against updateTimeThresholdSeconds.
constexpr auto kPublishSweep = std::chrono::seconds(1);

}  // namespace

std::string deferral_key(const gang::Action& a) {
  return std::to_string(static_cast<int>(a.kind)) + "/" + a.ns + "/" +
         gang::gang_name(a.app_kind, a.name);
}

ClusterLink::ClusterLink(ClusterLinkOptions options, std::unique_ptr<ClusterRole> role,
                         const Clock& clock, gang::GangScheduler& live,
                         server::LiveMetrics& metrics)
    : options_(std::move(options)),
      role_(std::move(role)),
      clock_(clock),
      live_(live),
      metrics_(metrics),
      client_(options_.config, clock),
      decider_(options_.publish),
      last_answer_(clock.now()),
      worker_("link-" + options_.name, &clock_) {
  policies_.cluster = options_.publish;
  worker_.every(kPublishSweep, [this] { tick(); });
  kube::InformerOptions pods;
  pods.path = kube::pods_path("");
  // Every pod, terminal ones included: a pod's turn to Succeeded or Failed must arrive as
  // such. Behind a field selector excluding them it would arrive as a deletion carrying the
  // pod's previous state (the API server's watch sends that, and so does a relist), and a
  // gang member that finished would look lost. Terminal pods hold no room (observe_pod).
  pods.resync = options_.resync;
  pods_ = std::make_unique<kube::Informer>(
      client_, pods,
      kube::InformerHandlers{[this](const Json& o) { on_pod(o, false); },
                             [this](const Json&, const Json& o) { on_pod(o, false); },
                             [this](const Json& o) { on_pod(o, true); }});
  kube::InformerOptions apps;
  apps.path = kube::spark_applications_path("");
  apps_ = std::make_unique<kube::Informer>(
      client_, apps,
      kube::InformerHandlers{
          [this](const Json& o) { on_spark_app(o); },
          [this](const Json& old, const Json& o) { on_app_update(gang::kSparkKind, old, o); },
          [this](const Json& o) { on_app_gone(gang::kSparkKind, o); }});
  for (const AppKind& k : app_kinds()) {
    const std::string kind = k.kind;
    if (kind == gang::kSparkKind) continue;
    kube::InformerOptions jobs;
    jobs.path = app_object_path(kind, "");
    training_jobs_[kind] = std::make_unique<kube::Informer>(
        client_, jobs,
        kube::InformerHandlers{
            [this, kind](const Json& o) { on_training_job(kind, o); },
            [this, kind](const Json& old, const Json& o) { on_app_update(kind, old, o); },
            [this, kind](const Json& o) { on_app_gone(kind, o); }});
  }
  kube::InformerOptions nodes;
  nodes.path = kube::nodes_path();
  nodes_ = std::make_unique<kube::Informer>(
      client_, nodes,
      kube::InformerHandlers{[this](const Json& o) { on_node(o); },
                             [this](const Json&, const Json& o) { on_node(o); },
                             [this](const Json& o) { on_node_deleted(o); }});
  kube::InformerOptions classes;
  classes.path = kube::priority_classes_path();
  priority_classes_ = std::make_unique<kube::Informer>(client_, classes, kube::InformerHandlers{});
  if (const auto slash = options_.slo_config.find('/'); slash != std::string::npos) {
    kube::InformerOptions slo;
    slo.path = "/api/v1/namespaces/" + options_.slo_config.substr(0, slash) + "/configmaps";
    slo.field_selector = "metadata.name=" + options_.slo_config.substr(slash + 1);
    slo_config_ = std::make_unique<kube::Informer>(
        client_, slo,
        kube::InformerHandlers{[this](const Json& o) { on_slo_config(&o); },
                               [this](const Json&, const Json& o) { on_slo_config(&o); },
                               [this](const Json&) { on_slo_config(nullptr); }});
  }
  role_->attach(RoleContext{options_.name, options_.scheduler_name, &client_, &metrics_,
                            [this] { revisit_apps(); }});
  if (options_.watch_quota_tree) {
    kube::InformerOptions trees;
    trees.path = kube::elastic_quota_trees_path("");
    auto changed = [this] { on_quota_trees(); };
    quota_trees_ = std::make_unique<kube::Informer>(
        client_, trees,
        kube::InformerHandlers{[changed](const Json&) { changed(); },
                               [changed](const Json&, const Json&) { changed(); },
                               [changed](const Json&) { changed(); }});
  }
}

ClusterLink::~ClusterLink() {
  stop();
}

void ClusterLink::start() {
  metrics_.member_api_available(options_.name, true);  // until a call says otherwise
  priority_classes_->start();
  if (slo_config_) slo_config_->start();
  if (quota_trees_) quota_trees_->start();
  role_->start();  // before the applications: they are judged through it
  nodes_->start();
  // Nodes (labels, taints, allocatable) before pods: a pod placed before its candidate
  // nodes are known would ignore its selector and kubelet's regular allocatable.
  if (!nodes_->wait_for_sync(std::chrono::seconds(10))) {
    spdlog::warn("cluster {}: Nodes not listed within 10 s; starting the pod watch anyway",
                 options_.name);
  }
  apps_->start();
  // Not waited for: a cluster without Kubeflow's CRDs has none (its informer warns once).
  for (auto& [kind, informer] : training_jobs_)
    informer->start();
  pods_->start();
  worker_.start();
}

void ClusterLink::stop() {
  if (slo_config_) slo_config_->stop();
  pods_->stop();
  apps_->stop();
  for (auto& [kind, informer] : training_jobs_)
    informer->stop();
  nodes_->stop();
  priority_classes_->stop();
  if (quota_trees_) quota_trees_->stop();
  role_->stop();
  worker_.stop(Worker::Pending::kDrop);
}

bool ClusterLink::wait_for_sync(std::chrono::milliseconds timeout) {
  // Node labels first: a pod placed before them would ignore its node selector.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
        deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero()));
  };
  // PriorityClasses before SparkApplications: an application's priority is read once.
  return priority_classes_->wait_for_sync(left()) && nodes_->wait_for_sync(left()) &&
         apps_->wait_for_sync(left()) && pods_->wait_for_sync(left()) &&
         (!quota_trees_ || quota_trees_->wait_for_sync(left())) && role_->wait_for_sync(left());
}

void ClusterLink::on_node_deleted(const Json& obj) {
  const Json* name = find_path(obj, "metadata/name");
  if (name != nullptr && name->is_string())
    live_.observe_node_deleted(options_.name, name->get<std::string>());
}

void ClusterLink::on_node(const Json& obj) {
  const Json& meta = obj.value("metadata", Json::object());
  const Json& name = meta.value("name", Json());
  if (!name.is_string()) return;
  Labels labels;
  const Json& l = meta.value("labels", Json::object());
  if (l.is_object()) {
    for (const auto& [k, v] : l.items())
      if (v.is_string()) labels.emplace(k, v.get<std::string>());
  }
  // Regular allocatable: what kubelet admits cpu/memory requests against.
  std::optional<Resources> allocatable;
  const Json* alloc = find_path(obj, "status/allocatable");
  if (alloc != nullptr && alloc->is_object() && alloc->contains("cpu") &&
      alloc->contains("memory")) {
    auto cpu = quantity_from_json((*alloc)["cpu"], "status.allocatable.cpu");
    auto memory = quantity_from_json((*alloc)["memory"], "status.allocatable.memory");
    // nvidia.com/gpu: whole devices the device plugin advertises (none: 0).
    int64_t gpus = 0;
    if (auto g = alloc->find(kResourceGpu); g != alloc->end()) {
      auto q = quantity_from_json(*g, "status.allocatable.nvidia.com/gpu");
      if (q) gpus = q->value();
    }
    if (cpu && memory) allocatable = Resources{cpu->milli_value(), memory->value(), gpus};
  }
  // Batch: what kubelet admits batch pods against (the figure this scheduler published);
  // an absent or unreadable figure admits none.
  gang::NodeBatchShown batch;
  if (alloc != nullptr && alloc->is_object()) {
    for (auto [key, into] : {std::pair{kube::kResourceBatchCpu, &batch.cpu_milli},
                             std::pair{kube::kResourceBatchMemory, &batch.memory_bytes}}) {
      auto v = alloc->find(key);
      if (v == alloc->end()) continue;
      if (auto q = quantity_from_json(*v, std::string("status.allocatable.") + key))
        *into = q->value();
    }
  }
  live_.observe_node(options_.name, name.get<std::string>(), labels, node_taints(obj), allocatable,
                     batch);
}

void ClusterLink::enqueue(gang::Action action) {
  const std::string key = deferral_key(action);
  // Under mu_, so that defer() sees either the deferred action or the newer one queued.
  std::lock_guard lock(mu_);
  deferred_.erase(key);  // a newer one replaces a deferred one
  queue_action(key, std::move(action));
}

void ClusterLink::queue_action(const std::string& key, gang::Action action) {
  worker_.post(
      key, [this, action = std::move(action)] { perform(action); }, Worker::IfWaiting::kQueueToo);
}

std::optional<kube::SparkApplication> ClusterLink::spark_app(const std::string& ns,
                                                             const std::string& name) {
  auto obj = apps_->get(ns + "/" + name);
  if (!obj) return std::nullopt;
  auto app = kube::parse_spark_application(*obj);
  if (!app) {
    spdlog::warn("cluster {}: SparkApplication {}/{}: {}", options_.name, ns, name,
                 app.error().message);
    return std::nullopt;
  }
  return *app;
}

void ClusterLink::on_pod(const Json& obj, bool gone) {
  std::lock_guard feed(pod_feed_mu_);
  deliver_pod(obj, gone);
}

void ClusterLink::deliver_pod(const Json& obj, bool gone) {
  auto pod = kube::parse_pod(obj);
  if (!pod) {
    spdlog::warn("cluster {}: unreadable pod: {}", options_.name, pod.error().message);
    return;
  }
  auto view = pod_view(
      *pod, options_.name, options_.scheduler_name,
      [this](const std::string& ns, const std::string& n) { return spark_app(ns, n); },
      [this](const std::string& kind, const std::string& ns, const std::string& n) {
        return training_job(kind, ns, n);
      });
  if (gone) {
    live_.forget_pod(view);
  } else {
    live_.observe_pod(view);
  }
}

void ClusterLink::on_app_gone(const std::string& kind, const Json& obj) {
  const Json* ns = find_path(obj, "metadata/namespace");
  const Json* name = find_path(obj, "metadata/name");
  if (ns == nullptr || name == nullptr || !ns->is_string() || !name->is_string()) return;
  live_.forget_app(options_.name, ns->get<std::string>(), name->get<std::string>(), kind);
  {
    // A later application of this name is another origin: its copy is asked for afresh.
    std::lock_guard lock(mu_);
    forwarded_.erase(ns->get<std::string>() + "/" +
                     gang::gang_name(kind, name->get<std::string>()));
    if (const Json* uid = find_path(obj, "metadata/uid"); uid != nullptr && uid->is_string()) {
      recorded_states_.erase(uid->get<std::string>());
      role_->forget_app(uid->get<std::string>());
    }
  }
  observe_origin_gone(obj);
}

void ClusterLink::on_app_update(const std::string& kind, const Json& old_obj, const Json& obj) {
  const Json* old_uid = find_path(old_obj, "metadata/uid");
  const Json* uid = find_path(obj, "metadata/uid");
  if (old_uid != nullptr && uid != nullptr && *old_uid != *uid) on_app_gone(kind, old_obj);
  if (kind == gang::kSparkKind) {
    on_spark_app(obj);
  } else {
    on_training_job(kind, obj);
  }
}

void ClusterLink::on_spark_app(const Json& obj) {
  const Json* ns = find_path(obj, "metadata/namespace");
  const Json* name = find_path(obj, "metadata/name");
  if (ns == nullptr || name == nullptr || !ns->is_string() || !name->is_string()) return;
  if (auto app = kube::parse_spark_application(obj); app) {
    auto scope = role_->scope(fleet::HubObject{kube::kSparkApiVersion, gang::kSparkKind,
                                               app->namespace_, app->name, app->labels});
    auto view = scope ? app_view(*app, options_.name, scope->own_only) : std::nullopt;
    if (view) {
      view->hub = scope->hub;
      view->allowed_clusters = std::move(scope->allowed);
      view->priority = priority_of_class(string_at(obj, "spec/driver/priorityClassName"));
      route_app(obj, *view);
    }
  }
  // A driver seen before its SparkApplication waits; feed it again now. This runs on the
  // applications' thread while the pods' thread delivers newer states of the same pods: each
  // pod is fed as the informer holds it at that moment, under the lock the pods' thread
  // delivers under, so that no pod is ever fed an older state after a newer one (a pod
  // brought back after its deletion, a bound pod seen unbound and placed twice).
  for (const Json& p : pods_->list()) {
    // Not find_path: the label key itself contains a '/'.
    const Json& meta = p.value("metadata", Json::object());
    const Json& labels = meta.value("labels", Json::object());
    auto app = labels.find(kube::kSparkOperatorAppLabel);
    auto pns = meta.find("namespace");
    if (app == labels.end() || pns == meta.end() || *app != *name || *pns != *ns) continue;
    std::lock_guard feed(pod_feed_mu_);
    if (auto latest = pods_->get(kube::Informer::key_of(p))) deliver_pod(*latest, false);
  }
}

void ClusterLink::perform(const gang::Action& a) {
  switch (a.kind) {
    case gang::ActionKind::kBind: {
      Status s = client_.bind_pod(a.ns, a.name, a.uid, a.node);
      if (!s) {
        spdlog::warn("cluster {}: bind {}/{} to {}: {}", options_.name, a.ns, a.name, a.node,
                     s.error().message);
      }
      live_.bind_done(options_.name, a.uid, s);
      return;
    }
    case gang::ActionKind::kDelete: {
      // The uid precondition spares a pod re-created under the same name (kConflict).
      Status s = client_.remove(kube::pod_path(a.ns, a.name), a.uid);
      if (!s && s.error().code != ErrorCode::kNotFound && s.error().code != ErrorCode::kConflict) {
        spdlog::warn("cluster {}: delete {}/{}: {}", options_.name, a.ns, a.name,
                     s.error().message);
      }
      return;
    }
    case gang::ActionKind::kPlaceApp:
      place_app(a);
      return;
    case gang::ActionKind::kCreateApp:
      create_app(a);
      return;
    case gang::ActionKind::kMirrorAppState:
      mirror_app_state(a);
      return;
    case gang::ActionKind::kDeleteCopy:
      delete_copy(a);
      return;
    case gang::ActionKind::kUnplaceApp:
      unplace_app(a);
      return;
    case gang::ActionKind::kEvent: {
      kube::EventRecord e;
      e.namespace_ = a.ns;
      e.involved_object =
          Json{{"apiVersion", a.object_kind == "Pod" ? "v1" : app_api_version(a.object_kind)},
               {"kind", a.object_kind},
               {"namespace", a.ns},
               {"name", a.name},
               {"uid", a.uid}};
      e.type = a.warning ? "Warning" : "Normal";
      e.reason = a.reason;
      e.message = a.message;
      e.component = options_.scheduler_name;
      if (Status s = client_.create_event(e); !s) {
        spdlog::debug("cluster {}: event on {}/{}: {}", options_.name, a.ns, a.name,
                      s.error().message);
      }
      return;
    }
  }
}

}  // namespace gleaner::scheduler::kube_glue
