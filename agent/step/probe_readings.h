#pragma once
// What the eBPF probe and node PSI told a pass, in plain values: the step's input, and the
// `probe` object of a snapshot file (step_record.h).

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace gleaner::agent::step {

// What the interference signals read this tick.
struct ProbeReadings {
  bool runqueue_probe = false;                // the eBPF run-queue probe is loaded
  std::map<std::string, double> runq_p99_ns;  // LS pod key -> this window's p99
  // The probe tells BE-caused waits apart (it knows the BE cgroup): LS pod key -> p99 of
  // the window's waits with those BE did not cause counted as none.
  bool be_attribution = false;
  std::map<std::string, double> be_runq_p99_ns;
  std::optional<double> cpu_psi_some_avg10;  // node cpu PSI some avg10 (%)
  // LS pod key -> the on-CPU time the probe saw it use over its window, in millicores (a
  // pod the probe did not see is absent); nullopt when not recorded (a snapshot file from
  // before it was). Against the cgroups' own figure it tells an unseen pod (unseen_pods.h).
  std::optional<std::map<std::string, int64_t>> on_cpu_milli;
};

}  // namespace gleaner::agent::step
