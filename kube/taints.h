#pragma once
// Kubernetes' Taint and Toleration lists (corev1), read into common/taints.h's types: a
// Node's and a Karmada Cluster's spec.taints, a pod's (or a pod template's) tolerations and
// a PropagationPolicy's placement.clusterTolerations all have these shapes. Pure.

#include <string>
#include <vector>

#include "common/json_fwd.h"
#include "common/result.h"
#include "common/taints.h"

namespace gleaner::kube {

// A list of tolerations, `where` naming the list in errors (kInvalidArgument): an operator
// other than Equal or Exists, an unknown effect. null: none.
Result<std::vector<Toleration>> tolerations_in(const Json& list, const std::string& where);

// A list of taints; malformed ones (no key, unknown effect) are skipped.
Taints taints_in(const Json& list);

}  // namespace gleaner::kube
