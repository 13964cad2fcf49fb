// Multi-cluster SparkApplications in the live loop (see docs/scheduler.md, "Multi-cluster
// placement"). An application labelled gleaner.io/multi-cluster=true and created with
// spec.suspend=true is held by its own cluster's operator; here it becomes a core job
// before it has any pod. When the core admits it, the chosen cluster is recorded on the
// origin (annotation gleaner.io/placement) and, for another cluster, a copy is created
// there; the gang is then keyed and pinned like any gang of that cluster, and the driver
// pod the operator creates takes the room the core reserved.
#include <cctype>

#include <spdlog/spdlog.h>

#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::gang {

std::string GangScheduler::app_key(const std::string& kind, const std::string& cluster,
                                   const std::string& ns, const std::string& name) {
  return "app:" + cluster + "/" + ns + "/" + gang_name(kind, name);
}

std::string GangScheduler::placed_key(const std::string& kind, const std::string& cluster,
                                      const std::string& ns, const std::string& name) {
  return cluster + "/" + ns + "/" + gang_name(kind, name);
}

std::optional<JobId> GangScheduler::job_of(const std::string& cluster, const std::string& ns,
                                           const std::string& name, const std::string& kind) const {
  std::lock_guard lock(mu_);
  const std::string placed = placed_key(kind, cluster, ns, name);
  auto it = book_.find(placed);
  if (it == book_.end()) it = book_.find(app_key(kind, cluster, ns, name));
  if (it == book_.end()) {
    if (const std::string* elsewhere = placer_.gang_of(placed)) it = book_.find(*elsewhere);
  }
  if (it == book_.end()) return std::nullopt;
  return it->second.job;
}

