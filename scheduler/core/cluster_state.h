#pragma once
// The scheduler's model of its member clusters: every node's batch allocatable (as its
// agent last reported it), what is bound and reserved there, and how fresh the report is.
// Placement of a whole gang lives here because it needs the free-capacity indexes: nodes
// are kept in two ordered sets per cluster so that "the fullest node that still fits an
// executor" and "the emptiest node for a driver" are O(log n) lookups, not scans (GPUs are
// checked on the way: a pod that asks for some walks past nodes without them).

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "scheduler/core/node_selector.h"
#include "scheduler/core/placement_score.h"
#include "scheduler/core/resources.h"

namespace gleaner::scheduler {

using NodeId = uint32_t;
using ClusterId = uint32_t;

// What a node report (or a scenario file) tells us about one node.
struct NodeInfo {
  std::string name;
  std::string cluster;  // empty: the default cluster
  Labels labels;
  Resources batch;  // kubernetes.io/batch-cpu (millicores), batch-memory (bytes)
  Taints taints;    // the Node's, with cordons and readiness as taints
};

enum class NodeHealth {
  kFresh,     // placements allowed
  kStale,     // report older than stale_after: no new placements, capacity still counted
  kDegraded,  // report older than degrade_after: its batch counts as zero
};
const char* to_string(NodeHealth health);
// Parses "fresh", "stale" or "degraded"; nullopt for anything else.
std::optional<NodeHealth> node_health_from_string(std::string_view text);

struct StalenessPolicy {
  int64_t stale_after_seconds = 60;
  int64_t degrade_after_seconds = 15 * 60;  // ack-slo-config's degradeTimeMinutes default
};

struct Node;
// The log line for a node whose health went from `before` to its current one at `now`
// (`last_report`: when its agent reported before this change, so that a node reporting
// again says how long it was silent): which node, how old its report is, what it means.
std::string health_change_message(const Node& node, NodeHealth before, int64_t last_report,
                                  int64_t now, const StalenessPolicy& policy);

struct Node {
  std::string name;
  ClusterId cluster = 0;
  Labels labels;
  Taints taints;
  Resources reported;  // the agent's latest batch allocatable
  Resources used;      // bound pods plus reservations
  int64_t reported_at = 0;
  NodeHealth health = NodeHealth::kFresh;
  int drivers = 0;
  // Regular allocatable (kubelet admits cpu/memory requests against it): what the
  // Node's allocatable leaves after the requests of pods outside our jobs (nullopt:
  // unknown, no constraint), and what our jobs' pods request of it.
  std::optional<Resources> regular_outside;
  Resources regular_used;
  // The Node's allocatable itself (nullopt: unknown): what its pods' regular requests can
  // ever reach, with nothing else on it.
  std::optional<Resources> regular_allocatable;

  // Whether one more pod asking `regular` of cpu/memory/GPUs passes kubelet's admission.
  // With the allocatable unknown (the Node informer has not seen it yet) cpu/memory are not
  // constrained, but GPUs are none: only the device plugin's nvidia.com/gpu in the Node's
  // allocatable makes them, and kubelet refuses a pod asking more than that
  // (pkg/kubelet/lifecycle/predicate.go: reason OutOfnvidia.com/gpu). A job asking for
  // GPUs waits for the Node to state them rather than go where none may be.
  [[nodiscard]] bool regular_fits(const Resources& regular) const {
    if (regular == Resources{}) return true;
    if (!regular_outside) return regular.gpus == 0;
    return regular.fits_in(*regular_outside - regular_used);
  }

