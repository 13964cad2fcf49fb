#include "scheduler/core/cluster_state.h"

#include <algorithm>
#include <climits>

namespace gleaner::scheduler {
namespace {

Resources clamp_non_negative(Resources r) {
  r.cpu_milli = std::max<int64_t>(r.cpu_milli, 0);
  r.memory_bytes = std::max<int64_t>(r.memory_bytes, 0);
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
  index(id);
  if (changed) ++generation_;
  return ok_status();
}

std::vector<NodeId> ClusterState::refresh_health(int64_t now, const StalenessPolicy& policy) {
  std::vector<NodeId> changed;
  for (NodeId id = 0; id < nodes_.size(); ++id) {
    Node& n = nodes_[id];
    int64_t age = now - n.reported_at;
    NodeHealth h = NodeHealth::kFresh;
    if (age > policy.degrade_after_seconds) {
      h = NodeHealth::kDegraded;
    } else if (age > policy.stale_after_seconds) {
      h = NodeHealth::kStale;
    }
    if (h == n.health) continue;
    unindex(id);
    n.health = h;
    index(id);
    changed.push_back(id);
  }
  if (!changed.empty()) ++generation_;
  return changed;
}

Resources ClusterState::cluster_capacity(ClusterId id) const {
  Resources total;
  for (const Node& n : nodes_) {
    if (n.cluster == id) total += n.capacity();
  }
  return total;
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

void ClusterState::set_regular_outside(NodeId id, std::optional<Resources> regular) {
  if (nodes_[id].regular_outside == regular) return;
  nodes_[id].regular_outside = regular;
  ++generation_;
}

std::optional<NodeId> ClusterState::find_executor_node(const Cluster& c, const Resources& request,
                                                       const NodeSelector* selector,
                                                       const Resources& regular) const {
  // Best fit: the first node (least free CPU, then memory) with room for one more.
  auto it = c.fullest.lower_bound(Key{request.cpu_milli, INT64_MIN, nullptr, 0});
  for (; it != c.fullest.end(); ++it) {
    if (it->memory < request.memory_bytes) continue;
    if (!selector_matches(selector, nodes_[it->id])) continue;
    if (!nodes_[it->id].regular_fits(regular)) continue;
    return it->id;
  }
  return std::nullopt;
}

std::optional<NodeId> ClusterState::place_one(ClusterId cluster, const Resources& request,
                                              const NodeSelector* selector,
                                              const Resources& regular) {
  auto id = find_executor_node(clusters_[cluster], request, selector, regular);
  if (id) acquire(*id, request, false, regular);
  return id;
}

std::optional<GangPlacement> ClusterState::place(ClusterId cluster, const GangRequest& request) {
  Cluster& c = clusters_[cluster];
  // The sum of free room bounds what any placement can achieve: most failures stop here.
  if (!request.total().fits_in(c.free)) return std::nullopt;

  GangPlacement out;
  out.cluster = cluster;
  // Spread drivers: the emptiest fitting node, so drivers of different jobs rarely share
  // a node and one node's loss takes down few applications.
  std::optional<NodeId> driver;
  for (const Key& k : c.emptiest) {
    if (k.cpu < request.driver.cpu_milli) break;
    if (k.memory < request.driver.memory_bytes) continue;
    if (!selector_matches(request.selector, nodes_[k.id])) continue;
    if (!nodes_[k.id].regular_fits(request.driver_regular)) continue;
    driver = k.id;
    break;
  }
  if (!driver) return std::nullopt;
  acquire(*driver, request.driver, true, request.driver_regular);
  out.driver = *driver;

  // Pack executors: fill the fullest fitting node with as many as it takes, then the next.
  int remaining = request.executors;
  out.executors.reserve(static_cast<size_t>(remaining));
  while (remaining > 0) {
    auto id = find_executor_node(c, request.executor, request.selector, request.executor_regular);
    if (!id) break;
    const Node& n = nodes_[*id];
    int64_t room = request.executor.copies_in(n.free());
    if (request.executor_regular != Resources{} && n.regular_outside)
      room =
          std::min(room, request.executor_regular.copies_in(*n.regular_outside - n.regular_used));
    int k = static_cast<int>(std::min<int64_t>(remaining, std::max<int64_t>(room, 1)));
    acquire(*id, request.executor * k, false, request.executor_regular * k);
    out.executors.insert(out.executors.end(), static_cast<size_t>(k), *id);
    remaining -= k;
  }
  if (remaining > 0) {
    // All or nothing: undo what was taken.
    for (NodeId id : out.executors)
      release(id, request.executor, false, request.executor_regular);
    release(out.driver, request.driver, true, request.driver_regular);
    return std::nullopt;
  }
  return out;
}

bool ClusterState::fits_when_empty(ClusterId cluster, const GangRequest& request) const {
  // The same greedy as place(), on every non-degraded node's full capacity.
  std::vector<std::pair<int64_t, int64_t>> room;
  for (const Node& n : nodes_) {
    if (n.cluster != cluster || n.health == NodeHealth::kDegraded) continue;
    if (!selector_matches(request.selector, n)) continue;
    room.emplace_back(n.reported.cpu_milli, n.reported.memory_bytes);
  }
  std::sort(room.begin(), room.end());
  auto take = [&](const Resources& r) {
    for (auto& slot : room) {
      if (slot.first >= r.cpu_milli && slot.second >= r.memory_bytes) {
        slot.first -= r.cpu_milli;
        slot.second -= r.memory_bytes;
        std::sort(room.begin(), room.end());
        return true;
      }
    }
    return false;
  };
  // Driver first on the largest node, as place() would on an empty cluster.
  bool driver_placed = false;
  for (auto it = room.rbegin(); it != room.rend(); ++it) {
    if (it->first >= request.driver.cpu_milli && it->second >= request.driver.memory_bytes) {
      it->first -= request.driver.cpu_milli;
      it->second -= request.driver.memory_bytes;
      std::sort(room.begin(), room.end());
      driver_placed = true;
      break;
    }
  }
  if (!driver_placed) return false;
  for (int i = 0; i < request.executors; ++i) {
    if (!take(request.executor)) return false;
  }
  return true;
}

}  // namespace gleaner::scheduler
