#pragma once
// Kubernetes' Taint and Toleration lists (corev1), read into the core's types: a Node's and a
// Karmada Cluster's spec.taints, a pod's tolerations and a PropagationPolicy's
// placement.clusterTolerations all have these shapes. Pure.

#include <string>
#include <vector>

#include "common/json_fwd.h"
#include "common/result.h"
#include "scheduler/core/node_selector.h"

namespace gleaner::scheduler::fleet {

// A list of tolerations, `where` naming the list in errors (kInvalidArgument): an operator
// other than Equal or Exists, an unknown effect. null: none.
Result<std::vector<Toleration>> tolerations_in(const Json& list, const std::string& where);

// A list of taints; malformed ones (no key, unknown effect) are skipped.
Taints taints_in(const Json& list);

}  // namespace gleaner::scheduler::fleet
