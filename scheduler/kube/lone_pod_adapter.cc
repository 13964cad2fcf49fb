// A pod of no gang (job_adapter.h): placed alone, by the rules of a job of one pod. Last in
// the registry: it recognises every pod.
#include "scheduler/kube/job_adapter.h"

namespace gleaner::scheduler::kube_glue {

const JobKindAdapter& lone_pod_adapter() {
  // Every pod is one (role kNone, no gang), and leads its job of one pod.
  static const FixedLeadAdapter adapter(
      "pod", [](const kube::Pod&, const JobOwners&, gang::PodView&) { return true; },
      /*leads=*/true);
  return adapter;
}

}  // namespace gleaner::scheduler::kube_glue
