#include "scheduler/kube/pod_view.h"

#include <charconv>

#include "common/json_util.h"
#include "kube/well_known.h"
#include "scheduler/gang/training_kinds.h"
#include "scheduler/kube/job_kinds.h"
#include "scheduler/kube/node_affinity.h"

namespace gleaner::scheduler::kube_glue {

namespace {

std::string label(const kube::Pod& pod, const char* key) {
  auto it = pod.metadata.labels.find(key);
  return it == pod.metadata.labels.end() ? std::string() : it->second;
}

}  // namespace

std::string annotation_of(const Json& obj, const char* key) {
  // Not find_path: annotation keys contain a '/'.
  const Json& meta = obj.value("metadata", Json::object());
  const Json& annotations = meta.value("annotations", Json::object());
  if (!annotations.is_object()) return "";
  auto it = annotations.find(key);
  return it != annotations.end() && it->is_string() ? it->get<std::string>() : "";
}

gang::GangShape spark_gang_shape(const kube::SparkApplication& app) {
  gang::GangShape shape;
  shape.driver = Resources{app.driver.cpu_request_milli, app.pod_memory_bytes(app.driver)};
  shape.executor = Resources{app.executor.cpu_request_milli, app.pod_memory_bytes(app.executor)};
  shape.executors = app.gang_executors();
  // GPUs are never batch resources: kubelet admits them against allocatable, as it does
  // the cpu/memory requests a pod keeps.
  shape.driver_regular.gpus = app.driver.gpus;
  shape.executor_regular.gpus = app.executor.gpus;
  return shape;
}

std::optional<gang::AppView> app_view(const kube::SparkApplication& app, const std::string& cluster,
                                      bool labelled_only) {
  auto label = app.labels.find(kube::kMultiClusterLabel);
  const bool labelled = label != app.labels.end() && label->second == "true";
  gang::AppView v;
  v.cluster = cluster;
  v.ns = app.namespace_;
  v.name = app.name;
  v.uid = app.uid;
  v.shape = spark_gang_shape(app);
  if (auto q = app.labels.find(kube::kQueueLabel); q != app.labels.end()) {
    v.queue = q->second;
  } else if (auto k = app.labels.find(kube::kKoordQuotaLabel); k != app.labels.end()) {
    v.queue = k->second;
  }
  const Json& raw = object_or_empty(app.raw);
  const Json* suspend = find_path(raw, "spec/suspend");
  v.suspended = suspend != nullptr && suspend->is_boolean() && suspend->get<bool>();
  // Not find_path: the annotation key contains a '/'.
  const Json& meta = raw.value("metadata", Json::object());
  const Json& annotations = meta.value("annotations", Json::object());
  if (annotations.is_object()) {
    auto p = annotations.find(kube::kPlacementAnnotation);
    if (p != annotations.end() && p->is_string()) v.placement = p->get<std::string>();
    auto o = annotations.find(kube::kOriginAnnotation);
    if (o != annotations.end() && o->is_string()) v.origin = o->get<std::string>();
  }
  // A copy is ours whatever its labels (a hub's applications carry none of ours).
  if (labelled_only && !labelled && v.origin.empty()) return std::nullopt;
  v.state = app.state;
  // The gang has one selector: the application's, the driver's and the executors' must
  // all hold.
  const std::string where = "SparkApplication " + v.ns + "/" + v.name;
  const Json& spec = raw.value("spec", Json::object());
  for (const char* part : {"", "driver", "executor"}) {
    const Json& section = *part == '\0' ? spec : spec.value(part, Json::object());
    const std::string at = where + " spec" + (*part ? "." : "") + part;
    auto selector = node_selector_of(section, at);
    auto tolerations = *part != '\0' ? tolerations_of(section, at)
                                     : Result<std::vector<Toleration>>(std::vector<Toleration>{});
    if (!selector || !tolerations) {
      v.selector_error = (!selector ? selector.error() : tolerations.error()).message;
      break;
    }
    // The driver and the executors each bring their tolerations: both must hold.
    if (*part != '\0') selector->tolerations.push_back(std::move(*tolerations));
    v.selector = merge_selectors(std::move(v.selector), *selector);
  }
  return v;
}

gang::PodView pod_view(const kube::Pod& pod, const std::string& cluster,
                       const std::string& scheduler_name, const SparkLookup& spark,
                       const TrainingLookup& training) {
  gang::PodView v;
  v.cluster = cluster;
  v.ns = pod.metadata.namespace_name;
  v.name = pod.metadata.name;
  v.uid = pod.metadata.uid;
  v.node = pod.node_name;
  v.phase = pod.phase;
  v.ours = pod.scheduler_name == scheduler_name;
  v.priority = pod.priority.value_or(0);
  v.queue = label(pod, kube::kQueueLabel);
  if (v.queue.empty()) v.queue = label(pod, kube::kKoordQuotaLabel);
  const Json& raw = object_or_empty(pod.raw);
  if (auto spec = raw.find("spec"); spec != raw.end()) {
    const std::string where = "pod " + v.ns + "/" + v.name + " spec";
    auto selector = node_selector_of(*spec, where);
    auto tolerations = tolerations_of(*spec, where);
    if (selector && tolerations) {
      v.selector = std::move(*selector);
      v.selector.tolerations.push_back(std::move(*tolerations));
    } else {
      v.selector_error = (!selector ? selector.error() : tolerations.error()).message;
    }
  }

  // Batch resources are integers in base units: batch-cpu counts millicores.
  const int64_t batch_cpu = kube::pod_request(pod, kube::kResourceBatchCpu).value();
  const int64_t batch_memory = kube::pod_request(pod, kube::kResourceBatchMemory).value();
  v.batch = batch_cpu > 0 || batch_memory > 0;
  v.regular = Resources{kube::pod_request(pod, kube::kResourceCpu).milli_value(),
                        kube::pod_request(pod, kube::kResourceMemory).value(),
                        kube::pod_request(pod, kResourceGpu).value()};
  v.request.cpu_milli =
      batch_cpu > 0 ? batch_cpu : kube::pod_request(pod, kube::kResourceCpu).milli_value();
  v.request.memory_bytes =
      batch_memory > 0 ? batch_memory : kube::pod_request(pod, kube::kResourceMemory).value();

  const std::string role = label(pod, kube::kSparkRoleLabel);
  const std::string operator_app = label(pod, kube::kSparkOperatorAppLabel);
  const std::string group = label(pod, kube::kPodGroupNameLabel);
  if (!operator_app.empty() && (role == "driver" || role == "executor")) {
    v.role = role == "driver" ? gang::PodRole::kDriver : gang::PodRole::kExecutor;
    v.gang = operator_app;
    if (v.role == gang::PodRole::kDriver) {
      auto app = spark ? spark(v.ns, operator_app) : std::nullopt;
      if (app) {
        v.shape = spark_gang_shape(*app);
      } else {
        v.waiting_for = "waiting for SparkApplication " + v.ns + "/" + operator_app;
      }
    }
    return v;
  }
  const std::string training_job = label(pod, kube::kTrainingJobNameLabel);
  // The operator's name says the job's kind, and the kind which label names the role.
  const gang::TrainingKind* training_kind =
      gang::training_kind_by_operator(label(pod, kube::kTrainingOperatorLabel));
  const std::string replica_type = training_kind == nullptr ? std::string()
                                   : training_kind->role_label == gang::RoleLabel::kJobRole
                                       ? label(pod, kube::kTrainingJobRoleLabel)
                                       : label(pod, kube::kTrainingReplicaTypeLabel);
  if (!training_job.empty() && !replica_type.empty()) {
    const char* kind = training_kind->kind;
    std::string index = label(pod, kube::kTrainingReplicaIndexLabel);
    if (index.empty() && replica_type == training_kind->unindexed_role) index = "0";
    int value = -1;
    auto [ptr, ec] = std::from_chars(index.data(), index.data() + index.size(), value);
    if (ec == std::errc() && ptr == index.data() + index.size() && value >= 0) {
      v.role = gang::PodRole::kReplica;
      v.gang = gang::gang_name(kind, training_job);
      v.replica_type = replica_type;
      v.replica_index = value;
      if (!training) return v;
      auto job = training(kind, v.ns, training_job);
      if (!job) {
        v.waiting_for = std::string("waiting for ") + kind + " " + v.ns + "/" + training_job;
        return v;
      }
      // Its roles are the gang: for the cluster's own job, and for a hub's copy whose
      // placement this scheduler no longer holds (made before a restart; one it holds
      // takes the room reserved for it).
      v.shape = job->shape;
      if (v.queue.empty()) v.queue = job->queue;
      return v;
    }
  }
  if (!group.empty()) {
    v.role = gang::PodRole::kMember;
    v.gang = "podgroup:" + group;
    const std::string min = label(pod, kube::kPodGroupMinLabel);
    int value = 1;
    auto [ptr, ec] = std::from_chars(min.data(), min.data() + min.size(), value);
    v.min_available =
        (ec == std::errc() && ptr == min.data() + min.size() && value > 0) ? value : 1;
    return v;
  }
  if (role == "driver" || role == "executor") {
    const std::string app = label(pod, kube::kSparkAppSelectorLabel);
    v.role = role == "driver" ? gang::PodRole::kDriver : gang::PodRole::kExecutor;
    v.gang = app.empty() ? v.name : app;
    // spark-submit without the operator: the driver alone is the gang; executors that
    // come later take free room in its cluster.
    if (v.role == gang::PodRole::kDriver) v.shape = gang::GangShape{v.request, {}, 0};
    return v;
  }
  return v;
}

}  // namespace gleaner::scheduler::kube_glue
