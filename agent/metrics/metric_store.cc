#include "agent/metrics/metric_store.h"

#include <algorithm>
#include <cmath>

namespace gleaner::agent {
namespace {

// Nearest-rank percentile of sorted values.
double percentile(const std::vector<float>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

}  // namespace

void SeriesRing::add(uint32_t second, float value) {
  times_[head_] = second;
  values_[head_] = value;
  head_ = (head_ + 1) % times_.size();
  size_ = std::min(size_ + 1, times_.size());
}

std::optional<uint32_t> SeriesRing::newest_second() const {
  if (size_ == 0) return std::nullopt;
  return times_[(head_ + times_.size() - 1) % times_.size()];
}

std::optional<Aggregate> SeriesRing::aggregate(uint32_t now, uint32_t window_seconds) const {
  std::vector<float> values;
  values.reserve(size_);
  double sum = 0;
  float last = 0;
  bool have_last = false;
  // Newest first, stopping at the first sample outside the window.
  for (size_t i = 0; i < size_; ++i) {
    size_t idx = (head_ + times_.size() - 1 - i) % times_.size();
    if (now >= window_seconds && times_[idx] <= now - window_seconds) break;
    if (!have_last) {
      last = values_[idx];
      have_last = true;
    }
    values.push_back(values_[idx]);
    sum += values_[idx];
  }
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  Aggregate out;
  out.count = values.size();
  out.avg = sum / static_cast<double>(values.size());
  out.p50 = percentile(values, 50);
  out.p90 = percentile(values, 90);
  out.p95 = percentile(values, 95);
  out.p99 = percentile(values, 99);
  out.last = last;
  return out;
}

uint32_t MetricStore::second_of(std::chrono::steady_clock::time_point t) const {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(t - epoch_).count();
  return s < 0 ? 0 : static_cast<uint32_t>(s);
}

void MetricStore::add(const std::string& series, std::chrono::steady_clock::time_point at,
                      double value) {
  auto it = series_.find(series);
  if (it == series_.end()) it = series_.emplace(series, SeriesRing(capacity_)).first;
  it->second.add(second_of(at), static_cast<float>(value));
}

std::optional<Aggregate> MetricStore::aggregate(const std::string& series,
                                                std::chrono::steady_clock::time_point now,
                                                std::chrono::seconds window) const {
  auto it = series_.find(series);
  if (it == series_.end()) return std::nullopt;
  return it->second.aggregate(second_of(now), static_cast<uint32_t>(window.count()));
}

void MetricStore::drop_prefix(const std::string& prefix) {
  auto it = series_.lower_bound(prefix);
  while (it != series_.end() && it->first.compare(0, prefix.size(), prefix) == 0) {
    it = series_.erase(it);
  }
}

void MetricStore::drop_older_than(std::chrono::steady_clock::time_point now,
                                  std::chrono::seconds max_age) {
  const uint32_t now_s = second_of(now);
  for (auto it = series_.begin(); it != series_.end();) {
    auto newest = it->second.newest_second();
    if (!newest || now_s - *newest > max_age.count()) {
      it = series_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace gleaner::agent
