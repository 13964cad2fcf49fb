#include "agent/metrics/pod_sampler.h"

#include <cmath>
#include <set>

namespace gleaner::agent {

PodSamplingPass PodSampler::sample(const std::vector<PodCgroup>& pods,
                                   std::chrono::steady_clock::time_point now) {
  PodSamplingPass pass;
  std::set<std::string> seen;
  for (const auto& pod : pods) {
    auto cpu_ns = fs_.read_cpu_usage_ns(pod.cgroup);
    auto memory = fs_.read_memory_working_set(pod.cgroup);
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
    s.memory_bytes = *memory;
    auto it = last_.find(pod.key);
    if (it != last_.end() && now > it->second.at && *cpu_ns >= it->second.cpu_ns) {
      double elapsed_ns = std::chrono::duration<double, std::nano>(now - it->second.at).count();
      s.cpu_milli =
          std::llround(static_cast<double>(*cpu_ns - it->second.cpu_ns) / elapsed_ns * 1000.0);
      s.cpu_valid = true;
    }
    last_[pod.key] = Last{*cpu_ns, now};
    if (auto throttle = fs_.read_cpu_throttle(pod.cgroup)) s.throttle = *throttle;
    if (fs_.has(cgroup::Resource::kCpuPressure, pod.cgroup)) {
      if (auto psi = fs_.read_pressure(cgroup::Resource::kCpuPressure, pod.cgroup)) {
        s.cpu_pressure = *psi;
      }
      if (auto psi = fs_.read_pressure(cgroup::Resource::kMemoryPressure, pod.cgroup)) {
        s.memory_pressure = *psi;
      }
    }
    pass.pods.push_back(std::move(s));
  }
  // Pods no longer listed: forget their counters so memory stays bounded.
  for (auto it = last_.begin(); it != last_.end();) {
    it = seen.count(it->first) ? std::next(it) : last_.erase(it);
  }
  return pass;
}

}  // namespace gleaner::agent
