#pragma once
// The suppress status the agent reports (node report, metrics, `gleaner-agent plan`): the
// policy, whether BE's CPU is held below the node's, and by how much. A function of the
// configuration and the BE ceiling a full pass leaves in force, so that `plan` prints the
// status the daemon reports from the same inputs.

#include <cstdint>
#include <string>

#include "agent/config/threshold_config.h"
#include "agent/step/be_ceiling.h"

namespace gleaner::agent::step {

struct SuppressStatus {
  std::string policy;  // "none" (suppression off), "cfsQuota" or "cpuset"
  bool active = false;
  int64_t be_cpu_limit_millicores = 0;  // 0 when inactive
  friend bool operator==(const SuppressStatus&, const SuppressStatus&) = default;
};

// cfsQuota: active under a finite quota, the limit quota*1000/period. cpuset: active while
// BE's list holds fewer CPUs than the node's `cpus` (an empty list inherits its parent's),
// the limit a whole CPU per CPU listed.
SuppressStatus suppress_status(const config::ResourceThresholdStrategy& threshold,
                               const BeCeiling& in_force, int cpus);

}  // namespace gleaner::agent::step
