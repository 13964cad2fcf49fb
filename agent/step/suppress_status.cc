#include "agent/step/suppress_status.h"

namespace gleaner::agent::step {

SuppressStatus suppress_status(const config::ResourceThresholdStrategy& threshold,
                               const BeCeiling& in_force, int cpus) {
  SuppressStatus s;
  if (!threshold.enable) {
    s.policy = "none";
    return s;
  }
  if (threshold.cpu_suppress_policy == config::CpuSuppressPolicy::kCfsQuota) {
    s.policy = "cfsQuota";
    const auto& quota = in_force.quota_us;
    const auto& period = in_force.period_us;
    // -1 (unlimited) and a missing file both leave BE unbounded.
    if (quota && period && *quota > 0 && *period > 0) {
      s.active = true;
      s.be_cpu_limit_millicores = *quota * 1000 / *period;
    }
    return s;
  }
  s.policy = "cpuset";
  const auto& listed = in_force.cpus;
  if (listed && !listed->empty() && static_cast<int>(listed->size()) < cpus) {
    s.active = true;
    s.be_cpu_limit_millicores = static_cast<int64_t>(listed->size()) * 1000;
  }
  return s;
}

}  // namespace gleaner::agent::step
