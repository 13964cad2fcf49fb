#pragma once
// Turns the interference rule's verdicts into a ceiling on the besteffort CPU quota (the
// cfsQuota suppress policy): "tighten now" lowers the ceiling one suppress step (10% of
// capacity, floor 2000 us), "hold" keeps it, "relax allowed" lifts it so the usage rules
// decide again. Pure: the daemon feeds verdicts and filters plans through it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/bpf/interference.h"
#include "cgroup/executor.h"

namespace gleaner::agent {

class InterferenceCap {
 public:
  // `be_qos_dir`: the besteffort QoS cgroup; `cpus` and `period_us` size one step.
  InterferenceCap(std::string be_qos_dir, int cpus, int64_t period_us = 100000)
      : be_qos_dir_(std::move(be_qos_dir)), cpus_(cpus), period_us_(period_us) {}

  // `current_quota_us`: what the besteffort quota is now (-1 unlimited).
  void update(bpf::InterferenceAction action, int64_t current_quota_us);
  // Lowers any BE quota write above the ceiling, and adds one when the current value is
  // above it and the plan had none.
  void filter(std::vector<cgroup::CgroupWrite>& writes, int64_t current_quota_us) const;
  [[nodiscard]] std::optional<int64_t> ceiling() const { return ceiling_; }

 private:
  std::string be_qos_dir_;
  int cpus_;
  int64_t period_us_;
  std::optional<int64_t> ceiling_;
};

}  // namespace gleaner::agent
