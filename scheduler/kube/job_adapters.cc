// The registry of job kinds (job_adapter.h) and the helpers its adapters share.
#include <charconv>

#include "scheduler/kube/job_adapter.h"

namespace gleaner::scheduler::kube_glue {

const std::vector<const JobKindAdapter*>& job_kind_adapters() {
  // First match wins. The Spark operator's and the training operator's labels name the
  // owning object, so they go first; a pod group's label (or YuniKorn's task groups) then
  // wins over a plain spark-submit application id, as the pod's author asked for a gang;
  // every pod is at least a lone pod.
  static const std::vector<const JobKindAdapter*> adapters = {
      &spark_operator_adapter(), &training_job_adapter(), &pod_group_adapter(),
      &yunikorn_adapter(),       &spark_submit_adapter(), &lone_pod_adapter()};
  return adapters;
}

const JobKindAdapter& recognise_pod(const kube::Pod& pod, const JobOwners& owners,
                                    gang::PodView& v) {
  for (const JobKindAdapter* adapter : job_kind_adapters())
    if (adapter->recognise(pod, owners, v)) return *adapter;
  return lone_pod_adapter();  // recognises every pod: not reached
}

std::string pod_label(const kube::Pod& pod, const char* key) {
  auto it = pod.metadata.labels.find(key);
  return it == pod.metadata.labels.end() ? std::string() : it->second;
}

std::string pod_annotation(const kube::Pod& pod, const char* key) {
  auto it = pod.metadata.annotations.find(key);
  return it == pod.metadata.annotations.end() ? std::string() : it->second;
}

std::optional<int> non_negative(std::string_view text) {
  int value = -1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace gleaner::scheduler::kube_glue
