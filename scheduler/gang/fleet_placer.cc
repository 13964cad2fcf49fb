// The fleet placer (fleet_placer.h): placing a multi-cluster application into the member
// the core chose, a hub's reclaim, and the books of what to send or submit again. See
// docs/scheduler.md, "Multi-cluster placement".
#include "scheduler/gang/fleet_placer.h"

#include <cctype>
#include <iterator>

#include <spdlog/spdlog.h>

namespace gleaner::scheduler::gang {

std::string FleetPlacer::app_key(const std::string& kind, const std::string& cluster,
                                 const std::string& ns, const std::string& name) {
  return "app:" + cluster + "/" + ns + "/" + gang_name(kind, name);
}

std::string FleetPlacer::placed_key(const std::string& kind, const std::string& cluster,
                                    const std::string& ns, const std::string& name) {
  return cluster + "/" + ns + "/" + gang_name(kind, name);
}

const std::string* FleetPlacer::gang_of(const std::string& app) const {
  auto it = placed_.find(app);
  return it == placed_.end() ? nullptr : &it->second;
}

GangBook::const_iterator FleetPlacer::find(const GangBook& book, const std::string& kind,
                                           const std::string& cluster, const std::string& ns,
                                           const std::string& name) const {
  const std::string placed = placed_key(kind, cluster, ns, name);
  auto it = book.find(placed);
  if (it == book.end()) it = book.find(app_key(kind, cluster, ns, name));
  if (it == book.end()) {
    if (const std::string* elsewhere = gang_of(placed)) it = book.find(*elsewhere);
  }
  return it;
}

FleetPlacer::Effects FleetPlacer::place(GangBook& book, Scheduler& core, const std::string& key,
                                        JobId job, double now) {
  Effects out;
  auto it = book.find(key);
  if (it == book.end()) return out;
  const Job& j = core.job(job);
  const std::string target = core.clusters().cluster_name(*j.cluster);
  Gang g = book.take(it);
  const std::string placed = placed_key(g.app_kind, target, g.ns, g.name);
  if (book.contains(placed)) {
    // Another application of that name holds the key there (often the copy of an earlier
    // origin of this name, about to be deleted with it): the room goes back and the
    // application is submitted again after retry_seconds.
    if (Status s = core.withdraw(job); !s) spdlog::warn("{}", s.error().message);
    book.unlink_job(job);
    g.job.reset();
    resubmit_later(g, key, now);
    out.gang = &book.put(std::move(g));
    out.reason = "GleanerPending";
    out.message = "chosen member cluster " + target +
                  " still has another application of this name; placement tried again";
    return out;
  }
  // From now on the job stays in `target`: a reclaim re-queues it there, since the
  // application (or its copy) lives in that cluster now.
  if (Status s = core.set_node_selector(
          job, merge_selectors(g.selector, NodeSelector{{{kClusterLabel, target}}, {}}));
      !s) {
    spdlog::warn("{}", s.error().message);
  }
  std::string leader = g.app_kind == kSparkKind ? "driver" : j.roles.front().name;
  for (char& c : leader)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  g.app_message = "placed into member cluster " + target + " (" + leader + " on node " +
                  core.clusters().node(j.pods[0].node).name + ")" + core.skipped_clusters(job);
  g.cluster = target;
  g.key = placed;
  g.last_event.clear();
  record(placed_key(g.app_kind, g.origin, g.ns, g.name), placed);
  out.actions.push_back(send(book.put(std::move(g)), now));
  return out;
}

FleetPlacer::Effects FleetPlacer::return_to_hub(GangBook& book, Scheduler& core,
                                                const std::string& key, const std::string& reason) {
  Effects out;
  auto it = book.find(key);
  if (it == book.end() || !it->second.job) return out;
  Gang g = book.take(it);
  const std::string member = g.cluster;
  // The hub forgets the placement, then asks `member` to delete the copy: queued behind
  // any placement the hub link is still carrying out, so the copy's create (which that
  // placement forwards to the member) always comes before its delete.
  Action unplace{ActionKind::kUnplaceApp, g.origin, g.ns, g.name, g.app_uid};
  unplace.app_kind = g.app_kind;
  unplace.peer = member;
  unplace.message = "reclaimed: " + reason;
  out.actions.push_back(std::move(unplace));
  forget(placed_key(g.app_kind, g.origin, g.ns, g.name));
  // No longer pinned to the member: any member the policy allows may take it.
  if (Status s = core.set_node_selector(*g.job, g.selector); !s) {
    spdlog::warn("{}", s.error().message);
  }
  g.cluster.clear();
  g.key = app_key(g.app_kind, g.origin, g.ns, g.name);
  g.app_recorded = false;
  g.members.clear();
  g.waiting.clear();
  g.last_event.clear();
  out.gang = &book.put(std::move(g));
  out.reason = "GleanerReclaimed";
  out.message = "reclaimed from member cluster " + member + " (" + reason +
                "); its copy there is deleted and it is placed again";
  out.warning = true;
  return out;
}

std::pair<GangBook::iterator, FleetPlacer::Deleted> FleetPlacer::deleted(GangBook& book,
                                                                         const std::string& kind,
                                                                         const std::string& cluster,
                                                                         const std::string& ns,
                                                                         const std::string& name) {
  const std::string own = placed_key(kind, cluster, ns, name);
  auto it = book.find(app_key(kind, cluster, ns, name));
  if (const std::string* placed = gang_of(own)) {
    // Placed already. Released in its own cluster and still waiting for its driver:
    // that driver will not come, the room goes back. Copied elsewhere: the copy is an
    // application of that cluster now and keeps its room.
    it = book.find(*placed);
    forget(own);
    if (it == book.end()) return {it, Deleted::kKeep};
    // A hub's application is the hub object (its copy is deleted with it), and a placement
    // never recorded made no copy that could own the room: the job ends here, wherever it
    // stood, and nothing about it is retried or reclaimed later.
    const Gang& g = it->second;
    if (g.hub_origin || !g.app_recorded) return {it, Deleted::kEnd};
    if (g.cluster != cluster || !g.members.empty() || !g.waiting.empty()) {
      return {it, Deleted::kKeep};
    }
    return {it, Deleted::kWithdraw};
  }
  if (it != book.end()) return {it, Deleted::kWithdraw};  // queued, not placed yet
  it = book.find(own);
  if (it == book.end()) return {it, Deleted::kKeep};
  const Gang& g = it->second;
  if (g.replica_gang) return {it, Deleted::kOwnJob};
  // A copy made here for another cluster's application, deleted before its driver
  // came: its room goes back (once pods exist, they leave with their own deletion).
  if (g.origin.empty() || g.origin == cluster || !g.members.empty() || !g.waiting.empty()) {
    return {it, Deleted::kKeep};
  }
  // A hub's application is the hub object's: the copy deleted here may be the one a
  // reclaim retired (this gang is then its next placement), and a copy lost otherwise
  // is noticed by the driver start timeout, which places the application again.
  if (g.hub_origin) return {it, Deleted::kKeep};
  return {it, Deleted::kWithdraw};
}

Action FleetPlacer::send(Gang& g, double now) {
  sent(g, now);
  Action a{ActionKind::kPlaceApp, g.origin, g.ns, g.name, g.app_uid};
  a.app_kind = g.app_kind;
  a.target = g.cluster;
  a.message = g.app_message;
  return a;
}

void FleetPlacer::recorded(GangBook& book, const std::string& kind, const std::string& origin,
                           const std::string& ns, const std::string& name) const {
  const std::string* placed = gang_of(placed_key(kind, origin, ns, name));
  if (placed == nullptr) return;
  if (auto it = book.find(*placed); it != book.end()) it->second.app_recorded = true;
}

void FleetPlacer::sent(Gang& g, double now) {
  g.app_retry_at = now + retry_seconds_;
  retrying_.insert(g.key);
}

void FleetPlacer::resubmit_later(Gang& g, const std::string& key, double now) {
  g.resubmit_at = now + retry_seconds_;
  retrying_.insert(key);
}

FleetPlacer::Due FleetPlacer::due(const Gang& g, double now) {
  // A placement is complete once recorded on the origin (and, elsewhere, copied there):
  // every step of sending it is idempotent, so it is simply sent again until then.
  const bool unrecorded = !g.origin.empty() && !g.cluster.empty() && !g.app_recorded;
  Due d;
  d.send = unrecorded && now >= g.app_retry_at;
  d.resubmit = !g.job && g.resubmit_at > 0 && now >= g.resubmit_at;
  d.keep = unrecorded || (!g.job && g.resubmit_at > 0 && !d.resubmit);
  return d;
}

void FleetPlacer::retry_each(const std::function<bool(const std::string& key)>& retry) {
  for (auto it = retrying_.begin(); it != retrying_.end();) {
    if (retry(*it)) {
      ++it;
    } else {
      it = retrying_.erase(it);
    }
  }
}

std::vector<FleetPlacer::Retry> FleetPlacer::retries(GangBook& book, double now) {
  // Walked directly, not through retry_each: every pass asks, and a std::function over
  // these captures would allocate each time.
  std::vector<Retry> out;
  for (auto key = retrying_.begin(); key != retrying_.end();) {
    auto it = book.find(*key);
    if (it == book.end()) {
      key = retrying_.erase(key);
      continue;
    }
    Gang& g = it->second;
    const Due d = due(g, now);
    if (d.send || d.resubmit) {
      Retry& r = out.emplace_back();
      r.gang = &g;
      if (d.send) r.send = send(g, now);
      if (d.resubmit) {
        g.resubmit_at = 0;
        r.resubmit = true;
      }
    }
    key = d.keep ? std::next(key) : retrying_.erase(key);
  }
  return out;
}

}  // namespace gleaner::scheduler::gang
