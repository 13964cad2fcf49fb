// Multi-cluster SparkApplications in the live loop (see docs/scheduler.md, "Multi-cluster
// placement"): the coordinator's side. An application labelled gleaner.io/multi-cluster=true
// and created with spec.suspend=true is held by its own cluster's operator; here it becomes
// a core job before it has any pod. When the core admits it, the fleet placer
// (fleet_placer.h) moves its gang to the chosen member and sends the placement (recorded on
// the origin, and for another cluster a copy created there); the driver pod the operator
// creates then takes the room the core reserved.
#include <spdlog/spdlog.h>

#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::gang {

std::optional<JobId> GangScheduler::job_of(const std::string& cluster, const std::string& ns,
                                           const std::string& name, const std::string& kind) const {
  std::lock_guard lock(mu_);
  auto it = placer_.find(book_, kind, cluster, ns, name);
  if (it == book_.end()) return std::nullopt;
  return it->second.job;
}

void GangScheduler::observe_app(const AppView& app) {
  std::lock_guard lock(mu_);
  const std::string key = FleetPlacer::app_key(app.kind, app.cluster, app.ns, app.name);
  auto it = book_.find(key);
  if (!app.placement.empty()) {
    // Decided (by us before a restart, or it is a copy we made): nothing to place.
    return;
  }
  if (it != book_.end() && !it->second.job &&
      it->second.app_other_scheduler != app.other_scheduler) {
    // Left to another scheduler, and no longer (or to another one now): looked at anew.
    book_.remove(it);
    it = book_.end();
  }
  if (it != book_.end()) {
    // Already queued. A hub's policy or its members' labels and taints may have changed
    // since: a job still waiting goes by the members allowed now.
    Gang& g = it->second;
    if (app.hub && g.job && core_.job(*g.job).phase == JobPhase::kPending &&
        g.app_allowed != app.allowed_clusters) {
      if (Status s = core_.set_allowed_clusters(*g.job, app.allowed_clusters); !s) {
        spdlog::warn("{}", s.error().message);
        return;
      }
      g.app_allowed = app.allowed_clusters;
    }
    return;
  }
  if (placer_.placed(FleetPlacer::placed_key(app.kind, app.cluster, app.ns, app.name))) return;
  Gang g;
  g.key = key;
  g.ns = app.ns;
  g.name = app.name;
  g.origin = app.cluster;
  g.app_uid = app.uid;
  g.app_kind = app.kind;
  g.first_seen = steady_s();
  // Kept (without a job when it cannot be placed) so that each warning is written once.
  Gang& added = book_.put(std::move(g));
  if (!app.suspended && !app.hub) {
    // Its operator may already be running it here: placing it elsewhere could run it
    // twice. Its pods are scheduled in this cluster like any application's.
    app_event(added, "GleanerNotSuspended",
              "multi-cluster placement needs spec.suspend: true at creation; the application "
              "runs in its own cluster",
              true);
    return;
  }
  if (!app.selector_error.empty()) {
    app_event(added, "GleanerUnsupportedAffinity", app.selector_error, true);
    return;
  }
  if (!app.other_scheduler.empty()) {
    // Placing it would loop: the room reserved in a member is never taken by its pods
    // (the operator gives them the other scheduler's name), so the driver start timeout
    // reclaims it and it is placed again, without end.
    added.app_other_scheduler = app.other_scheduler;
    counters_.app_other_scheduler();
    app_event(added, "GleanerOtherScheduler",
              "spec.batchScheduler is " + app.other_scheduler + ": its pods are placed by " +
                  app.other_scheduler +
                  ", which takes no room this scheduler reserves, so it is not placed across "
                  "clusters; remove spec.batchScheduler to have it placed here",
              true);
    return;
  }
  added.selector = app.selector;
  added.app_shape = app.shape;
  added.app_queue = app.queue;
  added.app_priority = app.priority;
  added.app_allowed = app.allowed_clusters;
  added.hub_origin = app.hub;
  submit(added, app.shape, app.priority, app.queue);
}

void GangScheduler::forget_app(const std::string& cluster, const std::string& ns,
                               const std::string& name, const std::string& kind) {
  std::lock_guard lock(mu_);
  auto [it, what] = placer_.deleted(book_, kind, cluster, ns, name);
  switch (what) {
    case FleetPlacer::Deleted::kKeep:
      return;
    case FleetPlacer::Deleted::kEnd:
      return end_app_gang(it);
    case FleetPlacer::Deleted::kOwnJob: {
      // A cluster's own training job deleted: its queued or held room goes now (its
      // pods, if any, are deleted with it and hold nothing more).
      Gang& g = it->second;
      if (g.job && !job_over(*g.job)) {
        if (Status s = core_.withdraw(*g.job); !s) spdlog::warn("{}", s.error().message);
      }
      if (g.members.empty() && g.waiting.empty()) book_.remove(it);
      return;
    }
    case FleetPlacer::Deleted::kWithdraw:
      if (it->second.job && !job_over(*it->second.job)) {
        if (Status s = core_.withdraw(*it->second.job); !s) spdlog::warn("{}", s.error().message);
      }
      book_.remove(it);
      return;
  }
}

void GangScheduler::end_app_gang(GangBook::iterator it) {
  Gang& g = it->second;
  if (g.job && !job_over(*g.job)) {
    if (Status s = core_.withdraw(*g.job); !s) spdlog::warn("{}", s.error().message);
  }
  release_pods(g);
  book_.remove(it);
}

void GangScheduler::emit(FleetPlacer::Effects effects) {
  for (Action& a : effects.actions)
    if (actions_) actions_(std::move(a));
  if (!effects.reason.empty()) {
    app_event(*effects.gang, effects.reason, effects.message, effects.warning);
  }
}

void GangScheduler::app_recorded(const std::string& origin, const std::string& ns,
                                 const std::string& name, const std::string& kind) {
  std::lock_guard lock(mu_);
  placer_.recorded(book_, kind, origin, ns, name);
}

void GangScheduler::app_event(Gang& g, const std::string& reason, const std::string& message,
                              bool warning) {
  if (g.last_event == message) return;
  g.last_event = message;
  counters_.event_emitted();
  if (!actions_) return;
  Action a{ActionKind::kEvent, g.origin, g.ns, g.name, g.app_uid};
  a.object_kind = g.app_kind;
  a.reason = reason;
  a.message = message;
  a.warning = warning;
  actions_(std::move(a));
}

}  // namespace gleaner::scheduler::gang
