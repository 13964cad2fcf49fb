// Pod groups (job_adapter.h): the labels pod-group.scheduling.sigs.k8s.io/name and
// .../min-available that the coscheduling plugin's lightweight form reads. The group is the
// gang; its pods are peers (kMember), placed together once min-available of them wait.
#include "kube/well_known.h"
#include "scheduler/kube/job_adapter.h"

namespace gleaner::scheduler::kube_glue {

namespace {

class PodGroupAdapter final : public JobKindAdapter {
 public:
  [[nodiscard]] std::string_view name() const override { return "pod-group"; }
  bool recognise(const kube::Pod& pod, const JobOwners&, gang::PodView& v) const override {
    const std::string group = pod_label(pod, kube::kPodGroupNameLabel);
    if (group.empty()) return false;
    v.role = gang::PodRole::kMember;
    v.gang = "podgroup:" + group;  // a group and an application of one name: two gangs
    const std::optional<int> min = non_negative(pod_label(pod, kube::kPodGroupMinLabel));
    v.min_available = min && *min > 0 ? *min : 1;
    return true;
  }
  [[nodiscard]] bool leads(const gang::PodView&) const override { return false; }
};

}  // namespace

const JobKindAdapter& pod_group_adapter() {
  static const PodGroupAdapter adapter;
  return adapter;
}

}  // namespace gleaner::scheduler::kube_glue
