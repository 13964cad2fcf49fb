#pragma once
// The gang layer: the scheduler's state around the pure core. It turns node reports and
// pod, Node and application observations into core calls, and the core's decisions into
// actions (bind a pod, delete pods, write an Event, place an application in a member,
// publish a node's batch resources) handed to sinks. The live loop wires the sinks to the
// Kubernetes glue (scheduler/kube); the simulator (scheduler/sim) plays the cluster's part
// itself, so both run this code. Nothing here does I/O. Thread-safe: the live loop's HTTP
// server, informers' threads and scheduling timer all call in; one mutex guards
// everything, and sinks must only queue (never call back in). Time comes from the injected
// clock: the core gets whole seconds of wall time, latency counters use the steady clock.
//
// Gangs: a Spark driver (its SparkApplication gives the executor count and sizes), a
// Kubeflow training job's replicas (the job's roles), a pod group
// (pod-group.scheduling.sigs.k8s.io/name + min-available), or a lone pod of ours. Each
// gang is one core job, pinned to the cluster its pods were created in through the node
// label gleaner.io/cluster (pods cannot move between clusters). A multi-cluster
// application is a job before it has pods: the core chooses its cluster, and from then on
// it is pinned there like the others.
//
// GangScheduler is the coordinator: the gang records live in a GangBook (gang_book.h), the
// placement of multi-cluster applications, its retries and what a deleted application
// leaves are the FleetPlacer's (fleet_placer.h), and room outside the core's jobs is a
// core call. GangScheduler joins them to the pods and hands what they return to the sinks.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/json_fwd.h"
#include "common/result.h"
#include "reporter/wire/node_report.h"
#include "scheduler/core/capacity_estimate.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/gang/fleet_placer.h"
#include "scheduler/gang/gang_actions.h"
#include "scheduler/gang/gang_book.h"
#include "scheduler/gang/gang_counters.h"

