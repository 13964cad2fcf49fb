#pragma once
// The scheduler's decision core. It owns the cluster model, the quota tree and the jobs,
// and is driven by plain calls: the live loop feeds it node reports and pod events and
// calls schedule(now) after each batch of changes; the simulator does the same from a
// scenario. Nothing here does I/O or reads a clock: `now` is always an argument.
//
// Admission is all-or-nothing per Spark application: the driver is admitted only when
// it and every executor fit at once in one cluster, and the executors' room is reserved
// at that moment (the driver creates its executors later; a pod-level gang would wait
// for pods that only the running driver can create, and deadlock).

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/result.h"
#include "scheduler/core/cluster_state.h"
#include "scheduler/core/job.h"
#include "scheduler/core/quota_tree.h"
#include "scheduler/core/reclaim_memory.h"

namespace gleaner::scheduler {

struct SchedulerPolicy {
  QueueingPolicy queueing = QueueingPolicy::kNonBlocking;
  // An admitted job whose driver does not run by then is reclaimed and placed again.
  int64_t driver_start_timeout_seconds = 300;
  // Executor reservations outlive executor ramp-up; unclaimed room is then released.
  int64_t reservation_ttl_seconds = 600;
  // A job reclaimed from a cluster (its driver did not start, its pods were lost) does not
  // go back there for this long while another cluster may take it; the back-off doubles
  // with each reclaim in a row (until its driver runs), up to the max.
  int64_t reclaim_backoff_seconds = 60;
  int64_t reclaim_backoff_max_seconds = 900;
  // Optional placement scores beside the two rules (placement_score.h).
  PlacementScores scores;
  // No ping-pong (reclaim_memory.h): a job that lost a pod to an eviction on a node is not
  // placed there again until the node has had that pod's room free this long.
  int64_t reclaim_hold_seconds = kDefaultReclaimHoldSeconds;
};

// A placement that went elsewhere than it would have, because the job avoids a node it
// lost a pod to an eviction on (reclaim_memory.h): pod `pod_index` would have gone to
// `avoided` and went to `placed`; `message` says why (for an Event on the pod).
// The pod_index of an executor beyond the job's declared gang (place_extra_executor).
inline constexpr int kExtraExecutorIndex = -1;

struct SteeredPlacement {
  JobId job = 0;
  int pod_index = 0;    // kExtraExecutorIndex: an executor beyond the gang, named by pod_key
  std::string pod_key;  // that executor's key (its UID); empty for the job's own pods
  NodeId avoided = 0;
  NodeId placed = 0;
  std::string message;
};

enum class DecisionKind {
  kAdmit,               // bind the driver to pods[0].node; executors' room is reserved
  kPreempt,             // delete the job's pods: its queue's borrowed quota was reclaimed
  kReschedule,          // delete the job's pods: it goes back to its queue (timeout, shrink)
  kUnschedulable,       // the job cannot fit anywhere as things are; `reason` says why
  kReservationExpired,  // unclaimed executor room was released
};
const char* to_string(DecisionKind kind);

struct Decision {
  DecisionKind kind = DecisionKind::kAdmit;
  JobId job = 0;
  std::string reason;
};

class Scheduler {
 public:
  Scheduler(SchedulerPolicy policy, QuotaTree quotas, ClusterState clusters);

  // Read-only: the cluster model changes only through the calls below, so that the core's
  // jobs and the room it counts outside them never disagree.
  [[nodiscard]] const ClusterState& clusters() const { return clusters_; }
  [[nodiscard]] const QuotaTree& quotas() const { return quotas_; }
  [[nodiscard]] const SchedulerPolicy& policy() const { return policy_; }

  // Queues a job; errors name the job and the field (unknown queue, bad sizes, duplicate).
  Result<JobId> submit(const JobSpec& spec);
  [[nodiscard]] const Job& job(JobId id) const { return jobs_[id]; }
  [[nodiscard]] size_t job_count() const { return jobs_.size(); }
  [[nodiscard]] std::optional<JobId> find_job(const std::string& name) const;
  // The jobs waiting in their queues, in the order a pass considers them.
  [[nodiscard]] std::vector<JobId> pending_jobs() const;

