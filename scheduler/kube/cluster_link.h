#pragma once
// One cluster's connection, the part every cluster shares whatever role it plays (its
// ClusterRole holds what differs: cluster_role.h): the API client (with its rate limit), an
// informer of every pod (ours to schedule, everyone's to account bound room), one of
// SparkApplications (gang sizes) and one of Nodes (labels for node selectors), and a Worker
// (common/worker.h) that performs the live loop's actions (bind, delete, Event) in order and
// node status patches behind them. Actions never run on the caller's thread: the live loop
// only queues them, so a slow API server delays binds but never report ingestion or
// scheduling.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "common/clock.h"
#include "common/worker.h"
#include "kube/api_client.h"
#include "kube/informer.h"
#include "scheduler/fleet/propagation_policy.h"
#include "scheduler/gang/gang_scheduler.h"
#include "scheduler/kube/cluster_role.h"
#include "scheduler/kube/node_status.h"
#include "scheduler/kube/pod_view.h"
#include "scheduler/server/live_metrics.h"

namespace gleaner::scheduler::kube_glue {

struct ClusterLinkOptions {
  std::string name;  // the cluster's name, as its agents report it
  kube::KubeConfig config;
  std::string scheduler_name = "gleaner-scheduler";
  PublishPolicy publish;
  std::chrono::milliseconds resync{10000};  // re-feed every pod (late SparkApplications)
  // Watch ElasticQuotaTrees here and make the one found the scheduler's quota tree
  // (one cluster does: the one the quotas are kept in).
  bool watch_quota_tree = false;
  // The ack-slo-config (NAMESPACE/NAME; "" = none): its colocation-config's
  // updateTimeThresholdSeconds / resourceDiffThreshold, per node, over `publish`.
  std::string slo_config = "kube-system/ack-slo-config";
};

// Actions that are tried again later are known by kind and application.
std::string deferral_key(const gang::Action& a);

class ClusterLink {
 public:
  // `role`: what differs by the role the cluster plays (cluster_role.h).
  ClusterLink(ClusterLinkOptions options, std::unique_ptr<ClusterRole> role, const Clock& clock,
              gang::GangScheduler& live, server::LiveMetrics& metrics);
  ~ClusterLink();
  ClusterLink(const ClusterLink&) = delete;
  ClusterLink& operator=(const ClusterLink&) = delete;

  [[nodiscard]] const std::string& name() const { return options_.name; }
  void start();
  void stop();
  bool wait_for_sync(std::chrono::milliseconds timeout);

  // Where this link sends actions meant for another member cluster (a SparkApplication
  // copied there); the composition root's router. Set before start().
  void set_forward(std::function<void(gang::Action)> forward) { forward_ = std::move(forward); }

  // Called by the live loop (under its lock): queue only.
  void enqueue(gang::Action action);
  void publish(const gang::NodeBatch& batch);

  // Refused multi-cluster actions (copy create, state record, copy delete) waiting for
  // their retry.
  [[nodiscard]] std::size_t retries_waiting();
  // On a hub: its members' labels and taints as last read from Karmada's Cluster objects.
  [[nodiscard]] std::map<std::string, fleet::MemberCluster> member_clusters() {
    return role_->member_clusters();
  }

