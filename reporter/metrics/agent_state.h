#pragma once
// What the agent tells the metrics registry each tick: plain values, no Prometheus
// types, so the agent never depends on the exposition library (DESIGN: only reporter
// names prometheus-cpp types). Counters are cumulative totals since the agent started;
// the registry exports them as they are.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/colocation_state.h"
#include "reporter/wire/node_report.h"

namespace gleaner::reporter {

using gleaner::ColocationState;

// Pressure stall information, avg10 window, as the kernel prints it (percent, 0..100).
// Unset when the kernel or cgroup version does not offer that line.
struct PressureAvg10 {
  std::optional<double> cpu_some;
  std::optional<double> cpu_full;
  std::optional<double> memory_some;
  std::optional<double> memory_full;
  std::optional<double> io_some;
  std::optional<double> io_full;
};

struct PodState {
  std::string namespace_name;
  std::string name;
  // Koordinator QoS class: LSE, LSR, LS, BE, SYSTEM or NONE; anything else exports as NONE.
  std::string qos;
  int64_t cpu_usage_millicores = 0;
  int64_t memory_usage_bytes = 0;  // working set
  double cpu_throttled_seconds_total = 0;
  uint64_t cpu_throttled_periods_total = 0;
  PressureAvg10 pressure;
  std::optional<int64_t> runqueue_latency_p99_us;  // eBPF; unset without it
};

// One BPF program's kernel statistics (with --bpf-stats), cumulative.
struct BpfProgramCost {
  double run_seconds_total = 0;
  uint64_t runs_total = 0;
  std::optional<double> ns_per_event;  // over the last interval; unset without events
};

struct AgentState {
  ResourceAmounts node_capacity;
  ResourceAmounts node_allocatable;
  ResourceAmounts node_usage;
  ResourceAmounts system_usage;
  ResourceAmounts ls_usage;
  ResourceAmounts be_usage;
  ColocationState colocation = ColocationState::kDisabled;
  std::optional<ResourceAmounts> batch_allocatable;  // unset unless colocation is enabled
  std::vector<PodState> pods;                        // pods absent here lose their series
  SuppressState suppress;
  std::map<std::string, uint64_t> evictions_total;  // by reason
  uint64_t eviction_refusals_total = 0;  // refused or failed at the API server, asked again
  std::map<std::string, uint64_t> cgroup_writes_total;          // by resource
  std::map<std::string, uint64_t> cgroup_write_failures_total;  // by resource
  // Writes cut to fit under an ancestor's limit (the kernel's hierarchy rules), and refused
  // writes held back by the retry backoff, by resource.
  std::map<std::string, uint64_t> cgroup_writes_clamped_total;
  std::map<std::string, uint64_t> cgroup_writes_deferred_total;
  // Writes held because the original value could not be put on record first, by resource.
  std::map<std::string, uint64_t> cgroup_writes_unrecorded_total;
  // Failures to read or write the record of original values (the state file).
  uint64_t state_file_errors_total = 0;
  // False while the record cannot be written (new changes are held, /readyz fails).
  bool originals_recorded = true;
  // Pod list fetches (kubelet, the pods file) that failed; the known pods were kept.
  uint64_t pod_list_errors_total = 0;
  std::map<std::string, uint64_t> config_load_errors_total;  // by ConfigMap key
  // 1 per ConfigMap key in force as written, 0 per key whose file is rejected now (its
  // last good version or its safe fallback is in force instead).
  std::map<std::string, uint64_t> config_key_valid;
  // Fields of the config in force that are not enforced or unknown, by ConfigMap key.
  std::map<std::string, uint64_t> config_warnings;
  // Durations of the sampling passes finished since the previous update.
  std::vector<double> sampling_pass_seconds;
  // cpuSuppressMode slo: from the end of an LS wait the eBPF probe signalled to the BE cut it
  // caused written, one entry per cut since the previous update (observed into a histogram).
  std::vector<double> suppress_reaction_seconds;
  uint64_t report_sends_total = 0;
  uint64_t report_send_failures_total = 0;
  // NodeMetric status writes (--kubeconfig): done, and failed (the CRD not served included).
  uint64_t node_metric_updates_total = 0;
  uint64_t node_metric_update_failures_total = 0;
  // The /metrics listener: open connections, accept() failures (out of descriptors) and
  // times its connection cap was reached.
  int64_t http_open_connections = 0;
  uint64_t http_accept_errors_total = 0;
  uint64_t http_connection_cap_reached_total = 0;
  double agent_cpu_seconds_total = 0;
  int64_t agent_resident_memory_bytes = 0;
  double last_sample_unix_seconds = 0;
  // The eBPF run-queue probe: loaded (1) or running on cgroup and PSI sampling only (0), and
  // its programs' own cost by program name when kernel BPF statistics are on.
  bool ebpf_probe_loaded = false;
  bool ebpf_be_attribution = false;  // the probe tells BE-caused LS waits apart
  // The probe's wake-ups of the fast path, by signal (runqueue_wait, ls_demand), and those
  // lost because its ring buffer was full.
  std::map<std::string, uint64_t> ebpf_wakeups_total;
  uint64_t ebpf_wakeups_lost_total = 0;
  uint64_t ebpf_track_failures_total = 0;  // LS pods the probe refused to track, per pass
  // cpuSuppressMode slo: the controller's BE CPU allowance (unset in other modes), 1 while
  // it falls back to the threshold formula (no eBPF run-queue probe), its cuts by trigger
  // (pass, wait), and LS pods' unusable wait-target annotations met.
  std::optional<double> be_cpu_allowance_cores;
  bool be_cpu_slo_fallback = false;
  // LS pods that ran unseen by the eBPF probe in the last pass (BE may not grow meanwhile).
  int64_t ls_pods_unseen = 0;
  std::map<std::string, uint64_t> be_cpu_slo_cuts_total;
  uint64_t be_cpu_slo_target_warnings_total = 0;
  // Wait-target annotations below cpuSloMinWaitTargetMicros, raised to it (per pod and pass).
  uint64_t be_cpu_slo_targets_clamped_total = 0;
  // Fast CPU-suppress passes, by what ran them (timer, wakeup).
  std::map<std::string, uint64_t> fast_passes_total;
  std::map<std::string, BpfProgramCost> bpf_program_costs;
};

}  // namespace gleaner::reporter
