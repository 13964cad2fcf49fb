#include "scheduler/gang/gang_scheduler.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace gleaner::scheduler::gang {

Result<std::unique_ptr<GangScheduler>> GangScheduler::create(GangOptions options,
                                                             const std::vector<QueueSpec>& queues,
                                                             const Clock& clock,
                                                             GangCounters& counters) {
  auto tree = QuotaTree::build(queues);
  if (!tree) return tree.error();
  ClusterState clusters;
  for (const auto& c : options.clusters)
    clusters.add_cluster(c);
  Scheduler core(options.policy, std::move(*tree), std::move(clusters));
  return std::unique_ptr<GangScheduler>(
      new GangScheduler(std::move(options), std::move(core), clock, counters));
}

GangScheduler::GangScheduler(GangOptions options, Scheduler core, const Clock& clock,
                             GangCounters& counters)
    : options_(std::move(options)), clock_(clock), counters_(counters), core_(std::move(core)) {}

Status GangScheduler::set_quotas(const std::vector<QueueSpec>& queues,
                                 std::optional<Resources> root_max,
                                 std::map<std::string, std::string> namespace_queue) {
  auto tree = QuotaTree::build(queues, root_max);
  if (!tree) return tree.error();
  std::lock_guard lock(mu_);
  // Jobs that named no queue belong to their namespace's leaf as the new tree has it (a job
  // admitted before any tree existed leaves `default` for its team's queue).
  std::map<JobId, std::string> moves;
  for (const auto& [key, g] : book_) {
    if (!g.job || !g.named_queue.empty()) continue;
    auto q = namespace_queue.find(g.ns);
    moves[*g.job] = q != namespace_queue.end() ? q->second : "";
  }
  core_.replace_quotas(std::move(*tree), moves);
  namespace_queue_ = std::move(namespace_queue);
  return ok_status();
}

void GangScheduler::set_sinks(ActionSink actions, NodeSink nodes) {
  std::lock_guard lock(mu_);
  actions_ = std::move(actions);
  nodes_ = std::move(nodes);
}

int64_t GangScheduler::now_s() const {
  return std::chrono::duration_cast<std::chrono::seconds>(clock_.wall_now().time_since_epoch())
      .count();
}

double GangScheduler::steady_s() const {
  return std::chrono::duration<double>(clock_.now().time_since_epoch()).count();
}

std::optional<std::string> GangScheduler::cluster_of(const std::string& reported) const {
  if (options_.clusters.empty()) return reported.empty() ? kDefaultCluster : reported;
  // One managed cluster: agents that do not name theirs belong to it.
  if (reported.empty() && options_.clusters.size() == 1) return options_.clusters.front();
  for (const auto& c : options_.clusters)
    if (c == reported) return c;
  return std::nullopt;
}

std::optional<NodeId> GangScheduler::core_node(const std::string& cluster,
                                               const std::string& node) const {
  return core_.clusters().find_node(core_name(cluster, node));
}

void GangScheduler::observe_pod(const PodView& pod) {
  if (terminal_phase(pod.phase)) return forget_pod(pod);
  std::lock_guard lock(mu_);
  if (forgotten_.contains(pod.uid)) return;  // a stale copy of a pod already gone
  const bool first_seen = !pods_.contains(pod.uid);
  Tracked& t = pods_[pod.uid];
  const bool was_bound = !t.view.node.empty();
  // spec.nodeName is set once, by the binding, and never cleared (the API server refuses
  // a second binding and any update of it): a copy without it after one with it is an older
  // snapshot (another thread's re-feed), not news.
  if (was_bound && pod.node.empty()) return;
  t.view = pod;
  adopt_bound_elsewhere(t);
  track_regular(t);
  if (!t.gang.empty() && !book_.contains(t.gang)) {
    // Its gang ended while it waited (its run was over): it is a pod of its own again.
    t.gang.clear();
    t.index = -1;
  }
  if (!t.gang.empty()) {
    auto g = book_.find(t.gang);
    if (g->second.job && t.index >= 0 && !pod.node.empty() && pod.phase == "Running") {
      core_.pod_running(*g->second.job, t.index, now_s());
    }
    // Evicted, and still terminating: the job keeps off that node from now on, not only
    // once the pod is gone (Spark asks for the replacement while the victim still runs).
    if (g->second.job && t.index >= 0 && pod.evicted && !t.eviction_noted) {
      t.eviction_noted = true;
      (void)core_.note_eviction(*g->second.job, t.index, now_s());
    }
    if (t.index < 0 && pod.node.empty()) observe_ours_unbound(t);
    return;
  }
  if (!pod.node.empty()) {
    // First seen bound, ours: an earlier process bound it (a restart, a failover).
    if (first_seen && pod.ours) adopt_bound(t);
    track_loose(t);  // once: the core counts its room once per pod
    return;
  }
  if (pod.ours) observe_ours_unbound(t);
}

