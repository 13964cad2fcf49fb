#include "scheduler/core/cluster_state.h"

#include <algorithm>
#include <climits>
#include <tuple>

namespace gleaner::scheduler {
namespace {

Resources clamp_non_negative(Resources r) {
  r.cpu_milli = std::max<int64_t>(r.cpu_milli, 0);
  r.memory_bytes = std::max<int64_t>(r.memory_bytes, 0);
  r.gpus = std::max<int64_t>(r.gpus, 0);
  return r;
}

int compare_names(const std::string* a, const std::string* b) {
  if (a == b) return 0;
  if (a == nullptr) return -1;
  if (b == nullptr) return 1;
  return a->compare(*b);
}

}  // namespace

const char* to_string(NodeHealth health) {
  switch (health) {
    case NodeHealth::kFresh:
      return "fresh";
    case NodeHealth::kStale:
      return "stale";
    case NodeHealth::kDegraded:
      return "degraded";
  }
  return "unknown";
}

std::optional<NodeHealth> node_health_from_string(std::string_view text) {
  for (NodeHealth h : {NodeHealth::kFresh, NodeHealth::kStale, NodeHealth::kDegraded})
    if (text == to_string(h)) return h;
  return std::nullopt;
}

std::string health_change_message(const Node& node, NodeHealth before, int64_t last_report,
                                  int64_t now, const StalenessPolicy& policy) {
  const std::string age = std::to_string(now - last_report) + " s";
  switch (node.health) {
    case NodeHealth::kStale:
      return "node " + node.name + " is stale: its last report is " + age + " old (stale after " +
             std::to_string(policy.stale_after_seconds) +
             " s); no new placements there until its agent reports again";
    case NodeHealth::kDegraded:
      return "node " + node.name + " is degraded: its last report is " + age +
             " old (degraded after " + std::to_string(policy.degrade_after_seconds) +
             " s); its batch capacity counts as zero";
    case NodeHealth::kFresh:
      break;
  }
  return "node " + node.name + " reports again, " + age + " after its previous report (it was " +
         to_string(before) + "); placements allowed there again";
}

bool selector_matches(const NodeSelector* selector, const Node& node) {
  if (selector == nullptr) return taints_tolerated(node.taints, {});
  return selector->admits(node.labels, node.taints);
}

bool ClusterState::FullestFirst::operator()(const Key& a, const Key& b) const {
  if (a.cpu != b.cpu) return a.cpu < b.cpu;
  if (a.memory != b.memory) return a.memory < b.memory;
  return compare_names(a.name, b.name) < 0;
}

bool ClusterState::EmptiestFirst::operator()(const Key& a, const Key& b) const {
  if (a.cpu != b.cpu) return a.cpu > b.cpu;
  if (a.memory != b.memory) return a.memory > b.memory;
  return compare_names(a.name, b.name) < 0;
}

ClusterId ClusterState::add_cluster(const std::string& name) {
  auto it = cluster_ids_.find(name);
  if (it != cluster_ids_.end()) return it->second;
  auto id = static_cast<ClusterId>(clusters_.size());
  clusters_.push_back(Cluster{name, {}, {}, {}});
  cluster_ids_.emplace(name, id);
  return id;
}

std::optional<ClusterId> ClusterState::find_cluster(const std::string& name) const {
  auto it = cluster_ids_.find(name);
  if (it == cluster_ids_.end()) return std::nullopt;
  return it->second;
}

std::optional<NodeId> ClusterState::find_node(const std::string& name) const {
  auto it = node_ids_.find(name);
  if (it == node_ids_.end()) return std::nullopt;
  return it->second;
}

ClusterState::Key ClusterState::key_of(NodeId id) const {
  const Node& n = nodes_[id];
  Resources f = n.free();
  return Key{f.cpu_milli, f.memory_bytes, &n.name, id};
}

void ClusterState::unindex(NodeId id) {
  const Node& n = nodes_[id];
  if (!n.schedulable()) return;
  Cluster& c = clusters_[n.cluster];
  Key k = key_of(id);
  c.fullest.erase(k);
  c.emptiest.erase(k);
  c.free -= clamp_non_negative(n.free());
}

void ClusterState::index(NodeId id) {
  const Node& n = nodes_[id];
  if (!n.schedulable()) return;
  Cluster& c = clusters_[n.cluster];
  Key k = key_of(id);
  c.fullest.insert(k);
  c.emptiest.insert(k);
  c.free += clamp_non_negative(n.free());
}

Result<NodeId> ClusterState::upsert_node(const NodeInfo& info, int64_t now) {
  const std::string cluster_name = info.cluster.empty() ? "default" : info.cluster;
  ClusterId cluster = add_cluster(cluster_name);
  if (auto existing = find_node(info.name)) {
    Node& n = nodes_[*existing];
    if (n.cluster != cluster) {
      return make_error(ErrorCode::kInvalidArgument, "node " + info.name + " is in cluster " +
                                                         clusters_[n.cluster].name +
                                                         ", cannot move to " + cluster_name);
    }
    unindex(*existing);
    n.labels = info.labels;
    n.taints = info.taints;
    n.reported = info.batch;
    n.reported_at = now;
    n.health = NodeHealth::kFresh;
    unsettle_health(now);
    index(*existing);
    ++generation_;
    return *existing;
  }
  auto id = static_cast<NodeId>(nodes_.size());
  Node n;
  n.name = info.name;
  n.cluster = cluster;
  n.labels = info.labels;
  n.taints = info.taints;
  n.reported = info.batch;
  n.reported_at = now;
  unsettle_health(now);
  nodes_.push_back(std::move(n));
  node_ids_.emplace(info.name, id);
  index(id);
  ++generation_;
  return id;
}

void ClusterState::set_taints(NodeId id, const Taints& taints) {
  if (id >= nodes_.size() || nodes_[id].taints == taints) return;
  nodes_[id].taints = taints;
  ++generation_;  // "fits an empty cluster" answers depend on which nodes admit pods
}

void ClusterState::set_labels(NodeId id, const Labels& labels) {
  if (id >= nodes_.size() || nodes_[id].labels == labels) return;
  nodes_[id].labels = labels;
  ++generation_;  // "fits an empty cluster" answers depend on which nodes match
}

bool ClusterState::any_node_matches(const NodeSelector& selector) const {
  return std::any_of(nodes_.begin(), nodes_.end(), [&](const Node& n) {
    return n.health != NodeHealth::kDegraded && selector.admits(n.labels, n.taints);
  });
}

Status ClusterState::report(NodeId id, const Resources& batch, int64_t now) {
  if (id >= nodes_.size()) {
    return make_error(ErrorCode::kNotFound, "no node with id " + std::to_string(id));
  }
  Node& n = nodes_[id];
  unindex(id);
  bool changed = n.reported != batch || n.health != NodeHealth::kFresh;
  n.reported = batch;
  n.reported_at = std::max(n.reported_at, now);
  n.health = NodeHealth::kFresh;
  unsettle_health(n.reported_at);
  index(id);
  if (changed) ++generation_;
  return ok_status();
}

std::vector<NodeId> ClusterState::refresh_health(int64_t now, const StalenessPolicy& policy) {
  std::vector<NodeId> changed;
  const bool same_policy = policy.stale_after_seconds == health_policy_.stale_after_seconds &&
                           policy.degrade_after_seconds == health_policy_.degrade_after_seconds;
  if (same_policy && now < health_settled_until_) return changed;
  health_policy_ = policy;
  int64_t settled = std::numeric_limits<int64_t>::max();
  for (NodeId id = 0; id < nodes_.size(); ++id) {
    Node& n = nodes_[id];
    int64_t age = now - n.reported_at;
    NodeHealth h = NodeHealth::kFresh;
    if (age > policy.degrade_after_seconds) {
      h = NodeHealth::kDegraded;
    } else if (age > policy.stale_after_seconds) {
      h = NodeHealth::kStale;
      settled = std::min(settled, n.reported_at + policy.degrade_after_seconds + 1);
    } else {
      settled = std::min(settled, n.reported_at + policy.stale_after_seconds + 1);
    }
    if (h == n.health) continue;
    unindex(id);
    n.health = h;
    index(id);
    changed.push_back(id);
  }
  health_settled_until_ = settled;
  if (!changed.empty()) ++generation_;
  return changed;
}

void ClusterState::unsettle_health(int64_t reported_at) {
  health_settled_until_ =
      std::min(health_settled_until_, reported_at + health_policy_.stale_after_seconds + 1);
}

void ClusterState::acquire(NodeId id, const Resources& amount, bool driver,
                           const Resources& regular) {
  unindex(id);
  nodes_[id].used += amount;
  nodes_[id].regular_used += regular;
  if (driver) ++nodes_[id].drivers;
  index(id);
}

void ClusterState::release(NodeId id, const Resources& amount, bool driver,
                           const Resources& regular) {
  unindex(id);
  nodes_[id].used -= amount;
  nodes_[id].regular_used -= regular;
  if (driver) --nodes_[id].drivers;
  index(id);
}

void ClusterState::set_regular_outside(NodeId id, std::optional<Resources> regular,
                                       std::optional<Resources> allocatable) {
  if (nodes_[id].regular_outside == regular && nodes_[id].regular_allocatable == allocatable)
    return;
  nodes_[id].regular_outside = regular;
  nodes_[id].regular_allocatable = allocatable;
  ++generation_;
}

std::optional<NodeId> ClusterState::find_packed_node(const Cluster& c, const Resources& request,
                                                     const NodeSelector* selector,
                                                     const Resources& regular) const {
  if (scores_decide(request, regular))
    return find_scored_node(c, false, request, selector, regular);
  // Best fit: the first node (least free CPU, then memory) with room for one more.
  auto it = c.fullest.lower_bound(Key{request.cpu_milli, INT64_MIN, nullptr, 0});
  for (; it != c.fullest.end(); ++it) {
    if (it->memory < request.memory_bytes) continue;
    const Node& n = nodes_[it->id];
    if (request.gpus > 0 && n.free().gpus < request.gpus) continue;
    if (avoided(it->id) || !selector_matches(selector, n)) continue;
    if (!n.regular_fits(regular)) continue;
    return it->id;
  }
  return std::nullopt;
}

std::optional<NodeId> ClusterState::find_leader_node(const Cluster& c,
                                                     const RoleRequest& leader) const {
  // Spread leaders: the emptiest fitting node, so drivers of different jobs rarely share a
  // node and one node's loss takes down few applications.
  if (scores_decide(leader.batch, leader.regular))
    return find_scored_node(c, true, leader.batch, leader.selector, leader.regular);
  for (const Key& k : c.emptiest) {
    if (k.cpu < leader.batch.cpu_milli) break;
    if (k.memory < leader.batch.memory_bytes) continue;
    const Node& n = nodes_[k.id];
    if (leader.batch.gpus > 0 && n.free().gpus < leader.batch.gpus) continue;
    if (avoided(k.id) || !selector_matches(leader.selector, n)) continue;
    if (!n.regular_fits(leader.regular)) continue;
    return k.id;
  }
  return std::nullopt;
}

std::optional<NodeId> ClusterState::place_one(ClusterId cluster, const Resources& request,
                                              const NodeSelector* selector,
                                              const Resources& regular) {
  auto id = find_packed_node(clusters_[cluster], request, selector, regular);
  if (id) acquire(*id, request, false, regular);
  return id;
}

std::optional<GangPlacement> ClusterState::place(ClusterId cluster, const GangRequest& request) {
  Cluster& c = clusters_[cluster];
  if (request.roles.empty() || request.roles[0].replicas < 1) return std::nullopt;
  // The sum of free room bounds what any placement can achieve: most failures stop here.
  if (!request.total().fits_in(c.free)) return std::nullopt;

  GangPlacement out;
  out.cluster = cluster;
  out.pods.reserve(request.pod_count());
  // All or nothing: what was taken is given back, pod by pod in the order it was taken.
  auto undo = [&] {
    size_t i = 0;
    for (const RoleRequest& role : request.roles) {
      for (int k = 0; k < role.replicas && i < out.pods.size(); ++k, ++i)
        release(out.pods[i], role.batch, i == 0, role.regular);
    }
    return std::nullopt;
  };
  const RoleRequest& lead = request.roles[0];
  auto leader = find_leader_node(c, lead);
  if (!leader) return std::nullopt;
  acquire(*leader, lead.batch, true, lead.regular);
  out.pods.push_back(*leader);

  // Pack the rest, role by role: fill the fullest fitting node with as many of the role's
  // pods as it takes, then the next.
  for (size_t r = 0; r < request.roles.size(); ++r) {
    const RoleRequest& role = request.roles[r];
    int remaining = role.replicas - (r == 0 ? 1 : 0);
    while (remaining > 0) {
      auto id = find_packed_node(c, role.batch, role.selector, role.regular);
      if (!id) return undo();
      const Node& n = nodes_[*id];
      int64_t room = role.batch.copies_in(n.free());
      if (role.regular != Resources{} && n.regular_outside)
        room = std::min(room, role.regular.copies_in(*n.regular_outside - n.regular_used));
      int k = static_cast<int>(std::min<int64_t>(remaining, std::max<int64_t>(room, 1)));
      acquire(*id, role.batch * k, false, role.regular * k);
      out.pods.insert(out.pods.end(), static_cast<size_t>(k), *id);
      remaining -= k;
    }
  }
  return out;
}

bool ClusterState::fits_when_empty(ClusterId cluster, const GangRequest& request) const {
  if (request.roles.empty() || request.roles[0].replicas < 1) return false;
  // The same greedy as place(), on every non-degraded node's full capacity: each slot is
  // (cpu, memory, gpus, node) so that selectors are checked per role, with the Node's
  // allocatable for the regular requests (GPUs, kept cpu/memory) where it is known.
  struct Slot {
    int64_t cpu;
    int64_t memory;
    int64_t gpus;
    const Node* node;
    Resources regular;
    bool operator<(const Slot& o) const {
      return std::tie(cpu, memory, gpus, node->name) <
             std::tie(o.cpu, o.memory, o.gpus, o.node->name);
    }
  };
  std::vector<Slot> room;
  for (const Node& n : nodes_) {
    if (n.cluster != cluster || n.health == NodeHealth::kDegraded) continue;
    constexpr Resources kUnknown{kGpusUnlimited, kGpusUnlimited, kGpusUnlimited};
    room.push_back(Slot{n.reported.cpu_milli, n.reported.memory_bytes, n.reported.gpus, &n,
                        n.regular_allocatable.value_or(kUnknown)});
  }
  std::sort(room.begin(), room.end());
  auto fits = [](const Slot& s, const RoleRequest& r) {
    return s.cpu >= r.batch.cpu_milli && s.memory >= r.batch.memory_bytes &&
           s.gpus >= r.batch.gpus && r.regular.fits_in(s.regular) &&
           selector_matches(r.selector, *s.node);
  };
  auto take = [&](Slot& s, const RoleRequest& r) {
    s.cpu -= r.batch.cpu_milli;
    s.memory -= r.batch.memory_bytes;
    s.gpus -= r.batch.gpus;
    s.regular -= r.regular;
    std::sort(room.begin(), room.end());
  };
  // The leader first on the largest node, as place() would on an empty cluster.
  const RoleRequest& lead = request.roles[0];
  auto largest =
      std::find_if(room.rbegin(), room.rend(), [&](const Slot& s) { return fits(s, lead); });
  if (largest == room.rend()) return false;
  take(*largest, lead);
  for (size_t r = 0; r < request.roles.size(); ++r) {
    const RoleRequest& role = request.roles[r];
    for (int i = (r == 0 ? 1 : 0); i < role.replicas; ++i) {
      auto slot =
          std::find_if(room.begin(), room.end(), [&](const Slot& s) { return fits(s, role); });
      if (slot == room.end()) return false;
      take(*slot, role);
    }
  }
  return true;
}

}  // namespace gleaner::scheduler
