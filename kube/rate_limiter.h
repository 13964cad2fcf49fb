#pragma once
// Client-side request rate limit: a token bucket refilled at `qps` holding at most `burst`
// tokens, like client-go's flowcontrol limiter, so a busy component never floods the API
// server. The bucket is pure (it takes the time); RateLimiter adds the waiting.

#include <chrono>
#include <mutex>

#include "common/clock.h"

namespace gleaner::kube {

class TokenBucket {
 public:
  // qps <= 0 disables the limit.
  TokenBucket(double qps, int burst);
  // Takes one token and returns how long the caller must wait before using it (zero when a
  // token was available). Reservations queue up: the n-th caller in a burst waits n/qps.
  std::chrono::nanoseconds reserve(SteadyTime now);

 private:
  double qps_;
  double burst_;
  double tokens_;
  SteadyTime last_{};
  bool started_ = false;
};

class RateLimiter {
 public:
  RateLimiter(double qps, int burst, const Clock& clock) : bucket_(qps, burst), clock_(clock) {}
  // Blocks until the caller may send one request.
  void acquire();

 private:
  std::mutex mu_;
  TokenBucket bucket_;
  const Clock& clock_;
};

}  // namespace gleaner::kube