  [[nodiscard]] Resources capacity() const {
    return health == NodeHealth::kDegraded ? Resources{} : reported;
  }
  [[nodiscard]] Resources free() const { return capacity() - used; }
  [[nodiscard]] bool schedulable() const { return health == NodeHealth::kFresh; }
};

// One role of a gang: `replicas` pods of one size, where `selector` admits them.
struct RoleRequest {
  Resources batch;  // one pod: batch cpu/memory and GPUs
  int replicas = 0;
  const NodeSelector* selector = nullptr;  // nullptr: any node
  // What one pod requests of regular cpu/memory besides batch resources (pods the
  // colocation webhook did not convert): both must fit a node.
  Resources regular;
};

// A whole job's pods, role by role (a Spark driver and its executors, a PyTorchJob's master
// and workers). The first pod of the first role is the job's leader: the one placed on the
// emptiest node. The first role must have at least one replica.
struct GangRequest {
  std::vector<RoleRequest> roles;

  [[nodiscard]] Resources total() const {
    Resources sum;
    for (const RoleRequest& r : roles)
      sum += r.batch * r.replicas;
    return sum;
  }
  [[nodiscard]] size_t pod_count() const {
    size_t n = 0;
    for (const RoleRequest& r : roles)
      n += static_cast<size_t>(r.replicas);
    return n;
  }
};

struct GangPlacement {
  ClusterId cluster = 0;
  std::vector<NodeId> pods;  // role by role, pods[0] the leader; a role's pods grouped by node
};

// Whether a pod of `selector` (nullptr: no requirement and no tolerations) may go to `node`.
bool selector_matches(const NodeSelector* selector, const Node& node);

class ClusterState {
 public:
  ClusterState() = default;
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;
  ClusterState(ClusterState&&) = default;
  ClusterState& operator=(ClusterState&&) = default;

  ClusterId add_cluster(const std::string& name);  // idempotent
  [[nodiscard]] std::optional<ClusterId> find_cluster(const std::string& name) const;
  [[nodiscard]] size_t cluster_count() const { return clusters_.size(); }
  [[nodiscard]] const std::string& cluster_name(ClusterId id) const { return clusters_[id].name; }

  // Adds a node or replaces its labels and batch; the report time makes it fresh.
  // A node never moves between clusters: that is an error naming the node.
  Result<NodeId> upsert_node(const NodeInfo& info, int64_t now);
  // A later report for a known node: new batch allocatable, fresh again.
  Status report(NodeId id, const Resources& batch, int64_t now);
  [[nodiscard]] std::optional<NodeId> find_node(const std::string& name) const;
  // New labels from the Node object (not a report: health and report time stay).
  void set_labels(NodeId id, const Labels& labels);
  // New taints from the Node object (its spec.taints, cordon and readiness).
  void set_taints(NodeId id, const Taints& taints);
  // Does any non-degraded node of any cluster carry labels (and taints) the selector
  // accepts?
  [[nodiscard]] bool any_node_matches(const NodeSelector& selector) const;
  [[nodiscard]] const Node& node(NodeId id) const { return nodes_[id]; }
  [[nodiscard]] size_t node_count() const { return nodes_.size(); }

  // Re-derives every node's health from its report age; returns the nodes that changed.
  // Health changes only as reports age or arrive: until the earliest moment a node's can
  // change (kept from the last walk, lowered by every report), it returns at once.
  std::vector<NodeId> refresh_health(int64_t now, const StalenessPolicy& policy);

  // Sum of the non-negative free room of a cluster's schedulable nodes.
  [[nodiscard]] Resources cluster_free(ClusterId id) const { return clusters_[id].free; }

  // The optional placement scores (placement_score.h); the two rules are always on.
  void set_scores(const PlacementScores& scores) { scores_ = scores; }
  [[nodiscard]] const PlacementScores& scores() const { return scores_; }

