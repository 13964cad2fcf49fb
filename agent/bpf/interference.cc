#include "agent/bpf/interference.h"

#include <charconv>

#include <fmt/format.h>

namespace gleaner::agent::bpf {

const char* to_string(InterferenceAction action) {
  switch (action) {
    case InterferenceAction::kTightenNow:
      return "tighten-now";
    case InterferenceAction::kHold:
      return "hold";
    case InterferenceAction::kRelaxAllowed:
      return "relax-allowed";
  }
  return "unknown";
}

Result<std::chrono::nanoseconds> parse_duration(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data() || value < 0) {
    return make_error(ErrorCode::kParse, fmt::format("duration \"{}\": not a number", text));
  }
  std::string_view unit(end, static_cast<size_t>(text.data() + text.size() - end));
  double scale = 0;
  if (unit.empty() || unit == "ns") {
    scale = 1;
  } else if (unit == "us") {
    scale = 1e3;
  } else if (unit == "ms") {
    scale = 1e6;
  } else if (unit == "s") {
    scale = 1e9;
  } else if (unit == "m") {
    scale = 60e9;
  } else {
    return make_error(
        ErrorCode::kParse,
        fmt::format("duration \"{}\": unit \"{}\" is not ns, us, ms, s or m", text, unit));
  }
  double ns = value * scale;
  if (ns > 1e18)
    return make_error(ErrorCode::kInvalidArgument, fmt::format("duration \"{}\": too long", text));
  return std::chrono::nanoseconds(static_cast<int64_t>(ns));
}

Result<InterferenceConfig> parse_interference_config(std::string_view runq_p99_bound,
                                                     std::string_view hold,
                                                     std::string_view psi_bound) {
  InterferenceConfig config;
  auto bound = parse_duration(runq_p99_bound);
  if (!bound) {
    return make_error(bound.error().code,
                      "--interference-runq-p99-bound: " + bound.error().message);
  }
  if (bound->count() == 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--interference-runq-p99-bound: must be above 0");
  }
  auto held = parse_duration(hold);
  if (!held) return make_error(held.error().code, "--interference-hold: " + held.error().message);
  config.runq_p99_bound = *bound;
  config.hold = *held;
  if (!psi_bound.empty()) {
    double percent = 0;
    auto [end, ec] =
        std::from_chars(psi_bound.data(), psi_bound.data() + psi_bound.size(), percent);
    if (ec != std::errc() || end != psi_bound.data() + psi_bound.size() || percent <= 0 ||
        percent > 100) {
      return make_error(
          ErrorCode::kInvalidArgument,
          fmt::format("--interference-psi-bound \"{}\": not a percentage in (0, 100]", psi_bound));
    }
    config.cpu_psi_some_avg10_bound = percent;
  }
  return config;
}

InterferenceDecision InterferenceRule::evaluate(const InterferenceInput& input, SteadyTime now) {
  const double bound_ns = static_cast<double>(config_.runq_p99_bound.count());
  std::string breach;
  for (const auto& pod : input.ls_pods) {
    if (pod.runq_p99_ns && *pod.runq_p99_ns > bound_ns) {
      breach = fmt::format("LS pod {} run-queue p99 {:.0f}us > bound {:.0f}us", pod.pod,
                           *pod.runq_p99_ns / 1e3, bound_ns / 1e3);
      break;
    }
  }
  if (breach.empty() && config_.cpu_psi_some_avg10_bound && input.cpu_psi_some_avg10 &&
      *input.cpu_psi_some_avg10 > *config_.cpu_psi_some_avg10_bound) {
    breach = fmt::format("cpu PSI some avg10 {:.2f}% > bound {:.2f}%", *input.cpu_psi_some_avg10,
                         *config_.cpu_psi_some_avg10_bound);
  }

  if (!breach.empty()) {
    last_breach_ = now;
    if (input.be_running) return {InterferenceAction::kTightenNow, breach + " while BE runs"};
    return {InterferenceAction::kHold, breach + ", but no BE pod runs"};
  }
  if (last_breach_ && now - *last_breach_ < config_.hold) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(config_.hold - (now - *last_breach_));
    return {InterferenceAction::kHold,
            fmt::format("below the bound, holding {}ms more", left.count())};
  }
  return {InterferenceAction::kRelaxAllowed,
          last_breach_ ? "below the bound for the hold time" : "no interference seen"};
}

}  // namespace gleaner::agent::bpf
