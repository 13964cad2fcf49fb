#pragma once
// A bounded in-memory store of samples: one fixed-size ring per series, so memory depends
// on the number of series and the longest window, never on uptime. Aggregates (avg, p50,
// p90, p95, p99, last) are computed over a trailing window (1m, 5m, 10m, 30m).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gleaner::agent {

struct Aggregate {
  double avg = 0;
  double p50 = 0;
  double p90 = 0;
  double p95 = 0;
  double p99 = 0;
  double last = 0;
  size_t count = 0;
};

// Samples of one series: (second since the store's epoch, value), oldest overwritten.
class SeriesRing {
 public:
  explicit SeriesRing(size_t capacity) : times_(capacity), values_(capacity) {}
  void add(uint32_t second, float value);
  // Samples with second > now - window_seconds.
  [[nodiscard]] std::optional<Aggregate> aggregate(uint32_t now, uint32_t window_seconds) const;
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] std::optional<uint32_t> newest_second() const;

 private:
  std::vector<uint32_t> times_;
  std::vector<float> values_;
  size_t head_ = 0;  // next write position
  size_t size_ = 0;
};

class MetricStore {
 public:
  // `capacity` samples per series: the longest window divided by the sampling interval.
  MetricStore(std::chrono::steady_clock::time_point epoch, size_t capacity)
      : epoch_(epoch), capacity_(capacity) {}

  void add(const std::string& series, std::chrono::steady_clock::time_point at, double value);
  [[nodiscard]] std::optional<Aggregate> aggregate(const std::string& series,
                                                   std::chrono::steady_clock::time_point now,
                                                   std::chrono::seconds window) const;
  // Drops every series whose name starts with `prefix` (a deleted pod's "pod/ns/name/").
  void drop_prefix(const std::string& prefix);
  // Drops series whose newest sample is older than `max_age` (pods gone without notice).
  void drop_older_than(std::chrono::steady_clock::time_point now, std::chrono::seconds max_age);
  [[nodiscard]] size_t series_count() const { return series_.size(); }
  [[nodiscard]] size_t capacity() const { return capacity_; }

 private:
  [[nodiscard]] uint32_t second_of(std::chrono::steady_clock::time_point t) const;

  std::chrono::steady_clock::time_point epoch_;
  size_t capacity_;
  std::map<std::string, SeriesRing> series_;
};

}  // namespace gleaner::agent
