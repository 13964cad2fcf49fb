// The nodes and the room outside the core's jobs: node changes pass through here to the
// cluster model, and pods the core places no part of (bound by another scheduler, or
// executors beyond their gang) hold room by key, so that each is counted once however
// often the world repeats it, and given back once.
#include "scheduler/core/scheduler.h"

namespace gleaner::scheduler {

Result<NodeId> Scheduler::upsert_node(const NodeInfo& info, int64_t now) {
  return clusters_.upsert_node(info, now);
}

void Scheduler::set_node_labels(NodeId node, const Labels& labels) {
  clusters_.set_labels(node, labels);
}

void Scheduler::set_node_taints(NodeId node, const Taints& taints) {
  clusters_.set_taints(node, taints);
}

std::vector<NodeId> Scheduler::refresh_health(int64_t now, const StalenessPolicy& policy) {
  return clusters_.refresh_health(now, policy);
}

void Scheduler::set_regular_outside(NodeId node, std::optional<Resources> regular,
                                    std::optional<Resources> allocatable) {
  clusters_.set_regular_outside(node, regular, allocatable);
}

void Scheduler::account_foreign_pod(const std::string& key, NodeId node, const Resources& amount) {
  auto it = foreign_pods_.find(key);
  if (it != foreign_pods_.end()) {
    const ForeignPod& held = it->second;
    if (held.node == node && held.amount == amount && held.regular == Resources{}) return;
    release_foreign_pod(key);
  }
  clusters_.acquire(node, amount, false);
  foreign_pods_[key] = ForeignPod{node, amount, {}};
}

bool Scheduler::release_foreign_pod(const std::string& key) {
  auto it = foreign_pods_.find(key);
  if (it == foreign_pods_.end()) return false;
  clusters_.release(it->second.node, it->second.amount, false, it->second.regular);
  foreign_pods_.erase(it);
  return true;
}

std::optional<NodeId> Scheduler::foreign_pod_node(const std::string& key) const {
  auto it = foreign_pods_.find(key);
  if (it == foreign_pods_.end()) return std::nullopt;
  return it->second.node;
}

Result<NodeId> Scheduler::place_extra_executor(const std::string& key, JobId id,
                                               const Resources& request, const Resources& regular,
                                               const NodeSelector* selector, int64_t now) {
  if (id >= jobs_.size()) return make_error(ErrorCode::kNotFound, "no job " + std::to_string(id));
  Job& j = jobs_[id];
  if ((j.phase != JobPhase::kAdmitted && j.phase != JobPhase::kRunning) || !j.cluster)
    return make_error(ErrorCode::kInvalidArgument, "job " + j.spec.name + " is not running");
  // Room the key held before is given back first: it is one pod, counted once.
  release_foreign_pod(key);
  // Like the job's last role (a Spark application's executors) unless told otherwise.
  const size_t steered_before = steered_.size();
  auto node = place_one_avoiding(j, kExtraExecutorIndex, request,
                                 selector != nullptr ? selector : j.selector_of(j.roles.back()),
                                 regular, now);
  if (steered_.size() > steered_before) steered_.back().pod_key = key;
  if (!node) {
    return make_error(ErrorCode::kUnavailable,
                      regular == Resources{}
                          ? "no batch room left in cluster " + clusters_.cluster_name(*j.cluster)
                          : "no node of cluster " + clusters_.cluster_name(*j.cluster) +
                                " has both the batch room and the regular allocatable "
                                "(cpu/memory requests) it needs");
  }
  foreign_pods_[key] = ForeignPod{*node, request, regular};
  return *node;
}

}  // namespace gleaner::scheduler
