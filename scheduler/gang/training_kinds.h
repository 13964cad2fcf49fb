#pragma once
// The Kubeflow training job kinds the scheduler places as gangs, as data: where the API
// serves each, the spec field that holds its replica specs and the roles it may have, and
// how its operator labels the pods it makes. The Kubernetes glue reads jobs and pods by
// this table (kube/job_roles.h, kube/pod_view.h, the informers of kube/job_kinds.h) and
// the simulator takes its kind names, so a kind the ecosystem adds is one row here. Pure.

#include <string>
#include <string_view>
#include <vector>

namespace gleaner::scheduler::gang {

// The pod label that names a pod's role.
enum class RoleLabel {
  kReplicaType,  // training.kubeflow.org/replica-type (Kubeflow's training operator)
  kJobRole,      // training.kubeflow.org/job-role (mpi-operator v2)
};

struct TrainingKind {
  const char* kind;         // PyTorchJob
  const char* api_version;  // kubeflow.org/v1
  const char* plural;       // pytorchjobs
  const char* specs_field;  // pytorchReplicaSpecs (under spec)
  // The roles a job may have, as its CRD spells them; the leader's first (the gang's
  // leader is its first role with replicas).
  std::vector<const char*> roles;
  // A part of the pods' training.kubeflow.org/operator-name (releases spell it
  // differently: pytorch-operator, pytorchjob-controller).
  const char* operator_name;
  RoleLabel role_label;
  // The role label's value on pods that carry no replica-index (a role of one pod, index
  // 0); "" when every pod has one.
  const char* unindexed_role;
  // Boolean spec fields that, true, make the operator label its pods otherwise than this
  // row says: a job that sets one is refused (its pods would match no room).
  std::vector<const char*> refused_switches;
};

// PyTorchJob, TFJob, MPIJob.
const std::vector<TrainingKind>& training_kinds();
// nullptr for a kind not in the table.
const TrainingKind* find_training_kind(std::string_view kind);
// The kind whose operator labels its pods operator-name `name`; nullptr for none.
const TrainingKind* training_kind_by_operator(std::string_view name);
// "PyTorchJob, TFJob or MPIJob", for errors.
std::string training_kind_names();

}  // namespace gleaner::scheduler::gang
