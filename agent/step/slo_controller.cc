#include "agent/step/slo_controller.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "agent/bpf/interference.h"

namespace gleaner::agent::step {
namespace {

// A cut takes 10% plus half the breach, at most half: proportional to how far LS is over
// its target, yet never so deep that one noisy window empties BE.
double cut_fraction(double pressure) {
  return std::clamp(0.1 + 0.5 * (pressure - 1.0), 0.1, 0.5);
}

int64_t clamp_allowance(int64_t milli, const SloInputs& in) {
  int64_t top = in.capacity_milli;
  if (in.ceiling_milli) top = std::min(top, *in.ceiling_milli);
  return std::max(std::min(milli, top), in.floor_milli);
}

void remember(SloMemory& m, double now_s) {
  m.window.emplace_back(now_s, *m.allowance_milli);
  while (!m.window.empty() &&
         (m.window.size() > kSloWindowEntries ||
          m.window.front().first < now_s - kSloWindowSeconds || m.window.front().first > now_s)) {
    m.window.pop_front();
  }
}

// `value` quoted for a log line: its first 64 bytes, bytes outside printable ASCII as \xNN
// (no line breaks or terminal codes from a tenant), and past them an ellipsis and the full
// length, e.g. "aaaa..." (262144 bytes).
std::string quote_truncated(std::string_view value) {
  constexpr size_t kMaxBytes = 64;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  const std::string_view head = value.substr(0, kMaxBytes);
  for (unsigned char c : head) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (head.size() < value.size()) return out + "...\" (" + std::to_string(value.size()) + " bytes)";
  return out + '"';
}

std::string ms(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fms", ns / 1e6);
  return buf;
}

}  // namespace

const char* to_string(SloAction action) {
  switch (action) {
    case SloAction::kGrow:
      return "grow";
    case SloAction::kCut:
      return "cut";
    case SloAction::kHold:
      break;
  }
  return "hold";
}

SloDecision slo_step(const SloInputs& in, SloMemory& m) {
  SloDecision out;
  const int64_t current = m.allowance_milli.value_or(std::max(in.be_usage_milli, in.floor_milli));
  // The worst signal against its bound; an LS pod without waits and without history
  // cannot show slack yet.
  bool all_have_history = true;
  std::map<std::string, double> watched;
  for (const auto& pod : in.ls_pods) {
    auto seen = m.watched_s.find(pod.key);
    // A clock that went back makes an age meaningless: the pod starts over.
    const double since =
        seen == m.watched_s.end() || seen->second > in.now_s ? in.now_s : seen->second;
    watched[pod.key] = since;
    auto p99 = in.runq_p99_ns.find(pod.key);
    if (p99 == in.runq_p99_ns.end()) {
      if (in.now_s - since < kSloHistorySeconds) all_have_history = false;
      continue;
    }
    const double ratio = p99->second / std::max(pod.target_ns, 1.0);
    if (ratio > out.pressure) {
      out.pressure = ratio;
      out.reason =
          pod.key + " run-queue p99 " + ms(p99->second) + " (target " + ms(pod.target_ns) + ")";
    }
  }
  m.watched_s = std::move(watched);
  if (in.cpu_psi_some_avg10 && in.cpu_psi_bound && *in.cpu_psi_bound > 0) {
    const double ratio = *in.cpu_psi_some_avg10 / *in.cpu_psi_bound;
    if (ratio > out.pressure) {
      out.pressure = ratio;
      out.reason = "node cpu PSI some avg10 " + std::to_string(*in.cpu_psi_some_avg10);
    }
  }

  const bool clock_ok =
      m.last_s && in.now_s > *m.last_s && in.now_s - *m.last_s <= kSloMaxStepSeconds;
  const double dt = clock_ok ? in.now_s - *m.last_s : 0;
  const bool in_hold =
      m.last_cut_s && (in.now_s < *m.last_cut_s || in.now_s - *m.last_cut_s < kSloGrowHoldSeconds);
  int64_t next = current;
  if (out.pressure > 1.0) {
    // What BE really uses is what a cut has to take from.
    const int64_t base = std::min(current, std::max(in.be_usage_milli, in.floor_milli));
    next = static_cast<int64_t>(
        std::floor(static_cast<double>(base) * (1 - cut_fraction(out.pressure))));
    m.cut_level_milli = base;
    m.last_cut_s = in.now_s;
    out.action = SloAction::kCut;
  } else if (out.pressure < kSloGrowBelow && all_have_history && in.unseen.empty() && !in.stale &&
             dt > 0 && !in_hold) {
    const bool above_cut = m.cut_level_milli && current >= *m.cut_level_milli;
    const double rate = above_cut ? kSloProbePerSecond : kSloGrowPerSecond;
    next =
        current + std::max<int64_t>(
                      1, static_cast<int64_t>(rate * static_cast<double>(in.capacity_milli) * dt));
    if (m.cut_level_milli && current < *m.cut_level_milli)
      next = std::min(next, *m.cut_level_milli);
    out.action = SloAction::kGrow;
    if (out.reason.empty()) out.reason = "no LS wait measured";
  } else if (out.reason.empty()) {
    out.reason = !in.unseen.empty()  ? in.unseen.front() + " runs unseen by the probe"
                 : !all_have_history ? "an LS pod has no wait history yet"
                 : in.stale          ? "metrics are stale"
                                     : "holding";
  }
  // A hard ceiling lowers the allowance whatever the signals say; only the floor raises it.
  next = clamp_allowance(next, in);
  if (out.action == SloAction::kGrow && next <= current) out.action = SloAction::kHold;
  m.allowance_milli = next;
  // Only a plausible clock moves the step's time forward; a jump back keeps the old one.
  if (!m.last_s || in.now_s > *m.last_s) m.last_s = in.now_s;
  remember(m, in.now_s);
  out.allowance_milli = next;
  return out;
}

SloDecision slo_wait_cut(double waited_ns, double target_ns, int64_t floor_milli, double now_s,
                         SloMemory& m) {
  SloDecision out;
  out.pressure = waited_ns / std::max(target_ns, 1.0);
  out.allowance_milli = m.allowance_milli.value_or(0);
  if (out.pressure <= 1.0 || !m.allowance_milli) return out;
  // A storm of waits cuts once per gap, not to the floor at once.
  if (m.last_cut_s && now_s >= *m.last_cut_s && now_s - *m.last_cut_s < 0.1) return out;
  const int64_t base = *m.allowance_milli;
  out.allowance_milli =
      std::max(floor_milli, static_cast<int64_t>(std::floor(static_cast<double>(base) *
                                                            (1 - cut_fraction(out.pressure)))));
  if (out.allowance_milli >= base) return out;
  m.allowance_milli = out.allowance_milli;
  m.cut_level_milli = base;
  m.last_cut_s = now_s;
  out.action = SloAction::kCut;
  out.reason = "waited " + ms(waited_ns) + " (target " + ms(target_ns) + ")";
  return out;
}

std::optional<int64_t> slo_sustained_allowance(const SloMemory& m) {
  if (m.window.empty()) return m.allowance_milli;
  std::vector<int64_t> values;
  values.reserve(m.window.size());
  for (const auto& [at, milli] : m.window)
    values.push_back(milli);
  std::sort(values.begin(), values.end());
  return values[values.size() / 10];
}

PodTarget slo_pod_target(const std::string& pod_key, const std::optional<std::string>& annotation,
                         double default_ns, double min_ns) {
  if (!annotation) return {default_ns, std::nullopt};
  // The value is the tenant's, of any length: a message quotes its head only.
  auto warn = [&](double ns, const std::string& why, bool clamped) {
    return PodTarget{ns, TargetWarning{pod_key, std::hash<std::string>{}(*annotation),
                                       "pod " + pod_key + ": run-queue wait target " +
                                           quote_truncated(*annotation) + why + ms(ns) + " applies",
                                       clamped}};
  };
  auto parsed = bpf::parse_duration(*annotation);
  if (!parsed || parsed->count() <= 0 || *parsed > std::chrono::seconds(1)) {
    return warn(default_ns, " is not a duration between 1ns and 1s (e.g. \"2ms\"); the default ",
                false);
  }
  // One pod's target steers BE for the whole node: the operator's bound keeps a tenant from
  // holding BE at its floor for waits no cut relieves. What every pod gets stays allowed.
  const double bound = std::min(min_ns, default_ns);
  const auto ns = static_cast<double>(parsed->count());
  if (ns < bound) {
    return warn(bound, " is below the lowest a pod may ask for (cpuSloMinWaitTargetMicros); ",
                true);
  }
  return {ns, std::nullopt};
}

PodTarget slo_pod_target(const std::string& pod_key, const PodTargetAsk& ask,
                         const TargetBounds& bounds) {
  if (ask.wait_target || !ask.objective) {
    return slo_pod_target(pod_key, ask.wait_target, bounds.default_ns, bounds.min_ns);
  }
  const std::string& value = *ask.objective;
  auto warn = [&](double ns, const std::string& why, bool clamped) {
    return PodTarget{ns, TargetWarning{pod_key, std::hash<std::string>{}(value),
                                       "pod " + pod_key + ": latency objective " +
                                           quote_truncated(value) + why + ms(ns) + " applies",
                                       clamped}};
  };
  auto parsed = bpf::parse_duration(value);
  if (!parsed || *parsed < std::chrono::microseconds(1) || *parsed > std::chrono::seconds(60)) {
    return warn(bounds.default_ns,
                " is not a duration between 1us and 60s (e.g. \"10ms\"); the default wait target ",
                false);
  }
  const double ns =
      static_cast<double>(parsed->count()) * static_cast<double>(bounds.objective_percent) / 100.0;
  const double bound = std::min(bounds.min_ns, bounds.default_ns);
  if (ns < bound) {
    return warn(bound,
                " leaves a wait target of " + ms(ns) +
                    ", below the lowest a pod may ask for (cpuSloMinWaitTargetMicros); ",
                true);
  }
  return {ns, std::nullopt};
}

}  // namespace gleaner::agent::step
