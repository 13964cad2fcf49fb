#pragma once
// The ElasticQuotaTree resource (scheduling.sigs.k8s.io/v1beta1, as ACK documents it)
// read as the scheduler's quota tree: `spec.root` with name, min, max and children, each
// child a queue by its name, and `namespaces` on leaves mapping the namespaces whose jobs
// name no queue to that leaf. The root's max caps the whole tree; its min is not used
// (nothing is guaranteed above the tree). Quantities: cpu and memory, or
// kubernetes.io/batch-cpu (millicores) and kubernetes.io/batch-memory (bytes); a
// resource a node omits from max is unlimited, from min is 0. Other resources are named
// in `warnings` and ignored.
//
// The tree's schema has no place for a queue's queueing policy (a structural CRD schema
// would prune an unknown field), so it is an annotation on the object:
//   gleaner.io/queueing: "team-a=blocking, team-b=nonblocking"
// naming queues of the tree; the others follow the scheduler-wide --policy.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/json_fwd.h"
#include "common/result.h"
#include "kube/well_known.h"
#include "scheduler/core/quota_tree.h"

namespace gleaner::scheduler::kube_glue {

struct QuotaConfig {
  std::vector<QueueSpec> queues;
  std::optional<Resources> root_max;
  std::map<std::string, std::string> namespace_queue;  // namespace -> leaf queue
  std::vector<std::string> warnings;
};

// One ElasticQuotaTree object; errors name the object and the node's path ("root.a").
// The result is also checked by QuotaTree::build (min within max, names unique).
Result<QuotaConfig> parse_elastic_quota_tree(const Json& object);

}  // namespace gleaner::scheduler::kube_glue