Gang& GangScheduler::gang_of_pod(const PodView& v) {
  const std::string name = v.gang.empty() ? v.name : v.gang;
  const std::string key = v.cluster + "/" + v.ns + "/" + name;
  Gang& g = book_[key];
  if (g.key.empty()) {
    g.key = key;
    g.cluster = v.cluster;
    g.ns = v.ns;
    g.name = name;
    g.first_seen = steady_s();
  }
  return g;
}

void GangScheduler::observe_ours_unbound(Tracked& t) {
  const PodView& v = t.view;
  if (v.role == PodRole::kReplica) return observe_replica(t);
  Gang& g = gang_of_pod(v);
  t.gang = g.key;
  switch (v.role) {
    case PodRole::kReplica:
      return;  // observe_replica, above
    case PodRole::kExecutor:
      wait_in(g, v.uid);
      if (g.job) attach_waiting(g);
      return;
    case PodRole::kMember: {
      g.pod_group = true;
      g.min_available = std::max(g.min_available, v.min_available);
      wait_in(g, v.uid);
      // Found partly bound after a restart: resumed around its bound members instead.
      if (g.job || g.recovering ||
          static_cast<int>(g.waiting.size()) < std::max(1, g.min_available))
        return;
      std::vector<Tracked*> members;
      for (const auto& uid : g.waiting)
        members.push_back(&pods_[uid]);
      GangShape shape;
      if (!pod_group_shape(g, members, shape)) return;
      for (size_t i = 0; i < members.size(); ++i) {
        members[i]->index = static_cast<int>(i);
        g.members[static_cast<int>(i)] = members[i]->view.uid;
        g.waiting.erase(members[i]->view.uid);
      }
      submit(g, shape, v.priority, v.queue);
      return;
    }
    case PodRole::kDriver:
    case PodRole::kNone: {
      if (g.job && job_over(*g.job) && (!g.members.contains(0) || g.members[0] != v.uid)) {
        start_new_run(g);  // the owner's retry of an application that ended
      }
      auto driver = g.members.find(0);
      if (driver != g.members.end() && driver->second != v.uid) {
        event(t, "GleanerDuplicateDriver", "application already has driver pod", true);
        return;
      }
      if (g.job && core_.job(*g.job).phase == JobPhase::kPending) {
        // A re-created driver of a reclaimed application keeps its place in the queue.
        t.index = 0;
        g.members[0] = v.uid;
        return;
      }
      if (g.job && !g.origin.empty() && driver == g.members.end() &&
          core_.job(*g.job).phase == JobPhase::kAdmitted) {
        // The driver of a multi-cluster application, created by the operator once the
        // application was released or copied here: it takes the room admitted for it.
        t.index = 0;
        g.members[0] = v.uid;
        bind_member(g, 0);
        attach_waiting(g);
        return;
      }
      if (g.job) return;
      if (!v.selector_error.empty()) {
        event(t, "GleanerUnsupportedAffinity", v.selector_error, true);
        t.gang.clear();
        return;
      }
      if (v.role == PodRole::kDriver && !v.shape) {
        event(t, "GleanerWaiting", v.waiting_for, false);
        t.gang.clear();
        return;
      }
      t.index = 0;
      g.members[0] = v.uid;
      g.selector = v.selector;
      submit(g, driver_shape(v, v.shape.value_or(GangShape{v.request, {}, 0})), v.priority,
             v.queue);
      return;
    }
  }
}

