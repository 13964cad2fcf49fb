// The core's decisions in the live loop: an admitted job's pods are bound (or, for a
// multi-cluster application, its placement is recorded), a preempted or rescheduled job's
// pods are deleted (a hub's application goes back to the hub), and a pending job's reason is
// written once as an Event.
#include <spdlog/spdlog.h>

#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::gang {

void GangScheduler::handle(const std::vector<Decision>& decisions) {
  for (const Decision& d : decisions) {
    const std::string* key = book_.key_of_job(d.job);
    if (key == nullptr) continue;
    Gang& g = book_[*key];
    switch (d.kind) {
      case DecisionKind::kAdmit:
        if (g.replica_gang) {
          // A cluster's own training job: its pods waited for this.
          attach_waiting_replicas(g);
          if (!g.members.empty()) {
            counters_.admitted(steady_s() - g.first_seen);
            break;
          }
        }
        if (!g.replica_gang && !g.origin.empty() && !g.members.contains(0)) {
          // A multi-cluster application: record the cluster the core chose (first time),
          // or wait for the driver its operator re-creates (after a reclaim).
          if (g.cluster.empty()) {
            counters_.admitted(steady_s() - g.first_seen);
            emit(placer_.place(book_, core_, std::string(*key), d.job, steady_s()));
          }
          break;
        }
        if (!g.members.contains(0)) {
          // Its driver pod (a replica gang: every pod) was reclaimed and its owner did not
          // re-create it while the job waited: nothing to bind. The job is withdrawn (its room goes
          // back now) and a driver that appears later starts a new job.
          if (Status s = core_.withdraw(d.job); !s) spdlog::warn("{}", s.error().message);
          g.job.reset();
          if (g.waiting.empty()) book_.erase(*key);
          book_.unlink_job(d.job);
          break;
        }
        counters_.admitted(steady_s() - g.first_seen);
        bind_member(g, 0);
        for (const auto& [index, uid] : g.members)
          if (index > 0) bind_member(g, index);
        attach_waiting(g);
        break;
      case DecisionKind::kPreempt:
      case DecisionKind::kReschedule:
        if (d.kind == DecisionKind::kPreempt) {
          counters_.preempted();
        } else {
          counters_.rescheduled();
        }
        counters_.reclaimed(d.job, d.reason);
        reclaim(g, d);
        if (g.hub_origin && !g.cluster.empty()) {
          emit(placer_.return_to_hub(book_, core_, std::string(*key), d.reason));
        }
        break;
      case DecisionKind::kUnschedulable:
      case DecisionKind::kReservationExpired:
        break;  // pending reasons are written by emit_pending_events
    }
  }
}

void GangScheduler::reclaim(Gang& g, const Decision& d) {
  // Bound pods cannot move: the job's pods are deleted and its driver, when its owner
  // re-creates it, takes the job's place in the queue again.
  if (Tracked* driver = driver_of(g)) {
    event(*driver, d.kind == DecisionKind::kPreempt ? "GleanerPreempted" : "GleanerRescheduled",
          d.reason, true);
  }
  for (const auto& [index, uid] : g.members) {
    auto p = pods_.find(uid);
    if (p == pods_.end()) continue;
    p->second.index = -1;
    p->second.gang.clear();
    hold_while_terminating(p->second);
    if (actions_) {
      actions_(Action{ActionKind::kDelete, g.cluster, p->second.view.ns, p->second.view.name, uid});
    }
  }
  g.members.clear();
  g.first_seen = steady_s();
  g.last_event.clear();
}

void GangScheduler::emit_pending_event(Gang& g) {
  if (!g.job) return;
  const Job& j = core_.job(*g.job);
  if (j.phase != JobPhase::kPending || j.reason.empty() || j.reason == g.last_event) return;
  Tracked* d = voice_of(g);
  if (d == nullptr && !g.origin.empty() && g.cluster.empty()) {
    app_event(g, j.unschedulable ? "GleanerUnschedulable" : "GleanerPending", j.reason,
              j.unschedulable);
    return;
  }
  if (d == nullptr) return;
  g.last_event = j.reason;
  event(*d, j.unschedulable ? "GleanerUnschedulable" : "GleanerPending", j.reason, j.unschedulable);
}

}  // namespace gleaner::scheduler::gang
