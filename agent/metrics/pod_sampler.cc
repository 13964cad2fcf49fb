#include "agent/metrics/pod_sampler.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace gleaner::agent {

Result<PodSampler::Memory> PodSampler::read_memory(const PodCgroup& pod, const Last* last) {
  auto usage = fs_.read_int(cgroup::Resource::kMemoryUsage, pod.cgroup);
  if (!usage) return usage.error();
  const bool due = last == nullptr || last->passes_since_stat + 1 >= kMemoryStatEvery;
  if (!due) {
    const int64_t estimate = last->working_set + (*usage - last->usage_at_stat);
    return Memory{std::clamp<int64_t>(estimate, 0, *usage), *usage, false};
  }
  auto working_set = fs_.read_memory_working_set(pod.cgroup);
  if (!working_set) return working_set.error();
  return Memory{*working_set, *usage, true};
}

PodSamplingPass PodSampler::sample(const std::vector<PodCgroup>& pods,
                                   std::chrono::steady_clock::time_point now) {
  PodSamplingPass pass;
  std::set<std::string> seen;
  for (const auto& pod : pods) {
    auto it = last_.find(pod.key);
    const Last* last = it == last_.end() ? nullptr : &it->second;
    auto cpu_ns = fs_.read_cpu_usage_ns(pod.cgroup);
    auto memory = cpu_ns ? read_memory(pod, last) : Result<Memory>(cpu_ns.error());
    if (!cpu_ns || !memory) {
      // Routine when a pod is deleted: forget it and its kept descriptors.
      pass.vanished.push_back(pod.key);
      fs_.forget(pod.cgroup);
      last_.erase(pod.key);
      continue;
    }
    seen.insert(pod.key);
    PodSample s;
    s.key = pod.key;
    s.memory_bytes = memory->working_set;
    if (last != nullptr && now > last->at && *cpu_ns >= last->cpu_ns) {
      double elapsed_ns = std::chrono::duration<double, std::nano>(now - last->at).count();
      s.cpu_milli = std::llround(static_cast<double>(*cpu_ns - last->cpu_ns) / elapsed_ns * 1000.0);
      s.cpu_valid = true;
    }
    Last next;
    next.cgroup = pod.cgroup;
    next.cpu_ns = *cpu_ns;
    next.at = now;
    next.has_pressure =
        last != nullptr ? last->has_pressure : fs_.has(cgroup::Resource::kCpuPressure, pod.cgroup);
    if (memory->from_stat) {
      next.working_set = memory->working_set;
      next.usage_at_stat = memory->usage;
      // A pod seen for the first time enters the cycle at a place set by its key.
      next.passes_since_stat =
          last != nullptr ? 0
                          : static_cast<int>(std::hash<std::string>{}(pod.key) % kMemoryStatEvery);
      // Throttling counters (cumulative) and PSI (10 s averages) follow the same cycle:
      // they feed metrics only, and scrapes come seconds apart.
      if (auto throttle = fs_.read_cpu_throttle(pod.cgroup)) next.throttle = *throttle;
      if (next.has_pressure) {
        if (auto psi = fs_.read_pressure(cgroup::Resource::kCpuPressure, pod.cgroup))
          next.cpu_pressure = *psi;
        if (auto psi = fs_.read_pressure(cgroup::Resource::kMemoryPressure, pod.cgroup))
          next.memory_pressure = *psi;
      }
    } else {
      next.working_set = last->working_set;
      next.usage_at_stat = last->usage_at_stat;
      next.passes_since_stat = last->passes_since_stat + 1;
      next.throttle = last->throttle;
      next.cpu_pressure = last->cpu_pressure;
      next.memory_pressure = last->memory_pressure;
    }
    s.throttle = next.throttle;
    s.cpu_pressure = next.cpu_pressure;
    s.memory_pressure = next.memory_pressure;
    last_[pod.key] = next;
    pass.pods.push_back(std::move(s));
  }
  // Pods no longer listed: forget their counters, and close the descriptors kept for their
  // cgroup files (the sampler's and the write executor's alike), so neither memory nor
  // open files grow with pod churn, whichever of the pod list and kubelet's cgroup
  // removal comes first.
  for (auto it = last_.begin(); it != last_.end();) {
    if (seen.count(it->first) > 0) {
      ++it;
      continue;
    }
    fs_.forget(it->second.cgroup);
    it = last_.erase(it);
  }
  return pass;
}

}  // namespace gleaner::agent
