// A (service, mix)'s windows, round by round, summarised into the frontier's points.
#include <algorithm>
#include <tuple>
#include <utility>

#include "bench/bench_stats.h"
#include "bench/frontier/frontier_points.h"

namespace gleaner::bench::frontier {
namespace {

// One figure of each window, in round order.
template <typename Figure>
std::vector<double> column(const std::vector<Point>& windows, Figure figure) {
  std::vector<double> out;
  out.reserve(windows.size());
  for (const auto& w : windows)
    out.push_back(figure(w));
  return out;
}

std::vector<double> p99s(const std::vector<Point>& windows) {
  return column(windows, [](const Point& w) { return w.p99_ms; });
}

// A cost signal over a configuration's windows: the median window's value, the spread, and
// the ratio paired by round against LS alone's.
CostSignal summarise_signal(const std::vector<Point>& windows, CostSignal Point::*signal,
                            const std::vector<Point>* alone, uint64_t seed) {
  auto values_of = [signal](const std::vector<Point>& ws) {
    return column(ws, [signal](const Point& w) { return (w.*signal).value; });
  };
  const auto mine = values_of(windows);
  CostSignal out;
  out.value = median(mine);
  const auto [lo, hi] = std::minmax_element(mine.begin(), mine.end());
  if (lo != mine.end()) std::tie(out.min, out.max) = std::pair{*lo, *hi};
  if (alone != nullptr) out.vs_alone = paired_ratio(mine, values_of(*alone), seed);
  return out;
}

template <typename Field>
double median_of(const std::vector<Point>& windows, Field field) {
  std::vector<double> values;
  values.reserve(windows.size());
  for (const auto& w : windows)
    values.push_back(w.*field);
  return median(values);
}

const std::vector<Point>* windows_of(const std::vector<Config>& configs,
                                     const std::vector<std::vector<Point>>& windows,
                                     Family family) {
  for (size_t i = 0; i < configs.size() && i < windows.size(); ++i)
    if (configs[i].family == family) return &windows[i];
  return nullptr;
}

}  // namespace

MixResult summarise(BeMix mix, const std::vector<Config>& configs,
                    const std::vector<std::vector<Point>>& windows, uint64_t seed,
                    double max_alone_spread) {
  MixResult out;
  out.mix = mix;
  out.seed = seed;
  const auto* alone = windows_of(configs, windows, Family::kAlone);
  const auto* twin = windows_of(configs, windows, Family::kAloneTwin);
  const auto* kubelet = windows_of(configs, windows, Family::kKubelet);
  const std::vector<double> alone_p99 = alone ? p99s(*alone) : std::vector<double>{};
  std::vector<double> baseline_p99 = alone_p99;
  if (twin) {
    const auto t = p99s(*twin);
    baseline_p99.insert(baseline_p99.end(), t.begin(), t.end());
    out.aa = paired_ratio(t, alone_p99, seed);
  }
  out.baseline = judge_baseline(baseline_p99, max_alone_spread);
  out.floor = aa_floor(out.aa);
  const std::vector<double> kubelet_p99 = kubelet ? p99s(*kubelet) : std::vector<double>{};
  for (Family family : kFamilies) {
    for (size_t i = 0; i < configs.size() && i < windows.size(); ++i) {
      if (configs[i].family != family || windows[i].empty()) continue;
      std::vector<Point> sorted = windows[i];
      std::sort(sorted.begin(), sorted.end(),
                [](const Point& a, const Point& b) { return a.p99_ms < b.p99_ms; });
      Point p = sorted[sorted.size() / 2];  // the median window by p99
      p.rounds = static_cast<int>(sorted.size());
      p.p99_min_ms = sorted.front().p99_ms;
      p.p99_max_ms = sorted.back().p99_ms;
      p.be_share_of_idle = median_of(windows[i], &Point::be_share_of_idle);
      p.be_throttled_per_s = median_of(windows[i], &Point::be_throttled_per_s);
      p.be_throttled_ms_per_s = median_of(windows[i], &Point::be_throttled_ms_per_s);
      p.ls_wait_us_per_request = median_of(windows[i], &Point::ls_wait_us_per_request);
      p.agent_cpu_percent = median_of(windows[i], &Point::agent_cpu_percent);
      p.cpu_us_per_request = summarise_signal(windows[i], &Point::cpu_us_per_request, alone, seed);
      p.cpu_us_per_run = summarise_signal(windows[i], &Point::cpu_us_per_run, alone, seed);
      p.cpu_us_per_block = summarise_signal(windows[i], &Point::cpu_us_per_block, alone, seed);
      p.runs_per_request = median_of(windows[i], &Point::runs_per_request);
      p.writes_per_s = median_of(windows[i], &Point::writes_per_s);
      const auto mine = p99s(windows[i]);
      p.vs_alone = paired_ratio(mine, alone_p99, seed);
      if (!kubelet_p99.empty()) {
        p.vs_kubelet = paired_ratio(mine, kubelet_p99, seed);
        p.verdict_vs_kubelet = judge(p.vs_kubelet, out.floor, out.baseline.valid);
      }
      out.points.push_back(p);
    }
  }
  return out;
}

}  // namespace gleaner::bench::frontier