namespace gleaner::scheduler::gang {

// Core node names are "cluster/node": member clusters may reuse node names.
// A pod in Succeeded or Failed: it holds no room any more.
inline bool terminal_phase(const std::string& phase) {
  return phase == "Succeeded" || phase == "Failed";
}

inline std::string core_name(const std::string& cluster, const std::string& node) {
  return cluster + "/" + node;
}
inline constexpr const char* kDefaultCluster = "default";

// kReplica: a pod of a Kubeflow training job (training_kinds.h), known by its role
// (replica type) and index within the role.
enum class PodRole { kNone, kDriver, kExecutor, kMember, kReplica };

// What the live loop needs from a pod; scheduler/kube builds it from the Pod object.
struct PodView {
  std::string cluster;
  std::string ns;
  std::string name;
  std::string uid;
  std::string node;   // spec.nodeName, "" while unbound
  std::string phase;  // status.phase
  bool ours = false;  // spec.schedulerName is this scheduler
  PodRole role = PodRole::kNone;
  std::string gang;  // application or pod-group name within the namespace
  int min_available = 0;
  // kReplica: its role as the training operator labels it ("master", "worker") and its
  // index within the role.
  std::string replica_type;
  int replica_index = -1;
  Resources request;   // batch resources, else cpu/memory requests
  bool batch = false;  // `request` is kubernetes.io/batch-cpu / batch-memory
  Resources regular;   // its cpu/memory requests (what kubelet admits against allocatable)
  int32_t priority = 0;
  std::string queue;
  std::optional<GangShape> shape;  // drivers: from the SparkApplication, when known
  std::string waiting_for;         // why the shape is unknown yet (an Event says so)
  NodeSelector selector;           // spec.nodeSelector + required node affinity
  std::string selector_error;      // a selector gleaner cannot honour (matchFields, malformed)
  // Evicted from its node (kube/pod_view.h reads it from the pod's status): the job avoids
  // that node until its batch room has come back and held (core/reclaim_memory.h).
  bool evicted = false;
};

// A SparkApplication that opts into multi-cluster placement (label
// gleaner.io/multi-cluster=true), as its member cluster's informer sees it.
struct AppView {
  std::string kind = kSparkKind;  // SparkApplication or a training_kinds() kind
  std::string cluster;
  std::string ns;
  std::string name;
  std::string uid;
  bool suspended = false;  // spec.suspend: its own cluster's operator holds it
  std::string placement;   // annotation gleaner.io/placement: already decided
  std::string origin;      // annotation gleaner.io/origin-cluster: a copy made from there
  std::string state;       // status.applicationState.state ("" = not yet submitted)
  GangShape shape;
  std::string queue;
  // The driver's PriorityClass value (spec.driver.priorityClassName, resolved from the
  // cluster's PriorityClasses; 0 when it names none).
  int32_t priority = 0;
  NodeSelector selector;  // spec, driver and executor nodeSelector / affinity
  std::string selector_error;
  // On a fleet's hub: no operator runs it there (it needs no spec.suspend), and the
  // PropagationPolicy that governs it allows these members (nullopt: any).
  bool hub = false;
  std::optional<std::vector<std::string>> allowed_clusters;
  // The scheduler its pods go to when that is not this one (a SparkApplication's
  // spec.batchScheduler: volcano, yunikorn, kube-scheduler); such an application is not
  // placed: no pod of it would take the room reserved for it.
  std::string other_scheduler;
};

// A node's batch resources to publish on its Node status; nullopt removes the keys.
struct NodeBatch {
  std::string cluster;
  std::string node;
  std::optional<Resources> batch;
};

// The batch resources a Node's status.allocatable shows (kubernetes.io/batch-cpu in
// millicores, kubernetes.io/batch-memory in bytes), 0 where the key is absent: kubelet
// admits batch pods against these, and a kubernetes.io/ name is a native resource to it,
// so a Node without the key admits none (pkg/kubelet/lifecycle/predicate.go;
// removeMissingExtendedResources drops only extended resources).
struct NodeBatchShown {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  bool operator==(const NodeBatchShown&) const = default;
};

// A node report refused by apply_report.
enum class ReportRefusal {
  kUnknownCluster,  // it names a cluster not managed here
};

struct GangOptions {
  SchedulerPolicy policy;
  StalenessPolicy staleness;
  // Managed clusters; reports naming another cluster are refused. Empty: any cluster
  // (reports-only mode), an empty name meaning "default".
  std::vector<std::string> clusters;
  // Multi-cluster applications: the placement (decision on the origin, copy in the
  // target) is sent again this often until it is confirmed.
  double app_retry_seconds = 5;
  // Live mode with Node informers: a reported node is placeable only once its Node object has
  // been seen (observe_node with its batch figures), as kube-scheduler places only on nodes its
  // informer knows. Off in reports-only mode and in the simulator, which have no Node objects.
  bool require_node_objects = false;
};

class GangScheduler {
 public:
  using ActionSink = std::function<void(Action)>;
  using NodeSink = std::function<void(NodeBatch)>;

  static Result<std::unique_ptr<GangScheduler>> create(GangOptions options,
                                                       const std::vector<QueueSpec>& queues,
                                                       const Clock& clock, GangCounters& counters);
  void set_sinks(ActionSink actions, NodeSink nodes);

