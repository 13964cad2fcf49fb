#include "agent/qos/kubelet_values.h"

#include <algorithm>
#include <cstdint>

#include "agent/states/pod_classes.h"
#include "cgroup/parsers.h"

namespace gleaner::agent::qos {
namespace {

using cgroup::KubeQos;
using cgroup::Resource;

// helpers_linux.go's constants.
constexpr int64_t kMinShares = 2;
constexpr int64_t kSharesPerCpu = 1024;
constexpr int64_t kQuotaPeriodUs = 100000;
constexpr int64_t kMinQuotaPeriodUs = 1000;

int64_t milli_cpu_to_shares(int64_t milli) {
  if (milli == 0) return kMinShares;
  return std::max(milli * kSharesPerCpu / 1000, kMinShares);
}

int64_t milli_cpu_to_quota(int64_t milli) {
  return std::max(milli * kQuotaPeriodUs / 1000, kMinQuotaPeriodUs);
}

int64_t amount(const kube::ResourceList& list, const char* name, bool milli) {
  auto it = list.find(name);
  if (it == list.end()) return 0;
  return milli ? it->second.milli_value() : it->second.value();
}

// What kubelet sets from one set of requests and limits (a container's, or a pod's sums).
struct Demand {
  int64_t cpu_request_milli = 0;
  int64_t cpu_limit_milli = 0;  // 0: none declared (by every container, for a pod)
  int64_t memory_limit = 0;     // bytes; 0: none declared
};

Demand container_demand(const kube::Container& c) {
  Demand d{amount(c.resources.requests, "cpu", true), amount(c.resources.limits, "cpu", true),
           amount(c.resources.limits, "memory", false)};
  // The API server defaults a missing request to the limit.
  if (d.cpu_request_milli == 0) d.cpu_request_milli = d.cpu_limit_milli;
  return d;
}

// resource.PodRequestsAndLimits: the containers' sum, at least any init container's, plus
// the pod's overhead; a limit counts only when every container declares one.
Demand pod_demand(const kube::Pod& pod) {
  Demand sum;
  bool cpu_limited = !pod.containers.empty();
  bool memory_limited = !pod.containers.empty();
  for (const auto& c : pod.containers) {
    const Demand d = container_demand(c);
    sum.cpu_request_milli += d.cpu_request_milli;
    sum.cpu_limit_milli += d.cpu_limit_milli;
    sum.memory_limit += d.memory_limit;
    cpu_limited = cpu_limited && d.cpu_limit_milli > 0;
    memory_limited = memory_limited && d.memory_limit > 0;
  }
  for (const auto& c : pod.init_containers) {
    const Demand d = container_demand(c);
    sum.cpu_request_milli = std::max(sum.cpu_request_milli, d.cpu_request_milli);
    sum.cpu_limit_milli = std::max(sum.cpu_limit_milli, d.cpu_limit_milli);
    sum.memory_limit = std::max(sum.memory_limit, d.memory_limit);
  }
  sum.cpu_request_milli += amount(pod.overhead, "cpu", true);
  sum.cpu_limit_milli = cpu_limited ? sum.cpu_limit_milli + amount(pod.overhead, "cpu", true) : 0;
  sum.memory_limit = memory_limited ? sum.memory_limit + amount(pod.overhead, "memory", false) : 0;
  return sum;
}

std::optional<std::string> from_demand(Resource resource, const Demand& d, KubeQos qos) {
  switch (resource) {
    case Resource::kCpuShares:
      return std::to_string(qos == KubeQos::kBestEffort ? kMinShares
                                                        : milli_cpu_to_shares(d.cpu_request_milli));
    case Resource::kCpuQuota:
      return std::to_string(d.cpu_limit_milli > 0 ? milli_cpu_to_quota(d.cpu_limit_milli)
                                                  : cgroup::kUnlimited);
    case Resource::kMemoryLimit:
      return std::to_string(d.memory_limit > 0 ? d.memory_limit : cgroup::kUnlimited);
    default:
      return std::nullopt;
  }
}

// The knobs kubelet never sets: the kernel's default (Documentation/admin-guide/cgroup-v2.rst;
// the Anolis memcg extensions' defaults for the wmark and priority files).
std::optional<std::string> kernel_default(Resource resource) {
  switch (resource) {
    case Resource::kCpuIdle:
    case Resource::kCpuBurst:
    case Resource::kMemoryMin:
    case Resource::kMemoryLow:
    case Resource::kMemoryOomGroup:
    case Resource::kMemoryWmarkRatio:
    case Resource::kMemoryWmarkMinAdj:
    case Resource::kMemoryUsePriorityOom:
    case Resource::kMemoryPriority:
      return "0";
    case Resource::kMemoryWmarkScaleFactor:
      return "50";
    case Resource::kMemoryHigh:
      return std::to_string(cgroup::kUnlimited);
    case Resource::kCpuPeriod:
      return std::to_string(kQuotaPeriodUs);
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<std::string> kubelet_value(Resource resource, std::string_view cgroup,
                                         const KubeletScene& scene) {
  if (cgroup == scene.layout.kubepods_dir()) return std::nullopt;  // node allocatable: not ours
  if (resource == Resource::kCpusetCpus) {
    if (scene.kubepods_cpus.empty()) return std::nullopt;
    return scene.kubepods_cpus;
  }
  if (auto fixed = kernel_default(resource)) return fixed;
  if (cgroup == scene.layout.qos_dir(KubeQos::kBestEffort)) {
    return from_demand(resource, Demand{}, KubeQos::kBestEffort);
  }
  if (cgroup == scene.layout.qos_dir(KubeQos::kBurstable)) {
    Demand burstable;
    for (const auto& pod : scene.pods) {
      if (states::kube_qos(pod) == KubeQos::kBurstable) {
        burstable.cpu_request_milli += pod_demand(pod).cpu_request_milli;
      }
    }
    return from_demand(resource, burstable, KubeQos::kBurstable);
  }
  for (const auto& pod : scene.pods) {
    const KubeQos qos = states::kube_qos(pod);
    const std::string pod_dir = scene.layout.pod_dir(qos, pod.metadata.uid);
    if (cgroup == pod_dir) return from_demand(resource, pod_demand(pod), qos);
    if (!cgroup.starts_with(pod_dir + "/")) continue;
    for (const auto& status : pod.container_statuses) {
      auto dir = scene.layout.container_dir(qos, pod.metadata.uid, status.container_id);
      if (!dir || cgroup != *dir) continue;
      auto spec = std::find_if(pod.containers.begin(), pod.containers.end(),
                               [&](const kube::Container& c) { return c.name == status.name; });
      if (spec == pod.containers.end()) return std::nullopt;
      // A container's shares are its own request's, whatever the pod's class.
      return from_demand(resource, container_demand(*spec), KubeQos::kBurstable);
    }
  }
  return std::nullopt;
}

}  // namespace gleaner::agent::qos
