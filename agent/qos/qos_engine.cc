#include "agent/qos/qos_engine.h"

#include <algorithm>

#include "agent/qos/be_cgroups.h"
#include "agent/qos/cfs_quota_burst.h"
#include "agent/qos/cpu_burst.h"
#include "agent/qos/evict.h"
#include "agent/qos/knob_reads.h"
#include "agent/qos/memory_qos.h"
#include "agent/qos/resctrl_qos.h"

namespace gleaner::agent::qos {
namespace {

void append(Plan& into, Plan&& from) {
  for (auto& w : from.writes)
    into.writes.push_back(std::move(w));
  for (auto& e : from.evictions)
    into.evictions.push_back(std::move(e));
  for (auto& r : from.resctrl)
    into.resctrl.push_back(std::move(r));
  for (auto& n : from.notes)
    into.notes.emplace_back(std::move(n));
}

}  // namespace

Plan QosEngine::run(const QosInputs& in) {
  return run(in, in.reader->read(
                     full_pass_reads(in, suppress_context(*in.snapshot, in.layout, in.topology))));
}

Plan QosEngine::run(const QosInputs& in, const KnobSnapshot& knobs) {
  Plan plan;
  const auto& snap = *in.snapshot;
  suppress_ctx_ = suppress_context(snap, in.layout, in.topology);
  threshold_ = in.threshold;
  cpu_measured_ = in.cpu_measured;

  if (in.cpu_measured) {
    append(plan, plan_cpu_suppress(*suppress_ctx_, in.threshold, non_be_cpu_usage(snap),
                                   suppress_ctx_->system_usage_milli, knobs, in.stale,
                                   in.suppress_armed));
  } else {
    plan.notes.emplace_back("cpu-suppress: no CPU measurement yet (first pass), BE left as it is");
  }
  const bool cfs_quota_active =
      suppress_ceiling_applies(in.threshold, in.suppress_armed) &&
      in.threshold.cpu_suppress_policy == config::CpuSuppressPolicy::kCfsQuota;
  // cpu.idle before the weights: leaving idle resets a pod's weight, which the BE cgroup
  // plan then sets in the same pass.
  append(plan, plan_cpu_idle(snap, in.layout, in.qos, knobs));
  append(plan,
         plan_be_cgroups(snap, in.layout, cfs_quota_active, be_pods_sched_idle(in.qos), knobs));
  append(plan, plan_memory_qos(snap, in.layout, in.qos, knobs));
  append(plan, plan_cpu_burst(snap, in.layout, in.cpu_burst, knobs));
  append(plan, plan_cfs_quota_burst(snap, in.layout, in.cpu_burst, knobs, in.now_s,
                                    in.stale || !in.cpu_measured, state_.quota_burst));
  append(plan, plan_resctrl(snap, in.layout, in.qos, knobs));
  auto memory_capacity = snap.node.capacity.find(kube::kResourceMemory);
  SystemPlan system = plan_system_config(
      in.system, memory_capacity == snap.node.capacity.end() ? 0 : memory_capacity->second.value());
  plan.system = std::move(system.writes);
  for (auto& n : system.notes)
    plan.notes.push_back(std::move(n));

  // Memory first: a pod it evicts counts as released for the CPU decision.
  Plan memory = plan_memory_evict(snap, in.threshold, state_, in.now_s, in.stale);
  record_evictions(memory, snap, in.now_s, state_);
  append(plan, std::move(memory));
  if (!in.cpu_measured) return plan;
  const int64_t be_limit =
      be_cpu_real_limit(suppress_ctx_->be_qos_dir, suppress_ctx_->capacity_milli, knobs);
  Plan cpu = plan_cpu_evict(snap, in.threshold, be_limit, state_, in.now_s, in.stale);
  record_evictions(cpu, snap, in.now_s, state_);
  if (!in.stale) record_be_cpu(state_, in.threshold, {in.now_s, be_cpu_usage(snap), be_limit});
  append(plan, std::move(cpu));
  return plan;
}

void QosEngine::eviction_answered(const std::string& pod, bool accepted, double now_s) {
  record_eviction_answer(pod, accepted, now_s, state_);
}

Plan QosEngine::suppress_only(const SuppressSample& sample, const KnobSnapshot& knobs) const {
  if (!suppress_ctx_ || !cpu_measured_) return {};
  return plan_cpu_suppress(*suppress_ctx_, threshold_, sample.non_be_cpu_milli,
                           fast_system_usage(sample), knobs, sample.stale, sample.suppress_armed,
                           /*full_pass=*/false);
}

Plan QosEngine::suppress_only(const SuppressSample& sample, QosReader& reader) const {
  if (!suppress_ctx_ || !cpu_measured_) return {};
  return suppress_only(sample, reader.read(fast_reads(threshold_.cpu_suppress_policy ==
                                                      config::CpuSuppressPolicy::kCpuset)));
}

KnobReads QosEngine::fast_reads(bool cpusets) const {
  if (!suppress_ctx_) return {};
  return suppress_reads(*suppress_ctx_, cpusets);
}

int64_t QosEngine::fast_system_usage(const SuppressSample& sample) const {
  // System usage moves slowly; it cannot exceed what the node uses beyond non-BE pods.
  return std::clamp<int64_t>(sample.node_cpu_milli - sample.non_be_cpu_milli, 0,
                             suppress_ctx_ ? suppress_ctx_->system_usage_milli : 0);
}

}  // namespace gleaner::agent::qos
