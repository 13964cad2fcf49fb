// Gangs found partly bound. A scheduler process that stopped (SIGKILL, SIGTERM, a lost
// Lease) in the middle of a gang left some of its pods bound and the rest pending; the next
// process knows only what the API server holds. Its pods arrive bound before this process
// placed anything: each such pod of ours joins its gang as found (holding its room on its
// node meanwhile), and the gang is resumed around them once their nodes have reported and
// the rest fits: the bound pods keep their nodes, the pending ones and those not created
// yet get room reserved, and the job goes on as if this process had admitted it. A gang
// that cannot be finished within the reservation TTL is released: its bound pods are
// deleted, so that it is placed again whole instead of holding half its room for good
// (the deadlock gangs exist to prevent).
#include <algorithm>

#include <spdlog/spdlog.h>

#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::gang {

void GangScheduler::adopt_bound(Tracked& t) {
  const PodView& v = t.view;
  if (v.role == PodRole::kNone || t.deleting || terminal_phase(v.phase)) return;
  Gang& g = gang_of_pod(v);
  if (g.job) {
    // Queued by its pending pods before this bound one was seen (the order of the
    // informer's list), nothing of it placed: the gang is rebuilt around its bound pods
    // instead. One this process placed: the pod is one of its own next to it.
    const bool queued_only = (v.role == PodRole::kReplica || v.role == PodRole::kMember) &&
                             core_.job(*g.job).phase == JobPhase::kPending;
    if (!queued_only || !core_.withdraw(*g.job)) return;
    book_.unlink_job(*g.job);
    g.job.reset();
    for (const auto& [index, uid] : g.members) {
      if (auto p = pods_.find(uid); p != pods_.end()) p->second.index = -1;
      wait_in(g, uid);
    }
    g.members.clear();
  }
  if (v.role == PodRole::kMember) {
    g.pod_group = true;
    g.min_available = std::max(g.min_available, v.min_available);
  }
  if (v.role == PodRole::kReplica) {
    g.replica_gang = true;
    g.app_kind = v.gang.substr(0, v.gang.find(':'));
  }
  if (!g.recovering) {
    g.recovering = true;
    g.partial_since = steady_s();
    g.last_event.clear();
  }
  g.adopted.insert(v.uid);
  book_.watch(GangBook::List::kRecovering, g.key);
}

void GangScheduler::recover_gangs() {
  if (book_.watched(GangBook::List::kRecovering).empty()) return;
  const double now = steady_s();
  const auto ttl = core_.policy().reservation_ttl_seconds;
  book_.visit(GangBook::List::kRecovering, [&](GangBook::iterator g) {
    Gang& gang = g->second;
    bool over = !gang.recovering || resume_gang(gang);
    if (!over && now - gang.partial_since >= static_cast<double>(ttl)) {
      release_recovering(gang,
                         "found partly bound after a scheduler restart and not completed "
                         "within the reservation TTL (" +
                             std::to_string(ttl) +
                             "s): its bound pods are deleted so that it is placed again "
                             "whole");
      over = true;
    }
    if (!over) return true;
    if (!gang.job && gang.members.empty() && gang.waiting.empty()) book_.erase(g);
    return false;
  });
}

