#pragma once
// The agent's Prometheus metrics (docs/metrics.md). The agent hands over a plain
// AgentState each tick; every scrape renders the latest one. Rendering from one state
// value (rather than keeping long-lived per-pod series objects) means a pod that is
// gone from the state is gone from /metrics at once, with no cleanup to forget.

#include <memory>
#include <string>

#include "reporter/metrics/agent_state.h"

namespace gleaner::reporter {

// Hard bound on series per pod. The per-pod families are fixed (see metrics_registry.cc),
// so this holds by construction; the tests count it.
inline constexpr int kMaxSeriesPerPod = 20;
// Label values of reason/resource/key families beyond this many are folded into "other",
// so a bug that invents label values cannot blow up the series count.
inline constexpr size_t kMaxLabelValuesPerFamily = 32;

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Thread-safe. Replaces the exported state and records the sampling-pass durations.
  void update(AgentState state);
  // Thread-safe. The Prometheus text exposition format (version 0.0.4).
  [[nodiscard]] std::string serialize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gleaner::reporter
