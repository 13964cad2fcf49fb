#pragma once
// One agent step: everything the agent decides in a tick, as one function of its inputs
// (the latest node snapshot, the node's resolved config, the current cgroup values read
// through a QosReader, the interference probe's readings, the time) and of its memory
// from the previous tick (interference rule, ceilings, eviction cool-downs). The daemon
// gathers the inputs, calls the step and applies the plan. `gleaner-agent plan` calls the
// very same step on a snapshot file: the full pass (tick) on the snapshot, then each fast
// pass the file records after it (fast, from its sample and the memory it began with), so
// it prints the writes the daemon makes on both, in every mode, but for what the executor
// itself holds (a child's wish clamped under its parent, written back as the parent widens:
// docs/qos.md). A wait seen between ticks (ls_waited) is not replayed: what it changed is
// in the memory the next fast pass records.
// No I/O here: current values are read once per pass through the reader (the edge) into a
// KnobSnapshot the strategies take; nothing is written.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/bpf/interference.h"
#include "agent/qos/qos_engine.h"
#include "agent/step/be_ceiling.h"
#include "agent/step/interference_cap.h"
#include "agent/step/probe_readings.h"
#include "agent/step/slo_controller.h"
#include "agent/step/unseen_pods.h"

namespace gleaner::agent::step {

// The step's memory between ticks, in plain values (the `agent` object of a snapshot file).
struct AgentMemory {
  bool suppress_armed = true;               // onInterference: the ceiling is in force
  std::optional<double> last_breach_s;      // monotonic seconds of the last interference
  std::optional<int64_t> ceiling_quota_us;  // the interference ceiling, cfsQuota policy
  std::optional<int> ceiling_cpus;          // the interference ceiling, cpuset policy
  // The QoS strategies' memory in the record form (QosEngine::save_memory), its times
  // counted back from the moment memory() was given.
  Json strategies = Json::object();
  SloMemory slo;  // cpuSuppressMode slo: the feedback controller
};

// A full pass's inputs: what the QoS engine takes (the node's resolved strategies, its
// latest sample, the cgroup reader), plus what the interference rule and the fast path add.
// `suppress_armed` is the step's own to set (from the interference rule), not the caller's.
struct TickInputs : qos::QosInputs {
  ProbeReadings probe;
  // The fast path sampled within its last three periods: it owns the suppress writes,
  // which the full pass (usage of a longer interval) must not undo; under cfsQuota those
  // are the quota alone, and the BE pods' CPU lists stay the full pass's.
  bool fast_path_live = false;
};

struct StepResult {
  qos::Plan plan;
  bpf::InterferenceDecision interference;
  std::vector<std::string> events;  // state changes worth an info line (armed, lifted)
  // Steps worth a debug line only: each step taken on a wait between ticks (a storm of
  // waits may take one every 100 ms).
  std::vector<std::string> details;
  // Bad input met on the way (an LS pod's unusable wait target), each naming what and where.
  std::vector<TargetWarning> warnings;
  // cpuSuppressMode slo: the controller's step, or nullopt when it fell back to the threshold
  // formula (no eBPF run-queue probe) or the mode is off.
  std::optional<SloDecision> slo;
  bool slo_fallback = false;
  BeCeiling be_read;  // BE's CPU ceiling as the full pass read it, before its writes
  // LS pods that ran unseen by the probe this pass: BE held (slo) or its ceiling kept
  // (onInterference) for them.
  std::vector<UnseenPod> unseen;
};

// The fast path's figures, sampled every ~50 ms.
struct FastInputs {
  int64_t node_cpu_milli = 0;
  int64_t non_be_cpu_milli = 0;
  bool stale = false;
  qos::QosReader* reader = nullptr;
};

// An LS task's wait beyond the interference bound, seen by the probe between ticks.
struct LsWait {
  std::string pod;       // pod key, for the reason
  double waited_ns = 0;  // the wait
  double now_s = 0;      // monotonic seconds
  qos::QosReader* reader = nullptr;
};

// Interference steps taken on waits seen between ticks are at least this far apart, so a
// burst of waits takes BE down step by step (a tenth of the node each) rather than to the
// floor at once; the full tick takes at most one step per pass.
constexpr double kWaitStepGapSeconds = 0.1;

class AgentStep {
 public:
  // `cpus`: the node's CPUs (one interference step is a tenth of them).
  AgentStep(bpf::InterferenceConfig interference, const cgroup::KubeletLayout& layout, int cpus);

