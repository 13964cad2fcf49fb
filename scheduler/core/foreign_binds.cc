// What the world says besides reports and our own binds: pods of a job that another
// scheduler bound (the job's room follows them), and member clusters whose API server
// does not answer (no new placement there).
#include "scheduler/core/scheduler.h"

namespace gleaner::scheduler {

Status Scheduler::pod_bound_elsewhere(JobId id, int pod_index, NodeId node, int64_t now) {
  auto pod = admitted_pod(id, pod_index, 0);
  if (!pod) return pod.error();
  Job& j = jobs_[id];
  PodState& p = **pod;
  const RoleSpec& role = j.role_of(static_cast<size_t>(pod_index));
  const bool driver = pod_index == 0;
  if (!p.holds_room || p.node != node) {
    if (p.holds_room) clusters_.release(p.node, role.batch, driver, role.regular);
    clusters_.acquire(node, role.batch, driver, role.regular);
    p.node = node;
    p.holds_room = true;
  }
  if (!p.bound) {
    p.bound = true;
    p.bound_at = now;
  }
  refresh_timer(j);
  return ok_status();
}

void Scheduler::set_cluster_available(ClusterId cluster, bool available) {
  if (available) {
    unavailable_.erase(cluster);
  } else {
    unavailable_.insert(cluster);
  }
}

std::string Scheduler::skipped_clusters(JobId id) const {
  std::string out;
  for (ClusterId c : unavailable_) {
    if (id < jobs_.size() && may_use(jobs_[id], c))
      out += "; member cluster " + clusters_.cluster_name(c) +
             " is skipped: its API server is unavailable";
  }
  return out;
}

}  // namespace gleaner::scheduler
