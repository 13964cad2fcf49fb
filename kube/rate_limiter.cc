#include "kube/rate_limiter.h"

#include <algorithm>
#include <thread>

namespace gleaner::kube {

TokenBucket::TokenBucket(double qps, int burst)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(burst_) {}

std::chrono::nanoseconds TokenBucket::reserve(SteadyTime now) {
  if (qps_ <= 0) return std::chrono::nanoseconds(0);
  if (started_ && now > last_) {
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
  }
  if (!started_ || now > last_) last_ = now;
  started_ = true;
  tokens_ -= 1;
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  // A negative balance is debt: the caller waits until the bucket would have refilled it.
  return std::chrono::nanoseconds(static_cast<int64_t>(-tokens_ / qps_ * 1e9));
}

void RateLimiter::acquire() {
  std::chrono::nanoseconds wait;
  {
    std::lock_guard lock(mu_);
    wait = bucket_.reserve(clock_.now());
  }
  if (wait.count() > 0) std::this_thread::sleep_for(wait);
}

}  // namespace gleaner::kube
