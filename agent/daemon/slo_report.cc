// cpuSuppressMode slo at the daemon's edge: the controller's steps in the log and the
// metrics, its fallback when the eBPF run-queue probe is missing, and the bound it puts on
// the batch CPU the node reports (docs/qos.md, "Feedback mode").
#include "agent/daemon/daemon_impl.h"
#include "agent/step/batch_bound.h"

namespace gleaner::agent {

void Daemon::Impl::note_slo(const step::StepResult& result, const char* trigger) {
  for (const auto& warning : result.warnings) {
    ++(warning.clamped ? slo_targets_clamped_total : slo_target_warnings_total);
    if (slo_warned.should_log(warning.pod, warning.value_hash, clock.now()))
      spdlog::warn("cpu slo: {}", warning.message);
  }
  if (std::string_view(trigger) == "pass") {
    note_unseen(result.unseen);
    if (result.slo_fallback && !slo_fallback) {
      spdlog::warn(
          "cpuSuppressMode slo needs the eBPF run-queue probe, which is not loaded: BE CPU "
          "follows the threshold formula (as in mode always) until it is");
    } else if (!result.slo_fallback && slo_fallback) {
      spdlog::info("cpuSuppressMode slo: the run-queue probe is back, the controller steers BE");
    }
    slo_fallback = result.slo_fallback;
  }
  if (!result.slo) {
    if (std::string_view(trigger) == "pass") slo_allowance_milli.reset();
    return;
  }
  slo_allowance_milli = result.slo->allowance_milli;
  if (result.slo->action == step::SloAction::kCut) ++slo_cuts_total[trigger];
}

void Daemon::Impl::note_unseen(const std::vector<step::UnseenPod>& unseen) {
  std::set<std::string> now;
  for (const auto& pod : unseen) {
    now.insert(pod.pod);
    if (!unseen_ls_pods.count(pod.pod)) {
      spdlog::warn(
          "eBPF: LS pod {} runs but the probe does not see it: BE may not grow until it does "
          "(a probe that stopped delivering, a pod cgroup made anew, tasks nested too deep)",
          step::describe(pod));
    }
  }
  for (const auto& pod : unseen_ls_pods) {
    if (!now.count(pod)) spdlog::info("eBPF: the probe sees LS pod {} again", pod);
  }
  unseen_ls_pods = std::move(now);
}

void Daemon::Impl::bound_batch_by_slo(batch::BatchResult& batch) const {
  step::bound_batch_cpu(batch, step ? step->sustained_be_cpu_milli() : std::nullopt);
}

void Daemon::Impl::describe_slo(TickOutcome& outcome) const {
  auto& s = outcome.state;
  if (slo_allowance_milli)
    s.be_cpu_allowance_cores = static_cast<double>(*slo_allowance_milli) / 1000;
  s.be_cpu_slo_fallback = slo_fallback;
  s.ls_pods_unseen = static_cast<int64_t>(unseen_ls_pods.size());
  s.be_cpu_slo_cuts_total = slo_cuts_total;
  s.be_cpu_slo_target_warnings_total = slo_target_warnings_total;
  s.be_cpu_slo_targets_clamped_total = slo_targets_clamped_total;
}

}  // namespace gleaner::agent
