#include "scheduler/gang/training_kinds.h"

namespace gleaner::scheduler::gang {

const std::vector<TrainingKind>& training_kinds() {
  static const std::vector<TrainingKind> kinds = {
      // Kubeflow's training operator (kubeflow.org/v1): every pod carries replica-type (the
      // role in lower case) and replica-index.
      {.kind = "PyTorchJob",
       .api_version = "kubeflow.org/v1",
       .plural = "pytorchjobs",
       .specs_field = "pytorchReplicaSpecs",
       .roles = {"Master", "Worker"},
       .operator_name = "pytorch",
       .role_label = RoleLabel::kReplicaType,
       .unindexed_role = "",
       .refused_switches = {}},
      {.kind = "TFJob",
       .api_version = "kubeflow.org/v1",
       .plural = "tfjobs",
       .specs_field = "tfReplicaSpecs",
       .roles = {"Chief", "Master", "PS", "Worker", "Evaluator"},
       .operator_name = "tfjob",
       .role_label = RoleLabel::kReplicaType,
       .unindexed_role = "",
       .refused_switches = {}},
      // mpi-operator v2 (kubeflow/mpi-operator, pkg/apis/kubeflow/v2beta1 types.go and
      // constants.go; pkg/controller/mpi_job_controller.go defaultLabels): its pods carry
      // operator-name mpi-operator, job-name and job-role launcher | worker (no
      // replica-type); workers have replica-index, the launcher (one pod, made by a batch
      // Job) none. With spec.runLauncherAsWorker the launcher is index 0 and the workers
      // count from 1.
      {.kind = "MPIJob",
       .api_version = "kubeflow.org/v2beta1",
       .plural = "mpijobs",
       .specs_field = "mpiReplicaSpecs",
       .roles = {"Launcher", "Worker"},
       .operator_name = "mpi-operator",
       .role_label = RoleLabel::kJobRole,
       .unindexed_role = "launcher",
       .refused_switches = {"runLauncherAsWorker"}}};
  return kinds;
}

const TrainingKind* find_training_kind(std::string_view kind) {
  for (const TrainingKind& k : training_kinds())
    if (kind == k.kind) return &k;
  return nullptr;
}

const TrainingKind* training_kind_by_operator(std::string_view name) {
  for (const TrainingKind& k : training_kinds())
    if (name.find(k.operator_name) != std::string_view::npos) return &k;
  return nullptr;
}

std::string training_kind_names() {
  std::string names;
  const auto& kinds = training_kinds();
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (i > 0) names += i + 1 == kinds.size() ? " or " : ", ";
    names += kinds[i].kind;
  }
  return names;
}

}  // namespace gleaner::scheduler::gang
