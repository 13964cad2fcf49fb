#include "cgroup/write_backoff.h"

#include <algorithm>

namespace gleaner::cgroup {
namespace {

constexpr std::chrono::seconds kRetryFirst{1};
constexpr std::chrono::seconds kRetryLongest{30};
constexpr std::chrono::seconds kWarnAgainAfter{60};

}  // namespace

bool WriteBackoff::waiting(const std::string& key) const {
  auto it = refusals_.find(key);
  return it != refusals_.end() && clock_.now() < it->second.retry_at;
}

WriteBackoff::Verdict WriteBackoff::refused(const std::string& key, const std::string& error,
                                            bool urgent) {
  const SteadyTime now = clock_.now();
  auto& r = refusals_[key];
  ++r.failures;
  const auto doubled = kRetryFirst * (1LL << std::min(r.failures - 1, 5));
  const auto wait = urgent ? kRetryFirst : std::min<std::chrono::seconds>(doubled, kRetryLongest);
  r.retry_at = now + wait;
  const bool warn = r.failures == 1 || error != r.error || now - r.warned_at >= kWarnAgainAfter;
  if (warn) {
    r.warned_at = now;
    r.error = error;
  }
  return {r.failures, wait, warn};
}

int WriteBackoff::succeeded(const std::string& key) {
  auto it = refusals_.find(key);
  if (it == refusals_.end()) return 0;
  const int failures = it->second.failures;
  refusals_.erase(it);
  return failures;
}

}  // namespace gleaner::cgroup
