#pragma once
// The kinds of application a fleet's hub places into its members, where the API serves
// each, and a Kubeflow training job (gang/training_kinds.h) as the live loop sees it. Pure.

#include <optional>
#include <string>
#include <vector>

#include "common/json_fwd.h"
#include "kube/selectors.h"
#include "kube/well_known.h"
#include "scheduler/gang/gang_scheduler.h"
#include "scheduler/kube/job_roles.h"

namespace gleaner::scheduler::kube_glue {

struct AppKind {
  const char* kind;         // SparkApplication
  const char* api_version;  // sparkoperator.k8s.io/v1beta2
  const char* plural;       // sparkapplications
};

// SparkApplication, then the training kinds (gang/training_kinds.h).
const std::vector<AppKind>& app_kinds();
// nullptr for a kind not placed by the fleet.
const AppKind* find_app_kind(const std::string& kind);
// The API path of one object of `kind`, or (name "") the collection in `ns` ("" = every
// namespace). `kind` must be one of app_kinds().
std::string app_object_path(const std::string& kind, const std::string& ns,
                            const std::string& name = "");
std::string app_api_version(const std::string& kind);

// An object's metadata.labels (those with string values).
Labels object_labels(const Json& object);

// The job's state as the training operator reports it: the type of its newest condition
// whose status is "True" (Created, Running, Restarting, Succeeded, Failed, Suspended); ""
// before the operator has written one.
std::string training_job_state(const Json& object);

// A training job as a hub's application (or a member's copy of one): one gang of its
// roles, the leader's first, each pod sized as its template asks (cpu/memory as batch
// resources, GPUs as regular ones, which kubelet admits against allocatable). The roles'
// node selectors and tolerations are merged into the gang's: every one must hold.
// `object` is the raw job (annotations: placement and origin).
gang::AppView training_app_view(const TrainingJob& job, const Json& object,
                                const std::string& cluster);

}  // namespace gleaner::scheduler::kube_glue
