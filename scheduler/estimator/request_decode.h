#pragma once
// Karmada's estimator requests (estimator/proto) in the core's terms: each component's
// batch request, selector and tolerations, and the assumed workloads. Pure.
//
// Resource requests: kubernetes.io/batch-cpu (millicores) and kubernetes.io/batch-memory
// (bytes) as they are; `cpu` and `memory` count as batch-cpu and batch-memory when the
// priority class is a batch class (Karmada's Spark, PyTorchJob and TFJob interpreters
// send a pod template's plain requests; the colocation webhook turns them into batch
// resources in the member); `pods` and `ephemeral-storage` are not modelled and ignored.
// Anything else (an extended resource such as nvidia.com/gpu), plain cpu/memory of a class
// that is not batch, and node affinity with matchFields get no opinion (-1), so
// karmada-scheduler goes by its other estimators. Node affinity's Gt and Lt compare a node
// label read as an integer with the bound, as kube-scheduler does (kube/selectors.h).

#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "estimator.pb.h"
#include "scheduler/core/capacity_estimate.h"

namespace gleaner::scheduler::estimator {

namespace pb = ::github::com::karmada_io::karmada::pkg::estimator::pb;

struct DecodePolicy {
  std::set<std::string> batch_classes = {"koord-batch", "koord-free"};
  int max_components = 64;
  int max_replicas = 1000000;  // per component of one set
};

struct Decoded {
  std::string no_opinion;  // non-empty: answer -1, and why (for the debug log)
  std::string cluster;
  ComponentSet set;
  std::vector<ComponentSet> assumed;
};

// Errors (kInvalidArgument) name the field: a malformed quantity, affinity (Gt or Lt
// without exactly one integer value included) or toleration, a negative or oversized
// replica count, too many components.
Result<Decoded> decode(const pb::MaxAvailableReplicasRequest& request, const DecodePolicy& policy);
Result<Decoded> decode(const pb::MaxAvailableComponentSetsRequest& request,
                       const DecodePolicy& policy);

}  // namespace gleaner::scheduler::estimator