  // The full tick: interference verdict, every QoS strategy, the ceiling over the plan.
  StepResult tick(const TickInputs& in);
  // The fast path: BE CPU suppression alone from a fresh sample and the node facts of the
  // last tick; empty while no ceiling is in force (the full tick arms, lifts and recovers).
  qos::Plan fast(const FastInputs& in) const;
  // Between ticks, BE gives way to a waiting LS task at once: the wait is a breach of the
  // interference rule (the hold restarts from it); while BE was running at the last tick,
  // BE's ceiling takes one interference step (at most one per kWaitStepGapSeconds) and an
  // onInterference ceiling is armed. Only the step's memory changes: the fast path that
  // follows writes the ceiling.
  StepResult ls_waited(const LsWait& wait);

  // The step's memory, the strategies' times counted back from `now_s` (the monotonic
  // moment the record it goes into stands for).
  [[nodiscard]] AgentMemory memory(double now_s) const;
  // Takes up `memory` as memory(now_s) gave it; a strategy's part it rejects changes
  // nothing and is the error.
  Status adopt(const AgentMemory& memory, double now_s);
  // The API server's answer to an eviction a tick planned: accepted, or refused (asked
  // again after a back-off).
  void eviction_answered(const std::string& pod, bool accepted, double now_s) {
    engine_.eviction_answered(pod, accepted, now_s);
  }

  // cpuSuppressMode slo: the most BE can count on keeping (a low percentile of the
  // allowance over the last minute), which bounds the batch CPU the agent reports; nullopt
  // in other modes, or while the controller is not running.
  [[nodiscard]] std::optional<int64_t> sustained_be_cpu_milli() const;
  // cpuSuppressMode slo: the tightest LS pod target of the last pass, the wait that should
  // wake the fast path; nullopt in other modes.
  [[nodiscard]] std::optional<std::chrono::nanoseconds> wake_wait_bound() const;

  [[nodiscard]] bool suppress_armed() const { return suppress_armed_; }
  [[nodiscard]] const qos::QosEngine& engine() const { return engine_; }

 private:
  qos::QosEngine engine_;
  bpf::InterferenceRule rule_;
  InterferenceCap cap_;
  bool suppress_armed_ = true;
  bool be_running_ = false;                 // at the last tick
  std::optional<double> last_wait_step_s_;  // the last step taken on a wait between ticks

  // cpuSuppressMode slo (agent_step_slo.cc): the controller over the engine's plan, its
  // fast-path and between-ticks counterparts.
  void slo_tick(const TickInputs& in, const qos::KnobSnapshot& knobs, StepResult& out);
  qos::Plan slo_fast(const FastInputs& in, const qos::KnobSnapshot& knobs) const;
  // The fast path's and the between-tick waits' knobs, read once through `reader`.
  qos::KnobSnapshot fast_knobs(qos::QosReader& reader) const;
  StepResult slo_waited(const LsWait& wait);
  SloMemory slo_;
  bool slo_probe_ = false;                        // the run-queue probe at the last tick
  std::map<std::string, double> slo_targets_ns_;  // LS pod -> its target, at the last tick
};

// Whether `strategy` is enabled in cpuSuppressMode slo.
bool slo_mode(const config::ResourceThresholdStrategy& strategy);

// Whether BE is running as the interference rule asks it: a BE pod used more than 50
// millicores in the latest sample.
bool be_running(const snapshot::NodeSnapshot& latest);

}  // namespace gleaner::agent::step
