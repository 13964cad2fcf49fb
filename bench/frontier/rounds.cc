#include "bench/frontier/rounds.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "bench/bench_stats.h"

namespace gleaner::bench::frontier {
namespace {

// One generator per (seed, round, purpose): a round's order does not depend on how many
// draws an earlier round made.
std::mt19937_64 generator(uint64_t seed, uint64_t stream) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)};
  return std::mt19937_64(seq);
}

double geometric_mean_of(const std::vector<double>& logs, const std::vector<size_t>& pick) {
  double sum = 0;
  for (size_t i : pick)
    sum += logs[i];
  return std::exp(sum / static_cast<double>(pick.size()));
}

}  // namespace

std::vector<int> round_order(int n, uint64_t seed, int round) {
  std::vector<int> order(static_cast<size_t>(std::max(0, n)));
  std::iota(order.begin(), order.end(), 0);
  auto rng = generator(seed, static_cast<uint64_t>(round));
  // Fisher-Yates with our own draws: std::shuffle's sequence is the library's choice.
  for (size_t i = order.size(); i > 1; --i) {
    std::uniform_int_distribution<size_t> pick(0, i - 1);
    std::swap(order[i - 1], order[pick(rng)]);
  }
  return order;
}

RatioEstimate paired_ratio(const std::vector<double>& a, const std::vector<double>& ref,
                           uint64_t seed, int resamples) {
  std::vector<double> logs;
  for (size_t r = 0; r < std::min(a.size(), ref.size()); ++r) {
    if (a[r] > 0 && ref[r] > 0) logs.push_back(std::log(a[r] / ref[r]));
  }
  RatioEstimate out;
  out.rounds = static_cast<int>(logs.size());
  if (logs.empty()) return out;
  std::vector<size_t> all(logs.size());
  std::iota(all.begin(), all.end(), 0);
  out.ratio = geometric_mean_of(logs, all);
  auto rng = generator(seed, 0xB007);
  std::uniform_int_distribution<size_t> pick(0, logs.size() - 1);
  std::vector<double> estimates;
  estimates.reserve(static_cast<size_t>(std::max(1, resamples)));
  std::vector<size_t> sample(logs.size());
  for (int b = 0; b < std::max(1, resamples); ++b) {
    for (auto& s : sample)
      s = pick(rng);
    estimates.push_back(geometric_mean_of(logs, sample));
  }
  out.low = percentile(estimates, 0.025);
  out.high = percentile(estimates, 0.975);
  return out;
}

double aa_floor(const RatioEstimate& aa) {
  if (aa.rounds == 0 || aa.low <= 0) return 1;
  return std::max({1.0, aa.high, 1.0 / aa.low});
}

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::kBetter:
      return "better";
    case Verdict::kIndistinguishable:
      return "indistinguishable";
    case Verdict::kWorse:
      return "worse";
    case Verdict::kNoVerdict:
      return "no verdict";
  }
  return "?";
}

Verdict judge(const RatioEstimate& r, double floor, bool run_valid) {
  if (!run_valid || r.rounds == 0) return Verdict::kNoVerdict;
  if (r.high < 1 && r.ratio < 1 / floor) return Verdict::kBetter;
  if (r.low > 1 && r.ratio > floor) return Verdict::kWorse;
  return Verdict::kIndistinguishable;
}

Baseline judge_baseline(const std::vector<double>& alone_p99s, double max_spread) {
  Baseline b;
  std::vector<double> positive;
  for (double v : alone_p99s)
    if (v > 0) positive.push_back(v);
  if (positive.size() < 2) {
    b.why = "fewer than two LS-alone windows";
    return b;
  }
  const auto [lo, hi] = std::minmax_element(positive.begin(), positive.end());
  b.min_p99 = *lo;
  b.max_p99 = *hi;
  b.spread = *hi / *lo;
  b.valid = b.spread <= max_spread;
  if (!b.valid) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "LS-alone p99 spread %.2f-%.2f ms (%.2fx) over its windows, beyond %.2fx",
                  b.min_p99, b.max_p99, b.spread, max_spread);
    b.why = text;
  }
  return b;
}

}  // namespace gleaner::bench::frontier
