#pragma once
// Turns the interference rule's verdicts into a ceiling on what best-effort work may use:
// with the cfsQuota suppress policy a ceiling on the besteffort CPU quota ("tighten now"
// lowers it one suppress step, 10% of capacity, floor 2000 us), with the cpuset policy a
// ceiling on the number of BE CPUs ("tighten now" takes one step, ceil(10% of the node's
// CPUs), off what BE holds, never below cpuSuppressMinCPUs). "hold" keeps a ceiling,
// "relax allowed" lifts it so the usage rules decide again. Pure: the daemon feeds
// verdicts and filters plans through it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/bpf/interference.h"
#include "agent/qos/cpu_suppress.h"
#include "cgroup/cgroup_write.h"

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

  // The cpuset policy's counterpart: `current_be_cpus` is how many CPUs BE holds now;
  // the ceiling never goes below `min_cpus` (cpuSuppressMinCPUs).
  void update_cpus(bpf::InterferenceAction action, int current_be_cpus,
                   int min_cpus = qos::kMinSuppressCpus);
  // Caps a cpuset-policy plan at the CPU ceiling (qos::cap_be_cpuset); no-op without one.
  void filter_cpuset(qos::Plan& plan, const qos::NodeFacts& ctx, const qos::KnobSnapshot& knobs,
                     int min_cpus = qos::kMinSuppressCpus) const;
  [[nodiscard]] std::optional<int> cpu_ceiling() const { return cpu_ceiling_; }
  // Both ceilings as an earlier step left them (the agent's memory, for `plan`).
  void set_ceilings(std::optional<int64_t> quota_us, std::optional<int> cpus) {
    ceiling_ = quota_us;
    cpu_ceiling_ = cpus;
  }

  // The daemon's entry points, with the node's resource-threshold strategy (its suppress
  // policy and cpuSuppressMinCPUs). `follow` applies a verdict to the active policy's ceiling,
  // reading what BE holds now (its quota, or its CPU count) through `knobs`, and drops
  // the other policy's ceiling; `cap` caps a suppress plan in that policy's terms, so a
  // cpuset node never gets a quota and a cfsQuota node never loses CPUs.
  void follow(bpf::InterferenceAction action, const config::ResourceThresholdStrategy& strategy,
              const qos::KnobSnapshot& knobs);
  void cap(qos::Plan& plan, const config::ResourceThresholdStrategy& strategy,
           const qos::NodeFacts& ctx, const qos::KnobSnapshot& knobs) const;

 private:
  std::string be_qos_dir_;
  int cpus_;
  int64_t period_us_;
  std::optional<int64_t> ceiling_;
  std::optional<int> cpu_ceiling_;
};

}  // namespace gleaner::agent
