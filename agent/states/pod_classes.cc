#include "agent/states/pod_classes.h"

#include <map>
#include <string>

#include "kube/well_known.h"

namespace gleaner::agent::states {

const char* to_string(QoSClass qos) {
  switch (qos) {
    case QoSClass::kLSE:
      return "LSE";
    case QoSClass::kLSR:
      return "LSR";
    case QoSClass::kLS:
      return "LS";
    case QoSClass::kBE:
      return "BE";
    case QoSClass::kSystem:
      return "SYSTEM";
  }
  return "LS";
}

const char* to_string(PriorityClass priority) {
  switch (priority) {
    case PriorityClass::kProd:
      return "koord-prod";
    case PriorityClass::kMid:
      return "koord-mid";
    case PriorityClass::kBatch:
      return "koord-batch";
    case PriorityClass::kFree:
      return "koord-free";
  }
  return "koord-prod";
}

std::optional<QoSClass> parse_qos_class(std::string_view text) {
  if (text == "LSE") return QoSClass::kLSE;
  if (text == "LSR") return QoSClass::kLSR;
  if (text == "LS") return QoSClass::kLS;
  if (text == "BE") return QoSClass::kBE;
  if (text == "SYSTEM") return QoSClass::kSystem;
  return std::nullopt;
}

std::optional<PriorityClass> parse_priority_class(std::string_view text) {
  if (text == "koord-prod") return PriorityClass::kProd;
  if (text == "koord-mid") return PriorityClass::kMid;
  if (text == "koord-batch") return PriorityClass::kBatch;
  if (text == "koord-free") return PriorityClass::kFree;
  return std::nullopt;
}

std::optional<PriorityClass> priority_class_from_value(int32_t priority) {
  if (priority >= 9000 && priority <= 9999) return PriorityClass::kProd;
  if (priority >= 7000 && priority <= 7999) return PriorityClass::kMid;
  if (priority >= 5000 && priority <= 5999) return PriorityClass::kBatch;
  if (priority >= 3000 && priority <= 3999) return PriorityClass::kFree;
  return std::nullopt;
}

cgroup::KubeQos compute_kube_qos(const kube::Pod& pod) {
  // The kubelet's rule: only cpu and memory count; Guaranteed needs every container to
  // limit both and the summed requests to equal the summed limits.
  const std::string names[] = {kube::kResourceCpu, kube::kResourceMemory};
  std::map<std::string, int64_t> requests;
  std::map<std::string, int64_t> limits;
  bool guaranteed = true;
  auto visit = [&](const kube::Container& c) {
    int limits_found = 0;
    for (const auto& name : names) {
      auto lim = c.resources.limits.find(name);
      bool has_limit = lim != c.resources.limits.end() && lim->second.milli_value() > 0;
      auto req = c.resources.requests.find(name);
      int64_t request = req != c.resources.requests.end() ? req->second.milli_value()
                        : has_limit                       ? lim->second.milli_value()
                                                          : 0;
      if (request > 0) requests[name] += request;
      if (has_limit) {
        limits[name] += lim->second.milli_value();
        ++limits_found;
      }
    }
    if (limits_found != 2) guaranteed = false;
  };
  for (const auto& c : pod.containers)
    visit(c);
  for (const auto& c : pod.init_containers)
    visit(c);
  if (requests.empty() && limits.empty()) return cgroup::KubeQos::kBestEffort;
  if (guaranteed) {
    for (const auto& [name, value] : requests) {
      auto lim = limits.find(name);
      if (lim == limits.end() || lim->second != value) guaranteed = false;
    }
  }
  if (guaranteed && requests.size() == limits.size()) return cgroup::KubeQos::kGuaranteed;
  return cgroup::KubeQos::kBurstable;
}

cgroup::KubeQos kube_qos(const kube::Pod& pod) {
  if (pod.qos_class == "Guaranteed") return cgroup::KubeQos::kGuaranteed;
  if (pod.qos_class == "Burstable") return cgroup::KubeQos::kBurstable;
  if (pod.qos_class == "BestEffort") return cgroup::KubeQos::kBestEffort;
  return compute_kube_qos(pod);
}

QoSClass qos_class(const kube::Pod& pod) {
  auto it = pod.metadata.labels.find(kube::kQosClassLabel);
  if (it != pod.metadata.labels.end()) {
    if (auto q = parse_qos_class(it->second)) return *q;
  }
  switch (kube_qos(pod)) {
    case cgroup::KubeQos::kGuaranteed:
      return QoSClass::kLSR;
    case cgroup::KubeQos::kBurstable:
      return QoSClass::kLS;
    case cgroup::KubeQos::kBestEffort:
      return QoSClass::kBE;
  }
  return QoSClass::kLS;
}

PriorityClass priority_class(const kube::Pod& pod) {
  auto it = pod.metadata.labels.find(kube::kPriorityClassLabel);
  if (it != pod.metadata.labels.end()) {
    if (auto p = parse_priority_class(it->second)) return *p;
  }
  if (pod.priority) {
    if (auto p = priority_class_from_value(*pod.priority)) return *p;
  } else if (auto p = parse_priority_class(pod.priority_class_name)) {
    return *p;
  }
  return qos_class(pod) == QoSClass::kBE ? PriorityClass::kBatch : PriorityClass::kProd;
}

BatchResources batch_resources(const kube::Pod& pod) {
  BatchResources out;
  // The batch resources are plain integers: millicores for CPU, bytes for memory.
  out.cpu_request_milli = kube::pod_request(pod, kube::kResourceBatchCpu).value();
  out.memory_request_bytes = kube::pod_request(pod, kube::kResourceBatchMemory).value();
  if (auto l = kube::pod_limit(pod, kube::kResourceBatchCpu)) out.cpu_limit_milli = l->value();
  if (auto l = kube::pod_limit(pod, kube::kResourceBatchMemory)) {
    out.memory_limit_bytes = l->value();
  }
  return out;
}

}  // namespace gleaner::agent::states
