#pragma once
// system-config (Koordinator's SystemStrategy): node-wide kernel knobs, each written only
// when the ConfigMap sets it, as koordlet computes them:
//   vm.min_free_kbytes       = node memory capacity in KiB * minFreeKbytesFactor / 10000
//                              (written only inside 10 MiB..10 GiB, koordlet's range)
//   vm.watermark_scale_factor = watermarkScaleFactor (only inside 10..400)
//   memcg_reaper reap_background = memcgReapBackGround (Alibaba Cloud Linux; only where
//                              the kernel has /sys/kernel/mm/memcg_reaper)
// A knob the ConfigMap stops setting goes back to the value the agent found
// (exec::SystemExecutor), unlike koordlet, which leaves its last value in place.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/config/burst_system_config.h"

namespace gleaner::agent::qos {

inline constexpr const char* kReasonSystemConfig = "system-config";

enum class SystemKnob { kMinFreeKbytes, kWatermarkScaleFactor, kMemcgReapBackground };
inline constexpr SystemKnob kAllSystemKnobs[] = {SystemKnob::kMinFreeKbytes,
                                                 SystemKnob::kWatermarkScaleFactor,
                                                 SystemKnob::kMemcgReapBackground};

struct SystemKnobSpec {
  SystemKnob knob;
  const char* name;      // in logs, metrics and the state file, e.g. "vm.min_free_kbytes"
  bool under_proc;       // the file is under the procfs root (else the sysfs parent)
  const char* relative;  // path below that root
  // Absent on most kernels (an Alibaba Cloud Linux extension): its absence is routine.
  bool kernel_specific;
};
const SystemKnobSpec& spec_of(SystemKnob knob);
std::optional<SystemKnob> knob_named(std::string_view name);
// The knob's file: <proc_root>/sys/vm/... or <sys_root>/sys/kernel/mm/...
std::string knob_path(SystemKnob knob, const std::string& proc_root, const std::string& sys_root);

struct SystemWrite {
  SystemKnob knob;
  int64_t value = 0;
  std::string reason = kReasonSystemConfig;
  friend bool operator==(const SystemWrite&, const SystemWrite&) = default;
};

struct SystemPlan {
  std::vector<SystemWrite> writes;  // every knob the config wants, this pass
  std::vector<std::string> notes;   // knobs set in the config but not written, and why
};

// `memory_capacity_bytes`: the Node's status.capacity memory (what koordlet uses); <= 0
// when unknown, which leaves vm.min_free_kbytes alone.
SystemPlan plan_system_config(const config::SystemStrategy& strategy,
                              int64_t memory_capacity_bytes);

}  // namespace gleaner::agent::qos
