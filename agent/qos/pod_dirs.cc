#include "agent/qos/pod_dirs.h"

#include "common/json_util.h"
#include "kube/well_known.h"

namespace gleaner::agent::qos {

std::string pod_cgroup(const cgroup::KubeletLayout& layout, const snapshot::PodState& pod) {
  return layout.pod_dir(pod.kube_qos, pod.pod.metadata.uid);
}

std::vector<std::pair<std::string, std::string>> container_cgroups(
    const cgroup::KubeletLayout& layout, const snapshot::PodState& pod) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& status : pod.pod.container_statuses) {
    if (status.container_id.empty()) continue;  // not started yet
    auto dir = layout.container_dir(pod.kube_qos, pod.pod.metadata.uid, status.container_id);
    if (dir) out.emplace_back(status.name, *dir);
  }
  return out;
}

bool is_be_for_suppress(const snapshot::PodState& pod) {
  return is_labelled_be(pod) || pod.kube_qos == cgroup::KubeQos::kBestEffort;
}

bool is_labelled_be(const snapshot::PodState& pod) {
  auto it = pod.pod.metadata.labels.find(kube::kQosClassLabel);
  return it != pod.pod.metadata.labels.end() && it->second == "BE";
}

bool is_terminating(const snapshot::PodState& pod) {
  const Json& raw = object_or_empty(pod.pod.raw);
  auto meta = raw.find("metadata");
  if (meta == raw.end() || !meta->is_object()) return false;
  auto ts = meta->find("deletionTimestamp");
  return ts != meta->end() && !ts->is_null();
}

}  // namespace gleaner::agent::qos
