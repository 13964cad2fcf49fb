#include "agent/qos/memory_qos.h"

#include <algorithm>
#include <map>

#include "agent/qos/pod_dirs.h"
#include "agent/qos/strategy.h"
#include "cgroup/parsers.h"

namespace gleaner::agent::qos {
namespace {

using cgroup::Resource;

struct Protection {
  int64_t min = 0;
  int64_t low = 0;
  std::optional<int64_t> high;  // nullopt: unlimited
};

int64_t amount(const kube::ResourceList& list, const char* name) {
  auto it = list.find(name);
  return it == list.end() ? 0 : it->second.value();
}

Protection container_protection(const kube::Container& c, bool batch, const config::MemoryQoS& m) {
  const char* name = batch ? kube::kResourceBatchMemory : kube::kResourceMemory;
  const int64_t request = amount(c.resources.requests, name);
  Protection p;
  p.min = request * m.min_limit_percent / 100;
  p.low = request * m.low_limit_percent / 100;
  if (c.resources.limits.count(name) != 0 && m.throttling_percent > 0) {
    const int64_t limit = amount(c.resources.limits, name);
    p.high = std::max(request + (limit - request) * m.throttling_percent / 100, request);
  }
  return p;
}

void add(Plan& plan, const KnobSnapshot& knobs, Resource r, const std::string& cg, int64_t v) {
  if (!knobs.has(r, cg)) return;
  plan.writes.push_back({r, cg, std::to_string(v), kReasonMemoryQoS});
}

// The knobs beyond protection, each written only where the kernel has the file
// (memory.oom.group on v2; the watermark and OOM priority files of Alibaba Cloud Linux).
void add_knobs(Plan& plan, const KnobSnapshot& knobs, const std::string& cg,
               const config::MemoryQoS& m) {
  add(plan, knobs, Resource::kMemoryOomGroup, cg, m.oom_kill_group);
  add(plan, knobs, Resource::kMemoryWmarkRatio, cg, m.wmark_ratio);
  add(plan, knobs, Resource::kMemoryWmarkScaleFactor, cg, m.wmark_scale_permill);
  add(plan, knobs, Resource::kMemoryWmarkMinAdj, cg, m.wmark_min_adj);
  add(plan, knobs, Resource::kMemoryUsePriorityOom, cg, m.priority_enable);
  add(plan, knobs, Resource::kMemoryPriority, cg, m.priority);
}

void add_protection(Plan& plan, const KnobSnapshot& knobs, const std::string& cg,
                    const Protection& p, bool with_high) {
  add(plan, knobs, Resource::kMemoryMin, cg, p.min);
  add(plan, knobs, Resource::kMemoryLow, cg, p.low);
  if (with_high) add(plan, knobs, Resource::kMemoryHigh, cg, p.high.value_or(cgroup::kUnlimited));
}

}  // namespace

const config::ResourceQoS* class_qos(const config::ResourceQoSStrategy& qos, states::QoSClass c) {
  switch (c) {
    case states::QoSClass::kLSE:
    case states::QoSClass::kLSR:
      return &qos.lsr;
    case states::QoSClass::kLS:
      return &qos.ls;
    case states::QoSClass::kBE:
      return &qos.be;
    case states::QoSClass::kSystem:
      return nullptr;
  }
  return nullptr;
}

Plan plan_memory_qos(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                     const config::ResourceQoSStrategy& qos, const KnobSnapshot& knobs) {
  Plan plan;
  if (!qos.lsr.memory.enable && !qos.ls.memory.enable && !qos.be.memory.enable) return plan;
  std::map<std::string, Protection> per_qos_dir;
  Protection all;
  for (const auto& pod : snap.pods) {
    const auto* cls = class_qos(qos, pod.qos);
    if (cls == nullptr || !cls->memory.enable) continue;
    const bool batch = is_labelled_be(pod);
    Protection pod_total;
    bool high_bounded = !pod.pod.containers.empty();
    int64_t high_sum = 0;
    std::map<std::string, Protection> by_container;
    for (const auto& c : pod.pod.containers) {
      Protection p = container_protection(c, batch, cls->memory);
      pod_total.min += p.min;
      pod_total.low += p.low;
      if (p.high) {
        high_sum += *p.high;
      } else {
        high_bounded = false;
      }
      by_container[c.name] = p;
    }
    if (high_bounded) pod_total.high = high_sum;
    for (const auto& [name, dir] : container_cgroups(layout, pod)) {
      auto it = by_container.find(name);
      if (it == by_container.end()) continue;
      add_protection(plan, knobs, dir, it->second, true);
      add_knobs(plan, knobs, dir, cls->memory);
    }
    const std::string pod_dir = pod_cgroup(layout, pod);
    add_protection(plan, knobs, pod_dir, pod_total, true);
    add_knobs(plan, knobs, pod_dir, cls->memory);
    auto& q = per_qos_dir[layout.qos_dir(pod.kube_qos)];
    q.min += pod_total.min;
    q.low += pod_total.low;
    all.min += pod_total.min;
    all.low += pod_total.low;
  }
  // Guaranteed pods sit directly under kubepods, which gets the node-wide sums below.
  for (const auto& [dir, p] : per_qos_dir) {
    if (dir != layout.kubepods_dir()) add_protection(plan, knobs, dir, p, false);
  }
  add_protection(plan, knobs, layout.kubepods_dir(), all, false);
  return plan;
}

std::unique_ptr<Strategy> make_memory_qos_strategy() {
  return std::make_unique<PlanOnlyStrategy>("memoryQos", [](const Pass& pass) {
    return plan_memory_qos(*pass.in.snapshot, pass.in.layout, pass.in.qos, pass.knobs);
  });
}

}  // namespace gleaner::agent::qos
