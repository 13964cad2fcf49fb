#pragma once
// The roles of the jobs a fleet places whole (Kubeflow's training jobs: PyTorchJob and
// TFJob, kubeflow.org/v1; MPIJob, kubeflow.org/v2beta1): each role's replicas, per-pod
// request (as the scheduler counts a pod: the sum of its containers, or its largest init
// container when that is more), GPUs, priority class and where its pods may go, read from
// the role's pod template. Pure.
//
// The roles a job may have, as its operator defines them (gang/training_kinds.h):
// PyTorchJob Master and Worker (pytorchReplicaSpecs); TFJob Chief, Master, PS, Worker and
// Evaluator (tfReplicaSpecs); MPIJob Launcher and Worker (mpiReplicaSpecs). A job is one
// gang: every role's pods in one member cluster.

#include <cstdint>
#include <string>
#include <vector>

#include "common/json_fwd.h"
#include "common/result.h"
#include "scheduler/core/capacity_estimate.h"
#include "scheduler/core/node_selector.h"
#include "scheduler/core/resources.h"

namespace gleaner::scheduler::kube_glue {

struct JobRole {
  std::string name;  // "Master", "Worker", ...
  int replicas = 1;
  Resources request;  // cpu millicores, memory bytes, nvidia.com/gpu of one pod
  std::string priority_class;
  NodeSelector selector;  // nodeSelector, required affinity, tolerations
};

struct TrainingJob {
  std::string kind;  // a gang::training_kinds() kind, or SparkApplication
  std::string ns;
  std::string name;
  std::vector<JobRole> roles;  // in the operator's order of the roles
};

// Errors (kInvalidArgument) name the job and the field: an unknown kind or role, another
// apiVersion than the kind's, replicas < 0, a role without a pod template or containers, a
// selector Gleaner cannot honour, a refused switch (MPIJob's runLauncherAsWorker).
Result<TrainingJob> parse_training_job(const Json& object);

// Whether a role's pod template of the training job names
// `scheduler` in spec.schedulerName: its pods are that scheduler's to place.
bool names_scheduler(const Json& object, const std::string& scheduler);

// A SparkApplication (sparkoperator.k8s.io/v1beta2) as roles Driver (1) and Executor (the
// executors its gang is admitted with), each pod sized by Spark's rules (cores, memory +
// overhead), with the section's priorityClassName, nodeSelector, affinity and tolerations.
Result<TrainingJob> parse_spark_job(const Json& object);

// Any job kind the fleet places: SparkApplication or a training kind.
Result<TrainingJob> parse_hub_job(const Json& object);

// The job as one set of components for placement and for Karmada's estimator: roles with
// no replicas left out.
ComponentSet component_set(const TrainingJob& job);

}  // namespace gleaner::scheduler::kube_glue
