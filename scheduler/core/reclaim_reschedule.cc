// The core's part of docs/scheduler.md's "Reclaim and reschedule": a job that lost a pod
// goes back to its queue with a back-off from its cluster (lose_pod); a node whose batch
// capacity shrank below its use gives back reserved room (report_node); and no ping-pong:
// a job that lost a pod to an eviction on a node avoids that node until the node's room for
// the pod has held (note_eviction, refresh_reclaims, and the placements that leave such
// nodes out: place_anywhere, place_one_avoiding, steered; reclaim_memory.h).
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "scheduler/core/scheduler.h"

namespace gleaner::scheduler {

Decision Scheduler::lose_pod(JobId id, int64_t now, const std::string& reason) {
  Job& j = jobs_[id];
  if (j.phase == JobPhase::kAdmitted || j.phase == JobPhase::kRunning) {
    detach(j);
    ++j.reschedules;
    requeue(j, reason);
    // Back off from the cluster that failed it: 1, 2, 4, ... times the base, capped.
    int64_t backoff = policy_.reclaim_backoff_seconds;
    for (int i = 0; i < j.reclaims_in_a_row && backoff < policy_.reclaim_backoff_max_seconds; ++i)
      backoff *= 2;
    ++j.reclaims_in_a_row;
    j.avoid_until = now + std::min(backoff, policy_.reclaim_backoff_max_seconds);
    j.backoff_always = j.spec.back_off_without_alternative;
    if (j.avoid_until > now) backoffs_.insert({j.avoid_until, j.id});
  }
  return Decision{DecisionKind::kReschedule, id, reason};
}

Result<std::vector<Decision>> Scheduler::report_node(NodeId node, const Resources& batch,
                                                     int64_t now) {
  if (Status s = clusters_.report(node, batch, now); !s) return s.error();
  refresh_reclaims(now);  // a node that shrank again breaks its hold at once
  // A shrink never deletes a bound pod: the node is over-committed and takes nothing new
  // until its use fits (every placement checks free room, negative here). Kubernetes and
  // Koordinator do the same: kubelet's admission (pkg/kubelet/lifecycle/predicate.go)
  // refuses new pods against allocatable and never evicts for a smaller allocatable;
  // koord-manager only rewrites batch-cpu/batch-memory on the Node, and koordlet evicts
  // BE pods on real pressure (pkg/koordlet/qosmanager/plugins/memoryevict,
  // .../cpuevict). Those evictions reach the core as pod loss (lose_pod). Only room that
  // is reserved and not yet bound goes back, lowest priority first, youngest job among
  // equals, as far as the node needs; an executor that later comes binds where the
  // cluster has room (bind_executor), as after a reservation expired.
  std::vector<Decision> out;
  const Node& n = clusters_.node(node);
  // Most reports change nothing that matters here: no walk over the jobs then.
  if (n.used.fits_in(n.capacity())) return out;
  std::vector<Job*> here;
  for (JobId id : active_) {
    Job& j = jobs_[id];
    if (std::any_of(j.pods.begin(), j.pods.end(), [&](const PodState& p) {
          return p.holds_room && !p.bound && p.node == node;
        })) {
      here.push_back(&j);
    }
  }
  std::sort(here.begin(), here.end(), [](const Job* a, const Job* b) {
    if (a->spec.priority != b->spec.priority) return a->spec.priority < b->spec.priority;
    return std::tie(a->admitted_at, a->spec.name) > std::tie(b->admitted_at, b->spec.name);
  });
  for (Job* j : here) {
    if (n.used.fits_in(n.capacity())) break;
    for (size_t i = 1; i < j->pods.size() && !n.used.fits_in(n.capacity()); ++i) {
      PodState& p = j->pods[i];
      if (p.holds_room && !p.bound && p.node == node) release_executor_room(*j, i);
    }
    out.push_back(Decision{DecisionKind::kReservationExpired, j->id,
                           "batch capacity of node " + n.name + " shrank"});
    refresh_timer(*j);
  }
  return out;
}

Status Scheduler::note_eviction(JobId id, int pod_index, int64_t now) {
  auto slot = admitted_pod(id, pod_index, 0);
  if (!slot) return slot.error();
  const PodState& p = **slot;
  if (!p.holds_room && !p.bound) return ok_status();
  const Job& j = jobs_[id];
  reclaims_.record(id, p.node, now, clusters_.node(p.node).capacity(),
                   j.role_of(static_cast<size_t>(pod_index)).batch);
  return ok_status();
}

void Scheduler::refresh_reclaims(int64_t now) {
  if (reclaims_.empty()) return;
  reclaims_.refresh(now, policy_.reclaim_hold_seconds, [&](NodeId id) -> std::optional<Resources> {
    const Node& n = clusters_.node(id);
    if (!n.schedulable()) return std::nullopt;
    return n.free();
  });
}

std::optional<GangPlacement> Scheduler::place_anywhere(const Job& j, const GangRequest& req) {
  steer_candidate_.reset();
  auto p = place_anywhere_unfiltered(j, req);
  if (!p || reclaims_.empty()) return p;
  const std::vector<NodeId> avoid = reclaims_.avoided(j.id);
  auto hit = std::find_if(p->pods.begin(), p->pods.end(), [&](NodeId n) {
    return std::binary_search(avoid.begin(), avoid.end(), n);
  });
  if (hit == p->pods.end()) return p;
  // It would use a node the job lost a pod to an eviction on: placed again without those
  // nodes, and the steering recorded for admit().
  const auto index = static_cast<int>(hit - p->pods.begin());
  const NodeId natural = *hit;
  size_t i = 0;
  for (const RoleRequest& role : req.roles) {
    for (int k = 0; k < role.replicas; ++k, ++i)
      clusters_.release(p->pods[i], role.batch, i == 0, role.regular);
  }
  clusters_.set_avoided(avoid);
  p = place_anywhere_unfiltered(j, req);
  clusters_.set_avoided({});
  if (p) steer_candidate_ = SteerCandidate{j.id, p->pods, index, natural};
  return p;
}

std::optional<NodeId> Scheduler::place_one_avoiding(Job& j, int pod_index, const Resources& batch,
                                                    const NodeSelector* selector,
                                                    const Resources& regular, int64_t now) {
  auto node = clusters_.place_one(*j.cluster, batch, selector, regular);
  if (!node || !reclaims_.avoids(j.id, *node)) return node;
  // Where the packing rule would have put it is a node the job lost a pod to an eviction
  // on: the next-best node that is not one.
  const NodeId natural = *node;
  clusters_.release(natural, batch, false, regular);
  clusters_.set_avoided(reclaims_.avoided(j.id));
  node = clusters_.place_one(*j.cluster, batch, selector, regular);
  clusters_.set_avoided({});
  if (node) steered(j, pod_index, natural, *node, now);
  return node;
}

void Scheduler::steered(Job& j, int pod_index, NodeId avoided, NodeId placed, int64_t now) {
  ++j.steered_away;
  const ReclaimRecord* r = reclaims_.find(j.id, avoided);
  std::string message = r != nullptr ? avoided_node_message(clusters_.node(avoided).name, *r, now,
                                                            policy_.reclaim_hold_seconds)
                                     : "not placed on node " + clusters_.node(avoided).name;
  message += "; placed on node " + clusters_.node(placed).name;
  steered_.push_back(SteeredPlacement{j.id, pod_index, {}, avoided, placed, std::move(message)});
}

}  // namespace gleaner::scheduler