  // A new quota tree (an ElasticQuotaTree edit), taking effect at once: every job keeps
  // its queue by name (a job whose queue is gone moves to `default`), admitted jobs are
  // charged to the new tree, and the next pass admits and reclaims by its min and max.
  // Jobs already admitted are not undone by a lower max; they count against it.
  // `moves` names a new queue for some jobs ("": default; the live loop: jobs that named no
  // queue follow their namespace's leaf in the new tree).
  void replace_quotas(QuotaTree quotas, const std::map<JobId, std::string>& moves = {});

  // One scheduling pass over the pending jobs in order (priority, then age).
  std::vector<Decision> schedule(int64_t now);

  // --- what the world reports back ---
  // An executor pod appeared: it takes its reserved room, or free room in the job's
  // cluster if the reservation expired. Error: no room (the caller reports a lost pod).
  // `pod_selector`, the pod's own nodeSelector, affinity and tolerations, must hold on that
  // node too (kubelet refuses a pod whose node does not match them): a reserved node it does
  // not hold on is an error (kInvalidArgument) and the pod stays unbound, its room kept.
  Result<NodeId> bind_executor(JobId id, int pod_index, int64_t now,
                               const NodeSelector* pod_selector = nullptr);
  // Pod `pod_index` of an admitted or running job was bound to `node` by another scheduler
  // (a pod that names none): it holds its room there, once, and the room reserved for it
  // elsewhere goes back. Error: unknown id, a job not admitted or running, a bad index.
  Status pod_bound_elsewhere(JobId id, int pod_index, NodeId node, int64_t now);
  // Returns true when this made every pod of the job run (the job started).
  bool pod_running(JobId id, int pod_index, int64_t now);
  void complete(JobId id, int64_t now);
  // The job's owner is gone (the live loop: a reclaimed application whose driver pod was
  // not re-created): a pending job leaves its queue, an admitted or running one releases
  // its bound and reserved room and its quota. Error: unknown id, or already completed or
  // withdrawn. Its name stays taken.
  Status withdraw(JobId id);
  // A gang found partly bound (the live loop after a restart: an earlier process bound
  // some of its pods). `bound` maps pod indices to the nodes those pods are bound to, all in
  // one cluster: they keep their room there whatever it costs (they run there), and every
  // other pod gets room reserved in that cluster, all of them or none. The job is then
  // admitted as from `now` (driver start timeout, reservation TTL). Error, nothing changed:
  // the spec as submit refuses it, no pod bound, an unknown index or node, nodes of two
  // clusters (kInvalidArgument), or no room for the rest (kUnavailable).
  Result<JobId> resume(const JobSpec& spec, const std::map<int, NodeId>& bound, int64_t now);
  // Undoes an admission none of whose pods got bound (the API server kept refusing the
  // leader's binding): its room and quota go back and it waits in its queue again, without
  // a back-off; nothing is deleted. Error: unknown id, or a job not admitted or running.
  Status requeue_unbound(JobId id, const std::string& reason);
  // Replaces the job's node selector for its later placements (the live loop pins a
  // SparkApplication to the member cluster it was copied into); pods already placed
  // stay. Error: unknown id.
  Status set_node_selector(JobId id, NodeSelector selector);
  // Replaces the member clusters a job's placement allows (JobSpec::allowed_clusters: a hub
  // policy or a member's labels edited while the job waits). A job already admitted or
  // running keeps its cluster. Error: unknown id.
  Status set_allowed_clusters(JobId id, std::optional<std::vector<std::string>> allowed);
  // A member cluster whose API server does not answer (unavailable) takes no new
  // placement until it is available again; jobs already there stay. A pending job that
  // could go there says so in its reason.
  void set_cluster_available(ClusterId cluster, bool available);
  [[nodiscard]] bool cluster_available(ClusterId cluster) const {
    return !unavailable_.contains(cluster);
  }
  // "; member cluster X is skipped: its API server is unavailable" for each unavailable
  // cluster job `id` may use ("" when none).
  [[nodiscard]] std::string skipped_clusters(JobId id) const;
  // Pod `pod_index` of an admitted or running job was evicted from its node by the node
  // agent (the node's batch capacity no longer held it): the job is not placed on that node
  // again until the node has had that pod's room free for policy().reclaim_hold_seconds
  // without a break (reclaim_memory.h). Call it before executor_gone or lose_pod for that
  // pod. A pod that holds no room anywhere is ignored. Error: as bind_executor's.
  Status note_eviction(JobId id, int pod_index, int64_t now);
  // The evictions remembered and not yet held out (reclaim_memory.h).
  [[nodiscard]] const ReclaimMemory& reclaims() const { return reclaims_; }
  // The placements steered away from such a node since the last call (each counted once;
  // Job::steered_away counts them per job).
  std::vector<SteeredPlacement> take_steered() { return std::exchange(steered_, {}); }
  // A pod of the job vanished (evicted, node lost): the job goes back to its queue.
  Decision lose_pod(JobId id, int64_t now, const std::string& reason);
  // An executor of a running application went (Spark deletes executors on scale-down, on
  // failure, and at the end, and asks for replacements): the application goes on, and the
  // executor's room stays with the job, on the same node, for the executor that takes its
  // place (bind_executor of the same index), reserved for reservation_ttl from `now` (on a
  // node over-committed by a batch shrink the room goes back and the replacement binds
  // where the cluster has room); a
  // running job is admitted again until the replacement runs. Error: unknown id, the
  // driver's index, or a job not admitted or running.
  Status executor_gone(JobId id, int pod_index, int64_t now);
  // An executor beyond the job's declared gang (dynamic allocation asked for more): free
  // batch room in the job's cluster under `selector` (nullptr: the job's), accounted on
  // the node and not in the job. Like the job's own pods it keeps off the nodes the job lost
  // a pod to an eviction on (a replacement Spark asks for while the evicted executor still
  // terminates is one of these), steered elsewhere at `now`.
  // Error: the job is not admitted or running, or no node has room.
  // Records it under `key` (the pod's UID): release_foreign_pod gives the room back.
  Result<NodeId> place_extra_executor(const std::string& key, JobId id, const Resources& request,
                                      const Resources& regular, const NodeSelector* selector,
                                      int64_t now);

