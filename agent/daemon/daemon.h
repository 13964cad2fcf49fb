#pragma once
// The agent's composition root: owns the io_context-driven loops, wires the samplers,
// the config loader, the batch calculation, the metrics server and the report client.
// Decisions stay in the pure modules (agent/step, agent/qos, agent/batch); the daemon moves
// values between them and keeps the books of what it logs and counts (daemon_impl.h).

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/bpf/sched_probe.h"
#include "agent/exec/knob_executor.h"
#include "cgroup/executor.h"
#include "common/clock.h"
#include "common/json_util.h"
#include "common/result.h"
#include "kube/config.h"

namespace boost::asio {
class io_context;
}

namespace gleaner::agent {

// One pass as `gleaner-agent plan` can replay it: the step's inputs as a snapshot file
// (usage, probe readings, the agent's memory before the tick; for a fast pass, that tick's
// file with the pass as its one `fastPasses` entry) and what the executor is about to write
// (cgroup files, then resctrl, then system-config knobs), in order. Taken before the
// writes, on the daemon's thread.
struct StepObservation {
  Json snapshot_file;
  std::vector<exec::KnobChange> writes;
  std::vector<std::string> evictions;  // pod keys (none on a fast pass)
  bool cpu_measured = true;            // false on the priming pass, which `plan` never is
};

struct DaemonOptions {
  std::string node_name;
  std::string cluster = "default";
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string cgroup_version;  // empty: detect
  std::string cgroup_driver;   // empty: detect
  std::string cgroup_parent;   // kubelet --cgroup-root
  std::string proc_root = "/proc";
  std::string resctrl_root = "/sys/fs/resctrl";
  // Mount resctrl at resctrl_root when the CPU has RDT allocation and it is not mounted.
  bool resctrl_mount = true;
  std::string config_dir;
  std::string pods_file;
  std::string node_file;
  // API server access (own Node, evictions): a kubeconfig path, or "in-cluster".
  // Empty: no API server; the Node comes from node_file or the machine itself.
  std::string kubeconfig;
  std::string kubelet_host;  // empty with no pods file: pods from the cgroup tree
  int kubelet_port = 10250;
  bool kubelet_https = true;
  // kubelet's serving certificate is verified with this CA bundle (the cluster CA signs it
  // when kubelet runs with serverTLSBootstrap, as managed clusters do); insecure only on
  // request (a self-signed kubelet certificate).
  std::string kubelet_ca_file = std::string(kube::kServiceAccountDir) + "/ca.crt";
  bool kubelet_insecure_tls = false;
  // With --kubeconfig: keep the node's NodeMetric (slo.koordinator.sh) status, as koordlet.
  bool node_metric = true;
  std::string metrics_addr = ":9316";
  std::string scheduler_url;
  std::string token_file;
  // https scheduler URLs: the CA to verify the scheduler with ("": the system trust store).
  std::string scheduler_ca_file;
  std::chrono::milliseconds interval{1000};
  std::chrono::seconds pods_refresh{10};
  // Fast CPU-suppress loop period; 0 disables it (then suppression follows `interval`).
  std::chrono::milliseconds fast_interval{50};
  // The directory holding sys/: CPU topology (cpuset suppress policy), memcg_reaper.
  std::string sys_root = "/";
  bool enforce = true;  // run the QoS strategies (false: measure and report only)
  // eBPF run-queue latency of LS pods as an interference signal (falls back silently to
  // usage and PSI when the kernel or privileges do not allow it).
  bool ebpf = true;
  // The probe wakes the fast path when an LS task waits beyond the interference bound or LS
  // demand rises beyond the last plan (needs the fast path and enforcement).
  bool ebpf_wakeups = true;
  bool bpf_stats = false;
  std::string interference_runq_p99_bound = "5ms";
  std::string interference_hold = "30s";
  std::string interference_psi_bound;  // empty: PSI not used by the rule
  bool dry_run = false;
  // Where the values found before the agent's first change are recorded (originals.json),
  // so a restarted or upgraded agent restores those and not its own. Empty: not recorded
  // (restore on stop still works within one run).
  std::string state_dir;
  // On SIGTERM: "restore" puts every value back; "auto" (with --kubeconfig and the Pod's
  // name and namespace) leaves them in force when a rolling update of the DaemonSet is
  // replacing this agent, whose successor adopts them from the state file.
  std::string on_stop = "auto";
  std::string pod_name;       // this agent's Pod (downward API: POD_NAME)
  std::string pod_namespace;  // (POD_NAMESPACE)
  int max_ticks = 0;          // > 0: exit after this many sampling passes (tests, demo)
  // Called on every full tick that enforces (tests comparing the daemon with `plan`). It
  // plans the writes a second time, so the executor's counters count them twice.
  std::function<void(const StepObservation&)> on_step;
  // Called on every fast pass that plans after a full tick with CPU measured, likewise.
  std::function<void(const StepObservation&)> on_fast_pass;
};

// What the daemon takes from outside rather than making itself: time, and the eBPF
// run-queue probe. The composition root passes the machine's own; a test passes a fake
// clock it moves and a probe that reports chosen waits and wake-ups.
struct DaemonDeps {
  // Must outlive the daemon. Null: the system clock.
  const Clock* clock = nullptr;
  // Opens the probe when DaemonOptions::ebpf is set. Empty: bpf::open_runq_probe.
  std::function<Result<std::unique_ptr<bpf::RunqProbe>>(const bpf::SchedProbeOptions&)> open_probe;
  // False: start() arms neither pass's timer; the caller runs tick() and fast_tick() on the
  // io_context's thread, at its own clock's pace (a test on a fake clock).
  bool own_timers = true;
};

class Daemon {
 public:
  static Result<std::unique_ptr<Daemon>> create(boost::asio::io_context& io, DaemonOptions options,
                                                DaemonDeps deps = {});
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Starts the timers and servers; returns at once (the caller runs the io_context).
  void start();
  // Restores every cgroup value the agent changed, stops servers and timers.
  void stop();
  // Called once at the end of stop(), on the io_context's thread.
  void set_on_stop(std::function<void()> callback);
  // Re-reads the ack-slo-config (SIGHUP).
  void reload_config();

  // One sampling pass and its decisions; exposed for tests.
  void tick();
  [[nodiscard]] std::string describe() const;  // the start-up line
  [[nodiscard]] uint16_t metrics_port() const;
  [[nodiscard]] std::string last_calc_json() const;
  // One fast-path suppression step; exposed for tests and the reaction benchmark.
  // `trigger` names what ran it, for gleaner_agent_fast_passes_total: "timer" (the fast
  // loop) or "wakeup" (the eBPF probe's signal).
  void fast_tick(const char* trigger = "timer");

 private:
  struct Impl;
  explicit Daemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gleaner::agent
