#include "scheduler/core/reclaim_memory.h"

#include <algorithm>

namespace gleaner::scheduler {

void ReclaimMemory::record(JobId job, NodeId node, int64_t at, const Resources& capacity,
                           const Resources& need) {
  ReclaimRecord& r = records_[{job, node}];
  r.need =
      Resources{std::max(r.need.cpu_milli, need.cpu_milli),
                std::max(r.need.memory_bytes, need.memory_bytes), std::max(r.need.gpus, need.gpus)};
  r.at = at;
  r.capacity_then = capacity;
  r.held_since.reset();
}

void ReclaimMemory::refresh(int64_t now, int64_t hold_seconds,
                            const std::function<std::optional<Resources>(NodeId)>& free_room) {
  for (auto it = records_.begin(); it != records_.end();) {
    ReclaimRecord& r = it->second;
    const std::optional<Resources> room = free_room(it->first.second);
    if (!room || !r.need.fits_in(*room)) {
      r.held_since.reset();
    } else if (!r.held_since) {
      r.held_since = now;
    }
    if (r.held_since && now - *r.held_since >= hold_seconds) {
      it = records_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<NodeId> ReclaimMemory::avoided(JobId job) const {
  std::vector<NodeId> out;
  for (auto it = records_.lower_bound({job, 0}); it != records_.end() && it->first.first == job;
       ++it) {
    out.push_back(it->first.second);
  }
  return out;
}

bool ReclaimMemory::avoids(JobId job, NodeId node) const {
  return records_.contains({job, node});
}

const ReclaimRecord* ReclaimMemory::find(JobId job, NodeId node) const {
  auto it = records_.find({job, node});
  return it == records_.end() ? nullptr : &it->second;
}

void ReclaimMemory::forget(JobId job) {
  records_.erase(records_.lower_bound({job, 0}), records_.lower_bound({job + 1, 0}));
}

std::optional<int64_t> ReclaimMemory::next_deadline(int64_t hold_seconds) const {
  std::optional<int64_t> out;
  for (const auto& [key, r] : records_) {
    if (!r.held_since) continue;
    const int64_t end = *r.held_since + hold_seconds;
    if (!out || end < *out) out = end;
  }
  return out;
}

std::string avoided_node_message(const std::string& node_name, const ReclaimRecord& r, int64_t now,
                                 int64_t hold_seconds) {
  std::string out = "not placed on node " + node_name + ": a pod of this job was evicted there " +
                    std::to_string(now - r.at) + " s ago, when its batch capacity was " +
                    r.capacity_then.to_string() +
                    "; it goes back there only once the node has had " + r.need.to_string() +
                    " free for " + std::to_string(hold_seconds) + " s";
  out += r.held_since ? " (held for " + std::to_string(now - *r.held_since) + " s so far)"
                      : " (not free now)";
  return out;
}

}  // namespace gleaner::scheduler
