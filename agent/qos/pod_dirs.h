#pragma once
// Where a snapshot pod's cgroups are, and which pods count as BE for each strategy.

#include <string>
#include <utility>
#include <vector>

#include "agent/snapshot/node_snapshot.h"
#include "cgroup/layout.h"

namespace gleaner::agent::qos {

std::string pod_cgroup(const cgroup::KubeletLayout& layout, const snapshot::PodState& pod);
// (container name, cgroup dir) for every running container with a parseable id.
std::vector<std::pair<std::string, std::string>> container_cgroups(
    const cgroup::KubeletLayout& layout, const snapshot::PodState& pod);

// Suppress treats a pod as BE when it is labelled BE or kubelet classes it BestEffort.
bool is_be_for_suppress(const snapshot::PodState& pod);
// BE cgroups and BE eviction act on pods labelled koordinator.sh/qosClass=BE only.
bool is_labelled_be(const snapshot::PodState& pod);
// metadata.deletionTimestamp is set: the pod is going away.
bool is_terminating(const snapshot::PodState& pod);

}  // namespace gleaner::agent::qos
