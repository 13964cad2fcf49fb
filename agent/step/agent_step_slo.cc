// cpuSuppressMode slo in the agent's step: the feedback controller (slo_controller.h) takes
// the place of the threshold formula and of the interference ceiling. Without the eBPF
// run-queue probe there is no signal to steer by, and the formula decides as in `always`.
#include <algorithm>

#include "agent/qos/cpu_suppress.h"
#include "agent/qos/pod_dirs.h"
#include "agent/step/agent_step.h"
#include "agent/step/batch_bound.h"
#include "kube/well_known.h"

namespace gleaner::agent::step {
namespace {

double default_target_ns(const config::ResourceThresholdStrategy& s) {
  return static_cast<double>(s.cpu_slo_wait_target_micros) * 1000.0;
}

double min_target_ns(const config::ResourceThresholdStrategy& s) {
  return static_cast<double>(s.cpu_slo_min_wait_target_micros) * 1000.0;
}

std::optional<std::string> annotation(const snapshot::PodState& pod, const char* name) {
  const auto& annotations = pod.pod.metadata.annotations;
  auto it = annotations.find(name);
  return it == annotations.end() ? std::nullopt : std::optional(it->second);
}

PodTargetAsk target_ask(const snapshot::PodState& pod) {
  return {annotation(pod, kube::kRunqueueWaitTargetAnnotation),
          annotation(pod, kube::kLatencyObjectiveAnnotation)};
}

int64_t floor_milli(const qos::NodeFacts& ctx, const config::ResourceThresholdStrategy& s) {
  return ctx.capacity_milli * s.cpu_slo_floor_percent / 100;
}

}  // namespace

bool slo_mode(const config::ResourceThresholdStrategy& strategy) {
  return strategy.enable && strategy.cpu_suppress_mode == config::CpuSuppressMode::kSlo;
}

void AgentStep::slo_tick(const TickInputs& in, const qos::KnobSnapshot& knobs, StepResult& out) {
  const auto& ctx = engine_.last_node_facts();
  slo_probe_ = in.probe.runqueue_probe;
  if (!ctx || !in.cpu_measured || ctx->capacity_milli <= 0) return;  // the engine left BE too
  if (!slo_probe_) {
    // No signal: the engine's plan (the threshold formula) stands, as in mode always.
    out.slo_fallback = true;
    return;
  }
  const snapshot::NodeSnapshot& snap = *in.snapshot;
  SloInputs s;
  s.now_s = in.now_s;
  s.capacity_milli = ctx->capacity_milli;
  s.floor_milli = floor_milli(*ctx, in.threshold);
  const int64_t non_be = qos::non_be_cpu_usage(snap);
  if (in.threshold.cpu_slo_threshold_ceiling) {
    s.ceiling_milli =
        qos::suppress_terms(*ctx, in.threshold, non_be, ctx->system_usage_milli).suppress_milli;
  }
  slo_targets_ns_.clear();
  const TargetBounds bounds{default_target_ns(in.threshold), min_target_ns(in.threshold),
                            in.threshold.cpu_slo_objective_wait_percent};
  for (const auto& pod : snap.pods) {
    if (qos::is_be_for_suppress(pod)) {
      if (const auto* u = snap.pod_usage(pod.pod.key())) s.be_usage_milli += u->cpu_milli;
      continue;
    }
    // The pods the probe watches: every pod that is not BE.
    if (pod.qos == states::QoSClass::kBE) continue;
    PodTarget target = slo_pod_target(pod.pod.key(), target_ask(pod), bounds);
    if (target.warning) out.warnings.push_back(std::move(*target.warning));
    s.ls_pods.push_back({pod.pod.key(), target.ns});
    slo_targets_ns_[pod.pod.key()] = target.ns;
  }
  // The waits BE caused, when the probe tells them apart: LS queueing behind LS (or the
  // node's daemons) is not BE's to relieve, and cutting BE for it takes harvest for nothing.
  s.runq_p99_ns = in.probe.be_attribution ? in.probe.be_runq_p99_ns : in.probe.runq_p99_ns;
  s.cpu_psi_some_avg10 = in.probe.cpu_psi_some_avg10;
  s.cpu_psi_bound = rule_.config().cpu_psi_some_avg10_bound;
  s.stale = in.stale;
  for (const auto& pod : out.unseen)
    s.unseen.push_back(describe(pod));
  const SloDecision decision = slo_step(s, slo_);
  if (decision.action == SloAction::kCut) {
    out.events.push_back("cpu slo: BE cut to " + std::to_string(decision.allowance_milli) + "m (" +
                         decision.reason + ")");
  }
  out.slo = decision;
  // The allowance replaces the formula's writes: every pass, whether or not the fast path is
  // live (it writes the same allowance between passes).
  std::erase_if(out.plan.writes,
                [](const cgroup::CgroupWrite& w) { return w.reason == qos::kReasonCpuSuppress; });
  qos::Plan own =
      qos::plan_be_allowance(*ctx, in.threshold, decision.allowance_milli, knobs, in.stale);
  out.plan.writes.insert(out.plan.writes.end(), own.writes.begin(), own.writes.end());
  out.plan.notes.insert(out.plan.notes.end(), own.notes.begin(), own.notes.end());
  out.plan.notes.push_back("cpu-suppress: slo " + std::string(to_string(decision.action)) +
                           ", BE allowed " + std::to_string(decision.allowance_milli) + "m (" +
                           decision.reason + ")");
}

qos::Plan AgentStep::slo_fast(const FastInputs& in, const qos::KnobSnapshot& knobs) const {
  const auto& ctx = engine_.last_node_facts();
  if (!ctx || !slo_.allowance_milli) return {};
  const auto& threshold = engine_.threshold();
  int64_t allowance = *slo_.allowance_milli;
  if (threshold.cpu_slo_threshold_ceiling) {
    // The hard ceiling follows the fresh sample, as the formula does in mode always.
    const qos::SuppressSample sample{in.node_cpu_milli, in.non_be_cpu_milli, in.stale, true};
    allowance = std::min(allowance, qos::suppress_terms(*ctx, threshold, in.non_be_cpu_milli,
                                                        engine_.fast_system_usage(sample))
                                        .suppress_milli);
    allowance = std::max(allowance, floor_milli(*ctx, threshold));
  }
  return qos::plan_be_allowance(*ctx, threshold, allowance, knobs, in.stale,
                                /*full_pass=*/false);
}

StepResult AgentStep::slo_waited(const LsWait& wait) {
  StepResult out;
  const auto& ctx = engine_.last_node_facts();
  if (!ctx) return out;
  const auto& threshold = engine_.threshold();
  auto target = slo_targets_ns_.find(wait.pod);
  const double target_ns =
      target == slo_targets_ns_.end() ? default_target_ns(threshold) : target->second;
  const SloDecision decision =
      slo_wait_cut(wait.waited_ns, target_ns, floor_milli(*ctx, threshold), wait.now_s, slo_);
  if (decision.action == SloAction::kCut) {
    out.details.push_back("cpu slo between ticks: BE cut to " +
                          std::to_string(decision.allowance_milli) + "m (" + wait.pod + " " +
                          decision.reason + ")");
  }
  out.slo = decision;
  return out;
}

std::optional<int64_t> AgentStep::sustained_be_cpu_milli() const {
  return batch_cpu_bound(engine_.threshold(), slo_probe_, slo_);
}

std::optional<std::chrono::nanoseconds> AgentStep::wake_wait_bound() const {
  if (!slo_mode(engine_.threshold()) || !slo_probe_) return std::nullopt;
  double tightest = default_target_ns(engine_.threshold());
  for (const auto& [pod, target] : slo_targets_ns_)
    tightest = std::min(tightest, target);
  return std::chrono::nanoseconds(static_cast<int64_t>(tightest));
}

}  // namespace gleaner::agent::step
