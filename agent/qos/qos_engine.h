#pragma once
// The entry point the daemon calls: every enabled strategy once per full tick (run), and
// the CPU suppress strategy alone on the fast path (suppress_only). The engine holds the
// strategies' persistent state (cool-downs, pods asked to leave, the slow-changing parts
// of the node the fast path needs); the decisions themselves are pure functions. The
// caller applies the plan: cgroup writes through cgroup::WriteExecutor, resctrl actions
// through ResctrlExecutor, evictions through the Eviction API.

#include <optional>

#include "agent/qos/cpu_suppress.h"
#include "agent/qos/qos_types.h"

namespace gleaner::agent::qos {

// The few figures the fast path samples.
struct SuppressSample {
  int64_t node_cpu_milli = 0;
  int64_t non_be_cpu_milli = 0;
  bool stale = false;
  bool suppress_armed = true;  // as QosInputs::suppress_armed
};

class QosEngine {
 public:
  // Every strategy on `knobs` (read for full_pass_reads); records evictions in the
  // engine's state.
  Plan run(const QosInputs& in, const KnobSnapshot& knobs);
  // As above, reading the pass's knobs through in.reader first.
  Plan run(const QosInputs& in);
  // Only BE CPU suppression, from a fresh sample, the node facts of the last run() and
  // `knobs` (read for fast_reads()). Empty until run() has been called with CPU measured.
  Plan suppress_only(const SuppressSample& sample, const KnobSnapshot& knobs) const;
  // As above, reading fast_reads() through `reader` first.
  Plan suppress_only(const SuppressSample& sample, QosReader& reader) const;
  // What the fast path reads (nothing before the first run()); `cpusets` adds the CPU
  // lists (the cpuset policy, or a CPU-count ceiling over it).
  [[nodiscard]] KnobReads fast_reads(bool cpusets = false) const;
  // The system usage the fast path counts for `sample`: what the node uses beyond non-BE
  // pods, at most the last run()'s figure.
  [[nodiscard]] int64_t fast_system_usage(const SuppressSample& sample) const;

  [[nodiscard]] const QosState& state() const { return state_; }
  // The strategies' state as an earlier tick left it (the agent's memory, for `plan`).
  void set_state(QosState state) { state_ = std::move(state); }
  // The API server's answer to an eviction a run() planned (see record_eviction_answer).
  void eviction_answered(const std::string& pod, bool accepted, double now_s);
  // The node facts of the last run() (nullopt before it), for filters applied after it.
  [[nodiscard]] const std::optional<SuppressContext>& last_suppress_context() const {
    return suppress_ctx_;
  }
  [[nodiscard]] const config::ResourceThresholdStrategy& threshold() const { return threshold_; }

 private:
  QosState state_;
  std::optional<SuppressContext> suppress_ctx_;
  bool cpu_measured_ = false;  // whether the last run() had CPU figures
  config::ResourceThresholdStrategy threshold_;
};

}  // namespace gleaner::agent::qos
