#include "reporter/client/send_policy.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace gleaner::reporter {
namespace {

bool amounts_moved(const ResourceAmounts& a, const ResourceAmounts& b, const SendThresholds& t) {
  return std::llabs(a.cpu_millicores - b.cpu_millicores) > t.cpu_millicores ||
         std::llabs(a.memory_bytes - b.memory_bytes) > t.memory_bytes;
}

}  // namespace

const char* to_string(SendReason reason) {
  switch (reason) {
    case SendReason::kNone:
      return "none";
    case SendReason::kFirst:
      return "first";
    case SendReason::kChanged:
      return "changed";
    case SendReason::kHeartbeat:
      return "heartbeat";
  }
  return "unknown";
}

bool moved_beyond(const NodeReport& last, const NodeReport& cur, const SendThresholds& t) {
  // Discrete state changes always matter: they flip what the scheduler may place.
  if (last.node != cur.node || last.cluster != cur.cluster) return true;
  if (last.capacity != cur.capacity || last.allocatable != cur.allocatable) return true;
  if (last.batch_allocatable.has_value() != cur.batch_allocatable.has_value()) return true;
  if (last.batch_unavailable_reason != cur.batch_unavailable_reason) return true;
  if (last.suppress.active != cur.suppress.active || last.suppress.policy != cur.suppress.policy) {
    return true;
  }
  if (last.batch_allocatable && amounts_moved(*last.batch_allocatable, *cur.batch_allocatable, t)) {
    return true;
  }
  if (std::llabs(last.suppress.be_cpu_limit_millicores - cur.suppress.be_cpu_limit_millicores) >
      t.cpu_millicores) {
    return true;
  }
  const auto& lu = last.usage;
  const auto& cu = cur.usage;
  return amounts_moved(lu.node, cu.node, t) || amounts_moved(lu.system, cu.system, t) ||
         amounts_moved(lu.ls, cu.ls, t) || amounts_moved(lu.be, cu.be, t);
}

SendReason should_send(const std::optional<NodeReport>& last_sent, SteadyTime last_sent_at,
                       const NodeReport& current, SteadyTime now, const SendThresholds& t) {
  if (!last_sent) return SendReason::kFirst;
  if (moved_beyond(*last_sent, current, t)) return SendReason::kChanged;
  if (now - last_sent_at >= t.heartbeat) return SendReason::kHeartbeat;
  return SendReason::kNone;
}

std::chrono::milliseconds backoff_delay(const BackoffPolicy& p, int failures, double unit_random) {
  if (failures < 1) return std::chrono::milliseconds(0);
  double base = static_cast<double>(p.initial.count());
  double cap = static_cast<double>(p.max.count());
  // pow() would overflow long before the exponent matters; the cap is hit by then.
  double raw = base * std::pow(p.multiplier, std::min(failures - 1, 60));
  double capped = std::min(raw, cap);
  double jitter = std::clamp(p.jitter, 0.0, 1.0);
  double u = std::clamp(unit_random, 0.0, 1.0);
  double delay = capped * (1.0 - jitter + jitter * u);
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(delay)));
}

}  // namespace gleaner::reporter
