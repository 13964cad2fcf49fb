// Kubeflow training jobs' pods (job_adapter.h), one adapter over the kinds of
// gang/training_kinds.h: training.kubeflow.org/job-name names the job, operator-name its
// kind (and so which label names the role: replica-type, or mpi-operator's job-role), and
// replica-index the pod's index within its role (absent on a role of one pod, such as an
// MPIJob's launcher: 0). The pod takes the room its job holds for that role and index: the
// job's roles size the gang; a pod whose job the informer has not shown yet waits for it.
#include <cctype>

#include "kube/well_known.h"
#include "scheduler/gang/training_kinds.h"
#include "scheduler/kube/job_adapter.h"

namespace gleaner::scheduler::kube_glue {

namespace {

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class TrainingJobAdapter final : public JobKindAdapter {
 public:
  [[nodiscard]] std::string_view name() const override { return "training-job"; }
  bool recognise(const kube::Pod& pod, const JobOwners& owners, gang::PodView& v) const override {
    const std::string job = pod_label(pod, kube::kTrainingJobNameLabel);
    const gang::TrainingKind* kind =
        gang::training_kind_by_operator(pod_label(pod, kube::kTrainingOperatorLabel));
    if (job.empty() || kind == nullptr) return false;
    const std::string type = pod_label(pod, kind->role_label == gang::RoleLabel::kJobRole
                                                ? kube::kTrainingJobRoleLabel
                                                : kube::kTrainingReplicaTypeLabel);
    if (type.empty()) return false;
    std::string index = pod_label(pod, kube::kTrainingReplicaIndexLabel);
    if (index.empty() && type == kind->unindexed_role) index = "0";
    const std::optional<int> value = non_negative(index);
    if (!value) return false;
    v.role = gang::PodRole::kReplica;
    v.gang = gang::gang_name(kind->kind, job);
    v.replica_type = type;
    v.replica_index = *value;
    if (!owners.training) return true;
    auto owner = owners.training(kind->kind, v.ns, job);
    if (!owner) {
      v.waiting_for = std::string("waiting for ") + kind->kind + " " + v.ns + "/" + job;
      return true;
    }
    // Its roles are the gang: for the cluster's own job, and for a hub's copy whose
    // placement this scheduler no longer holds (made before a restart; one it holds takes
    // the room reserved for it).
    v.shape = owner->shape;
    if (v.queue.empty()) v.queue = owner->queue;
    return true;
  }
  // The leader is index 0 of the job's first role with replicas (Master, Chief, Launcher).
  [[nodiscard]] bool leads(const gang::PodView& v) const override {
    return v.replica_index == 0 && v.shape && !v.shape->roles.empty() &&
           lower(v.shape->roles.front().name) == v.replica_type;
  }
};

}  // namespace

const JobKindAdapter& training_job_adapter() {
  static const TrainingJobAdapter adapter;
  return adapter;
}

}  // namespace gleaner::scheduler::kube_glue
