#include "agent/qos/be_cgroups.h"

#include <algorithm>

#include "agent/qos/cpu_suppress.h"
#include "agent/qos/pod_dirs.h"
#include "agent/qos/strategy.h"

namespace gleaner::agent::qos {
namespace {

using cgroup::Resource;

struct ContainerBatch {
  int64_t cpu_request = 0;
  std::optional<int64_t> cpu_limit;
  std::optional<int64_t> memory_limit;
};

// Batch resources are plain integers: millicores for CPU, bytes for memory.
ContainerBatch container_batch(const kube::Container& c) {
  ContainerBatch b;
  const auto& req = c.resources.requests;
  const auto& lim = c.resources.limits;
  if (auto it = req.find(kube::kResourceBatchCpu); it != req.end())
    b.cpu_request = it->second.value();
  if (auto it = lim.find(kube::kResourceBatchCpu); it != lim.end())
    b.cpu_limit = it->second.value();
  if (auto it = lim.find(kube::kResourceBatchMemory); it != lim.end()) {
    b.memory_limit = it->second.value();
  }
  return b;
}

std::string quota_value(std::optional<int64_t> limit_milli, int64_t period) {
  if (!limit_milli || *limit_milli <= 0) return "-1";
  // The kernel's smallest quota is 1 ms.
  return std::to_string(std::max<int64_t>(*limit_milli * period / 1000, 1000));
}

void add(Plan& plan, const KnobSnapshot& knobs, Resource r, const std::string& cg,
         std::string value, const char* reason) {
  if (!knobs.has(r, cg)) return;
  plan.writes.push_back({r, cg, std::move(value), reason});
}

}  // namespace

int64_t shares_from_milli(int64_t milli) {
  if (milli <= 0) return kMinShares;
  return std::clamp<int64_t>(milli * 1024 / 1000, kMinShares, kMaxShares);
}

Plan plan_be_cgroups(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                     bool cfs_quota_suppress_active, bool pods_sched_idle,
                     const KnobSnapshot& knobs) {
  Plan plan;
  for (const auto& pod : snap.pods) {
    if (!is_labelled_be(pod)) continue;
    // kubelet makes the pod cgroup, then writes its values: a pass in between would take
    // the new cgroup's defaults (cpu.shares 1024) for kubelet's, and put them back on stop.
    // The pod's containers start only after that, so one started container means the pod
    // cgroup is kubelet's as meant.
    if (container_cgroups(layout, pod).empty()) continue;
    const std::string pod_dir = pod_cgroup(layout, pod);
    if (!knobs.has(Resource::kCpuShares, pod_dir)) continue;  // not created yet, or gone
    int64_t period = knobs.integer(Resource::kCpuPeriod, pod_dir).value_or(kDefaultPeriodUs);
    if (!pods_sched_idle) {
      add(plan, knobs, Resource::kCpuShares, pod_dir,
          std::to_string(shares_from_milli(pod.batch.cpu_request_milli)), kReasonBeCgroup);
    }
    add(plan, knobs, Resource::kCpuQuota, pod_dir,
        cfs_quota_suppress_active ? "-1" : quota_value(pod.batch.cpu_limit_milli, period),
        kReasonBeCgroup);
    add(plan, knobs, Resource::kMemoryLimit, pod_dir,
        pod.batch.memory_limit_bytes ? std::to_string(*pod.batch.memory_limit_bytes) : "-1",
        kReasonBeCgroup);
    for (const auto& [name, dir] : container_cgroups(layout, pod)) {
      auto spec = std::find_if(pod.pod.containers.begin(), pod.pod.containers.end(),
                               [&](const kube::Container& c) { return c.name == name; });
      if (spec == pod.pod.containers.end()) continue;
      ContainerBatch b = container_batch(*spec);
      int64_t cperiod = knobs.integer(Resource::kCpuPeriod, dir).value_or(kDefaultPeriodUs);
      add(plan, knobs, Resource::kCpuShares, dir, std::to_string(shares_from_milli(b.cpu_request)),
          kReasonBeCgroup);
      add(plan, knobs, Resource::kCpuQuota, dir, quota_value(b.cpu_limit, cperiod),
          kReasonBeCgroup);
      add(plan, knobs, Resource::kMemoryLimit, dir,
          b.memory_limit ? std::to_string(*b.memory_limit) : "-1", kReasonBeCgroup);
    }
  }
  return plan;
}

bool be_pods_sched_idle(const config::ResourceQoSStrategy& qos) {
  return qos.be.cpu.enable && qos.be.cpu.sched_idle.value_or(1) == 1;
}

Plan plan_cpu_idle(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                   const config::ResourceQoSStrategy& qos, const KnobSnapshot& knobs) {
  Plan plan;
  const std::string value = be_pods_sched_idle(qos) ? "1" : "0";
  for (const auto& pod : snap.pods) {
    if (pod.qos != states::QoSClass::kBE) continue;
    const std::string dir = pod_cgroup(layout, pod);
    add(plan, knobs, Resource::kCpuIdle, dir, value, kReasonCpuIdle);
  }
  return plan;
}

// cpu.idle of BE pods, before the weights: leaving idle resets a pod's weight, which the BE
// cgroup strategy then sets in the same pass.
std::unique_ptr<Strategy> make_cpu_idle_strategy() {
  return std::make_unique<PlanOnlyStrategy>("cpuIdle", [](const Pass& pass) {
    return plan_cpu_idle(*pass.in.snapshot, pass.in.layout, pass.in.qos, pass.knobs);
  });
}

std::unique_ptr<Strategy> make_be_cgroups_strategy() {
  return std::make_unique<PlanOnlyStrategy>("beCgroups", [](const Pass& pass) {
    const auto& in = pass.in;
    const bool cfs_quota_active =
        suppress_ceiling_applies(in.threshold, in.suppress_armed) &&
        in.threshold.cpu_suppress_policy == config::CpuSuppressPolicy::kCfsQuota;
    return plan_be_cgroups(*in.snapshot, in.layout, cfs_quota_active, be_pods_sched_idle(in.qos),
                           pass.knobs);
  });
}

}  // namespace gleaner::agent::qos
