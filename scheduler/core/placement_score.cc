#include "scheduler/core/placement_score.h"

#include <algorithm>

#include "scheduler/core/cluster_state.h"

namespace gleaner::scheduler {

int64_t requested_to_capacity_score(const Node& node, const Resources& batch,
                                    const Resources& regular, const ResourceWeights& weights) {
  const Resources capacity = node.capacity();
  const int64_t gpu_capacity =
      capacity.gpus + (node.regular_outside ? node.regular_outside->gpus : 0);
  const int64_t gpus_requested =
      node.used.gpus + node.regular_used.gpus + batch.gpus + regular.gpus;
  int64_t sum = 0;
  int64_t weight_sum = 0;
  auto add = [&](int64_t requested, int64_t have, int64_t weight) {
    if (have <= 0 || weight <= 0) return;
    // Thousandths: memory in bytes times 1000 stays far below INT64_MAX.
    sum += weight * std::clamp<int64_t>(requested * 1000 / have, 0, 1000);
    weight_sum += weight;
  };
  add(node.used.cpu_milli + batch.cpu_milli, capacity.cpu_milli, weights.cpu);
  add(node.used.memory_bytes + batch.memory_bytes, capacity.memory_bytes, weights.memory);
  add(gpus_requested, gpu_capacity, weights.gpus);
  return weight_sum == 0 ? 0 : sum / weight_sum;
}

std::optional<NodeId> ClusterState::find_scored_node(const Cluster& c, bool leader,
                                                     const Resources& batch,
                                                     const NodeSelector* selector,
                                                     const Resources& regular) const {
  const ResourceWeights& weights = *scores_.gpu_bin_pack;
  std::optional<NodeId> best;
  int64_t best_score = -1;
  // Ties go to the node the always-on rule of this point would pick: the first in its order.
  auto consider = [&](const Key& k) {
    const Node& n = nodes_[k.id];
    const Resources free = n.free();
    if (free.cpu_milli < batch.cpu_milli || free.memory_bytes < batch.memory_bytes) return;
    if (batch.gpus > 0 && free.gpus < batch.gpus) return;
    if (avoided(k.id) || !selector_matches(selector, n) || !n.regular_fits(regular)) return;
    const int64_t score = requested_to_capacity_score(n, batch, regular, weights);
    if (score > best_score) {
      best_score = score;
      best = k.id;
    }
  };
  if (leader) {
    std::for_each(c.emptiest.begin(), c.emptiest.end(), consider);
  } else {
    std::for_each(c.fullest.begin(), c.fullest.end(), consider);
  }
  return best;
}

bool ClusterState::scores_decide(const Resources& batch, const Resources& regular) const {
  return scores_.gpu_bin_pack.has_value() && batch.gpus + regular.gpus > 0;
}

}  // namespace gleaner::scheduler
