#pragma once
// No ping-pong: a pod evicted from a node because the node's batch capacity shrank (the
// node agent's eviction under memory pressure or BE CPU starvation) must not be placed on
// that node again, for the same job, until the node has had room for that pod again, and
// kept it, for a hold time. Otherwise the packing rule (the fullest node that fits) sends
// the replacement straight back into the room the eviction just freed, and the agent
// evicts it again.
//
// This is the memory of those evictions, per (job, node): when the eviction was seen, the
// node's batch capacity then, and what the evicted pod needs. It decides nothing about
// placement itself; the core asks it which nodes a job avoids. Pure: `now` is an argument.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/core/cluster_state.h"
#include "scheduler/core/job.h"
#include "scheduler/core/resources.h"

namespace gleaner::scheduler {

// The hold's default: the node must have had room for the pod this long, without a break,
// before the job may go back to it.
inline constexpr int64_t kDefaultReclaimHoldSeconds = 300;

struct ReclaimRecord {
  int64_t at = 0;           // when the eviction was seen
  Resources capacity_then;  // the node's batch capacity at that moment
  Resources need;           // the largest pod of the job evicted there
  // Since when the node has had `need` of free batch room without a break (nullopt: it
  // does not have it now).
  std::optional<int64_t> held_since;
};

class ReclaimMemory {
 public:
  // The job lost a pod of size `need` on `node` to an eviction at `at`, when the node's
  // batch capacity was `capacity`. A second eviction there restarts the record (and keeps
  // the larger need).
  void record(JobId job, NodeId node, int64_t at, const Resources& capacity, const Resources& need);
  // Re-reads every record against `free_room(node)` (nullopt: the node takes no placement
  // now, so nothing holds) at `now`: a node with room for the need starts (or continues) its
  // hold, one without breaks it; a record whose hold reached `hold_seconds` is forgotten.
  void refresh(int64_t now, int64_t hold_seconds,
               const std::function<std::optional<Resources>(NodeId)>& free_room);
  // The nodes job `job` must not be placed on now, in ascending order.
  [[nodiscard]] std::vector<NodeId> avoided(JobId job) const;
  [[nodiscard]] bool avoids(JobId job, NodeId node) const;
  [[nodiscard]] const ReclaimRecord* find(JobId job, NodeId node) const;
  // The job is over: its records go.
  void forget(JobId job);
  // The earliest moment a running hold ends (a pass may then place the job there).
  [[nodiscard]] std::optional<int64_t> next_deadline(int64_t hold_seconds) const;
  [[nodiscard]] bool empty() const { return records_.empty(); }

 private:
  std::map<std::pair<JobId, NodeId>, ReclaimRecord> records_;
};

// Why job placement went elsewhere than `node` (an Event's message): when the eviction was,
// the node's capacity then, what the pod needs and how long the node must keep that room.
std::string avoided_node_message(const std::string& node_name, const ReclaimRecord& r, int64_t now,
                                 int64_t hold_seconds);

}  // namespace gleaner::scheduler
