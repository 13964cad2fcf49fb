#pragma once
// Job kinds as adapters: each kind of workload the scheduler places as a gang (a Spark
// application, a Kubeflow training job, a pod group, ...) is one JobKindAdapter that
// recognises its pods by the labels and annotations its operator writes, and says which
// gang a pod belongs to, in what role and at what index, and what the gang looks like (from
// the object that owns it, when there is one). pod_view() asks the adapters in the
// registry's order, first match wins, and reads what every pod has in common (requests,
// queue, where it may run) itself. Pure.
//
// Adding a kind today takes four edits, not one: its adapter file, its declaration below,
// its line in the registry (job_adapters.cc), and, for `simulate`, the pods its operator
// would make (sim/cluster_world.cc spells the kind's labels again).
//
// What a lost, replaced or finished pod means stays with the gang layer, by the pod's role
// (gang::PodRole: a driver's loss ends its run, an executor's or member's replacement takes
// its room, a replica's replacement takes its index's room); an adapter picks the role whose
// rules its kind follows.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/objects.h"
#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::kube_glue {

// (kind, namespace, name) -> the object that owns a gang as the live loop reads it (its
// shape; its queue), when the informer has it.
using OwnerLookup = std::function<std::optional<gang::AppView>(
    const std::string&, const std::string&, const std::string&)>;

// The owning objects the adapters may ask for. A lookup left empty is not asked: a Spark
// driver then waits for its application; a training job's replica is read without its job.
struct JobOwners {
  OwnerLookup spark;     // SparkApplication
  OwnerLookup training;  // a gang::training_kinds() kind
};

class JobKindAdapter {
 public:
  virtual ~JobKindAdapter() = default;
  // The kind as docs and errors name it ("spark-operator", "pod-group").
  [[nodiscard]] virtual std::string_view name() const = 0;
  // For a pod of this kind: its gang, role, index, min_available and (from the owning
  // object, or the pod itself) its gang's shape or why it is not known yet, written into
  // `v`; the queue too when the pod names none and the owner does. False for another kind's
  // pod, `v` untouched.
  virtual bool recognise(const kube::Pod& pod, const JobOwners& owners, gang::PodView& v) const = 0;
  // Whether the recognised pod `v` leads its gang: the pod whose start starts the job and
  // whose end ends it (a Spark driver, a training job's first role's index 0). Members of
  // a pod group are peers: none leads.
  [[nodiscard]] virtual bool leads(const gang::PodView& v) const = 0;
};

// A kind whose pods all lead their gang (a lone pod) or none does (the peers of a pod group
// or a YuniKorn application): its name, its recognise as one function, and that answer.
class FixedLeadAdapter final : public JobKindAdapter {
 public:
  using Recognise = bool (*)(const kube::Pod& pod, const JobOwners& owners, gang::PodView& v);
  FixedLeadAdapter(std::string_view name, Recognise recognise, bool leads)
      : name_(name), recognise_(recognise), leads_(leads) {}
  [[nodiscard]] std::string_view name() const override { return name_; }
  bool recognise(const kube::Pod& pod, const JobOwners& owners, gang::PodView& v) const override {
    return recognise_(pod, owners, v);
  }
  [[nodiscard]] bool leads(const gang::PodView&) const override { return leads_; }

 private:
  std::string_view name_;
  Recognise recognise_;
  bool leads_;
};

// The registry, in the order pods are tried: Spark operator, training jobs, pod groups,
// YuniKorn task groups, spark-submit, lone pods (last: every pod is one).
const std::vector<const JobKindAdapter*>& job_kind_adapters();

// The adapter that recognises `pod`, having written its part of `v` (never null: a lone
// pod is every kind's fallback).
const JobKindAdapter& recognise_pod(const kube::Pod& pod, const JobOwners& owners,
                                    gang::PodView& v);

// The registered adapters, one file each.
const JobKindAdapter& spark_operator_adapter();  // spark_adapter.cc
const JobKindAdapter& spark_submit_adapter();    // spark_adapter.cc
const JobKindAdapter& training_job_adapter();    // training_adapter.cc
const JobKindAdapter& pod_group_adapter();       // pod_group_adapter.cc
const JobKindAdapter& yunikorn_adapter();        // yunikorn_adapter.cc
// The kind of a YuniKorn application's gang (gang::gang_name), as a scenario names it.
inline constexpr const char* kYuniKornKind = "YuniKorn";
const JobKindAdapter& lone_pod_adapter();  // lone_pod_adapter.cc

// Helpers the adapters share: a pod's label or annotation ("" when absent), and a
// non-negative decimal (nullopt for anything else).
std::string pod_label(const kube::Pod& pod, const char* key);
std::string pod_annotation(const kube::Pod& pod, const char* key);
std::optional<int> non_negative(std::string_view text);

}  // namespace gleaner::scheduler::kube_glue
