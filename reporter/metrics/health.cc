#include "reporter/metrics/health.h"

namespace gleaner::reporter {

HealthVerdict evaluate_liveness(const std::map<std::string, SteadyTime>& last_beats, SteadyTime now,
                                std::chrono::milliseconds max_age) {
  HealthVerdict v{true, ""};
  for (const auto& [name, at] : last_beats) {
    auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - at);
    bool late = age > max_age;
    if (late) v.ok = false;
    v.detail += name + ": " + (late ? "stalled" : "ok") + " (last tick " +
                std::to_string(age.count()) + "ms ago, limit " + std::to_string(max_age.count()) +
                "ms)\n";
  }
  if (last_beats.empty()) v.detail = "no loops registered\n";
  return v;
}

HealthVerdict evaluate_readiness(bool first_sample_taken, bool config_loaded,
                                 const std::string& state_problem,
                                 const std::string& config_problems) {
  HealthVerdict v{first_sample_taken && config_loaded && state_problem.empty(), ""};
  v.detail += std::string("first sample: ") + (first_sample_taken ? "taken" : "pending") + "\n";
  v.detail += "config: " +
              (!config_loaded            ? std::string("pending")
               : config_problems.empty() ? std::string("loaded")
                                         : "not fully loaded: " + config_problems) +
              "\n";
  v.detail += "originals: " +
              (state_problem.empty() ? std::string("on record")
                                     : "cannot be recorded, new changes held: " + state_problem) +
              "\n";
  return v;
}

void HealthMonitor::register_loop(const std::string& name) {
  std::lock_guard lock(mu_);
  beats_[name] = clock_.now();
}

void HealthMonitor::beat(const std::string& name) {
  std::lock_guard lock(mu_);
  beats_[name] = clock_.now();
}

void HealthMonitor::mark_first_sample() {
  std::lock_guard lock(mu_);
  first_sample_ = true;
}

void HealthMonitor::mark_config_loaded(std::string problems) {
  std::lock_guard lock(mu_);
  config_loaded_ = true;
  config_problems_ = std::move(problems);
}

void HealthMonitor::set_state_problem(std::string why) {
  std::lock_guard lock(mu_);
  state_problem_ = std::move(why);
}

HealthVerdict HealthMonitor::liveness() const {
  std::lock_guard lock(mu_);
  return evaluate_liveness(beats_, clock_.now(), max_age_);
}

HealthVerdict HealthMonitor::readiness() const {
  std::lock_guard lock(mu_);
  return evaluate_readiness(first_sample_, config_loaded_, state_problem_, config_problems_);
}

}  // namespace gleaner::reporter
