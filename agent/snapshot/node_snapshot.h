#pragma once
// NodeSnapshot: one immutable view of a node (Node object, its pods with their derived
// classes, and usage metrics) that every pure decision takes as input. The daemon builds
// one per tick; `gleaner-agent calc` loads one from the snapshot file format in
// shared/spec/node-snapshot.md.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/states/pod_classes.h"
#include "common/json_fwd.h"
#include "common/result.h"
#include "kube/objects.h"

namespace gleaner::agent::snapshot {

// CPU in millicores, memory in bytes.
struct Usage {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  friend bool operator==(const Usage&, const Usage&) = default;
};

struct PodState {
  kube::Pod pod;
  cgroup::KubeQos kube_qos = cgroup::KubeQos::kBestEffort;
  states::QoSClass qos = states::QoSClass::kBE;
  states::PriorityClass priority = states::PriorityClass::kBatch;
  Usage request;  // cpu/memory requests as the scheduler counts them
  states::BatchResources batch;
};

struct NodeMetrics {
  double age_seconds = 0;  // how old the newest sample is
  Usage node;
  std::optional<Usage> system;        // measured system usage, when known
  std::map<std::string, Usage> pods;  // keyed "namespace/name"
};

struct NodeSnapshot {
  kube::Node node;
  std::vector<PodState> pods;
  NodeMetrics metrics;

  // metrics.system when given, else max(node - sum of pod usage, 0) per resource.
  [[nodiscard]] Usage system_usage() const;
  [[nodiscard]] const Usage* pod_usage(const std::string& key) const;
};

PodState classify_pod(kube::Pod pod);

// Parses the snapshot JSON; errors name `where` and the offending field.
Result<NodeSnapshot> parse_snapshot(const Json& json, const std::string& where);
Result<NodeSnapshot> load_snapshot_file(const std::string& path);
// The snapshot file form of `snap` (node and pods as the API served them, usage as
// quantities): parse_snapshot of it gives back the same decisions.
Json to_snapshot_json(const NodeSnapshot& snap);
// to_snapshot_json for serving over the agent's unauthenticated HTTP port (GET
// /debug/snapshot): the containers' literal env values and the
// kubectl.kubernetes.io/last-applied-configuration annotation (a copy of the whole manifest)
// are left out, as they may hold secrets; no batch or QoS decision reads them, so `calc`
// on it gives the same answer.
Json shareable_snapshot_json(const NodeSnapshot& snap);

}  // namespace gleaner::agent::snapshot
