#pragma once
// Reads a Pod (and the object that owns it) into the live loop's PodView: which gang the pod
// belongs to and in what role, and what it asks for. The gang and the role are the job
// kind's (job_adapter.h: Spark, Kubeflow training jobs, pod groups, YuniKorn task groups,
// lone pods); what every pod has in common is read here:
//   Requests: kubernetes.io/batch-cpu (millicores) and batch-memory (bytes) when the pod
//     asks for them (colocation), else its cpu and memory requests.
//   Queue: label gleaner.io/queue, else quota.scheduling.koordinator.sh/name.
//   Where it may run: spec.nodeSelector and required node affinity (node_affinity.h); a
//     selector gleaner cannot honour is kept as `selector_error`.

#include <functional>
#include <optional>
#include <string>

#include "common/result.h"
#include "kube/objects.h"
#include "kube/spark_application.h"
#include "kube/well_known.h"
#include "scheduler/core/node_selector.h"
#include "scheduler/gang/gang_scheduler.h"
#include "scheduler/kube/job_adapter.h"

namespace gleaner::scheduler::kube_glue {

// (namespace, name) -> the SparkApplication when the informer has it.
using SparkLookup =
    std::function<std::optional<kube::SparkApplication>(const std::string&, const std::string&)>;

gang::GangShape spark_gang_shape(const kube::SparkApplication& app);

// An object's annotation `key` ("" when absent or not a string).
std::string annotation_of(const Json& obj, const char* key);

// A SparkApplication labelled gleaner.io/multi-cluster=true, or a copy one of our links made
// (annotated gleaner.io/origin-cluster); nullopt for any other, unless `labelled_only` is
// false (a hub's applications: a policy says which are ours).
std::optional<gang::AppView> app_view(const kube::SparkApplication& app, const std::string& cluster,
                                      bool labelled_only = true);

// Where a SparkApplication's pods may run, from its `spec` (`where` names it in errors): the
// driver's and the executors' nodeSelector, required node affinity and tolerations, each
// merged from spec.<role>.template.spec, spec.nodeSelector and spec.<role> as spark-operator
// merges them into the pod; the gang's selector holds where both pods' hold.
Result<NodeSelector> spark_selector(const Json& spec, const std::string& where);

// (kind, namespace, name) -> the training job as the live loop reads it, when the informer
// has it and can read it.
using TrainingLookup = std::function<std::optional<gang::AppView>(
    const std::string&, const std::string&, const std::string&)>;

gang::PodView pod_view(const kube::Pod& pod, const std::string& cluster,
                       const std::string& scheduler_name, const JobOwners& owners,
                       const JobKindAdapter** kind = nullptr);  // set to the pod's kind
// The live loop's informers as the owners: a SparkApplication sizes its driver's gang by
// spark_gang_shape.
gang::PodView pod_view(const kube::Pod& pod, const std::string& cluster,
                       const std::string& scheduler_name, const SparkLookup& spark,
                       const TrainingLookup& training = nullptr);

}  // namespace gleaner::scheduler::kube_glue