void GangScheduler::start_new_run(Gang& g) {
  release_pods(g);
  book_.unlink_job(*g.job);
  g.job.reset();
  g.first_seen = steady_s();
  g.last_event.clear();
}

void GangScheduler::release_pods(Gang& g) {
  // The pods of a run that ended hold no room in its job any more; those still bound
  // count on their nodes until they go.
  for (const std::string& uid : g.waiting) {
    if (auto p = pods_.find(uid); p != pods_.end()) p->second.gang.clear();
  }
  for (const auto& [index, uid] : g.members) {
    auto p = pods_.find(uid);
    if (p == pods_.end()) continue;
    p->second.gang.clear();
    p->second.index = -1;
    track_loose(p->second);
    track_regular(p->second);
  }
  g.members.clear();
  g.waiting.clear();
}

void GangScheduler::submit(Gang& g, const GangShape& shape, int32_t priority,
                           const std::string& queue) {
  auto id = core_.submit(job_spec(g, shape, priority, queue));
  if (!id) {
    if (Tracked* d = voice_of(g)) event(*d, "GleanerInvalid", id.error().message, true);
    if (!g.origin.empty() && g.cluster.empty()) {
      app_event(g, "GleanerInvalid", id.error().message, true);
    }
    return;
  }
  g.job = *id;
  book_.link_job(*id, g.key);
}

JobSpec GangScheduler::job_spec(Gang& g, const GangShape& shape, int32_t priority,
                                const std::string& queue) {
  JobSpec spec;
  // Unique across gangs' lifetimes: an application re-created under the same name after
  // its gang was forgotten must not collide with the old job's name in the core.
  spec.name = g.key + "#" + std::to_string(++submissions_);
  spec.queue = queue;
  g.named_queue = queue;
  if (queue.empty())
    if (auto q = namespace_queue_.find(g.ns); q != namespace_queue_.end()) spec.queue = q->second;
  spec.priority = priority;
  spec.submit_time = now_s();
  if (shape.roles.empty()) {
    spec.driver = shape.driver;
    spec.executor = shape.executor;
    spec.executors = shape.executors;
    spec.driver_regular = shape.driver_regular;
    spec.executor_regular = shape.executor_regular;
  } else {
    spec.roles = shape.roles;
    spec.kind = g.app_kind;
  }
  // Pinned to the cluster its pods were created in: a bound pod cannot change cluster.
  // A multi-cluster application not placed yet may go to any member, its own first.
  spec.node_selector =
      g.cluster.empty()
          ? g.selector
          : merge_selectors(g.selector, NodeSelector{{{kClusterLabel, g.cluster}}, {}});
  spec.preferred_cluster = g.origin;
  if (g.cluster.empty()) spec.allowed_clusters = g.app_allowed;
  spec.back_off_without_alternative = g.hub_origin;
  return spec;
}

GangScheduler::Tracked* GangScheduler::driver_of(Gang& g) {
  auto it = g.members.find(0);
  if (it == g.members.end()) return nullptr;
  auto p = pods_.find(it->second);
  return p == pods_.end() ? nullptr : &p->second;
}

GangScheduler::Tracked* GangScheduler::voice_of(Gang& g) {
  if (Tracked* d = driver_of(g)) return d;
  if (!g.replica_gang || g.waiting.empty()) return nullptr;
  auto p = pods_.find(*g.waiting.begin());
  return p == pods_.end() ? nullptr : &p->second;
}

void GangScheduler::event(Tracked& t, const std::string& reason, const std::string& message,
                          bool warning) {
  if (t.last_event == reason + message) return;
  t.last_event = reason + message;
  counters_.event_emitted();
  if (!actions_) return;
  Action a{ActionKind::kEvent, t.view.cluster, t.view.ns, t.view.name, t.view.uid};
  a.reason = reason;
  a.message = message;
  a.warning = warning;
  actions_(std::move(a));
}