  // Places the gang in one cluster (the leader on the emptiest fitting node, every other pod
  // packed onto the fullest fitting nodes, role by role, unless a score decides: see
  // placement_score.h) and accounts it; on failure nothing changes.
  std::optional<GangPlacement> place(ClusterId cluster, const GangRequest& request);
  // Places one more pod of `request` size (an executor whose reservation expired) on the
  // fullest node that fits.
  std::optional<NodeId> place_one(ClusterId cluster, const Resources& request,
                                  const NodeSelector* selector, const Resources& regular = {});
  // Would the gang fit this cluster if nothing were placed on it?
  [[nodiscard]] bool fits_when_empty(ClusterId cluster, const GangRequest& request) const;

  // Raw accounting, used to apply and undo placements.
  void acquire(NodeId id, const Resources& amount, bool driver, const Resources& regular = {});
  void release(NodeId id, const Resources& amount, bool driver, const Resources& regular = {});
  // The node's regular allocatable less the requests of pods outside our jobs, and the
  // allocatable itself.
  void set_regular_outside(NodeId id, std::optional<Resources> regular,
                           std::optional<Resources> allocatable = std::nullopt);

  // Nodes the next placements must not use (the job being placed avoids them: a pod of it
  // was evicted there, reclaim_memory.h), ascending; empty: none. A placement call made
  // with some set does not see those nodes at all, as if they had no room.
  void set_avoided(std::vector<NodeId> nodes) { avoided_ = std::move(nodes); }
  [[nodiscard]] bool avoided(NodeId id) const {
    return !avoided_.empty() && std::binary_search(avoided_.begin(), avoided_.end(), id);
  }

  // Bumped whenever a node's capacity or health changes: cached "does this job fit an
  // empty cluster" answers are valid only for one generation.
  [[nodiscard]] uint64_t capacity_generation() const { return generation_; }

 private:
  struct Key {
    int64_t cpu;
    int64_t memory;
    const std::string* name;  // tie-break; nullptr sorts first (lookup probes)
    NodeId id;
  };
  struct FullestFirst {  // ascending free room: best fit for executors
    bool operator()(const Key& a, const Key& b) const;
  };
  struct EmptiestFirst {  // descending free room: spreading drivers
    bool operator()(const Key& a, const Key& b) const;
  };
  struct Cluster {
    std::string name;
    std::set<Key, FullestFirst> fullest;
    std::set<Key, EmptiestFirst> emptiest;
    Resources free;
  };

  [[nodiscard]] Key key_of(NodeId id) const;
  void unindex(NodeId id);
  void index(NodeId id);
  // The fullest node with room for one more pod (best fit).
  std::optional<NodeId> find_packed_node(const Cluster& c, const Resources& request,
                                         const NodeSelector* selector,
                                         const Resources& regular) const;
  // The emptiest node with room for the leader (spreading leaders).
  std::optional<NodeId> find_leader_node(const Cluster& c, const RoleRequest& leader) const;
  // Whether an optional score decides where a pod of this request goes (placement_score.h).
  [[nodiscard]] bool scores_decide(const Resources& batch, const Resources& regular) const;
  // The fitting node the deciding score ranks highest; ties to the first in the order of
  // the point's rule (emptiest for the leader, fullest for the rest).
  std::optional<NodeId> find_scored_node(const Cluster& c, bool leader, const Resources& batch,
                                         const NodeSelector* selector,
                                         const Resources& regular) const;

  std::vector<Cluster> clusters_;
  std::map<std::string, ClusterId> cluster_ids_;
  std::deque<Node> nodes_;  // deque: Key::name points into it and must not move
  std::map<std::string, NodeId> node_ids_;
  uint64_t generation_ = 0;
  PlacementScores scores_;
  std::vector<NodeId> avoided_;  // set_avoided
  // refresh_health's walk: the policy it last used, and the first second at which a node's
  // health may differ from what that walk left (INT64_MIN: walk again).
  StalenessPolicy health_policy_;
  int64_t health_settled_until_ = std::numeric_limits<int64_t>::min();
  // A report or a new node at `reported_at`: its staleness comes no earlier than this.
  void unsettle_health(int64_t reported_at);
};

}  // namespace gleaner::scheduler
