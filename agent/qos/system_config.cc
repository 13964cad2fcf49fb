#include "agent/qos/system_config.h"

#include <array>
#include <optional>
#include <string_view>

#include "agent/qos/strategy.h"
#include "kube/well_known.h"

namespace gleaner::agent::qos {
namespace {

constexpr std::array<SystemKnobSpec, 3> kSpecs = {{
    {SystemKnob::kMinFreeKbytes, "vm.min_free_kbytes", true, "sys/vm/min_free_kbytes", false},
    {SystemKnob::kWatermarkScaleFactor, "vm.watermark_scale_factor", true,
     "sys/vm/watermark_scale_factor", false},
    {SystemKnob::kMemcgReapBackground, "memcg_reaper.reap_background", false,
     "sys/kernel/mm/memcg_reaper/reap_background", true},
}};

std::string join(std::string root, const char* relative) {
  while (!root.empty() && root.back() == '/')
    root.pop_back();
  return root + "/" + relative;
}

}  // namespace

const SystemKnobSpec& spec_of(SystemKnob knob) {
  return kSpecs[static_cast<size_t>(knob)];
}

std::optional<SystemKnob> knob_named(std::string_view name) {
  for (const auto& s : kSpecs) {
    if (name == s.name) return s.knob;
  }
  return std::nullopt;
}

std::string knob_path(SystemKnob knob, const std::string& proc_root, const std::string& sys_root) {
  const auto& s = spec_of(knob);
  // The procfs root is /proc itself; the sysfs parent is the directory holding sys/.
  return join(s.under_proc ? proc_root : sys_root, s.relative);
}

SystemPlan plan_system_config(const config::SystemStrategy& strategy,
                              int64_t memory_capacity_bytes) {
  SystemPlan plan;
  if (strategy.min_free_kbytes_factor) {
    const int64_t kib = memory_capacity_bytes / 1024;
    const int64_t value = kib * *strategy.min_free_kbytes_factor / 10000;
    if (kib <= 0) {
      plan.notes.emplace_back(
          "system-config: the node's memory capacity is unknown, vm.min_free_kbytes left as "
          "it is");
    } else if (value < config::kMinFreeKbytesMin || value > config::kMinFreeKbytesMax) {
      plan.notes.push_back("system-config: vm.min_free_kbytes " + std::to_string(value) +
                           " (minFreeKbytesFactor " +
                           std::to_string(*strategy.min_free_kbytes_factor) +
                           ") is outside 10240..10485760, left as it is");
    } else {
      plan.writes.push_back({SystemKnob::kMinFreeKbytes, value});
    }
  }
  if (const auto& f = strategy.watermark_scale_factor) {
    if (*f >= config::kWatermarkScaleFactorMin && *f <= config::kWatermarkScaleFactorMax) {
      plan.writes.push_back({SystemKnob::kWatermarkScaleFactor, *f});
    }  // else said at load (parse_system_config)
  }
  if (strategy.memcg_reap_background) {
    plan.writes.push_back({SystemKnob::kMemcgReapBackground, *strategy.memcg_reap_background});
  }
  return plan;
}

std::unique_ptr<Strategy> make_system_config_strategy() {
  return std::make_unique<PlanOnlyStrategy>("systemConfig", [](const Pass& pass) {
    const auto& capacity = pass.in.snapshot->node.capacity;
    auto memory = capacity.find(kube::kResourceMemory);
    SystemPlan system =
        plan_system_config(pass.in.system, memory == capacity.end() ? 0 : memory->second.value());
    Plan plan;
    plan.system = std::move(system.writes);
    plan.notes = std::move(system.notes);
    return plan;
  });
}

}  // namespace gleaner::agent::qos
