#pragma once
// Pure decisions of the report client: whether the latest report is worth sending, and
// how long to wait after a failure. No I/O, no clock reads: time comes in as arguments.

#include <chrono>
#include <cstdint>
#include <optional>

#include "common/clock.h"
#include "reporter/wire/node_report.h"

namespace gleaner::reporter {

struct SendThresholds {
  // A change of more than this in any CPU figure the scheduler places on
  // (batch allocatable, node/system/LS/BE usage, BE suppress limit) triggers a send.
  int64_t cpu_millicores = 200;
  // Same for memory figures.
  int64_t memory_bytes = 256LL << 20;
  // Resend the latest state at least this often, even when nothing moved, so the
  // scheduler can tell a quiet node from a dead agent.
  std::chrono::milliseconds heartbeat{std::chrono::seconds(10)};
};

enum class SendReason { kNone, kFirst, kChanged, kHeartbeat };
const char* to_string(SendReason reason);

// True when `current` differs from `last_sent` by more than the thresholds, or in any
// discrete state (batch availability or its reason, suppress policy/activity, capacity).
bool moved_beyond(const NodeReport& last_sent, const NodeReport& current,
                  const SendThresholds& thresholds);

// `last_sent` is the last report the scheduler acknowledged, sent at `last_sent_at`.
SendReason should_send(const std::optional<NodeReport>& last_sent, SteadyTime last_sent_at,
                       const NodeReport& current, SteadyTime now, const SendThresholds& thresholds);

struct BackoffPolicy {
  std::chrono::milliseconds initial{500};
  std::chrono::milliseconds max{std::chrono::seconds(30)};
  double multiplier = 2.0;
  // Fraction of the delay that is randomised: delay * (1 - jitter + jitter * u), u in [0,1).
  // Spreads retries of many agents after a scheduler restart.
  double jitter = 0.2;
};

// Delay before retry number `failures` (1 = after the first failure). `unit_random` is a
// uniform draw in [0, 1) supplied by the caller, so the schedule is deterministic in tests.
std::chrono::milliseconds backoff_delay(const BackoffPolicy& policy, int failures,
                                        double unit_random);

}  // namespace gleaner::reporter
