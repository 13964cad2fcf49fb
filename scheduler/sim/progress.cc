#include "scheduler/sim/progress.h"

#include <algorithm>
#include <cmath>

namespace gleaner::scheduler::sim {

double nominal_speed(int64_t batch_cpu_milli, int64_t regular_cpu_milli) {
  const int64_t asked = batch_cpu_milli + regular_cpu_milli;
  return asked > 0 ? static_cast<double>(asked) : 1.0;
}

double batch_share(int64_t capacity_milli, int64_t requested_milli) {
  if (requested_milli <= capacity_milli) return 1.0;
  return static_cast<double>(std::max<int64_t>(capacity_milli, 0)) /
         static_cast<double>(requested_milli);
}

Pace pace_of(const std::vector<Worker>& running, double planned_rate, int planned_workers) {
  Pace pace;
  double speed = 0;
  for (const Worker& w : running) {
    const double full = nominal_speed(w.batch_cpu_milli, w.regular_cpu_milli);
    const double got = w.batch_cpu_milli + w.regular_cpu_milli > 0
                           ? static_cast<double>(w.regular_cpu_milli) +
                                 static_cast<double>(w.batch_cpu_milli) * w.share
                           : full;
    speed += got;
    pace.starved += (full - got) / full;
  }
  pace.rate = std::min(speed, planned_rate);
  pace.missing = std::max(0, planned_workers - static_cast<int>(running.size()));
  return pace;
}

Progress advanced(Progress p, int64_t to) {
  if (to <= p.since) return p;
  const auto dt = static_cast<double>(to - p.since);
  p.done = std::min(p.work, p.done + p.pace.rate * dt);
  p.starved_seconds += p.pace.starved * dt;
  p.missing_seconds += p.pace.missing * dt;
  if (p.pace.rate <= 0) p.stalled_seconds += to - p.since;
  p.since = to;
  return p;
}

std::optional<int64_t> seconds_to_finish(const Progress& p) {
  const double left = p.work - p.done;
  // Whole planned rates give whole seconds exactly; the margins keep a share's rounding
  // (60.0000001 s for 60) from moving the finish by a second.
  if (left <= 1e-9 * std::max(1.0, p.work)) return 0;
  if (p.pace.rate <= 0) return std::nullopt;
  constexpr double kSecondsMargin = 1e-6;
  return static_cast<int64_t>(std::ceil(left / p.pace.rate - kSecondsMargin));
}

}  // namespace gleaner::scheduler::sim
