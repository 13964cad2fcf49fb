#pragma once
// SchedProbe: per-cgroup on-CPU time and run-queue latency from eBPF (one tp_btf
// sched_switch program reading the scheduler's own per-task runtime and wait accounting),
// aggregated in per-CPU maps and read as deltas each sampling interval. This header names no libbpf
// type; a build without BPF links a stub whose open() reports why the probe is unavailable.
//
// Lifetime: open() loads and attaches; the links belong to this process (nothing is
// pinned), so destroying the probe, exiting or crashing detaches everything.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/bpf/runq_histogram.h"
#include "common/result.h"

namespace gleaner::agent::bpf {

struct SchedProbeOptions {
  // Account every cgroup (keyed by the task's own cgroup), not only registered ones.
  bool track_all = false;
  // Which cgroup identifies a task: the cpu controller's (v1/hybrid) or the default
  // hierarchy's (v2). Unset: detected from `cgroup_root`.
  std::optional<bool> v1_cpu_controller;
  std::string cgroup_root = "/sys/fs/cgroup";
  // Turn on kernel BPF run-time statistics for as long as the probe lives (self-cost).
  bool enable_stats = false;
  // Also attach an empty program (`gleaner_calibrate`) to sched_switch, whose cost in
  // program_costs() is the floor the statistics put under every program (benchmarks).
  bool calibrate = false;
};

// One registered cgroup over one interval.
struct CgroupSchedSample {
  uint64_t cgroup_id = 0;  // kernfs node id == inode number of the cgroup directory
  std::string dir;         // as registered; empty for unregistered ids under track_all
  int64_t cpu_ns = 0;      // on-CPU time of its tasks (and its descendants' tasks)
  RunqHistogram runq;      // waits from runnable to running that ended in the interval
  std::optional<double> runq_p50_ns;
  std::optional<double> runq_p99_ns;
  // The part of those waits that BE caused (set_be_cgroup): the waits that ended by taking
  // the CPU from a BE task, the others counted as no wait; p99 over all the waits. Unset
  // without a BE cgroup or without waits.
  RunqHistogram be_runq;  // the BE-caused waits alone
  std::optional<double> be_runq_p99_ns;
};

struct SchedInterval {
  std::chrono::nanoseconds elapsed{0};  // since the previous sample (or open)
  std::vector<CgroupSchedSample> cgroups;
  uint64_t dropped_events = 0;  // switches not accounted: cgroup table full (track_all; cumulative)
};

// Kernel statistics of one program (needs enable_stats); rates over the interval since the
// previous program_costs() call (or open).
struct ProgramCost {
  std::string name;
  uint32_t id = 0;
  uint64_t run_time_ns = 0;            // cumulative
  uint64_t run_count = 0;              // cumulative
  std::optional<double> ns_per_event;  // interval
  double events_per_sec = 0;           // interval
};

// Signals that wake the agent between samples (docs/agent.md, "Reacting in milliseconds").
struct WakeSettings {
  // A registered cgroup's task that waited this long for a CPU signals; 0: off.
  std::chrono::nanoseconds runq_wait_bound{0};
  // Registered cgroups using this much CPU (millicores, summed over the node) over a
  // sliding window of about 10 ms signal; 0: off.
  int64_t demand_millicores = 0;
  // Signals are at least this far apart.
  std::chrono::nanoseconds min_gap{std::chrono::milliseconds(5)};
  // Only waits BE caused signal (needs set_be_cgroup; without it none does).
  bool be_caused_only = false;
};

enum class WakeKind { kRunqWait, kDemand };
const char* to_string(WakeKind kind);

struct Wakeup {
  WakeKind kind = WakeKind::kRunqWait;
  std::chrono::nanoseconds at{0};     // CLOCK_MONOTONIC (steady_clock's epoch on Linux)
  std::chrono::nanoseconds value{0};  // the wait; or the CPU time within `span`
  std::chrono::nanoseconds span{0};   // the demand signal's sliding window (7.5 to 10 ms)
  // A demand wake-up's figure: the registered cgroups' CPU over the span, millicores.
  [[nodiscard]] int64_t demand_millicores() const;
  std::string dir;  // the waiting task's registered cgroup (runq wait)
  int cpu = 0;
  bool be_caused = false;  // runq wait: it ended by taking the CPU from a BE task
};

// What the agent asks of a run-queue probe, each call as SchedProbe documents it: the
// daemon holds this, so that a test can drive the daemon with chosen waits and wake-ups
// instead of the kernel's.
class RunqProbe {
 public:
  virtual ~RunqProbe() = default;
  virtual Result<uint64_t> track(const std::string& cgroup_dir) = 0;
  virtual Status untrack(const std::string& cgroup_dir) = 0;
  virtual Status set_be_cgroup(const std::string& cgroup_dir) = 0;
  virtual Result<SchedInterval> sample() = 0;
  virtual void set_wake(const WakeSettings& settings) = 0;
  [[nodiscard]] virtual int wake_fd() const = 0;
  virtual std::vector<Wakeup> drain_wakeups() = 0;
  [[nodiscard]] virtual uint64_t wakeups_lost() const = 0;
  virtual Result<std::vector<ProgramCost>> program_costs() = 0;
  [[nodiscard]] virtual bool stats_enabled() const = 0;
};

class SchedProbe final : public RunqProbe {
 public:
  // Loads and attaches. Errors (never exceptions): kUnsupported (built without BPF, no
  // BTF, old kernel), kPermission (no CAP_BPF/CAP_PERFMON), kInvalidArgument (verifier
  // rejection; the message carries the verifier's last lines), kIo otherwise. The first
  // failure in a process is logged once at warn level.
  static Result<std::unique_ptr<SchedProbe>> open(const SchedProbeOptions& options = {});
  ~SchedProbe() override;
  SchedProbe(const SchedProbe&) = delete;
  SchedProbe& operator=(const SchedProbe&) = delete;

