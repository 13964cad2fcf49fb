// A pod of no gang (job_adapter.h): placed alone, by the rules of a job of one pod. Last in
// the registry: it recognises every pod.
#include "scheduler/kube/job_adapter.h"

namespace gleaner::scheduler::kube_glue {

namespace {

class LonePodAdapter final : public JobKindAdapter {
 public:
  [[nodiscard]] std::string_view name() const override { return "pod"; }
  bool recognise(const kube::Pod&, const JobOwners&, gang::PodView&) const override {
    return true;  // role kNone, no gang
  }
  [[nodiscard]] bool leads(const gang::PodView&) const override { return true; }
};

}  // namespace

const JobKindAdapter& lone_pod_adapter() {
  static const LonePodAdapter adapter;
  return adapter;
}

}  // namespace gleaner::scheduler::kube_glue
