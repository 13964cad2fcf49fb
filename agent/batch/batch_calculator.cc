#include "agent/batch/batch_calculator.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "common/json_util.h"
#include "kube/well_known.h"

namespace gleaner::agent::batch {
namespace {

using config::CalculatePolicy;
using states::PriorityClass;

__extension__ using Wide = __int128;

// value * percent / 100 without overflow, truncated toward zero like Koordinator's
// conversion of the scaled quantity back to an integer.
int64_t percent_of(int64_t value, int64_t percent) {
  return static_cast<int64_t>(static_cast<Wide>(value) * percent / 100);
}

// The safety margin exactly as slo-controller computes it: the ratio (100 - reclaim) / 100
// as a double, times the capacity as a double, truncated toward zero. Being floating point,
// it differs from exact integer arithmetic by one unit on some capacities (21849688900
// bytes at 43% reclaimed: 12454322672, not 12454322673); a reclaim percent above 100 gives
// a negative margin, which slo-controller accepts and so do we.
int64_t koordinator_safety_margin(int64_t capacity, int64_t reclaim_percent) {
  const double ratio = static_cast<double>(100 - reclaim_percent) / 100.0;
  return static_cast<int64_t>(static_cast<double>(capacity) * ratio);
}

// Counts the CPUs of a Linux cpu list ("0-3,8,10-11"); nullopt when malformed.
std::optional<int64_t> count_cpu_list(std::string_view list) {
  int64_t count = 0;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string part(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    if (part.empty()) return std::nullopt;
    size_t dash = part.find('-');
    char* end = nullptr;
    long first = std::strtol(part.c_str(), &end, 10);
    if (end == part.c_str() || first < 0) return std::nullopt;
    long last = first;
    if (dash != std::string::npos) {
      if (end != part.c_str() + dash) return std::nullopt;
      const char* second = part.c_str() + dash + 1;
      last = std::strtol(second, &end, 10);
      if (end == second || last < first) return std::nullopt;
    }
    if (*end != '\0') return std::nullopt;
    count += last - first + 1;
  }
  return count;
}

bool is_high_priority(PriorityClass p) {
  return p != PriorityClass::kBatch && p != PriorityClass::kFree;
}

bool is_active(const kube::Pod& pod) {
  return pod.phase == "Running" || pod.phase == "Pending";
}

void finish(ResourceTerms& t, std::optional<int64_t> threshold_percent) {
  int64_t base = t.capacity - t.safety_margin;
  int64_t raw = 0;
  switch (t.policy) {
    case CalculatePolicy::kUsage:
      raw = base - t.system_used - t.hp_used;
      break;
    case CalculatePolicy::kRequest:
      raw = base - t.node_reserved - t.hp_request;
      break;
    case CalculatePolicy::kMaxUsageRequest:
      raw = base - t.system_used - t.hp_max_used_request;
      break;
  }
  t.by_policy = std::max<int64_t>(raw, 0);
  t.batch = t.by_policy;
  if (threshold_percent) {
    t.threshold_cap = percent_of(t.capacity, *threshold_percent);
    t.batch = std::min(t.batch, *t.threshold_cap);
  }
}

int64_t resource_of(const kube::ResourceList& list, const char* name, bool cpu) {
  auto it = list.find(name);
  if (it == list.end()) return 0;
  return cpu ? it->second.milli_value() : it->second.value();
}

nlohmann::ordered_json terms_json(const ResourceTerms& t) {
  nlohmann::ordered_json j;
  j["policy"] = config::to_string(t.policy);
  j["reclaimThresholdPercent"] = t.reclaim_percent;
  j["capacity"] = t.capacity;
  j["allocatable"] = t.allocatable;
  j["safetyMargin"] = t.safety_margin;
  j["kubeletReserved"] = t.kubelet_reserved;
  j["annotationReserved"] = t.annotation_reserved;
  j["nodeReserved"] = t.node_reserved;
  j["systemUsage"] = t.system_usage;
  j["systemUsed"] = t.system_used;
  j["hpRequest"] = t.hp_request;
  j["hpUsed"] = t.hp_used;
  j["hpMaxUsedRequest"] = t.hp_max_used_request;
  j["danglingUsed"] = t.dangling_used;
  j["byPolicy"] = t.by_policy;
  j["thresholdCap"] = t.threshold_cap ? nlohmann::ordered_json(*t.threshold_cap) : nullptr;
  j["batch"] = t.batch;
  return j;
}

}  // namespace

snapshot::Usage reservation_from_annotation(const kube::StringMap& annotations) {
  snapshot::Usage out;
  auto it = annotations.find(kube::kReservationAnnotation);
  if (it == annotations.end()) return out;
  auto json = parse_json(it->second, kube::kReservationAnnotation);
  if (!json || !json->is_object()) return out;
  if (const Json* res = find_path(*json, "resources"); res != nullptr && res->is_object()) {
    if (auto c = res->find("cpu"); c != res->end()) {
      if (auto q = quantity_from_json(*c, "cpu"); q && q->milli_value() > 0) {
        out.cpu_milli = q->milli_value();
      }
    }
    if (auto m = res->find("memory"); m != res->end()) {
      if (auto q = quantity_from_json(*m, "memory"); q && q->value() > 0) {
        out.memory_bytes = q->value();
      }
    }
  }
  if (auto cpus = json->find("reservedCPUs"); cpus != json->end() && cpus->is_string()) {
    if (auto n = count_cpu_list(cpus->get<std::string>()); n && *n > 0) out.cpu_milli = *n * 1000;
  }
  return out;
}

BatchResult calculate_batch(const snapshot::NodeSnapshot& snap,
                            const config::NodeColocation& colocation) {
  BatchResult r;
  const config::ColocationStrategy& s = colocation.strategy;
  ResourceTerms& cpu = r.cpu;
  ResourceTerms& mem = r.memory;
  cpu.policy = s.cpu_calculate_policy;
  mem.policy = s.memory_calculate_policy;
  cpu.reclaim_percent = s.cpu_reclaim_threshold_percent;
  mem.reclaim_percent = s.memory_reclaim_threshold_percent;

  const kube::Node& node = snap.node;
  cpu.capacity = resource_of(node.capacity, kube::kResourceCpu, true);
  mem.capacity = resource_of(node.capacity, kube::kResourceMemory, false);
  cpu.allocatable = resource_of(node.allocatable, kube::kResourceCpu, true);
  mem.allocatable = resource_of(node.allocatable, kube::kResourceMemory, false);
  cpu.safety_margin = koordinator_safety_margin(cpu.capacity, cpu.reclaim_percent);
  mem.safety_margin = koordinator_safety_margin(mem.capacity, mem.reclaim_percent);
  // A node without allocatable reports none reserved by the kubelet (not all of it).
  if (node.allocatable.count(kube::kResourceCpu) != 0) {
    cpu.kubelet_reserved = std::max<int64_t>(cpu.capacity - cpu.allocatable, 0);
  }
  if (node.allocatable.count(kube::kResourceMemory) != 0) {
    mem.kubelet_reserved = std::max<int64_t>(mem.capacity - mem.allocatable, 0);
  }
  snapshot::Usage annotation = reservation_from_annotation(node.metadata.annotations);
  cpu.annotation_reserved = annotation.cpu_milli;
  mem.annotation_reserved = annotation.memory_bytes;
  cpu.node_reserved = std::max(cpu.kubelet_reserved, cpu.annotation_reserved);
  mem.node_reserved = std::max(mem.kubelet_reserved, mem.annotation_reserved);
  snapshot::Usage system = snap.system_usage();
  cpu.system_usage = system.cpu_milli;
  mem.system_usage = system.memory_bytes;
  cpu.system_used = std::max(cpu.system_usage, cpu.node_reserved);
  mem.system_used = std::max(mem.system_usage, mem.node_reserved);

  // Metrics whose pod is not an active pod in the list are "dangling"; Koordinator counts
  // them as high-priority usage unless the pod is known to be batch or free.
  std::map<std::string, const snapshot::PodState*> by_key;
  for (const auto& p : snap.pods)
    by_key[p.pod.key()] = &p;
  for (const auto& [key, usage] : snap.metrics.pods) {
    auto it = by_key.find(key);
    if (it != by_key.end() && is_active(it->second->pod)) continue;
    if (it != by_key.end() && !is_high_priority(it->second->priority)) continue;
    cpu.dangling_used += usage.cpu_milli;
    mem.dangling_used += usage.memory_bytes;
    r.dangling_pods.push_back(key);
  }

  for (const auto& p : snap.pods) {
    if (!is_active(p.pod) || !is_high_priority(p.priority)) continue;
    ++r.hp_pods;
    cpu.hp_request += p.request.cpu_milli;
    mem.hp_request += p.request.memory_bytes;
    const snapshot::Usage* used = snap.pod_usage(p.pod.key());
    if (used == nullptr) {
      // A pod without metrics (just started, or its metrics were lost) counts its request,
      // in maxUsageRequest too: counting nothing would lend capacity it is about to use.
      ++r.hp_pods_without_metrics;
      cpu.hp_used += p.request.cpu_milli;
      mem.hp_used += p.request.memory_bytes;
      cpu.hp_max_used_request += p.request.cpu_milli;
      mem.hp_max_used_request += p.request.memory_bytes;
      continue;
    }
    // LSE pods own their CPUs exclusively: their CPU counts as fully used.
    cpu.hp_used += p.qos == states::QoSClass::kLSE ? p.request.cpu_milli : used->cpu_milli;
    mem.hp_used += used->memory_bytes;
    cpu.hp_max_used_request += std::max(p.request.cpu_milli, used->cpu_milli);
    mem.hp_max_used_request += std::max(p.request.memory_bytes, used->memory_bytes);
  }
  cpu.hp_used += cpu.dangling_used;
  mem.hp_used += mem.dangling_used;
  cpu.hp_max_used_request += cpu.dangling_used;
  mem.hp_max_used_request += mem.dangling_used;

  finish(cpu, s.batch_cpu_threshold_percent);
  finish(mem, s.batch_memory_threshold_percent);

  if (!colocation.enabled) {
    r.state = ColocationState::kDisabled;
    r.reason = colocation.cluster_enabled ? "the node's colocation strategy has enable=false"
                                          : "the cluster colocation strategy has enable=false";
  } else if (snap.metrics.age_seconds >= static_cast<double>(s.degrade_time_minutes) * 60.0) {
    r.state = ColocationState::kDegraded;
    r.reason = "metrics are " + std::to_string(static_cast<int64_t>(snap.metrics.age_seconds)) +
               "s old, degradeTimeMinutes is " + std::to_string(s.degrade_time_minutes);
  } else {
    r.state = ColocationState::kEnabled;
    r.batch_cpu_milli = cpu.batch;
    r.batch_memory_bytes = mem.batch;
  }
  return r;
}

nlohmann::ordered_json explain(const BatchResult& result,
                               const config::NodeColocation& colocation) {
  nlohmann::ordered_json j;
  if (!result.reason.empty()) j["reason"] = result.reason;
  j["strategy"] = colocation.matched;
  j["notes"] = colocation.notes;
  j["hpPods"] = result.hp_pods;
  j["hpPodsWithoutMetrics"] = result.hp_pods_without_metrics;
  j["danglingPods"] = result.dangling_pods;
  j["cpu"] = terms_json(result.cpu);
  // cpuSuppressMode slo: the most BE kept over the last minute bounds the batch CPU.
  if (result.cpu_bound_milli) j["cpu"]["boundBySloAllowance"] = *result.cpu_bound_milli;
  j["memory"] = terms_json(result.memory);
  return j;
}

}  // namespace gleaner::agent::batch