  // --- the nodes and the room outside the core's jobs (foreign_pods.cc) ---
  // A node joins (or its reported size and labels replace what is known) and a node's
  // labels, taints and health change: ClusterState's rules, through the core.
  Result<NodeId> upsert_node(const NodeInfo& info, int64_t now);
  void set_node_labels(NodeId node, const Labels& labels);
  void set_node_taints(NodeId node, const Taints& taints);
  // Nodes whose health changed at `now` (ClusterState::refresh_health).
  std::vector<NodeId> refresh_health(int64_t now, const StalenessPolicy& policy);
  // The regular allocatable (cpu/memory requests) pods outside the core's jobs leave on
  // the node (ClusterState::set_regular_outside).
  void set_regular_outside(NodeId node, std::optional<Resources> regular,
                           std::optional<Resources> allocatable = std::nullopt);
  // A pod outside the core's jobs that holds batch room on `node` (another scheduler bound
  // it): its room is counted once per `key` (its UID); called again for the same key on
  // another node (rebound) or with another amount, the room moves rather than doubles.
  void account_foreign_pod(const std::string& key, NodeId node, const Resources& amount);
  // The room `key` holds (account_foreign_pod, place_extra_executor) goes back, once;
  // false when it holds none.
  bool release_foreign_pod(const std::string& key);
  // Where `key` holds room, if it does.
  [[nodiscard]] std::optional<NodeId> foreign_pod_node(const std::string& key) const;
  // A node report with a new batch size. A shrink below what is placed there never loses a
  // bound pod: the node is over-committed and nothing new goes there until its use fits;
  // pods the node agent evicts arrive as pod loss (lose_pod). Executor room reserved there
  // and not yet bound is released (kReservationExpired), lowest-priority jobs first, as far
  // as the node needs.
  Result<std::vector<Decision>> report_node(NodeId node, const Resources& batch, int64_t now);
  // Driver start timeouts and reservation expiry due at `now`.
  std::vector<Decision> check_timeouts(int64_t now);
  // The earliest time check_timeouts has something to do, or a reclaim back-off ends (a
  // pass may then place the job where it could not), if any.
  [[nodiscard]] std::optional<int64_t> next_deadline() const;

