#pragma once
// Order statistics the benchmarks report (medians, p50/p99 of latencies).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace gleaner::bench {

// The sample at rank p * (n - 1), rounded to the nearest rank; 0 for no samples.
inline double percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const auto rank = static_cast<size_t>(std::lround(p * static_cast<double>(samples.size() - 1)));
  return samples[std::min(rank, samples.size() - 1)];
}

inline double median(std::vector<double> samples) {
  return percentile(std::move(samples), 0.5);
}

}  // namespace gleaner::bench
