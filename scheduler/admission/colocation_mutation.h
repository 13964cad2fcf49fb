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
//   (millicores) and kubernetes.io/batch-memory (bytes), limit equal to request (the API
//   requires it of extended resources), so kubelet sees a BestEffort pod; the values it
//   had are kept in the annotation node.koordinator.sh/extended-resource-spec;
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
};

struct Mutation {
  std::vector<std::string> profiles;  // names of the profiles applied, in order
  bool ack_annotation = false;        // colocated by the ACK annotation
  bool converted = false;             // resources moved to batch resources
  Json patch = Json::array();         // RFC 6902 operations; empty when nothing changes
  std::vector<std::string> warnings;  // for AdmissionReview response.warnings
};

// The labels a namespace has as the API server sees it: its own plus
// kubernetes.io/metadata.name, which the API server sets on every namespace.
Labels namespace_labels_of(const std::string& ns, Labels own);

// Errors (the pod is refused): a profile names a PriorityClass that does not exist, or a
// container's resources cannot be read.
Result<Mutation> mutate_pod(const Json& pod, const MutationInputs& in);

}  // namespace gleaner::scheduler::admission
