#pragma once
// The interference rule: an LS pod waiting for a CPU (run-queue latency p99, optionally
// cpu PSI "some" avg10) while BE pods run means BE must give way now, before usage-based
// suppression would notice. Pure: inputs in, decision out; the clock is injected so the
// hold time is testable.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"

namespace gleaner::agent::bpf {

struct InterferenceConfig {
  // An LS pod's run-queue latency p99 above this is interference.
  std::chrono::nanoseconds runq_p99_bound{std::chrono::milliseconds(5)};
  // Node cpu PSI some avg10 (percent) above this is interference too; unset: not used.
  std::optional<double> cpu_psi_some_avg10_bound;
  // Relax only after every signal stayed at or below its bound this long.
  std::chrono::nanoseconds hold{std::chrono::seconds(30)};
};

// Parses the agent flags --interference-runq-p99-bound and --interference-hold
// ("500us", "5ms", "2s", "1m"; a bare number is ns) and --interference-psi-bound
// (percent, empty: off). Errors name the flag and the value.
Result<InterferenceConfig> parse_interference_config(std::string_view runq_p99_bound,
                                                     std::string_view hold,
                                                     std::string_view psi_bound = "");
Result<std::chrono::nanoseconds> parse_duration(std::string_view text);

struct LsPodLatency {
  std::string pod;                    // for the reason text
  std::optional<double> runq_p99_ns;  // unset: no waits this interval
};

struct InterferenceInput {
  std::vector<LsPodLatency> ls_pods;
  std::optional<double> cpu_psi_some_avg10;
  bool be_running = false;
};

enum class InterferenceAction {
  kTightenNow,    // interference while BE runs: take the next suppress step this tick
  kHold,          // keep BE where it is (interference without BE, or within the hold time)
  kRelaxAllowed,  // below the bound for the hold time (or never above): usage rules decide
};
const char* to_string(InterferenceAction action);

struct InterferenceDecision {
  InterferenceAction action = InterferenceAction::kRelaxAllowed;
  std::string reason;  // which pod / signal, and by how much
};

class InterferenceRule {
 public:
  InterferenceRule(InterferenceConfig config, const Clock& clock)
      : config_(config), clock_(&clock) {}
  // Without a clock: only evaluate(input, now) may be used.
  explicit InterferenceRule(InterferenceConfig config) : config_(config) {}

  // One decision per sampling interval. Every breach restarts the hold time.
  InterferenceDecision evaluate(const InterferenceInput& input) {
    return evaluate(input, clock_->now());
  }
  InterferenceDecision evaluate(const InterferenceInput& input, SteadyTime now);

  [[nodiscard]] const InterferenceConfig& config() const { return config_; }
  // When the last breach was seen (the hold runs from it); part of the agent's memory.
  [[nodiscard]] std::optional<SteadyTime> last_breach() const { return last_breach_; }
  void set_last_breach(std::optional<SteadyTime> at) { last_breach_ = at; }

 private:
  InterferenceConfig config_;
  const Clock* clock_ = nullptr;
  std::optional<SteadyTime> last_breach_;
};

}  // namespace gleaner::agent::bpf
