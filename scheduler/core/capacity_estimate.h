#pragma once
// How many more copies of a workload a member cluster can take now, on batch capacity: the
// answers of Karmada's scheduler-estimator API (scheduler/estimator/), from the same
// cluster model and the same placement as admission. A copy of the cluster's fresh nodes
// (their reported batch, less what is bound and reserved) takes the placements Karmada
// says it made and members have not shown yet, then as many whole sets as fit, each
// placed as admission places a job: the first pod of the first component (a Spark driver,
// a PyTorchJob master) on the emptiest node that fits, every other pod packed onto the
// fullest, component by component, each under its own selector; GPUs counted like cpu and
// memory. Pure: no I/O, no clock.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/core/cluster_state.h"
#include "scheduler/core/node_selector.h"
#include "scheduler/core/resources.h"

namespace gleaner::scheduler {

// One component of a set: `replicas` pods of `batch` each, where `selector` admits.
struct ComponentDemand {
  std::string name;
  Resources batch;
  int replicas = 1;
  NodeSelector selector;  // labels, required affinity, and the pods' tolerations
};
using ComponentSet = std::vector<ComponentDemand>;

struct EstimateLimits {
  // Pods placed at most per estimate; past it the count so far is returned (a lower bound:
  // the safe side for a scheduler that takes the minimum over estimators).
  int64_t pod_budget = 200000;
  int32_t max_answer = INT32_MAX;
};

// A member's fresh nodes with their free room, in a model of their own: what an estimate
// places on. nullopt ("no opinion") when the cluster is unknown or none of its nodes has a
// fresh report. Taken under the caller's lock; the estimate itself needs none.
struct ClusterCopy {
  ClusterState state;
  ClusterId cluster = 0;
};
std::optional<ClusterCopy> copy_for_estimate(const ClusterState& live, const std::string& cluster);

// Whole copies of `set` that fit the copy after `assumed` (the copy is used up).
int32_t max_component_sets(ClusterCopy copy, const ComponentSet& set,
                           const std::vector<ComponentSet>& assumed,
                           const EstimateLimits& limits = {});
// Both in one: nullopt as copy_for_estimate.
std::optional<int32_t> max_component_sets(const ClusterState& state, const std::string& cluster,
                                          const ComponentSet& set,
                                          const std::vector<ComponentSet>& assumed,
                                          const EstimateLimits& limits = {});

}  // namespace gleaner::scheduler