bool GangScheduler::resume_gang(Gang& g) {
  auto end_recovery = [&g] {
    g.recovering = false;
    g.adopted.clear();
    g.partial_since = 0;
  };
  // Its leader came back pending (its owner re-created it): a new run, queued the ordinary
  // way; the old run's bound pods stay pods of their own until they go.
  if (g.job) {
    end_recovery();
    return true;
  }
  std::vector<Tracked*> bound;
  for (const std::string& uid : g.adopted) {
    auto p = pods_.find(uid);
    if (p != pods_.end() && p->second.gang.empty() && !p->second.deleting &&
        !p->second.view.node.empty()) {
      bound.push_back(&p->second);
    }
  }
  if (bound.empty()) {
    // Every bound pod went meanwhile: the pending ones are an ordinary gang again.
    end_recovery();
    if (!g.waiting.empty()) {
      if (auto p = pods_.find(*g.waiting.begin()); p != pods_.end())
        observe_ours_unbound(p->second);
    }
    return true;
  }
  std::sort(bound.begin(), bound.end(),
            [](const Tracked* a, const Tracked* b) { return a->view.name < b->view.name; });
  std::vector<Tracked*> pending;
  for (const std::string& uid : g.waiting)
    if (auto p = pods_.find(uid); p != pods_.end()) pending.push_back(&p->second);

  // Which pod is which in the job: index -> pod, bound or (a pod group's) pending.
  std::map<int, Tracked*> at;
  GangShape shape;
  const PodView* voice = &bound.front()->view;
  if (g.pod_group) {
    std::vector<Tracked*> members = bound;
    members.insert(members.end(), pending.begin(), pending.end());
    if (static_cast<int>(members.size()) < std::max(1, g.min_available)) return false;
    if (!pod_group_shape(g, members, shape)) return false;
    for (size_t i = 0; i < members.size(); ++i)
      at[static_cast<int>(i)] = members[i];
    voice = &members.front()->view;
  } else if (g.replica_gang) {
    auto with_roles = std::find_if(bound.begin(), bound.end(),
                                   [](const Tracked* p) { return p->view.shape.has_value(); });
    if (with_roles == bound.end()) return false;  // its job not read yet
    shape = *(*with_roles)->view.shape;
    voice = &(*with_roles)->view;
    g.selector = (*with_roles)->view.selector;
    for (const RoleSpec& r : shape.roles)
      if (r.selector) g.selector = merge_selectors(std::move(g.selector), *r.selector);
    for (Tracked* p : bound) {
      const int index = replica_slot(shape.roles, p->view);
      if (index >= 0 && !at.contains(index)) at[index] = p;
    }
  } else {
    auto driver = std::find_if(bound.begin(), bound.end(),
                               [](const Tracked* p) { return p->view.role == PodRole::kDriver; });
    // Executors without their driver: it may still be listed; else they wait for the TTL.
    if (driver == bound.end() || !(*driver)->view.shape) return false;
    const PodView& d = (*driver)->view;
    shape = driver_shape(d, *d.shape);
    voice = &d;
    g.selector = d.selector;
    at[0] = *driver;
    int next = 1;
    for (Tracked* p : bound) {
      if (p->view.role == PodRole::kExecutor && next <= shape.executors) at[next++] = p;
    }
  }
  // Bound pods hold their room where they are: every one's node must be known (reported).
  std::map<int, NodeId> placed;
  for (const auto& [index, p] : at) {
    if (p->view.node.empty()) continue;
    auto node = core_node(p->view.cluster, p->view.node);
    if (!node) return false;
    placed[index] = *node;
  }
  if (placed.empty()) return false;
  const int64_t now = now_s();
  auto id = core_.resume(job_spec(g, shape, voice->priority, voice->queue), placed, now);
  Tracked& speaker = pods_[voice->uid];
  if (!id) {
    event(speaker,
          id.error().code == ErrorCode::kUnavailable ? "GleanerRecovering" : "GleanerInvalid",
          "found partly bound after a scheduler restart (" + std::to_string(placed.size()) +
              " pods bound): " + id.error().message,
          id.error().code != ErrorCode::kUnavailable);
    return false;
  }
  g.job = *id;
  book_.link_job(*id, g.key);
  end_recovery();
  counters_.gang_recovered("resumed");
  for (const auto& [index, p] : at) {
    release_loose(*p);
    p->gang = g.key;
    p->index = index;
    g.members[index] = p->view.uid;
    g.waiting.erase(p->view.uid);
    track_regular(*p);  // now the job's: not counted on its node a second time
    if (!p->view.node.empty() && p->view.phase == "Running") core_.pod_running(*id, index, now);
  }
  event(speaker, "GleanerResumed",
        "found partly bound after a scheduler restart: " + std::to_string(placed.size()) +
            " bound pods keep their nodes, the others get room reserved around them",
        false);
  // The pending pods take the room just reserved for them.
  for (const auto& [index, p] : at)
    if (p->view.node.empty()) bind_member(g, index);
  if (g.replica_gang) {
    attach_waiting_replicas(g);
  } else {
    attach_waiting(g);
  }
  return true;
}