  // Registers a cgroup directory (e.g. a pod's directory under the cpu controller on
  // v1, or under the unified root on v2); its tasks and its descendants' tasks, at any
  // depth, count towards it (the nearest registered ancestor). Fails with kUnavailable
  // when all cgroup slots are in use, or when registered directories would sit at more
  // than GLEANER_MAX_TRACKED_LEVELS distinct levels (cgroup_level). Naming a registered
  // directory again costs a stat(): a directory made anew at that path (another id) takes
  // the old id's place, and one that is gone (or no directory) is unregistered and fails.
  Result<uint64_t> track(const std::string& cgroup_dir) override;
  Status untrack(const std::string& cgroup_dir) override;
  // The BE QoS cgroup (under the cpu controller on v1, the unified root on v2): a
  // registered cgroup's wait that ends by taking the CPU from a task under it is BE-caused
  // (CgroupSchedSample::be_runq), at any depth below it. An empty `cgroup_dir` forgets it. Naming
  // the same directory again costs a stat(); a directory made anew (another id) is taken.
  Status set_be_cgroup(const std::string& cgroup_dir) override;

  // Deltas since the previous sample() (the first: since open). On-CPU time is added as the
  // scheduler charges it (every tick, switch and wake-up), so a task that never leaves its
  // CPU is still measured.
  Result<SchedInterval> sample() override;

  // Wake-up signals: settings take effect at once; wake_fd() becomes readable when
  // wake-ups are waiting (-1 without the ring buffer); drain_wakeups() takes them.
  void set_wake(const WakeSettings& settings) override;
  [[nodiscard]] int wake_fd() const override;
  std::vector<Wakeup> drain_wakeups() override;
  // Wake-ups the kernel side could not queue (ring buffer full; cumulative).
  [[nodiscard]] uint64_t wakeups_lost() const override;

  // Per-program kernel statistics (run time and count are 0 unless stats are enabled).
  Result<std::vector<ProgramCost>> program_costs() override;
  [[nodiscard]] bool stats_enabled() const override;
  // Kernel ids of the loaded programs (to check that nothing outlives the probe).
  [[nodiscard]] std::vector<uint32_t> program_ids() const;

  struct Impl;

 private:
  explicit SchedProbe(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// SchedProbe::open as the agent holds a probe.
inline Result<std::unique_ptr<RunqProbe>> open_runq_probe(const SchedProbeOptions& options) {
  auto probe = SchedProbe::open(options);
  if (!probe) return probe.error();
  return std::unique_ptr<RunqProbe>(std::move(*probe));
}

// Ids of every BPF program / link loaded in the kernel (any owner), to check that a probe
// leaves nothing behind.
Result<std::vector<uint32_t>> kernel_program_ids();
Result<std::vector<uint32_t>> kernel_link_ids();

// Whether this binary was built with the BPF programs, and if not why.
bool sched_probe_built();
std::string sched_probe_build_reason();

}  // namespace gleaner::agent::bpf
