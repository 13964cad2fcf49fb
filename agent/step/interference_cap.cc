#include "agent/step/interference_cap.h"

#include <algorithm>

#include "cgroup/parsers.h"

namespace gleaner::agent {
namespace {
constexpr int64_t kFloorUs = 2000;  // the suppress policy's own floor
}  // namespace

void InterferenceCap::update(bpf::InterferenceAction action, int64_t current_quota_us) {
  switch (action) {
    case bpf::InterferenceAction::kTightenNow: {
      const int64_t full = static_cast<int64_t>(cpus_) * period_us_;
      const int64_t step = std::max<int64_t>(full / 10, 1000);
      int64_t base =
          ceiling_.value_or(current_quota_us == cgroup::kUnlimited ? full : current_quota_us);
      base = std::min(base, current_quota_us == cgroup::kUnlimited ? full : current_quota_us);
      ceiling_ = std::max(base - step, kFloorUs);
      break;
    }
    case bpf::InterferenceAction::kHold:
      break;  // keep the ceiling (or none) as it is
    case bpf::InterferenceAction::kRelaxAllowed:
      ceiling_.reset();
      break;
  }
}

void InterferenceCap::update_cpus(bpf::InterferenceAction action, int current_be_cpus,
                                  int min_cpus) {
  switch (action) {
    case bpf::InterferenceAction::kTightenNow: {
      // The same step the cpuset policy grows BE by.
      const int step = std::max((cpus_ + 9) / 10, 1);
      const int base = std::min(cpu_ceiling_.value_or(current_be_cpus), current_be_cpus);
      // At the floor already: nothing left to take.
      cpu_ceiling_ = std::max(base - step, std::min(min_cpus, current_be_cpus));
      break;
    }
    case bpf::InterferenceAction::kHold:
      break;
    case bpf::InterferenceAction::kRelaxAllowed:
      cpu_ceiling_.reset();
      break;
  }
}

void InterferenceCap::filter_cpuset(qos::Plan& plan, const qos::NodeFacts& ctx,
                                    const qos::KnobSnapshot& knobs, int min_cpus) const {
  if (cpu_ceiling_) {
    qos::cap_be_cpuset(plan, ctx, knobs, *cpu_ceiling_, "interference", min_cpus);
  }
}

void InterferenceCap::follow(bpf::InterferenceAction action,
                             const config::ResourceThresholdStrategy& strategy,
                             const qos::KnobSnapshot& knobs) {
  if (strategy.cpu_suppress_policy == config::CpuSuppressPolicy::kCfsQuota) {
    cpu_ceiling_.reset();
    update(action, knobs.integer(cgroup::Resource::kCpuQuota, be_qos_dir_).value_or(0));
    return;
  }
  ceiling_.reset();
  // An empty CPU list inherits the parent's: BE holds every CPU.
  auto held = knobs.ids(cgroup::Resource::kCpusetCpus, be_qos_dir_);
  update_cpus(action, held && !held->empty() ? static_cast<int>(held->size()) : cpus_,
              static_cast<int>(strategy.cpu_suppress_min_cpus));
}

void InterferenceCap::cap(qos::Plan& plan, const config::ResourceThresholdStrategy& strategy,
                          const qos::NodeFacts& ctx, const qos::KnobSnapshot& knobs) const {
  if (strategy.cpu_suppress_policy == config::CpuSuppressPolicy::kCfsQuota) {
    filter(plan.writes, knobs.integer(cgroup::Resource::kCpuQuota, be_qos_dir_).value_or(0));
  } else {
    filter_cpuset(plan, ctx, knobs, static_cast<int>(strategy.cpu_suppress_min_cpus));
  }
}

void InterferenceCap::filter(std::vector<cgroup::CgroupWrite>& writes,
                             int64_t current_quota_us) const {
  if (!ceiling_) return;
  const std::string cap = std::to_string(*ceiling_);
  bool seen = false;
  for (auto& w : writes) {
    if (w.resource != cgroup::Resource::kCpuQuota || w.cgroup != be_qos_dir_) continue;
    seen = true;
    auto value = cgroup::parse_int_value(w.value);
    if (value.ok() && (*value == cgroup::kUnlimited || *value > *ceiling_)) {
      w.value = cap;
      w.reason = "interference";
    }
  }
  if (!seen && (current_quota_us == cgroup::kUnlimited || current_quota_us > *ceiling_)) {
    writes.push_back({cgroup::Resource::kCpuQuota, be_qos_dir_, cap, "interference"});
  }
}

}  // namespace gleaner::agent