void GangScheduler::forget_pod(const PodView& pod) {
  std::lock_guard lock(mu_);
  if (!pod.uid.empty() && forgotten_.insert(pod.uid).second) {
    forgotten_order_.push_back(pod.uid);
    // Bounded: a stale copy arrives within one informer resync, long before this many
    // later pods have gone.
    constexpr size_t kRemembered = 65536;
    if (forgotten_order_.size() > kRemembered) {
      forgotten_.erase(forgotten_order_.front());
      forgotten_order_.pop_front();
    }
  }
  auto it = pods_.find(pod.uid);
  if (it == pods_.end()) return;
  Tracked t = std::move(it->second);
  pods_.erase(it);
  // A pod we deleted is gone at last: the room it held goes to whoever waited for it now,
  // not at the next pass.
  const bool held_as_victim = t.deleting && core_.foreign_pod_node(t.view.uid).has_value();
  release_loose(t);
  release_regular(t);
  if (held_as_victim) return place_waiting();
  auto g = book_.find(t.gang);
  if (g == book_.end()) return;
  Gang& gang = g->second;
  gang.waiting.erase(pod.uid);
  if (auto m = gang.members.find(t.index); m != gang.members.end() && m->second == pod.uid) {
    gang.members.erase(m);
  }
  if (gang.job && t.index >= 0) {
    const Job& j = core_.job(*gang.job);
    const bool active = j.phase == JobPhase::kAdmitted || j.phase == JobPhase::kRunning;
    // Evicted (the node's batch capacity no longer held it): the job keeps off that node
    // until its room has come back and held, wherever its pods go next.
    if (active && (pod.evicted || t.view.evicted) && !t.eviction_noted)
      (void)core_.note_eviction(*gang.job, t.index, now_s());
    const bool leader = t.index == 0;
    // A cluster's own training job whose leader went before it ended (evicted, deleted) is
    // lost, not over: its operator re-creates it, and the whole job is queued and placed
    // again (the last branch).
    const bool leader_ends_job = leader && !(gang.replica_gang && !terminal_phase(pod.phase));
    if (!active) {
      // Nothing holds room for it.
    } else if (leader_ends_job) {
      // The driver is gone (finished, failed or deleted): so is the application.
      core_.complete(*gang.job, now_s());
    } else if (!leader && t.view.role == PodRole::kExecutor) {
      // Spark deletes its own executors (scale-down, failure, the end of the application)
      // and asks for replacements: the application goes on, and the room stays with it for
      // the executor that comes next.
      (void)core_.executor_gone(*gang.job, t.index, now_s());
      event_gone_executor(gang, pod.name);
      attach_waiting(gang);
    } else if (!leader && t.view.role == PodRole::kReplica) {
      // The training operator re-creates a failed replica (its restartPolicy): the room
      // stays with the job for the pod of that role and index.
      (void)core_.executor_gone(*gang.job, t.index, now_s());
    } else if (pod.phase != "Succeeded") {
      handle({core_.lose_pod(*gang.job, now_s(), "pod " + pod.name + " was lost")});
    }
  }
  if (gang.members.empty() && gang.waiting.empty() && (!gang.job || job_over(*gang.job))) {
    book_.remove(g);
  }
}

void GangScheduler::report_steered() {
  for (const SteeredPlacement& s : core_.take_steered()) {
    counters_.placement_steered_away();
    const std::string* key = book_.key_of_job(s.job);
    if (key == nullptr) continue;
    auto g = book_.find(*key);
    if (g == book_.end()) continue;
    Tracked* t = nullptr;
    if (!s.pod_key.empty()) {
      if (auto p = pods_.find(s.pod_key); p != pods_.end()) t = &p->second;
    } else if (auto m = g->second.members.find(s.pod_index); m != g->second.members.end()) {
      if (auto p = pods_.find(m->second); p != pods_.end()) t = &p->second;
    }
    if (t == nullptr) t = voice_of(g->second);
    if (t != nullptr) event(*t, "GleanerAvoidedNode", s.message, false);
  }
}

void GangScheduler::event_gone_executor(Gang& g, const std::string& executor) {
  if (Tracked* d = driver_of(g)) {
    event(*d, "GleanerExecutorGone",
          "executor " + executor +
              " went; its room stays with the application for a replacement, if Spark asks for one",
          false);
  }
}

}  // namespace gleaner::scheduler::gang
