#pragma once
// Typed reads of the subset of v1 Pod and v1 Node that Gleaner uses. Each object keeps
// its raw JSON (shared, never changed: copies of a Pod cost no copy of it) for the callers
// that need a field we do not model or the object as it came. A field
// of the wrong type is an error naming the object and the field path; absent optional
// fields are simply empty.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/json_fwd.h"
#include "common/quantity.h"
#include "common/result.h"
#include "kube/well_known.h"

namespace gleaner::kube {

using ResourceList = std::map<std::string, Quantity>;
using StringMap = std::map<std::string, std::string>;

struct ObjectMeta {
  std::string name;
  std::string namespace_name;
  std::string uid;
  StringMap labels;
  StringMap annotations;
};

struct ResourceRequirements {
  ResourceList requests;
  ResourceList limits;
};

struct Container {
  std::string name;
  ResourceRequirements resources;
};

struct ContainerStatus {
  std::string name;
  std::string container_id;  // "containerd://abc..." as the kubelet reports it
};

struct Pod {
  ObjectMeta metadata;
  // spec
  std::string node_name;
  std::optional<int32_t> priority;
  std::string priority_class_name;
  std::string scheduler_name;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  ResourceList overhead;
  // status
  std::string phase;
  std::string qos_class;  // empty when the API server has not set it
  std::vector<ContainerStatus> container_statuses;
  std::vector<ContainerStatus> init_container_statuses;

  std::shared_ptr<const Json> raw;  // null for a Pod built in code

  // "namespace/name", the key pod metrics are stored under.
  [[nodiscard]] std::string key() const;
};

struct Node {
  ObjectMeta metadata;
  ResourceList capacity;
  ResourceList allocatable;

  std::shared_ptr<const Json> raw;  // null for a Node built in code
};

Result<Pod> parse_pod(const Json& json);
Result<Node> parse_node(const Json& json);
// Accepts a v1 PodList object (`kubectl get pods -o json`) or a plain array of pods.
Result<std::vector<Pod>> parse_pod_list(const Json& json);

// The pod's effective request for `resource` as the scheduler computes it:
// max(sum over containers, max over init containers) + overhead.
Quantity pod_request(const Pod& pod, const std::string& resource);
// Sum of the containers' limits for `resource` (init containers excluded); nullopt when
// any container has no limit for it (the pod is then unbounded).
std::optional<Quantity> pod_limit(const Pod& pod, const std::string& resource);

}  // namespace gleaner::kube
