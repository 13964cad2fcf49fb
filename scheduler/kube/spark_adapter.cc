// Spark's pods (job_adapter.h). Spark labels its driver and executors spark-role (driver |
// executor). Under the Spark operator they carry sparkoperator.k8s.io/app-name, the
// SparkApplication that sizes the gang (spark_gang_shape); without it (spark-submit) the
// application is the value of spark-app-selector and the driver alone is the gang, the
// executors that come later taking free room in its cluster. Two adapters: the operator's
// goes before every other kind, spark-submit's after pod groups (a pod group's label on a
// spark-submit pod wins).
#include "kube/well_known.h"
#include "scheduler/kube/job_adapter.h"

namespace gleaner::scheduler::kube_glue {

namespace {

// The Spark role the pod's spark-role label names, or kNone.
gang::PodRole spark_role(const kube::Pod& pod) {
  const std::string role = pod_label(pod, kube::kSparkRoleLabel);
  if (role == "driver") return gang::PodRole::kDriver;
  if (role == "executor") return gang::PodRole::kExecutor;
  return gang::PodRole::kNone;
}

class SparkOperatorAdapter final : public JobKindAdapter {
 public:
  [[nodiscard]] std::string_view name() const override { return "spark-operator"; }
  bool recognise(const kube::Pod& pod, const JobOwners& owners, gang::PodView& v) const override {
    const gang::PodRole role = spark_role(pod);
    const std::string app = pod_label(pod, kube::kSparkOperatorAppLabel);
    if (app.empty() || role == gang::PodRole::kNone) return false;
    v.role = role;
    v.gang = app;
    if (role != gang::PodRole::kDriver) return true;
    auto owner = owners.spark ? owners.spark(gang::kSparkKind, v.ns, app) : std::nullopt;
    if (owner) {
      v.shape = owner->shape;
    } else {
      v.waiting_for = "waiting for SparkApplication " + v.ns + "/" + app;
    }
    return true;
  }
  [[nodiscard]] bool leads(const gang::PodView& v) const override {
    return v.role == gang::PodRole::kDriver;
  }
};

class SparkSubmitAdapter final : public JobKindAdapter {
 public:
  [[nodiscard]] std::string_view name() const override { return "spark-submit"; }
  bool recognise(const kube::Pod& pod, const JobOwners&, gang::PodView& v) const override {
    const gang::PodRole role = spark_role(pod);
    if (role == gang::PodRole::kNone) return false;
    const std::string app = pod_label(pod, kube::kSparkAppSelectorLabel);
    v.role = role;
    v.gang = app.empty() ? v.name : app;
    if (role == gang::PodRole::kDriver) v.shape = gang::GangShape{v.request, {}, 0};
    return true;
  }
  [[nodiscard]] bool leads(const gang::PodView& v) const override {
    return v.role == gang::PodRole::kDriver;
  }
};

}  // namespace

const JobKindAdapter& spark_operator_adapter() {
  static const SparkOperatorAdapter adapter;
  return adapter;
}

const JobKindAdapter& spark_submit_adapter() {
  static const SparkSubmitAdapter adapter;
  return adapter;
}

}  // namespace gleaner::scheduler::kube_glue
