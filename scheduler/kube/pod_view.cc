#include "scheduler/kube/pod_view.h"

#include "common/json_util.h"
#include "kube/well_known.h"
#include "scheduler/kube/job_adapter.h"
#include "scheduler/kube/job_kinds.h"
#include "scheduler/kube/node_affinity.h"

namespace gleaner::scheduler::kube_glue {

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

namespace {

// Whether the pod was evicted from its node: kubelet's own eviction leaves it Failed with
// `status.reason: Evicted`; an eviction through the Eviction API (gleaner-agent's, as
// koordlet's) and one by kubelet add the condition `DisruptionTarget` with the reason
// `EvictionByEvictionAPI` or `TerminationByKubelet` before the pod goes (Kubernetes' pod
// disruption conditions, content/en/docs/concepts/workloads/pods/disruptions.md). Other
// disruption reasons (a preemption, a taint, pod GC) are not the node's batch capacity.
bool evicted(const Json& raw) {
  auto status = raw.find("status");
  if (status == raw.end() || !status->is_object()) return false;
  if (auto r = status->find("reason"); r != status->end() && *r == "Evicted") return true;
  auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) return false;
  for (const Json& c : *conditions) {
    if (!c.is_object() || c.value("type", Json()) != "DisruptionTarget" ||
        c.value("status", Json()) != "True") {
      continue;
    }
    const Json reason = c.value("reason", Json());
    if (reason == "EvictionByEvictionAPI" || reason == "TerminationByKubelet") return true;
  }
  return false;
}

// Where one Spark pod may run, built as spark-operator and Spark build the pod
// (kubeflow/spark-operator): spec.<role>.template is the base of the pod (submission.go,
// buildDriverPodTemplate/buildExecutorPodTemplate, passed as spark.kubernetes.*.podTemplateFile);
// spec.nodeSelector becomes spark.kubernetes.node.selector.* conf, which Spark lays over the
// template (rest_submission.go: "template is base, --conf values layered on top"); then the
// operator's pod webhook, which mutates every pod it launched, template or not
// (internal/webhook/sparkpod_defaulter.go): addNodeSelectors sets spec.<role>.nodeSelector's
// pairs over the pod's, addAffinity replaces the pod's affinity with spec.<role>.affinity when
// that is set, addTolerations appends spec.<role>.tolerations to the template's. A later
// value for a label key replaces an earlier one, as those map writes do.
Result<NodeSelector> spark_role_selector(const Json& spec, const NodeSelector& app_level,
                                         const char* role, const std::string& where) {
  const Json& section = spec.value(role, Json::object());
  const Json* template_spec = section.is_object() ? find_path(section, "template/spec") : nullptr;
  static const Json kNone = Json::object();
  const Json& base = template_spec != nullptr ? *template_spec : kNone;
  const std::string at = where + "." + role;
  const std::string template_at = at + ".template.spec";
  auto from_template = node_selector_of(base, template_at);
  if (!from_template) return from_template.error();
  auto own = node_selector_of(section, at);
  if (!own) return own.error();
  auto template_tolerations = tolerations_of(base, template_at);
  if (!template_tolerations) return template_tolerations.error();
  auto own_tolerations = tolerations_of(section, at);
  if (!own_tolerations) return own_tolerations.error();

  NodeSelector out;
  out.labels = std::move(from_template->labels);
  auto set_over = [&out](const Labels& pairs) {
    for (const auto& [k, val] : pairs)
      out.labels.insert_or_assign(k, val);
  };
  set_over(app_level.labels);
  set_over(own->labels);
  const bool own_affinity =
      section.is_object() && section.contains("affinity") && !section["affinity"].is_null();
  out.terms = own_affinity ? std::move(own->terms) : std::move(from_template->terms);
  std::vector<Toleration> tolerations = std::move(*template_tolerations);
  tolerations.insert(tolerations.end(), own_tolerations->begin(), own_tolerations->end());
  out.tolerations.push_back(std::move(tolerations));
  return out;
}

}  // namespace

Result<NodeSelector> spark_selector(const Json& spec, const std::string& where) {
  // spec.nodeSelector goes into both pods; anything else at the application level (no
  // spark-operator field, but read as before) must hold too.
  auto app_level = node_selector_of(spec, where);
  if (!app_level) return app_level.error();
  auto driver = spark_role_selector(spec, *app_level, "driver", where);
  if (!driver) return driver.error();
  auto executor = spark_role_selector(spec, *app_level, "executor", where);
  if (!executor) return executor.error();
  NodeSelector both = merge_selectors(std::move(*driver), *executor);
  return merge_selectors(std::move(both), NodeSelector{{}, app_level->terms, {}});
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
  // spark-operator hands the pods of an application naming a batch scheduler to that
  // scheduler's plugin, which names its scheduler in them (internal/scheduler/volcano,
  // yunikorn, kubescheduler in kubeflow/spark-operator); none of them is this one.
  v.other_scheduler = string_at(raw, "spec/batchScheduler");
  // The gang has one selector: the driver's and the executors' must both hold.
  auto selector = spark_selector(raw.value("spec", Json::object()),
                                 "SparkApplication " + v.ns + "/" + v.name + " spec");
  if (selector) {
    v.selector = std::move(*selector);
  } else {
    v.selector_error = selector.error().message;
  }
  return v;
}

gang::PodView pod_view(const kube::Pod& pod, const std::string& cluster,
                       const std::string& scheduler_name, const JobOwners& owners,
                       const JobKindAdapter** kind) {
  gang::PodView v;
  v.cluster = cluster;
  v.ns = pod.metadata.namespace_name;
  v.name = pod.metadata.name;
  v.uid = pod.metadata.uid;
  v.node = pod.node_name;
  v.phase = pod.phase;
  v.ours = pod.scheduler_name == scheduler_name;
  v.priority = pod.priority.value_or(0);
  v.queue = pod_label(pod, kube::kQueueLabel);
  if (v.queue.empty()) v.queue = pod_label(pod, kube::kKoordQuotaLabel);
  const Json& raw = object_or_empty(pod.raw);
  v.evicted = evicted(raw);
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

  // Its gang, role and index: the first kind that recognises it (job_adapter.h).
  const JobKindAdapter& adapter = recognise_pod(pod, owners, v);
  if (kind != nullptr) *kind = &adapter;
  return v;
}

gang::PodView pod_view(const kube::Pod& pod, const std::string& cluster,
                       const std::string& scheduler_name, const SparkLookup& spark,
                       const TrainingLookup& training) {
  JobOwners owners;
  if (spark) {
    owners.spark = [&spark](const std::string&, const std::string& ns,
                            const std::string& name) -> std::optional<gang::AppView> {
      auto app = spark(ns, name);
      if (!app) return std::nullopt;
      gang::AppView v;
      v.shape = spark_gang_shape(*app);
      return v;
    };
  }
  owners.training = training;
  return pod_view(pod, cluster, scheduler_name, owners);
}

}  // namespace gleaner::scheduler::kube_glue