  // The managed cluster a report's `cluster` names: with one managed cluster (or none, in
  // reports-only mode: "default") an empty name is that cluster; nullopt when it names a
  // cluster not managed here. The one place a reported cluster name is normalised.
  std::optional<std::string> cluster_of(const std::string& reported) const;
  // An accepted report; kUnknownCluster when it names a cluster not managed here.
  std::optional<ReportRefusal> apply_report(const reporter::NodeReport& report);
  // A Node object's labels (from the Node informer): node selectors match them. The
  // label gleaner.io/cluster is always the node's member cluster.
  // `allocatable`: the Node's status.allocatable cpu/memory (nullopt: not given).
  // `batch_shown`: its batch resources (nullopt: the caller does not model the Node's
  // figures, as the simulator). A node's batch room is the smaller of what its agent
  // reports and what the Node shows: the scheduler writes the report on the Node only when
  // it moved by more than the publish threshold (kube/node_status.h), and kubelet refuses
  // a pod beyond the Node's figure, so placing by the report alone could bind a pod
  // kubelet then fails.
  void observe_node(const std::string& cluster, const std::string& node, const Labels& labels,
                    const Taints& taints = {},
                    const std::optional<Resources>& allocatable = std::nullopt,
                    const std::optional<NodeBatchShown>& batch_shown = std::nullopt);
  // The Node was deleted: kubelet admits nothing onto a Node that does not exist, so its
  // batch room is none until a Node of that name shows a figure again.
  void observe_node_deleted(const std::string& cluster, const std::string& node);
  // Whether the member cluster's API server answers: while it does not, no new job is
  // placed there (pending jobs' reasons and placements elsewhere say so).
  void set_cluster_available(const std::string& cluster, bool available);
  void observe_pod(const PodView& pod);
  // Multi-cluster SparkApplications: a suspended one without a placement becomes a core
  // job placed into whichever member cluster fits its whole gang (its own preferred).
  void observe_app(const AppView& app);
  // The SparkApplication was deleted, or recording the decision on it failed: a job
  // not yet placed is withdrawn (a later informer event submits it again).
  void forget_app(const std::string& cluster, const std::string& ns, const std::string& name,
                  const std::string& kind = kSparkKind);
  // The placement of the application created in `origin` is complete (recorded and
  // released there, or its copy exists in the target): stop re-sending it.
  void app_recorded(const std::string& origin, const std::string& ns, const std::string& name,
                    const std::string& kind = kSparkKind);
  // The pod was deleted, or left the non-terminal set (`pod.phase` says how it ended).
  void forget_pod(const PodView& pod);
  void bind_done(const std::string& cluster, const std::string& uid, const Status& result);
  // Node health, timeouts and one scheduling pass.
  void tick();
  // A new quota tree (the ElasticQuotaTree watched live), in force from the next pass;
  // `namespace_queue` sends jobs that name no queue to their namespace's leaf. An invalid
  // tree is an error and the current one stays.
  Status set_quotas(const std::vector<QueueSpec>& queues, std::optional<Resources> root_max,
                    std::map<std::string, std::string> namespace_queue);

  // Karmada's scheduler-estimator (scheduler/estimator/): whole copies of `set` the
  // member `cluster` takes now on batch capacity, after `assumed`; nullopt: no opinion
  // (a cluster not managed here, or none of its nodes reported lately).
  [[nodiscard]] std::optional<int32_t> estimate_sets(
      const std::string& cluster, const ComponentSet& set,
      const std::vector<ComponentSet>& assumed) const;
  // Pods of the application `ns/name` in `cluster` still waiting in its queue after at
  // least `threshold_seconds` (karmada-descheduler's question): all of a pending gang's.
  [[nodiscard]] int32_t unschedulable_pods(const std::string& cluster, const std::string& ns,
                                           const std::string& name, double threshold_seconds) const;

  // The core job of the application `ns/name` of `kind` in `cluster`: its gang there, or,
  // created there, queued or placed elsewhere; nullopt when none is known (not seen yet, or
  // its gang ended).
  [[nodiscard]] std::optional<JobId> job_of(const std::string& cluster, const std::string& ns,
                                            const std::string& name,
                                            const std::string& kind = kSparkKind) const;
  // Calls `look` with the core, under the lock (the simulator's report; read-only).
  void inspect(const std::function<void(const Scheduler&)>& look) const;
  // The earliest wall-clock second at which tick() has something to do that no call in
  // between would bring (a timeout, a back-off's end), if any.
  [[nodiscard]] std::optional<int64_t> next_deadline() const;

  [[nodiscard]] Json queues_json() const;
  [[nodiscard]] Json jobs_json() const;
  [[nodiscard]] Json nodes_json() const;
  [[nodiscard]] StateGauges gauges() const;

 private:
  struct Tracked {
    PodView view;
    std::string gang;  // key, "" for pods outside gangs
    int index = -1;    // core pod index
    // We asked for its deletion. Its room stays held (as loose room, on its node) until the
    // pod is gone: it runs through its grace period, and kubelet admits others against it.
    bool deleting = false;
    // Its eviction (the API server's DisruptionTarget mark) was recorded with the core once,
    // when first seen, so its removal does not restart the reclaim hold.
    bool eviction_noted = false;
    // Its cpu/memory requests counted on this node's regular allocatable (pods outside
    // our jobs), or held in the core for an executor placed beyond its gang (the core
    // holds the batch room of such pods and of pods bound elsewhere by their UID).
    std::string regular_node;  // core node name
    Resources regular_amount;
    bool regular_in_core = false;
    std::string last_event;  // the last Event written about it, to write each only once
  };

