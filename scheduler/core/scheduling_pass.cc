// The scheduling pass: ordering, queueing policy, quota checks, cluster choice, reclaim.
#include <algorithm>
#include <tuple>

#include "scheduler/core/scheduler.h"

namespace gleaner::scheduler {

QueueingPolicy Scheduler::queueing_of(QueueId q) const {
  // The nearest queue (or ancestor) that sets a policy wins.
  for (QueueId id = q;; id = quotas_.queue(id).parent) {
    if (quotas_.queue(id).queueing) return *quotas_.queue(id).queueing;
    if (id == QuotaTree::kRoot) break;
  }
  return policy_.queueing;
}

std::vector<Decision> Scheduler::schedule(int64_t now) {
  pass_now_ = now;
  refresh_reclaims(now);
  std::vector<Decision> out;
  std::set<QueueId> blocked;  // blocking queues whose head did not fit, with that head
  std::map<QueueId, std::string> blocked_by;
  std::vector<bool> failed(shape_ids_.size(), false);
  for (auto it = pending_.begin(); it != pending_.end();) {
    Job& j = jobs_[it->id];
    if (blocked.count(j.queue) != 0) {
      j.reason = "blocked behind " + blocked_by[j.queue] + " in blocking queue " +
                 quotas_.queue(j.queue).name;
      ++it;
      continue;
    }
    bool was_unschedulable = j.unschedulable;
    Outcome o = try_admit(j, now, failed, out);
    if (o == Outcome::kAdmitted) {
      it = pending_.erase(it);
      continue;
    }
    if (o == Outcome::kUnschedulable) {
      // Reported once per change; such a job never holds back its queue.
      if (!was_unschedulable) out.push_back(Decision{DecisionKind::kUnschedulable, j.id, j.reason});
      j.unschedulable = true;
    } else {
      j.unschedulable = false;
      if (queueing_of(j.queue) == QueueingPolicy::kBlocking) {
        blocked.insert(j.queue);
        blocked_by[j.queue] = j.spec.name;
      }
    }
    ++it;
  }
  return out;
}

Scheduler::ShapeKey Scheduler::shape_of(const Job& j) {
  ShapeKey key;
  key.roles.reserve(j.roles.size());
  for (const RoleSpec& r : j.roles) {
    key.roles.emplace_back(r.batch.cpu_milli, r.batch.memory_bytes, r.batch.gpus, r.replicas,
                           r.regular.cpu_milli, r.regular.memory_bytes, r.regular.gpus);
    key.selectors.push_back(r.selector);
  }
  key.node_selector = j.spec.node_selector;
  key.preferred_cluster = j.spec.preferred_cluster;
  key.allowed_clusters = j.spec.allowed_clusters;
  return key;
}

bool Scheduler::ShapeKey::operator<(const ShapeKey& o) const {
  return std::tie(roles, selectors, node_selector, preferred_cluster, allowed_clusters) <
         std::tie(o.roles, o.selectors, o.node_selector, o.preferred_cluster, o.allowed_clusters);
}

bool Scheduler::may_use(const Job& j, ClusterId c) const {
  const auto& allowed = j.spec.allowed_clusters;
  return !allowed ||
         std::find(allowed->begin(), allowed->end(), clusters_.cluster_name(c)) != allowed->end();
}

bool Scheduler::backing_off(const Job& j, ClusterId c) const {
  if (j.avoid_cluster != c || pass_now_ >= j.avoid_until) return false;
  if (j.backoff_always) return true;
  // Only while another cluster could take it: with nowhere else to go, waiting helps nothing.
  for (ClusterId other = 0; other < clusters_.cluster_count(); ++other) {
    if (other != c && may_use(j, other) && clusters_.fits_when_empty(other, gang_of(j)))
      return true;
  }
  return false;
}

std::string Scheduler::describe_pods(const Job& j) {
  std::string s;
  for (const RoleSpec& r : j.roles) {
    if (!s.empty()) s += ", ";
    s += std::to_string(r.replicas) + " " + r.name;
  }
  return s;
}

void Scheduler::assign_shape(const Job& j) {
  auto [it, fresh] = shape_ids_.emplace(shape_of(j), static_cast<ShapeId>(shape_ids_.size()));
  if (job_shapes_.size() <= j.id) {
    job_shapes_.resize(j.id + 1);
    job_gangs_.resize(j.id + 1);
  }
  job_shapes_[j.id] = it->second;
  job_gangs_[j.id] = j.request();
  if (fresh) fits_cache_.push_back(-1);
}

Scheduler::Outcome Scheduler::try_admit(Job& j, int64_t now, std::vector<bool>& failed,
                                        std::vector<Decision>& out) {
  const Queue& q = quotas_.queue(j.queue);
  if (quotas_.exceeds_max_alone(j.queue, j.total)) {
    j.reason = "requests " + j.total.to_string() + ", above the max of queue " + q.name +
               " or an ancestor";
    return Outcome::kUnschedulable;
  }
  if (!quotas_.within_max(j.queue, j.total)) {
    j.reason = "queue " + q.name + " (or an ancestor) would exceed its max";
    return Outcome::kWait;
  }
  const ShapeId shape = shape_id(j);
  if (!failed[shape]) {
    if (auto p = place_anywhere(j)) {
      admit(j, *p, now);
      out.push_back(Decision{DecisionKind::kAdmit, j.id, ""});
      return Outcome::kAdmitted;
    }
    // A job backing off from a cluster failed for a reason its shape does not carry.
    // So did a job that avoids nodes it lost a pod to an eviction on.
    if (!(j.avoid_cluster && backing_off(j, *j.avoid_cluster)) && reclaims_.avoided(j.id).empty())
      failed[shape] = true;
  }
  if (!fits_some_empty_cluster(j)) {
    if (!j.spec.node_selector.empty() && !clusters_.any_node_matches(j.spec.node_selector)) {
      j.reason = "no node matches the node selector (" + j.spec.node_selector.to_string() + ")";
      return Outcome::kUnschedulable;
    }
    bool any_allowed = false;
    for (ClusterId c = 0; c < clusters_.cluster_count() && !any_allowed; ++c)
      any_allowed = may_use(j, c);
    if (!any_allowed) {
      j.reason = "its placement allows none of the known clusters";
      return Outcome::kUnschedulable;
    }
    // Batch room alone would do: the Nodes' allocatable (GPUs, kept cpu/memory requests)
    // is what no cluster has enough of, however empty.
    GangRequest batch_only = gang_of(j);
    for (RoleRequest& r : batch_only.roles)
      r.regular = {};
    bool batch_fits = false;
    for (ClusterId c = 0; c < clusters_.cluster_count() && !batch_fits; ++c)
      batch_fits = may_use(j, c) && clusters_.fits_when_empty(c, batch_only);
    j.reason = "larger than any cluster it may go to: its pods (" + describe_pods(j) + ") " +
               (batch_fits ? "request more GPUs or regular cpu/memory than the allocatable of "
                             "one cluster's Nodes (kubelet admits them against it)"
                           : "do not fit one cluster's batch capacity");
    return Outcome::kUnschedulable;
  }
  if (quotas_.within_min(j.queue, j.total) && reclaim_for(j, now, out)) {
    failed.assign(failed.size(), false);  // preemption freed room
    return Outcome::kAdmitted;
  }
  j.reason = held_by_regular_only(j)
                 ? "waiting for regular allocatable: its pods request cpu/memory (not converted to "
                   "batch resources) or GPUs, which kubelet admits against the node's "
                   "allocatable, and no node with batch room has enough of it"
                 : "waiting for batch capacity";
  if (j.avoid_cluster && backing_off(j, *j.avoid_cluster)) {
    j.reason += "; cluster " + clusters_.cluster_name(*j.avoid_cluster) +
                ", which it was reclaimed from, is avoided for another " +
                std::to_string(j.avoid_until - now) + " s";
  }
  for (NodeId n : reclaims_.avoided(j.id)) {
    j.reason += "; " + avoided_node_message(clusters_.node(n).name, *reclaims_.find(j.id, n), now,
                                            policy_.reclaim_hold_seconds);
  }
  j.reason += skipped_clusters(j.id);
  return Outcome::kWait;
}

bool Scheduler::held_by_regular_only(const Job& j) {
  bool asks_regular = std::any_of(j.roles.begin(), j.roles.end(),
                                  [](const RoleSpec& r) { return r.regular != Resources{}; });
  if (!asks_regular) return false;
  Job batch_only = j;
  for (RoleSpec& r : batch_only.roles)
    r.regular = {};
  auto p = place_anywhere(batch_only, batch_only.request());
  if (!p) return false;
  unplace(batch_only, *p);
  return true;
}

void Scheduler::unplace(const Job& j, const GangPlacement& p) {
  for (size_t i = 0; i < p.pods.size(); ++i)
    clusters_.release(p.pods[i], j.role_of(i).batch, i == 0, j.role_of(i).regular);
}

std::optional<GangPlacement> Scheduler::place_anywhere_unfiltered(const Job& j,
                                                                  const GangRequest& req) {
  const size_t n = clusters_.cluster_count();
  if (n == 1) {
    return may_use(j, 0) && !backing_off(j, 0) && cluster_available(0) ? clusters_.place(0, req)
                                                                       : std::nullopt;
  }
  // Best fit across clusters: the one left with the least free room (keeping big holes
  // elsewhere for big jobs); a job reclaimed from a cluster tries the others first, and
  // otherwise its preferred cluster (where it was created: no copy to another cluster).
  struct Candidate {
    bool avoided;
    bool preferred;
    int64_t left_cpu;
    int64_t left_memory;
    const std::string* name;
    ClusterId id;
  };
  std::vector<Candidate> order;
  order.reserve(n);
  for (ClusterId c = 0; c < n; ++c) {
    if (!may_use(j, c) || backing_off(j, c) || !cluster_available(c)) continue;
    Resources left = clusters_.cluster_free(c) - req.total();
    if (left.any_negative()) continue;
    order.push_back(Candidate{
        j.avoid_cluster == c,
        !j.spec.preferred_cluster.empty() && clusters_.cluster_name(c) == j.spec.preferred_cluster,
        left.cpu_milli, left.memory_bytes, &clusters_.cluster_name(c), c});
  }
  std::sort(order.begin(), order.end(), [](const Candidate& a, const Candidate& b) {
    if (a.avoided != b.avoided) return !a.avoided;
    if (a.preferred != b.preferred) return a.preferred;
    if (a.left_cpu != b.left_cpu) return a.left_cpu < b.left_cpu;
    if (a.left_memory != b.left_memory) return a.left_memory < b.left_memory;
    return *a.name < *b.name;
  });
  for (const Candidate& c : order) {
    if (auto p = clusters_.place(c.id, req)) return p;
  }
  return std::nullopt;
}

bool Scheduler::fits_some_empty_cluster(const Job& j) {
  if (fits_cache_generation_ != clusters_.capacity_generation()) {
    fits_cache_.assign(fits_cache_.size(), -1);
    fits_cache_generation_ = clusters_.capacity_generation();
  }
  int8_t& known = fits_cache_[shape_id(j)];
  if (known >= 0) return known == 1;
  bool fits = false;
  const GangRequest& req = gang_of(j);
  for (ClusterId c = 0; c < clusters_.cluster_count() && !fits; ++c) {
    fits = may_use(j, c) && clusters_.fits_when_empty(c, req);
  }
  known = fits ? 1 : 0;
  return fits;
}

bool Scheduler::reclaim_for(Job& j, int64_t now, std::vector<Decision>& out) {
  // Candidates: jobs of other queues that hold borrowed quota (above their min); the
  // lowest priority goes first, and among equals the most recently admitted.
  std::vector<JobId> candidates;
  for (JobId id : active_) {
    const Job& v = jobs_[id];
    if (v.queue != j.queue && quotas_.borrowing(v.queue)) candidates.push_back(id);
  }
  std::sort(candidates.begin(), candidates.end(), [&](JobId a, JobId b) {
    const Job& x = jobs_[a];
    const Job& y = jobs_[b];
    if (x.spec.priority != y.spec.priority) return x.spec.priority < y.spec.priority;
    if (x.admitted_at != y.admitted_at) return x.admitted_at > y.admitted_at;
    return x.spec.name > y.spec.name;
  });
  std::vector<JobId> taken;
  for (JobId id : candidates) {
    Job& v = jobs_[id];
    if (!quotas_.borrowing(v.queue)) continue;  // earlier victims already paid it back
    detach(v);
    taken.push_back(id);
    auto p = place_anywhere(j);
    if (!p) continue;
    // Victims whose release the job does not need (they hold another resource than the
    // one it lacks, or room on nodes it cannot use) are spared: each, the last taken first,
    // goes back while the job still fits without it. Only the rest are preempted.
    unplace(j, *p);
    for (auto t = taken.rbegin(); t != taken.rend();) {
      reattach(jobs_[*t]);
      if (auto without = place_anywhere(j)) {
        unplace(j, *without);
        t = std::make_reverse_iterator(taken.erase(std::next(t).base()));
      } else {
        detach(jobs_[*t]);
        ++t;
      }
    }
    p = place_anywhere(j);  // it fit with every remaining victim's room released
    if (!p) break;
    for (JobId t : taken) {
      Job& victim = jobs_[t];
      ++victim.preemptions;
      requeue(victim, "preempted: queue " + quotas_.queue(j.queue).name +
                          " reclaimed borrowed quota for " + j.spec.name);
      out.push_back(Decision{DecisionKind::kPreempt, t, victim.reason});
    }
    admit(j, *p, now);
    out.push_back(Decision{DecisionKind::kAdmit, j.id, ""});
    return true;
  }
  // Reclaiming everything it could still did not make room: undo, preempt nobody.
  for (auto it = taken.rbegin(); it != taken.rend(); ++it)
    reattach(jobs_[*it]);
  return false;
}

}  // namespace gleaner::scheduler
