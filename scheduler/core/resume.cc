// Jobs whose pods are partly bound already: a gang found half placed after a restart (an
// earlier scheduler process bound some of its pods), and an admission undone because its
// pods could not be bound.
#include <algorithm>

#include "scheduler/core/scheduler.h"

namespace gleaner::scheduler {

Result<JobId> Scheduler::resume(const JobSpec& spec, const std::map<int, NodeId>& bound,
                                int64_t now) {
  const std::string who = "job " + spec.name;
  if (bound.empty() || bound.begin()->second >= clusters_.node_count()) {
    return make_error(ErrorCode::kInvalidArgument, who + ": none of its pods is bound");
  }
  const ClusterId cluster = clusters_.node(bound.begin()->second).cluster;
  const std::vector<RoleSpec> roles = roles_of(spec);
  size_t pods = 0;
  for (const RoleSpec& r : roles)
    pods += static_cast<size_t>(std::max(r.replicas, 0));
  for (const auto& [index, node] : bound) {
    if (index < 0 || static_cast<size_t>(index) >= pods) {
      return make_error(ErrorCode::kInvalidArgument,
                        who + ": has no pod " + std::to_string(index) + " to resume");
    }
    if (node >= clusters_.node_count() || clusters_.node(node).cluster != cluster) {
      return make_error(ErrorCode::kInvalidArgument, who + ": its pods are in two clusters");
    }
  }
  auto role_at = [&](size_t index) -> const RoleSpec& {
    for (const RoleSpec& r : roles) {
      if (index < static_cast<size_t>(r.replicas)) return r;
      index -= static_cast<size_t>(r.replicas);
    }
    return roles.back();
  };
  // The bound pods run where they are: their room is taken whatever is left there. The
  // others are placed into what remains, all of them or none (what was taken goes back).
  std::vector<PodState> states(pods);
  auto undo = [&] {
    for (size_t i = 0; i < pods; ++i) {
      if (!states[i].holds_room) continue;
      const RoleSpec& role = role_at(i);
      clusters_.release(states[i].node, role.batch, i == 0, role.regular);
    }
  };
  for (const auto& [index, node] : bound) {
    const auto i = static_cast<size_t>(index);
    const RoleSpec& role = role_at(i);
    clusters_.acquire(node, role.batch, i == 0, role.regular);
    states[i] = PodState{node, true, true, false, now};
  }
  for (size_t i = 0; i < pods; ++i) {
    if (states[i].holds_room) continue;
    const RoleSpec& role = role_at(i);
    const NodeSelector* selector = &spec.node_selector;
    if (role.selector) selector = &*role.selector;
    if (selector->empty()) selector = nullptr;
    auto node = clusters_.place_one(cluster, role.batch, selector, role.regular);
    if (!node) {
      undo();
      return make_error(ErrorCode::kUnavailable,
                        who + ": no room in cluster " + clusters_.cluster_name(cluster) +
                            " for its " + std::to_string(pods - bound.size()) + " unbound pod" +
                            (pods - bound.size() == 1 ? "" : "s"));
    }
    if (i == 0) {
      // place_one counts a pod that is not a leader; the leader is counted as one.
      clusters_.release(*node, role.batch, false, role.regular);
      clusters_.acquire(*node, role.batch, true, role.regular);
    }
    states[i] = PodState{*node, true, false, false, 0};
  }
  auto id = submit(spec);
  if (!id) {
    undo();
    return id.error();
  }
  Job& j = jobs_[*id];
  pending_.erase(pending_key(j));
  GangPlacement placement{cluster, {}};
  for (const PodState& p : states)
    placement.pods.push_back(p.node);
  admit(j, placement, now);  // the room is taken above; this charges the quota
  for (size_t i = 1; i < pods; ++i) {
    j.pods[i].bound = states[i].bound;  // the leader's is, as at any admission
    if (states[i].bound) j.pods[i].bound_at = now;
  }
  refresh_timer(j);
  return *id;
}

Status Scheduler::requeue_unbound(JobId id, const std::string& reason) {
  if (id >= jobs_.size()) return make_error(ErrorCode::kNotFound, "unknown job");
  Job& j = jobs_[id];
  if (j.phase != JobPhase::kAdmitted && j.phase != JobPhase::kRunning) {
    return make_error(ErrorCode::kInvalidArgument, "job " + j.spec.name + " is not admitted");
  }
  detach(j);
  requeue(j, reason);
  return ok_status();
}

}  // namespace gleaner::scheduler
