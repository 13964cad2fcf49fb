#pragma once
// Reads where a pod may run from its spec: `nodeSelector` and required node affinity
// (`affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
// .nodeSelectorTerms[].matchExpressions`, Gt and Lt included) into the core's NodeSelector.
// `matchFields` is not modelled, and a malformed expression (Gt with two values, a bound
// that is not an integer) is refused: either is an error naming the field, so the live loop
// reports the pod as pending instead of placing it where Kubernetes would not.
// Preferred affinity is a score, not a filter, and is ignored.

#include "common/json_fwd.h"
#include "common/result.h"
#include "scheduler/core/node_selector.h"

namespace gleaner::scheduler::kube_glue {

// `spec` is a pod spec (or a SparkApplication's driver/executor section, which has the
// same `nodeSelector` and `affinity` fields); `where` names it in errors.
Result<NodeSelector> node_selector_of(const Json& spec, const std::string& where);

// `spec.tolerations` of a pod spec (or a SparkApplication driver/executor section).
Result<std::vector<Toleration>> tolerations_of(const Json& spec, const std::string& where);

// A Node's taints as placement sees them: spec.taints, plus the taints Kubernetes uses for
// a cordon (spec.unschedulable: node.kubernetes.io/unschedulable:NoSchedule) and for a Ready
// condition that is False (node.kubernetes.io/not-ready:NoExecute) or Unknown
// (node.kubernetes.io/unreachable:NoExecute). Malformed taints are skipped.
Taints node_taints(const Json& node);

}  // namespace gleaner::scheduler::kube_glue
