#include "agent/step/agent_step.h"

#include <chrono>

#include "agent/qos/cpu_suppress.h"
#include "agent/qos/knob_reads.h"

namespace gleaner::agent::step {
namespace {

SteadyTime at_seconds(double s) {
  return SteadyTime(
      std::chrono::duration_cast<SteadyTime::duration>(std::chrono::duration<double>(s)));
}

double seconds_of(SteadyTime t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

bool has_signal(const ProbeReadings& probe, const bpf::InterferenceConfig& config) {
  return probe.runqueue_probe || config.cpu_psi_some_avg10_bound.has_value();
}

}  // namespace

bool be_running(const snapshot::NodeSnapshot& latest) {
  for (const auto& pod : latest.pods) {
    if (pod.qos != states::QoSClass::kBE) continue;
    const auto* usage = latest.pod_usage(pod.pod.key());
    if (usage != nullptr && usage->cpu_milli > 50) return true;
  }
  return false;
}

AgentStep::AgentStep(bpf::InterferenceConfig interference, const cgroup::KubeletLayout& layout,
                     int cpus)
    : rule_(interference), cap_(layout.qos_dir(cgroup::KubeQos::kBestEffort), cpus) {}

StepResult AgentStep::tick(const TickInputs& in) {
  StepResult out;
  // Everything this pass compares with, read once: the decisions below read nothing else.
  // What each strategy declares is read too (resctrl's capability, groups and tasks).
  const qos::KnobSnapshot knobs = in.reader->read(engine_.full_reads(in));
  // The interference verdict, on the latest sample (a BE pod that stopped a minute ago is
  // not running, whatever the batch formula's average says).
  bpf::InterferenceInput signal;
  signal.be_running = be_running(*in.snapshot);
  be_running_ = signal.be_running;
  signal.cpu_psi_some_avg10 = in.probe.cpu_psi_some_avg10;
  for (const auto& [pod, p99] : in.probe.runq_p99_ns)
    signal.ls_pods.push_back({pod, p99});
  out.interference = rule_.evaluate(signal, at_seconds(in.now_s));
  // No wait from a pod the probe does not see is no evidence of slack: the ceiling stays.
  out.unseen = unseen_ls_pods(*in.snapshot, in.probe);
  if (!out.unseen.empty() && out.interference.action == bpf::InterferenceAction::kRelaxAllowed) {
    out.interference.action = bpf::InterferenceAction::kHold;
    out.interference.reason = describe(out.unseen.front()) + " runs unseen by the probe";
  }
  if (out.interference.action == bpf::InterferenceAction::kTightenNow) {
    out.events.push_back("interference: " + out.interference.reason);
  }
  if (!slo_mode(in.threshold)) {
    cap_.follow(out.interference.action, in.threshold, knobs);
  } else {
    cap_.set_ceilings(std::nullopt, std::nullopt);  // the controller's allowance replaces it
  }

  // Without a signal that could ever trip, the ceiling stays in force: onInterference
  // must not leave LS unprotected on a node where interference cannot be seen.
  // (cpuSuppressMode slo: its allowance is always in force.)
  const bool armed = !has_signal(in.probe, rule_.config()) || slo_mode(in.threshold) ||
                     out.interference.action != bpf::InterferenceAction::kRelaxAllowed;
  const bool on_interference = in.threshold.enable && in.threshold.cpu_suppress_mode ==
                                                          config::CpuSuppressMode::kOnInterference;
  if (on_interference && armed != suppress_armed_) {
    out.events.push_back(
        std::string("cpu suppress ceiling ") + (armed ? "armed (" : "lifted (") +
        (armed ? out.interference.reason : "no LS interference within the hold time") + ")");
  }
  suppress_armed_ = armed;

  qos::QosInputs q = in;  // the engine's part of the inputs
  q.suppress_armed = suppress_armed_;
  out.plan = engine_.run(q, knobs);
  if (in.fast_path_live) {
    // ... except what the fast path leaves to this pass: under cfsQuota it plans the quota
    // alone, not the BE pods' CPU lists.
    const bool cfs_quota = in.threshold.cpu_suppress_policy == config::CpuSuppressPolicy::kCfsQuota;
    std::erase_if(out.plan.writes, [&](const cgroup::CgroupWrite& w) {
      return w.reason == qos::kReasonCpuSuppress &&
             (!cfs_quota || w.resource != cgroup::Resource::kCpusetCpus);
    });
  }
  if (slo_mode(in.threshold)) {
    slo_tick(in, knobs, out);  // the allowance replaces the formula and the interference ceiling
  } else if (const auto& ctx = engine_.last_node_facts(); ctx && in.threshold.enable) {
    cap_.cap(out.plan, in.threshold, *ctx, knobs);
  }
  out.be_read = be_ceiling_read(knobs, in.layout.qos_dir(cgroup::KubeQos::kBestEffort));
  return out;
}

qos::KnobSnapshot AgentStep::fast_knobs(qos::QosReader& reader) const {
  qos::KnobReads reads = engine_.fast_reads();
  // The interference rule's CPU-count ceiling reads the CPU lists under any policy.
  if (const auto& ctx = engine_.last_node_facts(); ctx && cap_.cpu_ceiling())
    reads.merge(qos::suppress_reads(*ctx, /*cpusets=*/true));
  return reader.read(reads);
}

qos::Plan AgentStep::fast(const FastInputs& in) const {
  if (!qos::suppress_ceiling_applies(engine_.threshold(), suppress_armed_)) return {};
  if (in.reader == nullptr) return {};
  const qos::KnobSnapshot knobs = fast_knobs(*in.reader);
  if (slo_mode(engine_.threshold()) && slo_probe_) return slo_fast(in, knobs);
  qos::Plan plan = engine_.suppress_only(
      {in.node_cpu_milli, in.non_be_cpu_milli, in.stale, suppress_armed_}, knobs);
  if (const auto& ctx = engine_.last_node_facts(); ctx && engine_.threshold().enable) {
    cap_.cap(plan, engine_.threshold(), *ctx, knobs);
  }
  return plan;
}

StepResult AgentStep::ls_waited(const LsWait& wait) {
  StepResult out;
  const config::ResourceThresholdStrategy& threshold = engine_.threshold();
  if (!threshold.enable || wait.reader == nullptr) return out;
  if (slo_mode(threshold) && slo_probe_) return slo_waited(wait);
  bpf::InterferenceInput signal;
  signal.be_running = be_running_;
  signal.ls_pods.push_back({wait.pod, wait.waited_ns});
  out.interference = rule_.evaluate(signal, at_seconds(wait.now_s));
  if (out.interference.action != bpf::InterferenceAction::kTightenNow) return out;
  if (last_wait_step_s_ && wait.now_s - *last_wait_step_s_ < kWaitStepGapSeconds) {
    out.interference.action = bpf::InterferenceAction::kHold;
    return out;
  }
  last_wait_step_s_ = wait.now_s;
  cap_.follow(bpf::InterferenceAction::kTightenNow, threshold, fast_knobs(*wait.reader));
  const bool on_interference =
      threshold.cpu_suppress_mode == config::CpuSuppressMode::kOnInterference;
  if (on_interference && !suppress_armed_) {
    out.events.push_back("cpu suppress ceiling armed (" + out.interference.reason + ")");
  }
  suppress_armed_ = true;
  out.details.push_back("interference between ticks: " + out.interference.reason);
  return out;
}

AgentMemory AgentStep::memory(double now_s) const {
  AgentMemory m;
  m.suppress_armed = suppress_armed_;
  if (auto at = rule_.last_breach()) m.last_breach_s = seconds_of(*at);
  m.ceiling_quota_us = cap_.ceiling();
  m.ceiling_cpus = cap_.cpu_ceiling();
  m.strategies = engine_.save_memory(now_s);
  m.slo = slo_;
  return m;
}

Status AgentStep::adopt(const AgentMemory& memory, double now_s) {
  if (auto ok = engine_.load_memory(memory.strategies, "the agent's memory", now_s); !ok) return ok;
  suppress_armed_ = memory.suppress_armed;
  rule_.set_last_breach(memory.last_breach_s ? std::optional(at_seconds(*memory.last_breach_s))
                                             : std::nullopt);
  cap_.set_ceilings(memory.ceiling_quota_us, memory.ceiling_cpus);
  slo_ = memory.slo;
  return ok_status();
}

}  // namespace gleaner::agent::step
