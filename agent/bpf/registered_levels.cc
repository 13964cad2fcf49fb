#include "agent/bpf/registered_levels.h"

namespace gleaner::agent::bpf {

bool RegisteredLevels::add(uint32_t level) {
  auto found = counts_.find(level);
  if (found != counts_.end()) {
    ++found->second;
    return true;
  }
  if (counts_.size() >= capacity_) return false;
  counts_.emplace(level, 1);
  return true;
}

void RegisteredLevels::remove(uint32_t level) {
  auto found = counts_.find(level);
  if (found == counts_.end()) return;
  if (--found->second == 0) counts_.erase(found);
}

std::vector<uint32_t> RegisteredLevels::deepest_first() const {
  std::vector<uint32_t> levels;
  levels.reserve(counts_.size());
  for (const auto& [level, count] : counts_)
    levels.push_back(level);
  return levels;
}

}  // namespace gleaner::agent::bpf