  GangScheduler(GangOptions options, Scheduler core, const Clock& clock, GangCounters& counters);
  int64_t now_s() const;
  double steady_s() const;
  std::optional<NodeId> core_node(const std::string& cluster, const std::string& node) const;

  void track_loose(Tracked& t);
  // A pod of ours whose deletion we asked for keeps its room until it is gone (forget_pod).
  void hold_while_terminating(Tracked& t);
  // Why a pod bound onto `node` now would not fit beside the pods we deleted that still
  // terminate there (nullopt: no such pod, or room for both).
  [[nodiscard]] std::optional<std::string> waits_for_victims(NodeId node) const;
  // A bound pod of one of our Spark gangs that another scheduler placed takes the room its
  // job holds for it (moved to its node); false when it is a pod of its own.
  bool adopt_bound_elsewhere(Tracked& t);
  void release_loose(Tracked& t);
  // Keeps the pod's regular requests counted on its node (bound, not in our jobs).
  void track_regular(Tracked& t);
  void release_regular(Tracked& t);
  void push_regular(const std::string& core_node_name);
  // The batch room placements may use on the node: `reported`, capped by what its Node
  // shows (observe_node).
  void note_unknown_node(const std::string& core_node_name);
  [[nodiscard]] Resources placeable_batch(const std::string& core_node_name,
                                          const Resources& reported) const;
  // The Node's figure changed: a fresh node's room follows it at once.
  void reapply_batch(const std::string& core_node_name);
  void observe_ours_unbound(Tracked& t);
  void submit(Gang& g, const GangShape& shape, int32_t priority, const std::string& queue);
  // A new driver for a gang whose job ended (its owner retried it): the gang starts afresh,
  // the old run's pods leave it.
  void start_new_run(Gang& g);
  // The gang's pods leave it: those still bound count on their nodes as pods of their own.
  void release_pods(Gang& g);
  // The application behind the gang is gone (a hub object deleted, or the origin found gone
  // before its placement was recorded): its job ends wherever it stood, nothing is retried.
  void end_app_gang(GangBook::iterator it);
  Labels node_labels(const std::string& cluster, const std::string& node) const;
  void attach_waiting(Gang& g);
  // `uid` waits in `g` for room; the pass then looks at `g` (the book's kWaiting list).
  void wait_in(Gang& g, const std::string& uid);
  // A training job's pod (gang_replicas.cc): it takes the room its gang holds for its role
  // and index; with none held, the first pod that carries the job's roles queues the
  // whole job in its cluster, and the pods wait for its admission.
  void observe_replica(Tracked& t);
  // The pod takes the room its job holds for its role and index (an Event when there is
  // none, or another pod holds it).
  void attach_replica(Gang& g, Tracked& t);
  // A replica gang just admitted: each waiting pod takes its room.
  void attach_waiting_replicas(Gang& g);
  [[nodiscard]] bool job_over(JobId job) const;
  // An Event on the driver: an executor went and its room waits for a replacement.
  void event_gone_executor(Gang& g, const std::string& executor);
  // The core's placements steered away from a node a job lost a pod to an eviction on:
  // counted, and an Event on the pod (or, before it exists, on its driver) says why.
  void report_steered();
  void bind_member(Gang& g, int index);
  // The members of `g` that found no room: bound now if the room is back.
  void bind_unbound(Gang& g);
  // Every gang with members waiting for room or unbound tries again.
  void place_waiting();
  void handle(const std::vector<Decision>& decisions);
  void reclaim(Gang& g, const Decision& d);
  void event(Tracked& t, const std::string& reason, const std::string& message, bool warning);
  Tracked* driver_of(Gang& g);
  // Where the gang's pending reasons are written: its driver (leader), or for a replica
  // gang without one yet, its first waiting pod.
  Tracked* voice_of(Gang& g);
  void app_event(Gang& g, const std::string& reason, const std::string& message, bool warning);
  // Hands a placement's or reclaim's actions to the sink and writes its Event.
  void emit(FleetPlacer::Effects effects);
  // A pending job's reason, written once as an Event.
  void emit_pending_event(Gang& g);

