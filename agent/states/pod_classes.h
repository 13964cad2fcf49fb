#pragma once
// Koordinator's classification of a pod: QoS class (LSE/LSR/LS/BE/SYSTEM), priority
// class (koord-prod/mid/batch/free) and batch resources, derived exactly as koordlet
// and the slo-controller derive them so the two can run side by side.

#include <cstdint>
#include <optional>
#include <string_view>

#include "cgroup/layout.h"  // KubeQos, the Kubernetes QoS class
#include "kube/objects.h"
#include "kube/well_known.h"

namespace gleaner::agent::states {

enum class QoSClass { kLSE, kLSR, kLS, kBE, kSystem };
enum class PriorityClass { kProd, kMid, kBatch, kFree };

const char* to_string(QoSClass qos);
const char* to_string(PriorityClass priority);

// "LSE", "LSR", "LS", "BE", "SYSTEM"; nullopt for anything else (Koordinator's QoSNone).
std::optional<QoSClass> parse_qos_class(std::string_view text);
// "koord-prod", "koord-mid", "koord-batch", "koord-free"; nullopt otherwise.
std::optional<PriorityClass> parse_priority_class(std::string_view text);
// Koordinator's priority ranges: prod 9000-9999, mid 7000-7999, batch 5000-5999,
// free 3000-3999; nullopt outside them.
std::optional<PriorityClass> priority_class_from_value(int32_t priority);

// status.qosClass when the API server set it, else computed from requests and limits
// as the kubelet does.
cgroup::KubeQos kube_qos(const kube::Pod& pod);
cgroup::KubeQos compute_kube_qos(const kube::Pod& pod);
// Label koordinator.sh/qosClass, else Guaranteed -> LSR, Burstable -> LS, BestEffort -> BE.
QoSClass qos_class(const kube::Pod& pod);
// Label koordinator.sh/priority-class, else spec.priority ranges, else a koord-*
// spec.priorityClassName (for objects whose priority was never resolved), else from
// the QoS class: BE -> batch, others -> prod.
PriorityClass priority_class(const kube::Pod& pod);

// kubernetes.io/batch-cpu (millicores) and kubernetes.io/batch-memory (bytes), summed
// over the containers. Limits are nullopt when some container sets none.
struct BatchResources {
  int64_t cpu_request_milli = 0;
  int64_t memory_request_bytes = 0;
  std::optional<int64_t> cpu_limit_milli;
  std::optional<int64_t> memory_limit_bytes;
};
BatchResources batch_resources(const kube::Pod& pod);

}  // namespace gleaner::agent::states
