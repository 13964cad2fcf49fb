#pragma once
// Karmada's PropagationPolicy and ClusterPropagationPolicy (policy.karmada.io/v1alpha1, and
// the same objects under ACK One Fleet's policy.one.alibabacloud.com/v1alpha1): which policy
// governs a hub object, and which member clusters it allows. Pure; the fleet loop feeds it
// the hub's objects and its members.
//
// Policy choice, as karmada-controller-manager's detector makes it: a PropagationPolicy of
// the object's namespace before any ClusterPropagationPolicy; among those that match, the
// highest spec.priority (default 0), then the closest selector match (by name, over by label
// selector, over by kind alone), then the name that sorts first. Cluster affinity, as
// Karmada's ClusterMatches: excluded names out, then the label selector, then clusterNames
// (empty: every cluster); then, as Karmada's TaintToleration filter, a cluster with a
// NoSchedule or NoExecute taint is out unless placement.clusterTolerations tolerates it.
// fieldSelector (provider/region/zones) is not read: a policy with one is an error naming
// the field, rather than a placement broader than asked.

#include <optional>
#include <string>
#include <vector>

#include "common/json_fwd.h"
#include "common/result.h"
#include "kube/selectors.h"
#include "scheduler/core/node_selector.h"

namespace gleaner::scheduler::fleet {

struct ResourceSelector {
  std::string api_version;
  std::string kind;
  std::string ns;    // "" any (a PropagationPolicy only ever sees its own namespace)
  std::string name;  // "" any
  std::optional<kube::LabelSelector> labels;
};

struct ClusterAffinity {
  std::vector<std::string> cluster_names;  // empty: every cluster
  std::vector<std::string> exclude;
  std::optional<kube::LabelSelector> labels;
};

struct PropagationPolicy {
  std::string name;
  std::string ns;  // "" for a ClusterPropagationPolicy
  int32_t priority = 0;
  std::vector<ResourceSelector> selectors;
  ClusterAffinity affinity;
  std::vector<Toleration> cluster_tolerations;  // placement.clusterTolerations
  std::string scheduler_name;                   // spec.schedulerName, "" = Karmada's default
  bool gang = false;               // ACK's placement.replicaScheduling.customSchedulingType Gang
  std::string replica_scheduling;  // Duplicated | Divided, "" unset
  bool preserve_resources_on_deletion = false;

  [[nodiscard]] bool cluster_scoped() const { return ns.empty(); }
};

// One PropagationPolicy or ClusterPropagationPolicy object (either API group). Errors
// (kInvalidArgument) name the object and the field.
Result<PropagationPolicy> parse_propagation_policy(const Json& object);

// What a policy is matched against.
struct HubObject {
  std::string api_version;
  std::string kind;
  std::string ns;
  std::string name;
  Labels labels;
};

// How closely a policy's selectors match (Karmada's implicit priority).
enum class SelectorMatch { kNone, kAll, kLabels, kName };
SelectorMatch match(const PropagationPolicy& policy, const HubObject& object);

// The policy that governs `object` among `policies`, or nullptr.
const PropagationPolicy* governing_policy(const std::vector<PropagationPolicy>& policies,
                                          const HubObject& object);

struct MemberCluster {
  std::string name;
  Labels labels;
  Taints taints;
};
// A Karmada Cluster object (cluster.karmada.io/v1alpha1): its name, labels and spec.taints
// (Karmada's cluster controller taints a cluster that is not ready or unreachable). Errors
// (kInvalidArgument) name the object and the field.
Result<MemberCluster> parse_member_cluster(const Json& object);
// The members the policy allows, in the order given.
std::vector<std::string> allowed_clusters(const PropagationPolicy& policy,
                                          const std::vector<MemberCluster>& members);

}  // namespace gleaner::scheduler::fleet