  GangOptions options_;
  const Clock& clock_;
  GangCounters& counters_;
  ActionSink actions_;
  NodeSink nodes_;
  mutable std::mutex mu_;
  Scheduler core_;
  std::map<std::string, Tracked> pods_;  // uid
  // Pods forgotten (deleted or terminal), newest last: an informer that fed a pod from an
  // older snapshot after its deletion must not bring it back (a UID is never reused).
  std::set<std::string> forgotten_;
  std::deque<std::string> forgotten_order_;
  std::map<std::string, std::string> namespace_queue_;  // from the ElasticQuotaTree
  // By core node name: the Node's allocatable cpu/memory, and the requests of the pods
  // bound there outside our jobs.
  std::map<std::string, Resources> node_allocatable_;
  std::map<std::string, Resources> regular_outside_used_;
  // By core node name: the pods we deleted that still terminate there (uids).
  std::map<std::string, std::set<std::string>> terminating_;
  // By core node name: the batch its agent last reported, and what its Node shows.
  std::map<std::string, Resources> batch_reported_;
  std::map<std::string, NodeBatchShown> batch_shown_;
  // Nodes reported with no Node object seen, already logged (bounded).
  std::set<std::string> unknown_nodes_logged_;
  GangBook book_;                              // the gangs, by key and by core job
  std::map<std::string, Labels> node_labels_;  // core node name -> the Node's labels
  std::map<std::string, Taints> node_taints_;  // core node name -> its taints (cordon, Ready)
  // Multi-cluster applications placed by this process, and placements to send again.
  FleetPlacer placer_{options_.app_retry_seconds};
  uint64_t submissions_ = 0;  // numbers core job names

  // The gang a pod of ours belongs to (its application, pod group, or the pod alone),
  // created empty when new.
  Gang& gang_of_pod(const PodView& v);
  // Crash recovery (gang_recovery.cc). A pod of ours first seen bound was bound by an
  // earlier process: its gang is rebuilt from what the API server holds.
  void adopt_bound(Tracked& t);
  // Each recovering gang: resumed once its bound pods' nodes are known and the rest fits,
  // released (its bound pods deleted) when that takes longer than the reservation TTL.
  void recover_gangs();
  bool resume_gang(Gang& g);
  void release_recovering(Gang& g, const std::string& why);
  // The gang's pods ordered and sized as a pod group's: pod 0 the first by name, the others
  // the largest member's size; false (an Event said why) when a member's selector cannot
  // be honoured.
  bool pod_group_shape(Gang& g, std::vector<Tracked*>& members, GangShape& shape);
  // A driver's gang: its application's sizing, with the regular requests the pod kept.
  static GangShape driver_shape(const PodView& v, const GangShape& app);
  // The core pod index of a training job's pod among `roles` (its role's offset plus its
  // replica index); -1 when the roles have no such replica.
  static int replica_slot(const std::vector<RoleSpec>& roles, const PodView& v);
  // Gauges of the gangs still being finished (recovering, or a member's binding failing).
  void partial_gauges(StateGauges& out) const;
  // The core job a gang is submitted as.
  JobSpec job_spec(Gang& g, const GangShape& shape, int32_t priority, const std::string& queue);

  // Bindings the API server refused (gang_binds.cc): retried with back-off, as
  // kube-scheduler retries a failed binding; never a reason to delete the pod.
  struct BindRetry {
    std::string cluster;
    int failures = 0;
    double next_at = 0;       // steady seconds
    double first_failed = 0;  // steady seconds
    bool in_flight = false;   // sent again, its answer not back yet
  };
  std::map<std::string, BindRetry> bind_retries_;  // pod uid
  void retry_binds();
  // The node the pod's binding goes to: its room in its job, or its own room.
  std::optional<std::string> bind_target(const Tracked& t) const;
  void give_up_binding(Tracked& t, const std::string& why);
};

}  // namespace gleaner::scheduler::gang
