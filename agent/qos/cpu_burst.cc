#include "agent/qos/cpu_burst.h"

#include <algorithm>

#include "agent/qos/pod_dirs.h"
#include "agent/qos/strategy.h"

namespace gleaner::agent::qos {
namespace {

using cgroup::Resource;

bool static_burst_on(config::CpuBurstPolicy policy) {
  return policy == config::CpuBurstPolicy::kCpuBurstOnly || policy == config::CpuBurstPolicy::kAuto;
}

// The burst for a CPU limit, capped at the cgroup's quota (the kernel's rule); nullopt
// where there is nothing to set (no such file, no quota).
std::optional<int64_t> burst_for(int64_t limit_milli, const config::CpuBurstStrategy& burst,
                                 bool on, const std::string& cg, const KnobSnapshot& knobs) {
  if (!knobs.has(Resource::kCpuBurst, cg)) return std::nullopt;
  if (!on) return 0;
  const auto quota = knobs.integer(Resource::kCpuQuota, cg);
  if (!quota || *quota <= 0 || limit_milli <= 0) return 0;  // unlimited: nothing to carry
  const int64_t period = knobs.integer(Resource::kCpuPeriod, cg).value_or(kDefaultPeriodUs);
  const int64_t base = limit_milli * period / 1000;  // kubelet's quota for the limit
  const int64_t wanted = base * burst.cpu_burst_percent / 100;
  // Capped at kubelet's quota too, not only the quota in force: a quota the CFS quota burst
  // raised must be able to come back down, and the kernel refuses a quota below the burst.
  return std::min({wanted, *quota, base});
}

}  // namespace

Plan plan_cpu_burst(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                    const config::CpuBurstStrategy& burst, const KnobSnapshot& knobs) {
  Plan plan;
  const bool on = static_burst_on(burst.policy);
  for (const auto& pod : snap.pods) {
    // koordlet bursts LS pods: LSE/LSR have CPUs of their own, BE is what bursts yield to.
    if (pod.qos != states::QoSClass::kLS || is_terminating(pod)) continue;
    int64_t pod_limit = 0;
    bool every_container_limited = !pod.pod.containers.empty();
    std::map<std::string, int64_t> limits;
    for (const auto& c : pod.pod.containers) {
      auto it = c.resources.limits.find(kube::kResourceCpu);
      const int64_t limit = it == c.resources.limits.end() ? 0 : it->second.milli_value();
      if (limit <= 0) every_container_limited = false;
      limits[c.name] = limit;
      pod_limit += limit;
    }
    auto add = [&](const std::string& cg, int64_t limit) {
      if (auto b = burst_for(limit, burst, on, cg, knobs)) {
        plan.writes.push_back({Resource::kCpuBurst, cg, std::to_string(*b), kReasonCpuBurst});
      }
    };
    for (const auto& [name, dir] : container_cgroups(layout, pod)) {
      auto it = limits.find(name);
      if (it != limits.end()) add(dir, it->second);
    }
    // The pod's own quota exists only when every container has a limit.
    add(pod_cgroup(layout, pod), every_container_limited ? pod_limit : 0);
  }
  return plan;
}

std::unique_ptr<Strategy> make_cpu_burst_strategy() {
  return std::make_unique<PlanOnlyStrategy>("cpuBurst", [](const Pass& pass) {
    return plan_cpu_burst(*pass.in.snapshot, pass.in.layout, pass.in.cpu_burst, pass.knobs);
  });
}

}  // namespace gleaner::agent::qos