 private:
  // Executor `pod_index`'s room goes back to its node; it holds none afterwards.
  void release_executor_room(Job& j, size_t pod_index);
  // Executor `pod_index` of an admitted or running job; errors as bind_executor's.
  Result<PodState*> executor_of(JobId id, int pod_index) { return admitted_pod(id, pod_index, 1); }
  // Pod `pod_index` (from `first`: 0 any pod, 1 the executors) of job `id`, which must be
  // admitted or running; an error naming the job otherwise.
  Result<PodState*> admitted_pod(JobId id, int pod_index, int first);

  struct PendingKey {
    int32_t neg_priority;
    int64_t submit_time;
    const std::string* name;
    JobId id;
    bool operator<(const PendingKey& o) const;
  };
  enum class Outcome { kAdmitted, kWait, kUnschedulable };

  PendingKey pending_key(const Job& j) const;
  // What placement depends on: per role (batch cpu, memory, GPUs, replicas, regular cpu,
  // memory, GPUs) and selector, the job's selector, preferred and allowed clusters.
  struct ShapeKey {
    std::vector<std::tuple<int64_t, int64_t, int64_t, int, int64_t, int64_t, int64_t>> roles;
    std::vector<std::optional<NodeSelector>> selectors;  // absent: the job's own
    NodeSelector node_selector;
    std::string preferred_cluster;
    std::optional<std::vector<std::string>> allowed_clusters;
    bool operator<(const ShapeKey& o) const;
  };
  static ShapeKey shape_of(const Job& j);
  // The job's shape as a small number (equal shapes, equal numbers) and its gang request,
  // kept per job: passes look them up for every pending job, so they are computed once, at
  // submit and when the job's selector changes.
  using ShapeId = uint32_t;
  void assign_shape(const Job& j);
  [[nodiscard]] ShapeId shape_id(const Job& j) const { return job_shapes_[j.id]; }
  // `failed[shape]`: gang shapes that found no room earlier in this pass; room only shrinks
  // during a pass (unless reclaim frees some), so equal shapes skip the placement.
  Outcome try_admit(Job& j, int64_t now, std::vector<bool>& failed, std::vector<Decision>& out);
  // The job's gang as placement takes it, kept per job with its shape (it points into the
  // job's selectors, which stay put: jobs_ is a deque).
  [[nodiscard]] const GangRequest& gang_of(const Job& j) const { return job_gangs_[j.id]; }
  std::optional<GangPlacement> place_anywhere(const Job& j) {
    return place_anywhere(j, gang_of(j));
  }
  // With the nodes the job avoids (reclaim_memory.h) left out: when the placement without
  // them would have used one, the placement made records that in steer_candidate_.
  std::optional<GangPlacement> place_anywhere(const Job& j, const GangRequest& req);
  std::optional<GangPlacement> place_anywhere_unfiltered(const Job& j, const GangRequest& req);
  // One executor's room in the job's cluster, avoiding the job's nodes as above.
  std::optional<NodeId> place_one_avoiding(Job& j, int pod_index, const Resources& batch,
                                           const NodeSelector* selector, const Resources& regular,
                                           int64_t now);
  // Re-reads the evictions remembered against the nodes' free room at `now`.
  void refresh_reclaims(int64_t now);
  void steered(Job& j, int pod_index, NodeId avoided, NodeId placed, int64_t now);
  // Whether only the regular cpu/memory its pods request keeps the job out: it would
  // be placed now on batch capacity alone (nothing stays placed).
  bool held_by_regular_only(const Job& j);
  // Gives back the room a placement of `j` took (a trial placement, not admitted).
  void unplace(const Job& j, const GangPlacement& p);
  bool fits_some_empty_cluster(const Job& j);
  // The job's placement allows cluster `c` (JobSpec::allowed_clusters).
  [[nodiscard]] bool may_use(const Job& j, ClusterId c) const;
  // The job was reclaimed from `c` and its back-off there still runs at pass_now_, while
  // another cluster may take it.
  [[nodiscard]] bool backing_off(const Job& j, ClusterId c) const;
  // "1 driver, 4 executor": for reasons.
  static std::string describe_pods(const Job& j);
  bool reclaim_for(Job& j, int64_t now, std::vector<Decision>& out);
  void admit(Job& j, const GangPlacement& p, int64_t now);
  // Frees the job's room and quota; the pods are kept so reattach() can undo.
  void detach(Job& j);
  void reattach(Job& j);
  // Calls `visit` for each of the job's pods that holds room: its node, role, and whether
  // it is the driver (index 0).
  static void for_each_held_room(
      const Job& j, const std::function<void(NodeId, const RoleSpec&, bool driver)>& visit);
  void requeue(Job& j, const std::string& reason);
  // Keeps the job's entry in timers_ equal to its next driver or reservation deadline.
  void refresh_timer(Job& j);
  [[nodiscard]] QueueingPolicy queueing_of(QueueId q) const;

