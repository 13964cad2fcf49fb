#include "kube/backoff.h"

#include <algorithm>
#include <cmath>

namespace gleaner::kube {

Backoff::Backoff(BackoffPolicy policy, uint64_t seed) : policy_(policy), rng_(seed) {}

std::chrono::milliseconds Backoff::next() {
  const double base = static_cast<double>(policy_.initial.count()) *
                      std::pow(policy_.factor, std::min(attempt_, 62));
  const double capped = std::min(base, static_cast<double>(policy_.max.count()));
  ++attempt_;
  std::uniform_real_distribution<double> spread(1.0 - policy_.jitter, 1.0 + policy_.jitter);
  const double delay = std::min(capped * spread(rng_), static_cast<double>(policy_.max.count()));
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, delay)));
}

}  // namespace gleaner::kube