void GangScheduler::observe_app(const AppView& app) {
  std::lock_guard lock(mu_);
  const std::string key = app_key(app.kind, app.cluster, app.ns, app.name);
  auto it = book_.find(key);
  if (!app.placement.empty()) {
    // Decided (by us before a restart, or it is a copy we made): nothing to place.
    return;
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
  if (placer_.placed(placed_key(app.kind, app.cluster, app.ns, app.name))) return;
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
  auto it = book_.find(app_key(kind, cluster, ns, name));
  if (const std::string* placed = placer_.gang_of(placed_key(kind, cluster, ns, name))) {
    // Placed already. Released in its own cluster and still waiting for its driver:
    // that driver will not come, the room goes back. Copied elsewhere: the copy is an
    // application of that cluster now and keeps its room.
    it = book_.find(*placed);
    placer_.forget(placed_key(kind, cluster, ns, name));
    if (it == book_.end()) return;
    // A hub's application is the hub object (its copy is deleted with it), and a placement
    // never recorded made no copy that could own the room: the job ends here, wherever it
    // stood, and nothing about it is retried or reclaimed later.
    if (it->second.hub_origin || !it->second.app_recorded) return end_app_gang(it);
    if (it->second.cluster != cluster || !it->second.members.empty() ||
        !it->second.waiting.empty()) {
      return;
    }
  }
  if (it == book_.end()) {
    it = book_.find(placed_key(kind, cluster, ns, name));
    if (it != book_.end() && it->second.replica_gang) {
      // A cluster's own training job deleted: its queued or held room goes now (its
      // pods, if any, are deleted with it and hold nothing more).
      Gang& g = it->second;
      if (g.job && !job_over(*g.job)) {
        if (Status s = core_.withdraw(*g.job); !s) spdlog::warn("{}", s.error().message);
      }
      if (g.members.empty() && g.waiting.empty()) book_.remove(it);
      return;
    }
    // A copy made here for another cluster's application, deleted before its driver
    // came: its room goes back (once pods exist, they leave with their own deletion).
    if (it == book_.end() || it->second.origin.empty() || it->second.origin == cluster ||
        !it->second.members.empty() || !it->second.waiting.empty()) {
      return;
    }
    // A hub's application is the hub object's: the copy deleted here may be the one a
    // reclaim retired (this gang is then its next placement), and a copy lost otherwise
    // is noticed by the driver start timeout, which places the application again.
    if (it->second.hub_origin) return;
  }
  if (it->second.job && core_.job(*it->second.job).phase != JobPhase::kCompleted &&
      core_.job(*it->second.job).phase != JobPhase::kWithdrawn) {
    if (Status s = core_.withdraw(*it->second.job); !s) spdlog::warn("{}", s.error().message);
  }
  book_.remove(it);
}

void GangScheduler::end_app_gang(GangBook::iterator it) {
  Gang& g = it->second;
  if (g.job && !job_over(*g.job)) {
    if (Status s = core_.withdraw(*g.job); !s) spdlog::warn("{}", s.error().message);
  }
  release_pods(g);
  book_.remove(it);
}

void GangScheduler::place_app(const std::string& key, JobId job) {
  auto it = book_.find(key);
  if (it == book_.end()) return;
  const Job& j = core_.job(job);
  const std::string target = core_.clusters().cluster_name(*j.cluster);
  Gang g = book_.take(it);
  const std::string placed = placed_key(g.app_kind, target, g.ns, g.name);
  if (book_.contains(placed)) {
    // Another application of that name holds the key there (often the copy of an earlier
    // origin of this name, about to be deleted with it): the room goes back and the
    // application is submitted again after app_retry_seconds.
    if (Status s = core_.withdraw(job); !s) spdlog::warn("{}", s.error().message);
    book_.unlink_job(job);
    g.job.reset();
    placer_.resubmit_later(g, key, steady_s());
    Gang& back = book_.put(std::move(g));
    app_event(back, "GleanerPending",
              "chosen member cluster " + target +
                  " still has another application of this name; placement tried again",
              false);
    return;
  }
  // From now on the job stays in `target`: a reclaim re-queues it there, since the
  // application (or its copy) lives in that cluster now.
  if (Status s = core_.set_node_selector(
          job, merge_selectors(g.selector, NodeSelector{{{kClusterLabel, target}}, {}}));
      !s) {
    spdlog::warn("{}", s.error().message);
  }
  std::string leader = g.app_kind == kSparkKind ? "driver" : j.roles.front().name;
  for (char& c : leader)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  g.app_message = "placed into member cluster " + target + " (" + leader + " on node " +
                  core_.clusters().node(j.pods[0].node).name + ")" + core_.skipped_clusters(job);
  g.cluster = target;
  g.key = placed;
  g.last_event.clear();
  placer_.record(placed_key(g.app_kind, g.origin, g.ns, g.name), placed);
  send_place_app(book_.put(std::move(g)));
}

void GangScheduler::return_to_hub(const std::string& key, const Decision& d) {
  auto it = book_.find(key);
  if (it == book_.end() || !it->second.job) return;
  Gang g = book_.take(it);
  const std::string member = g.cluster;
  if (actions_) {
    // The hub forgets the placement, then asks `member` to delete the copy: queued behind
    // any placement the hub link is still carrying out, so the copy's create (which that
    // placement forwards to the member) always comes before its delete.
    Action unplace{ActionKind::kUnplaceApp, g.origin, g.ns, g.name, g.app_uid};
    unplace.app_kind = g.app_kind;
    unplace.peer = member;
    unplace.message = "reclaimed: " + d.reason;
    actions_(std::move(unplace));
  }
  placer_.forget(placed_key(g.app_kind, g.origin, g.ns, g.name));
  // No longer pinned to the member: any member the policy allows may take it.
  if (Status s = core_.set_node_selector(*g.job, g.selector); !s)
    spdlog::warn("{}", s.error().message);
  g.cluster.clear();
  g.key = app_key(g.app_kind, g.origin, g.ns, g.name);
  g.app_recorded = false;
  g.members.clear();
  g.waiting.clear();
  g.last_event.clear();
  Gang& back = book_.put(std::move(g));
  app_event(back, "GleanerReclaimed",
            "reclaimed from member cluster " + member + " (" + d.reason +
                "); its copy there is deleted and it is placed again",
            true);
}

void GangScheduler::send_place_app(Gang& g) {
  placer_.sent(g, steady_s());
  if (!actions_) return;
  Action a{ActionKind::kPlaceApp, g.origin, g.ns, g.name, g.app_uid};
  a.app_kind = g.app_kind;
  a.target = g.cluster;
  a.message = g.app_message;
  actions_(std::move(a));
}

bool GangScheduler::retry_app_placement(Gang& g, double now) {
  const FleetPlacer::Due due = FleetPlacer::due(g, now);
  if (due.send) send_place_app(g);
  if (due.resubmit) {
    g.resubmit_at = 0;
    submit(g, g.app_shape, g.app_priority, g.app_queue);
  }
  return due.keep;
}

void GangScheduler::app_recorded(const std::string& origin, const std::string& ns,
                                 const std::string& name, const std::string& kind) {
  std::lock_guard lock(mu_);
  const std::string* placed = placer_.gang_of(placed_key(kind, origin, ns, name));
  if (placed == nullptr) return;
  if (auto it = book_.find(*placed); it != book_.end()) it->second.app_recorded = true;
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