  SchedulerPolicy policy_;
  QuotaTree quotas_;
  ClusterState clusters_;
  // Room held outside the jobs, by key (account_foreign_pod, place_extra_executor).
  struct ForeignPod {
    NodeId node = 0;
    Resources amount;
    Resources regular;
  };
  std::map<std::string, ForeignPod> foreign_pods_;
  std::deque<Job> jobs_;  // deque: PendingKey::name points into it
  std::map<std::string, JobId> job_ids_;
  std::set<PendingKey> pending_;
  std::set<JobId> active_;           // admitted or running
  std::set<ClusterId> unavailable_;  // member clusters whose API server does not answer
  // (end, job): reclaim back-offs, so that next_deadline wakes the caller when one ends.
  std::set<std::pair<int64_t, JobId>> backoffs_;
  int64_t pass_now_ = 0;  // the `now` of the running pass
  ReclaimMemory reclaims_;
  std::vector<SteeredPlacement> steered_;
  // The last place_anywhere that left an avoided node out: its job, the placement made, and
  // the pod and node the unfiltered placement would have used; admit() records it.
  struct SteerCandidate {
    JobId job = 0;
    std::vector<NodeId> pods;
    int pod_index = 0;
    NodeId avoided = 0;
  };
  std::optional<SteerCandidate> steer_candidate_;
  // (deadline, job): admitted jobs with a driver start timeout or reservation expiry
  // ahead, so timers cost O(log n) rather than a walk over every running job.
  std::set<std::pair<int64_t, JobId>> timers_;
  // "Does this gang shape fit an empty cluster" per capacity generation.
  std::map<ShapeKey, ShapeId> shape_ids_;
  std::vector<ShapeId> job_shapes_;     // by JobId
  std::vector<GangRequest> job_gangs_;  // by JobId
  // Per shape: -1 not known in this capacity generation, else whether it fits.
  std::vector<int8_t> fits_cache_;
  uint64_t fits_cache_generation_ = 0;
};

}  // namespace gleaner::scheduler