 private:
  // Once a second on the worker: deferred actions due go back to the queue, and a sweep
  // (API probe, node values against updateTimeThresholdSeconds) waits behind the actions.
  void tick();
  // Queues an action on the worker under its deferral key; the caller holds mu_.
  void queue_action(const std::string& key, gang::Action action);
  void perform(const gang::Action& action);
  // The node values' patching, a latest-wins job behind the actions.
  void publish_soon();
  void publish_due();
  // A pod event from the pods' informer: delivered under pod_feed_mu_.
  void on_pod(const Json& obj, bool gone);
  // Hands a pod to the live loop; the caller holds pod_feed_mu_.
  void deliver_pod(const Json& obj, bool gone);
  std::optional<kube::SparkApplication> spark_app(const std::string& ns, const std::string& name);
  void on_spark_app(const Json& obj);
  // Kubeflow training jobs (training_jobs.cc): on a hub, those a policy governs are placed
  // like SparkApplications; in a member, a hub's copy reports its state back.
  void on_training_job(const std::string& kind, const Json& obj);
  // The training job `ns/name` of `kind` as the informer has it (nullopt: not seen yet, or
  // unreadable), for the pods of a cluster's own job.
  std::optional<gang::AppView> training_job(const std::string& kind, const std::string& ns,
                                            const std::string& name);
  // An application (any kind) as this link sees it: queued for placement, a copy whose
  // state goes back to its origin, or an origin whose copy or binding must exist.
  void route_app(const Json& obj, gang::AppView& view);
  // The informer of the applications of `kind`.
  kube::Informer& apps_of(const std::string& kind);
  // Which applications are ours, and where they may go, may have changed (the role says
  // so): each is looked at again (hub_apps.cc).
  void revisit_apps();
  // The application `ns/name` of `kind` as the role judges it (its labels from the cache).
  std::optional<fleet::HubObject> app_object(const std::string& kind, const std::string& ns,
                                             const std::string& name);
  // The member's API server (member_health.cc): whether it answers, from the link's own
  // calls and, when none answered lately, a probe; the live loop places nothing new in a
  // member that does not answer. Worker thread only.
  void check_api();
  // A call's outcome: `answered` false for a transport failure or a 5xx (`why`).
  void note_api(bool answered, const std::string& why);
  void on_node(const Json& obj);
  void on_node_deleted(const Json& obj);
  void on_slo_config(const Json* config_map);
  // The publish policy of `node` (its labels from the node informer).
  PublishPolicy publish_policy(const std::string& node);
  void on_quota_trees();
  int32_t priority_of_class(const std::string& name) const;
  void on_app_gone(const std::string& kind, const Json& obj);
  // An informer relist can show a deleted and re-created application as an update.
  void on_app_update(const std::string& kind, const Json& old_obj, const Json& obj);
  // Multi-cluster SparkApplications (app_copies.cc; docs/scheduler.md, "Multi-cluster
  // placement").
  void place_app(const gang::Action& a);
  void app_event(const std::string& kind, const std::string& ns, const std::string& name,
                 const std::string& uid, const std::string& reason, const std::string& message,
                 bool warning = false);
  void forward_copy(const Json& origin, const std::string& target);
  static bool is_copy_of(const Json& app, const std::string& origin_cluster,
                         const std::string& origin_uid);
  void create_app(const gang::Action& a);
  void observe_copy(const gang::AppView& copy, const Json& obj);
  void observe_origin_gone(const Json& obj);
  void mirror_app_state(const gang::Action& a);
  void delete_copy(const gang::Action& a);
  void unplace_app(const gang::Action& a);  // hub_apps.cc
  // Karmada mode (hub_bindings.cc): the role places the application by its ResourceBinding
  // instead of a copy (on a hub, its governing policy names this scheduler).
  bool placed_by_binding(const std::string& kind, const std::string& ns, const std::string& name);
  void place_by_binding(const gang::Action& a);
  // Sets the binding's spec.clusters to `target` ("" none); with `only_from`, only while
  // it names that member alone.
  Status write_binding(const std::string& kind, const std::string& ns, const std::string& name,
                       const std::string& uid, const std::string& target,
                       const std::string& only_from);
  // A create, mirror or delete the API refused is queued again after a while, with a
  // warning the first time (`why`) and at debug level after. A newer action for the same
  // application, queued meanwhile or later, replaces it, so an old state never overwrites
  // a newer one.
  void defer(const gang::Action& a, const std::string& why);
  // The action went through: the next refusal of its kind and application warns again.
  void retry_done(const gang::Action& a);
  void requeue_due();

  ClusterLinkOptions options_;
  std::unique_ptr<ClusterRole> role_;
  const Clock& clock_;
  gang::GangScheduler& live_;
  server::LiveMetrics& metrics_;
  kube::KubeClient client_;
  std::unique_ptr<kube::Informer> pods_;
  std::unique_ptr<kube::Informer> apps_;
  // The training kinds (gang/training_kinds.h), by kind.
  std::map<std::string, std::unique_ptr<kube::Informer>> training_jobs_;
  std::set<std::string> job_refusals_;     // kind/ns/name@resourceVersion refused (under mu_)
  std::unique_ptr<kube::Informer> nodes_;  // labels, for node selectors
  std::unique_ptr<kube::Informer> priority_classes_;  // a SparkApplication's priority
  std::unique_ptr<kube::Informer> quota_trees_;       // when watch_quota_tree
  std::unique_ptr<kube::Informer> slo_config_;        // when options_.slo_config is set
  // The ElasticQuotaTree versions last applied or refused (each logged once).
  std::string quota_applied_version_;
  std::string quota_refused_version_;

  // Pods reach the live loop one at a time, from the pods' informer and from re-feeds on
  // the applications' thread (on_spark_app), so each pod's states arrive in order.
  std::mutex pod_feed_mu_;
  std::mutex mu_;
  std::map<std::string, std::optional<Resources>> desired_;  // node -> batch (nullopt: remove)
  std::set<std::string> changed_;
  NodeStatusDecider decider_;  // worker thread only
  PublishPolicies policies_;   // under mu_
  std::function<void(gang::Action)> forward_;
  std::set<std::string> forwarded_;  // ns/name of origins whose copy was asked for
  // origin uid -> the copy's state last recorded on it by this process (the informer's
  // copy of the origin may lag behind our own patch).
  std::map<std::string, std::string> recorded_states_;
  std::set<std::string> retry_warned_;  // deferral keys refused since their last success
  std::map<std::string, std::pair<SteadyTime, gang::Action>>
      deferred_;  // deferral_key -> (when to try again, the action)
  // Worker thread only: whether the API server answered its last call, when one last
  // answered, and when to probe it next.
  bool api_available_ = true;
  SteadyTime last_answer_;  // the clock's now() at construction
  SteadyTime next_probe_{};
  bool sweep_due_ = false;  // worker thread only
  // Actions (ordered, keyed by deferral_key) and node patches (latest wins, behind them).
  // Last: stopped before the members its jobs use go.
  Worker worker_;
};

}  // namespace gleaner::scheduler::kube_glue
