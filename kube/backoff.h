#pragma once
// Exponential backoff with jitter for retries against the API server and kubelet: the
// delay doubles from `initial` up to `max`, and each delay is spread by +-jitter so that
// many agents restarting together do not retry in lock-step.

#include <chrono>
#include <cstdint>
#include <random>

namespace gleaner::kube {

struct BackoffPolicy {
  std::chrono::milliseconds initial{500};
  std::chrono::milliseconds max{30000};
  double factor = 2.0;
  double jitter = 0.2;  // fraction of the delay, each way
};

class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy = {}, uint64_t seed = std::random_device{}());
  // The delay before the next attempt; grows with each call until reset().
  std::chrono::milliseconds next();
  void reset() { attempt_ = 0; }
  [[nodiscard]] int attempts() const { return attempt_; }

 private:
  BackoffPolicy policy_;
  std::mt19937_64 rng_;
  int attempt_ = 0;
};

}  // namespace gleaner::kube
