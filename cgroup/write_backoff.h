#pragma once
// The back-off for kernel files that refuse a write, shared by every back end of the
// agent's knob executor (cgroup files, sysctl and sysfs files). A refusal usually outlives
// one tick (a hierarchy rule, a missing controller, a read-only /proc/sys), and the values
// asked for may move every tick, so a refused file is keyed by its path whatever the value:
// it is tried again after 1 s, doubling to at most 30 s, and the same warning is given at
// most once a minute (a new error message is said at once).

#include <chrono>
#include <map>
#include <string>

#include "common/clock.h"

namespace gleaner::cgroup {

class WriteBackoff {
 public:
  explicit WriteBackoff(const Clock& clock) : clock_(clock) {}

  // A write to `key` must wait: it was refused and its retry time has not come.
  [[nodiscard]] bool waiting(const std::string& key) const;

  struct Verdict {
    int failures = 0;             // refusals in a row, this one included
    std::chrono::seconds wait{};  // until the next try
    bool warn = false;            // say it now (first time, new message, or a minute on)
  };
  // Notes a refusal of `key`. `urgent`: a write that protects LS, tried again every second,
  // never left for 30.
  Verdict refused(const std::string& key, const std::string& error, bool urgent = false);
  // The write to `key` went through: the refusals before it (0 when there were none).
  int succeeded(const std::string& key);
  // Drops what is known of `key`, so that the next write is tried at once (on stop).
  void forget(const std::string& key) { refusals_.erase(key); }

 private:
  struct Refusal {
    int failures = 0;
    SteadyTime retry_at{};
    SteadyTime warned_at{};
    std::string error;
  };
  const Clock& clock_;
  std::map<std::string, Refusal> refusals_;
};

}  // namespace gleaner::cgroup
