#include "scheduler/core/capacity_estimate.h"

#include <algorithm>
#include <limits>

namespace gleaner::scheduler {

std::optional<ClusterCopy> copy_for_estimate(const ClusterState& live, const std::string& name) {
  auto id = live.find_cluster(name);
  if (!id) return std::nullopt;
  ClusterCopy s;
  s.cluster = s.state.add_cluster(name);
  bool any_fresh = false;
  for (NodeId n = 0; n < live.node_count(); ++n) {
    const Node& node = live.node(static_cast<NodeId>(n));
    if (node.cluster != *id || !node.schedulable()) continue;
    any_fresh = true;
    auto copy =
        s.state.upsert_node({node.name, name, node.labels, node.capacity(), node.taints}, 0);
    if (copy) s.state.acquire(*copy, node.used, false);
  }
  if (!any_fresh) return std::nullopt;
  return s;
}

namespace {

// Places one copy of `set` as admission places a job (the first pod of the first component
// on the emptiest node that fits, every other pod packed); on failure nothing stays placed.
// `pods` counts the pods placed.
bool place_set(ClusterCopy& s, const ComponentSet& set, int64_t& pods) {
  GangRequest gang;
  for (const auto& c : set) {
    if (c.replicas > 0) gang.roles.push_back(RoleRequest{c.batch, c.replicas, &c.selector, {}});
  }
  if (gang.roles.empty()) return true;
  if (!s.state.place(s.cluster, gang)) return false;
  pods += static_cast<int64_t>(gang.pod_count());
  return true;
}

// One component: each node takes floor(free / request) pods, whatever order they come in.
int64_t replicas_that_fit(const ClusterCopy& s, const ComponentDemand& c) {
  int64_t total = 0;
  for (NodeId n = 0; n < s.state.node_count(); ++n) {
    const Node& node = s.state.node(n);
    if (!selector_matches(&c.selector, node)) continue;
    const Resources free = node.free();
    const int64_t fit = c.batch.copies_in(free);
    if (fit == std::numeric_limits<int64_t>::max()) return fit;  // asks for nothing
    total += fit;
  }
  return total;
}

}  // namespace

int32_t max_component_sets(ClusterCopy copy, const ComponentSet& set,
                           const std::vector<ComponentSet>& assumed, const EstimateLimits& limits) {
  int64_t pods = 0;
  for (const auto& a : assumed) {
    // What does not fit any more is not there to subtract.
    place_set(copy, a, pods);
  }
  ComponentSet wanted;
  for (const auto& c : set) {
    if (c.replicas > 0) wanted.push_back(c);
  }
  const bool asks_nothing = std::all_of(wanted.begin(), wanted.end(),
                                        [](const auto& c) { return c.batch == Resources{}; });
  if (asks_nothing) {
    // Room is no limit; where the pods may go still is.
    for (const auto& c : wanted) {
      bool somewhere = false;
      for (NodeId n = 0; n < copy.state.node_count() && !somewhere; ++n)
        somewhere = selector_matches(&c.selector, copy.state.node(n));
      if (!somewhere) return 0;
    }
    return limits.max_answer;
  }
  if (wanted.size() == 1 && wanted[0].replicas == 1) {
    const int64_t n = replicas_that_fit(copy, wanted[0]);
    return static_cast<int32_t>(std::min<int64_t>(n, limits.max_answer));
  }
  int64_t sets = 0;
  pods = 0;
  while (sets < limits.max_answer && pods < limits.pod_budget && place_set(copy, wanted, pods))
    ++sets;
  return static_cast<int32_t>(sets);
}

std::optional<int32_t> max_component_sets(const ClusterState& state, const std::string& cluster,
                                          const ComponentSet& set,
                                          const std::vector<ComponentSet>& assumed,
                                          const EstimateLimits& limits) {
  auto copy = copy_for_estimate(state, cluster);
  if (!copy) return std::nullopt;
  return max_component_sets(std::move(*copy), set, assumed, limits);
}

}  // namespace gleaner::scheduler
