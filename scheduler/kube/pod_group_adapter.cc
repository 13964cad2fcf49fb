// Pod groups (job_adapter.h): the labels pod-group.scheduling.sigs.k8s.io/name and
// .../min-available that the coscheduling plugin's lightweight form reads. The group is the
// gang; its pods are peers (kMember), placed together once min-available of them wait.
#include "kube/well_known.h"
#include "scheduler/kube/job_adapter.h"

namespace gleaner::scheduler::kube_glue {

namespace {

bool recognise_group_member(const kube::Pod& pod, const JobOwners&, gang::PodView& v) {
  const std::string group = pod_label(pod, kube::kPodGroupNameLabel);
  if (group.empty()) return false;
  v.role = gang::PodRole::kMember;
  v.gang = "podgroup:" + group;  // a group and an application of one name: two gangs
  const std::optional<int> min = non_negative(pod_label(pod, kube::kPodGroupMinLabel));
  v.min_available = min && *min > 0 ? *min : 1;
  return true;
}

}  // namespace

const JobKindAdapter& pod_group_adapter() {
  static const FixedLeadAdapter adapter("pod-group", recognise_group_member, /*leads=*/false);
  return adapter;
}

}  // namespace gleaner::scheduler::kube_glue
