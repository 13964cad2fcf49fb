// Room held on nodes outside the core's jobs: batch pods bound by others or placed beyond
// their gang ("loose" room), and the regular allocatable (cpu/memory requests) every other
// pod takes on its node, which the core checks for pods that keep such requests; the pods
// of our gangs that another scheduler bound, which take their job's room; and the pods we
// deleted (preempted, rescheduled, released), which hold theirs until they are gone.
#include <spdlog/spdlog.h>

#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::gang {

void GangScheduler::track_loose(Tracked& t) {
  // Only pods bound outside our jobs: theirs is room nobody else may place into.
  if (!t.gang.empty() || t.view.node.empty() || terminal_phase(t.view.phase) ||
      core_.foreign_pod_node(t.view.uid)) {
    return;
  }
  // Other pods' usage is already outside the batch the agent reports, unless they
  // request batch resources themselves.
  if (!t.view.ours && !t.view.batch) return;
  auto id = core_node(t.view.cluster, t.view.node);
  if (!id) return;
  core_.account_foreign_pod(t.view.uid, *id, t.view.request);
}

void GangScheduler::release_loose(Tracked& t) {
  core_.release_foreign_pod(t.view.uid);
  t.regular_in_core = false;
  if (!t.deleting || t.view.node.empty()) return;
  auto held = terminating_.find(core_name(t.view.cluster, t.view.node));
  if (held == terminating_.end()) return;
  held->second.erase(t.view.uid);
  if (held->second.empty()) terminating_.erase(held);
}

void GangScheduler::hold_while_terminating(Tracked& t) {
  // A deleted pod runs on through its grace period (the API server only marks it,
  // pkg/registry/core/pod/strategy.go CheckGracefulDelete) until kubelet has stopped it and
  // removes it. kube-scheduler's cache counts it on its node until the delete event
  // (pkg/scheduler/backend/cache/cache.go, internal/cache before: UpdatePod keeps a pod in
  // its node's NodeInfo, only RemovePod takes it out), and kubelet admits a new pod against
  // the pods still running (OutOf<resource> otherwise). Its room is handed on only when it
  // is gone.
  t.deleting = true;
  if (t.view.node.empty() || terminal_phase(t.view.phase)) return;
  track_loose(t);
  track_regular(t);
  if (core_.foreign_pod_node(t.view.uid))
    terminating_[core_name(t.view.cluster, t.view.node)].insert(t.view.uid);
}

std::optional<std::string> GangScheduler::waits_for_victims(NodeId node) const {
  const Node& n = core_.clusters().node(node);
  auto held = terminating_.find(n.name);
  if (held == terminating_.end()) return std::nullopt;
  const bool batch_fits = n.used.fits_in(n.capacity());
  const bool regular_fits = !n.regular_outside || n.regular_used.fits_in(*n.regular_outside);
  if (batch_fits && regular_fits) return std::nullopt;
  std::string names;
  for (const std::string& uid : held->second) {
    auto p = pods_.find(uid);
    if (p == pods_.end()) continue;
    names += (names.empty() ? "" : ", ") + p->second.view.ns + "/" + p->second.view.name;
  }
  return "its room on node " + n.name.substr(n.name.find('/') + 1) +
         " is still held by pods deleted for it, terminating there (" + names +
         "): kubelet admits a pod against the pods still running; bound once they are gone";
}

void GangScheduler::track_regular(Tracked& t) {
  // Our jobs' members are in the core's accounting; so is an executor we placed beyond
  // its gang. Everyone else's bound, non-terminal pod takes regular allocatable.
  const bool counted_elsewhere = (!t.gang.empty() && t.index >= 0) || t.regular_in_core;
  const std::string node = t.view.node.empty() || counted_elsewhere || terminal_phase(t.view.phase)
                               ? std::string()
                               : core_name(t.view.cluster, t.view.node);
  if (node == t.regular_node && (node.empty() || t.regular_amount == t.view.regular)) return;
  release_regular(t);
  if (node.empty() || t.view.regular == Resources{}) return;
  t.regular_node = node;
  t.regular_amount = t.view.regular;
  regular_outside_used_[node] += t.regular_amount;
  push_regular(node);
}

void GangScheduler::release_regular(Tracked& t) {
  if (t.regular_node.empty()) return;
  regular_outside_used_[t.regular_node] -= t.regular_amount;
  const std::string node = std::move(t.regular_node);
  t.regular_node.clear();
  t.regular_amount = {};
  push_regular(node);
}

void GangScheduler::push_regular(const std::string& name) {
  auto id = core_.clusters().find_node(name);
  if (!id) return;
  auto alloc = node_allocatable_.find(name);
  if (alloc == node_allocatable_.end()) {
    core_.set_regular_outside(*id, std::nullopt);
    return;
  }
  auto used = regular_outside_used_.find(name);
  core_.set_regular_outside(
      *id, alloc->second - (used == regular_outside_used_.end() ? Resources{} : used->second),
      alloc->second);
}

bool GangScheduler::adopt_bound_elsewhere(Tracked& t) {
  // A pod of one of our Spark gangs that another scheduler bound (an application without
  // schedulerName: the operator's pods go to kube-scheduler). Its job already holds room for
  // it: it takes that room, on the node it went to, and is not counted a second time as a
  // pod of its own.
  const PodView& v = t.view;
  if (v.ours || v.node.empty() || !t.gang.empty() || v.gang.empty() ||
      (v.role != PodRole::kDriver && v.role != PodRole::kExecutor)) {
    return false;
  }
  auto it = book_.find(v.cluster + "/" + v.ns + "/" + v.gang);
  if (it == book_.end() || !it->second.job || it->second.replica_gang) return false;
  Gang& g = it->second;
  const Job& j = core_.job(*g.job);
  if (j.phase != JobPhase::kAdmitted && j.phase != JobPhase::kRunning) return false;
  int index = -1;
  if (v.role == PodRole::kDriver) {
    if (!g.members.contains(0)) index = 0;
  } else {
    for (int i = 1; i < static_cast<int>(j.pods.size()) && index < 0; ++i)
      if (!g.members.contains(i)) index = i;
  }
  if (index < 0) return false;  // beyond its gang: a pod of its own
  if (auto node = core_node(v.cluster, v.node)) {
    if (Status s = core_.pod_bound_elsewhere(*g.job, index, *node, now_s()); !s) {
      spdlog::warn("{}", s.error().message);
      return false;
    }
  }
  release_loose(t);
  t.gang = g.key;
  t.index = index;
  g.members[index] = v.uid;
  g.waiting.erase(v.uid);
  return true;
}

}  // namespace gleaner::scheduler::gang
