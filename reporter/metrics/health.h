#pragma once
// Liveness and readiness for the DaemonSet probes. Liveness: every registered loop has
// ticked recently (a wedged sampler or enforcer makes the kubelet restart the agent).
// Readiness: the first sample was taken, the config was loaded, and the agent can record
// the original values of what it changes (--state-dir writable): without that record it
// changes nothing new, so the node is not protected.

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "common/clock.h"

namespace gleaner::reporter {

struct HealthVerdict {
  bool ok = false;
  std::string detail;  // one line per check, for the probe's response body
};

// Pure: which loops are late at `now`.
HealthVerdict evaluate_liveness(const std::map<std::string, SteadyTime>& last_beats, SteadyTime now,
                                std::chrono::milliseconds max_age);
// `state_problem`: why originals cannot be recorded, empty when they can.
// `config_problems`: the config keys rejected now, each with its error and what stays in
// force; they are named but keep the agent ready, since what is in force protects LS.
HealthVerdict evaluate_readiness(bool first_sample_taken, bool config_loaded,
                                 const std::string& state_problem = {},
                                 const std::string& config_problems = {});

class HealthMonitor {
 public:
  HealthMonitor(const Clock& clock, std::chrono::milliseconds max_loop_age)
      : clock_(clock), max_age_(max_loop_age) {}

  // A loop counts as having beaten when registered, so start-up gets one full max_age.
  void register_loop(const std::string& name);
  void beat(const std::string& name);
  void mark_first_sample();
  // A config load happened; `problems` names the keys it rejected, empty when none.
  void mark_config_loaded(std::string problems = {});
  // Why the originals cannot be recorded now; empty once they can again.
  void set_state_problem(std::string why);

  [[nodiscard]] HealthVerdict liveness() const;
  [[nodiscard]] HealthVerdict readiness() const;

 private:
  const Clock& clock_;
  const std::chrono::milliseconds max_age_;
  mutable std::mutex mu_;
  std::map<std::string, SteadyTime> beats_;
  bool first_sample_ = false;
  bool config_loaded_ = false;
  std::string config_problems_;
  std::string state_problem_;
};

}  // namespace gleaner::reporter
