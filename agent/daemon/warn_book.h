#pragma once
// Which bad values were already logged, for warn-once lines about input a tenant controls
// (a pod's annotation). Bounded in count and in size: a subject (a pod) is kept as the
// hash of its name with the hash of the value last logged for it, never the value itself,
// and the oldest subject makes room for a new one past `capacity`. A subject logs again
// for a new value only once `interval` has passed since its last line, so a pod that
// cycles through values logs at most one line per interval.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string_view>
#include <unordered_map>

#include "common/clock.h"

namespace gleaner::agent {

class WarnBook {
 public:
  WarnBook(size_t capacity, std::chrono::seconds interval)
      : capacity_(capacity), interval_(interval) {}

  // True when the warning about `subject` having the value of hash `value_hash` is to be
  // logged at `now`.
  bool should_log(std::string_view subject, uint64_t value_hash, SteadyTime now);

  [[nodiscard]] size_t size() const { return entries_.size(); }
  // The bytes the book holds per subject, whatever the length of its name and value.
  static constexpr size_t kEntryBytes = sizeof(uint64_t) * 2 + sizeof(SteadyTime);

 private:
  struct Entry {
    uint64_t value_hash = 0;
    SteadyTime logged_at{};
  };
  size_t capacity_;
  std::chrono::seconds interval_;
  std::unordered_map<uint64_t, Entry> entries_;  // by the hash of the subject
  std::deque<uint64_t> order_;                   // subjects, oldest first
};

}  // namespace gleaner::agent
