#pragma once
// cpuSuppressMode `slo`: BE's CPU allowance steered by each LS pod's run-queue wait.
//
// BE gets as much CPU as it can take while every LS pod's run-queue wait p99 (eBPF) stays
// at or below its target and node CPU PSI stays below its bound. The controller is
// additive-increase / proportional-decrease with a dead band:
//   - pressure = max over LS pods of p99 / target (and PSI / its bound);
//   - pressure > 1: cut at once, by 10% + half the breach (a 2x breach halves BE), from
//     what BE really uses when that is below the allowance (a cut of an unused limit would
//     take nothing);
//   - pressure < kSloGrowBelow and every LS pod has history: grow by kSloGrowPerSecond of
//     the node per second, slower (kSloProbePerSecond) above the level of the last cut,
//     and not at all for kSloGrowHoldSeconds after a cut;
//   - in between: hold (the dead band keeps a steady load steady).
// The allowance never goes below the floor (BE keeps making progress) nor above the node,
// nor, when cpuSloThresholdCeiling is set, above the threshold formula. Anything that makes
// the reading doubtful (stale metrics, a clock that went back or jumped, an LS pod without
// history, an LS pod running unseen by the probe) can only hold or cut, never grow. Pure: the
// memory is a value the agent keeps in its step record.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gleaner::agent::step {

inline constexpr double kSloGrowBelow = 0.7;        // pressure below this is slack
inline constexpr double kSloGrowPerSecond = 0.05;   // of capacity, below the last cut's level
inline constexpr double kSloProbePerSecond = 0.01;  // of capacity, above it
inline constexpr double kSloGrowHoldSeconds = 3;    // no growth this long after a cut
inline constexpr double kSloHistorySeconds = 5;     // an unmeasured LS pod has slack after
inline constexpr double kSloMaxStepSeconds = 5;     // a longer gap is a clock jump: no growth
inline constexpr double kSloWindowSeconds = 60;     // allowance history for batch capacity
inline constexpr size_t kSloWindowEntries = 120;

// The controller's memory between steps (times are monotonic seconds).
struct SloMemory {
  std::optional<int64_t> allowance_milli;   // nullopt: not started (first step starts at floor)
  std::optional<double> last_s;             // the last step
  std::optional<double> last_cut_s;         // the last cut
  std::optional<int64_t> cut_level_milli;   // what BE was allowed when the last cut came
  std::map<std::string, double> watched_s;  // LS pod -> since when the probe watches it
  std::deque<std::pair<double, int64_t>> window;  // (at, allowance), oldest first
  friend bool operator==(const SloMemory&, const SloMemory&) = default;
};

struct SloPod {
  std::string key;   // namespace/name
  double target_ns;  // its run-queue wait p99 target
};

struct SloInputs {
  double now_s = 0;
  int64_t capacity_milli = 0;
  int64_t floor_milli = 0;
  std::optional<int64_t> ceiling_milli;  // the threshold formula, when a hard ceiling
  int64_t be_usage_milli = 0;            // what BE used in the latest sample
  std::vector<SloPod> ls_pods;
  std::map<std::string, double> runq_p99_ns;  // this window's p99, pods that waited
  std::optional<double> cpu_psi_some_avg10;
  std::optional<double> cpu_psi_bound;
  bool stale = false;
  // LS pods that ran unseen by the probe (unseen_pods.h), described: while there is one,
  // no wait measured is slack, so BE may hold or be cut but not grow.
  std::vector<std::string> unseen;
};

enum class SloAction { kGrow, kHold, kCut };
const char* to_string(SloAction action);

struct SloDecision {
  SloAction action = SloAction::kHold;
  int64_t allowance_milli = 0;
  double pressure = 0;  // the worst ratio of a signal to its bound
  std::string reason;   // which pod or signal, for the log
};

// One full-pass step: updates `memory` and returns the allowance to enforce.
SloDecision slo_step(const SloInputs& in, SloMemory& memory);

// Between passes, one LS task waited `waited_ns` against `target_ns`: cut at once if that is
// a breach (the eBPF wake-up path). Returns the decision; kHold when no cut was taken.
SloDecision slo_wait_cut(double waited_ns, double target_ns, int64_t floor_milli, double now_s,
                         SloMemory& memory);

// A low percentile (the 10th) of the allowance over the last kSloWindowSeconds, the most
// the agent promises as batch CPU; nullopt before any step.
std::optional<int64_t> slo_sustained_allowance(const SloMemory& memory);

// An LS pod's annotation the controller could not use as written.
struct TargetWarning {
  std::string pod;          // the pod's key
  uint64_t value_hash = 0;  // which value: the daemon logs each once without keeping it
  std::string message;      // names the pod and quotes the value, truncated
  bool clamped = false;     // raised to the lowest target allowed, else refused
};

struct PodTarget {
  double ns = 0;
  std::optional<TargetWarning> warning;
};

// The LS pod's own target from its annotation, else `default_ns`; a bad value is refused
// with a warning and the default applies. One below `min_ns` (or below `default_ns`, when
// that is lower) is raised to it, with a warning.
PodTarget slo_pod_target(const std::string& pod_key, const std::optional<std::string>& annotation,
                         double default_ns, double min_ns);

// What an LS pod asks of the controller, from its annotations.
struct PodTargetAsk {
  std::optional<std::string> wait_target;  // gleaner.io/runqueue-wait-target
  std::optional<std::string> objective;    // gleaner.io/latency-objective-p99
};

struct TargetBounds {
  double default_ns = 0;           // cpuSloWaitTargetMicros
  double min_ns = 0;               // cpuSloMinWaitTargetMicros
  int64_t objective_percent = 25;  // cpuSloObjectiveWaitPercent
};

// The pod's target: its own wait target when it names one (as above); else, when it states
// a latency objective (a duration between 1us and 60s), objective_percent of it, raised to
// the lowest allowed with a warning; else the default. A bad objective is refused with a
// warning naming the pod and quoting the value, and the default applies.
PodTarget slo_pod_target(const std::string& pod_key, const PodTargetAsk& ask,
                         const TargetBounds& bounds);

}  // namespace gleaner::agent::step
