#include "bench/yield/yield_report.h"

#include <algorithm>
#include <cstdio>

#include "bench/bench_stats.h"

namespace gleaner::bench::yield {
namespace {

std::string spread(const std::vector<double>& v, const char* fmt) {
  if (v.empty()) return "-";
  char a[32];
  char b[32];
  char c[32];
  std::snprintf(a, sizeof(a), fmt, median(v));
  std::snprintf(b, sizeof(b), fmt, *std::min_element(v.begin(), v.end()));
  std::snprintf(c, sizeof(c), fmt, *std::max_element(v.begin(), v.end()));
  return std::string(a) + " (" + b + "-" + c + ")";
}

template <typename Get>
std::vector<double> each(const std::vector<Run>& runs, Get get) {
  std::vector<double> out;
  out.reserve(runs.size());
  for (const Run& r : runs)
    out.push_back(get(r));
  return out;
}

// Per round: this configuration's figure over kubelet's (a) of the same round.
template <typename Get>
std::vector<double> ratio(const Config& c, const Config* a, Get get) {
  std::vector<double> out;
  if (a == nullptr) return out;
  for (size_t i = 0; i < c.runs.size() && i < a->runs.size(); ++i) {
    const double base = get(a->runs[i]);
    if (base > 0) out.push_back(get(c.runs[i]) / base);
  }
  return out;
}

double p99(const Run& r) {
  return percentile(r.latency_us, 0.99);
}

const Config* find(const std::vector<Config>& configs, char letter) {
  for (const Config& c : configs)
    if (c.letter == letter) return &c;
  return nullptr;
}

}  // namespace

std::string p99_verdict(const Config& c, const Config* kubelet, const Config* twin) {
  if (c.letter == 'a' || c.letter == '0') return "-";
  if (c.letter == 'A') return "the A/A floor";
  if (twin == nullptr || kubelet == nullptr) return "no A/A floor";
  const std::vector<double> floor = ratio(*twin, kubelet, p99);
  const std::vector<double> ours = ratio(c, kubelet, p99);
  if (floor.empty() || ours.empty()) return "no A/A floor";
  const auto [floor_lo, floor_hi] = std::minmax_element(floor.begin(), floor.end());
  const auto [lo, hi] = std::minmax_element(ours.begin(), ours.end());
  if (*lo > *floor_hi) return "worse";
  if (*hi < *floor_lo) return "better";
  return "indistinguishable";
}

void print_report(const std::vector<Config>& configs, int cpus) {
  const Config* kubelet = find(configs, 'a');
  const Config* twin = find(configs, 'A');
  auto p50 = [](const Run& r) { return percentile(r.latency_us, 0.5); };
  auto max = [](const Run& r) {
    return r.latency_us.empty() ? 0.0 : *std::max_element(r.latency_us.begin(), r.latency_us.end());
  };
  auto p999 = [](const Run& r) { return percentile(r.latency_us, 0.999); };
  auto over_1ms = [](const Run& r) {
    if (r.latency_us.empty()) return 0.0;
    const auto n = std::count_if(r.latency_us.begin(), r.latency_us.end(),
                                 [](double us) { return us > 1000; });
    return 100.0 * static_cast<double>(n) / static_cast<double>(r.latency_us.size());
  };
  auto be_cores = [](const Run& r) { return r.be_cores; };
  std::printf(
      "\nLS wake-up latency (deadline to running, us) and BE's harvest; medians over the rounds "
      "(min-max); ratios are to the same round's (a)\n\n");
  std::printf(
      "| configuration | wake-ups/run | p50 us | p99 us | p99.9 us | max us | p99 vs (a) "
      "| p99 verdict | p99.9 vs (a) | wake-ups over 1 ms (percent) | BE cores | BE share of "
      "idle CPU | BE cores vs (a) | LS cores | LS slice us | BE slice us |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Config& c : configs) {
    const bool alone = c.letter == '0';
    std::printf(
        "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
        c.name.c_str(),
        spread(each(c.runs, [](const Run& r) { return double(r.latency_us.size()); }), "%.0f")
            .c_str(),
        spread(each(c.runs, p50), "%.1f").c_str(), spread(each(c.runs, p99), "%.1f").c_str(),
        spread(each(c.runs, p999), "%.0f").c_str(), spread(each(c.runs, max), "%.0f").c_str(),
        spread(ratio(c, kubelet, p99), "%.3f").c_str(), p99_verdict(c, kubelet, twin).c_str(),
        spread(ratio(c, kubelet, p999), "%.3f").c_str(),
        spread(each(c.runs, over_1ms), "%.2f").c_str(),
        alone ? "-" : spread(each(c.runs, be_cores), "%.2f").c_str(),
        alone ? "-" : spread(each(c.runs, [](const Run& r) { return r.harvest; }), "%.3f").c_str(),
        alone ? "-" : spread(ratio(c, kubelet, be_cores), "%.3f").c_str(),
        spread(each(c.runs, [](const Run& r) { return r.ls_cores; }), "%.3f").c_str(),
        spread(
            each(c.runs, [](const Run& r) { return static_cast<double>(r.ls_slice_ns) / 1000.0; }),
            "%.0f")
            .c_str(),
        alone
            ? "-"
            : spread(each(c.runs,
                          [](const Run& r) { return static_cast<double>(r.be_slice_ns) / 1000.0; }),
                     "%.0f")
                  .c_str());
  }
  std::printf(
      "\nBE share of idle CPU: BE's CPU time over what LS left of the %d CPUs (other work on the "
      "machine counts as not harvested). Slices: what sched_getattr reports for the task (the "
      "kernel's default when none was asked for). p99 verdict: better or worse than (a) only "
      "when every round's ratio lies beyond every round's ratio of (a'), kubelet run again "
      "(the A/A twin); otherwise indistinguishable.\n",
      cpus);
}

}  // namespace gleaner::bench::yield
