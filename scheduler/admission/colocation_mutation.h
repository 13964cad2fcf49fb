#pragma once
// The colocation webhook's decision for one pod, pure: which profiles match, what they
// set, and the JSON patch (RFC 6902) that turns the pod into a batch pod. The rules
// (docs/colocation-webhook.md):
// - profiles match by namespaceSelector (the namespace's labels) and selector (the pod's
//   labels) and apply in name order, a later one's fields over an earlier one's; a pod
//   with the ACK annotation sparkoperator.k8s.io/koordinator-colocation: "true" is
//   colocated as BE even without a profile;
// - a pod whose resulting koordinator.sh/qosClass is BE has every container's and init
//   container's cpu and memory requests and limits moved to kubernetes.io/batch-cpu
//   (millicores) and kubernetes.io/batch-memory (bytes), requests to requests and limits
//   to limits (a missing one takes the other's value), so kubelet sees a BestEffort pod
//   and a cpu limit above the request (Spark's coreLimit) is kept; the values it had are
//   kept in the annotation node.koordinator.sh/extended-resource-spec;
// - such a batch pod that names no scheduler (or default-scheduler) and whose profiles
//   name none is given `batch_scheduler`, so kube-scheduler does not place a gang's pods
//   one by one; one that names another scheduler keeps it, with a warning;
// - spec.overhead is never touched (the RuntimeClass admission plugin validates it after
//   the webhooks and refuses a changed one): it stays on regular allocatable;
// - the patch only holds what differs, so a pod already converted (a reinvocation, or a
//   pod created from another's output) gets an empty patch.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/json_util.h"
#include "common/result.h"
#include "kube/selectors.h"
#include "scheduler/admission/colocation_profile.h"

namespace gleaner::scheduler::admission {

struct PriorityClassInfo {
  int32_t value = 0;
  std::string preemption_policy = "PreemptLowerPriority";
};

struct MutationInputs {
  const std::vector<ColocationProfile>* profiles = nullptr;
  Labels namespace_labels;
  // PriorityClass by name; nullopt when no such class exists.
  std::function<std::optional<PriorityClassInfo>(const std::string&)> priority_class;
  // The scheduler a batch pod naming none is given ("" = leave spec.schedulerName alone).
  std::string batch_scheduler;
};

struct Mutation {
  std::vector<std::string> profiles;  // names of the profiles applied, in order
  bool ack_annotation = false;        // colocated by the ACK annotation
  bool converted = false;             // resources moved to batch resources
  bool scheduler_assigned = false;    // spec.schedulerName set to MutationInputs::batch_scheduler
  Json patch = Json::array();         // RFC 6902 operations; empty when nothing changes
  // For AdmissionReview response.warnings: the applied profiles' unsupported fields, a
  // batch pod left to another scheduler, an overhead that stays on regular allocatable.
  std::vector<std::string> warnings;
};

// The labels a namespace has as the API server sees it: its own plus
// kubernetes.io/metadata.name, which the API server sets on every namespace.
Labels namespace_labels_of(const std::string& ns, Labels own);

// Errors (the pod is refused): a profile names a PriorityClass that does not exist, or a
// container's resources cannot be read.
Result<Mutation> mutate_pod(const Json& pod, const MutationInputs& in);

}  // namespace gleaner::scheduler::admission