void GangScheduler::release_recovering(Gang& g, const std::string& why) {
  for (const std::string& uid : g.adopted) {
    auto p = pods_.find(uid);
    if (p == pods_.end() || !p->second.gang.empty() || p->second.view.node.empty()) continue;
    Tracked& t = p->second;
    event(t, "GleanerReleased", why, true);
    hold_while_terminating(t);  // its room is held until it is gone, not released now
    if (actions_)
      actions_(Action{ActionKind::kDelete, t.view.cluster, t.view.ns, t.view.name, uid});
  }
  g.recovering = false;
  g.adopted.clear();
  g.partial_since = 0;
  counters_.gang_recovered("released");
}

bool GangScheduler::pod_group_shape(Gang& g, std::vector<Tracked*>& members, GangShape& shape) {
  // Pod 0 is the first member by name; the others share the largest member's size.
  std::sort(members.begin(), members.end(),
            [](const Tracked* a, const Tracked* b) { return a->view.name < b->view.name; });
  shape = GangShape{members[0]->view.request, {}, static_cast<int>(members.size()) - 1};
  // One selector for the whole gang: every member's must hold.
  g.selector = {};
  for (const Tracked* m : members) {
    if (!m->view.selector_error.empty()) {
      event(*members[0], "GleanerUnsupportedAffinity",
            "member " + m->view.name + ": " + m->view.selector_error, true);
      return false;
    }
    g.selector = merge_selectors(std::move(g.selector), m->view.selector);
  }
  shape.driver_regular = members[0]->view.regular;
  for (size_t i = 1; i < members.size(); ++i) {
    const PodView& m = members[i]->view;
    shape.executor.cpu_milli = std::max(shape.executor.cpu_milli, m.request.cpu_milli);
    shape.executor.memory_bytes = std::max(shape.executor.memory_bytes, m.request.memory_bytes);
    shape.executor_regular.cpu_milli =
        std::max(shape.executor_regular.cpu_milli, m.regular.cpu_milli);
    shape.executor_regular.memory_bytes =
        std::max(shape.executor_regular.memory_bytes, m.regular.memory_bytes);
    shape.executor_regular.gpus = std::max(shape.executor_regular.gpus, m.regular.gpus);
  }
  return true;
}

GangShape GangScheduler::driver_shape(const PodView& v, const GangShape& app) {
  GangShape shape = app;
  if (v.regular.cpu_milli != 0 || v.regular.memory_bytes != 0) {
    // A driver that kept its cpu/memory requests: Spark gives its executors the same
    // treatment, cpu/memory from the application's sizing (GPUs stay as sized).
    const int64_t executor_gpus = shape.executor_regular.gpus;
    shape.driver_regular = v.regular;
    shape.executor_regular = shape.executor;
    shape.executor_regular.gpus = executor_gpus;
  }
  shape.driver_regular.gpus = std::max(shape.driver_regular.gpus, v.regular.gpus);
  return shape;
}

void GangScheduler::partial_gauges(StateGauges& out) const {
  const double now = steady_s();
  std::set<std::string> partial;
  auto count = [&](const std::string& key, double since) {
    partial.insert(key);
    out.oldest_partial_gang_seconds = std::max(out.oldest_partial_gang_seconds, now - since);
  };
  for (const std::string& key : book_.watched(GangBook::List::kRecovering)) {
    auto g = book_.find(key);
    if (g != book_.end() && g->second.recovering) count(key, g->second.partial_since);
  }
  for (const auto& [uid, retry] : bind_retries_) {
    auto p = pods_.find(uid);
    if (p == pods_.end() || retry.failures == 0) continue;
    count(p->second.gang.empty() ? uid : p->second.gang, retry.first_failed);
  }
  out.partial_gangs = static_cast<int64_t>(partial.size());
}

}  // namespace gleaner::scheduler::gang
