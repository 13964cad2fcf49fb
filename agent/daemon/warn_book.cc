#include "agent/daemon/warn_book.h"

#include <functional>

namespace gleaner::agent {

bool WarnBook::should_log(std::string_view subject, uint64_t value_hash, SteadyTime now) {
  const uint64_t key = std::hash<std::string_view>{}(subject);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (capacity_ == 0) return true;
    if (entries_.size() >= capacity_) {
      entries_.erase(order_.front());
      order_.pop_front();
    }
    entries_.emplace(key, Entry{value_hash, now});
    order_.push_back(key);
    return true;
  }
  Entry& e = it->second;
  if (e.value_hash == value_hash || now - e.logged_at < interval_) return false;
  e = Entry{value_hash, now};
  return true;
}

}  // namespace gleaner::agent
