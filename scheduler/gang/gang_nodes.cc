// Node reports, Node labels and node health in the live loop: what the agents report
// becomes the core's batch capacity and the value published on the Node; what the Node
// informer sees becomes the labels node selectors match.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::gang {

std::optional<ReportRefusal> GangScheduler::apply_report(const reporter::NodeReport& report) {
  std::lock_guard lock(mu_);
  auto cluster = cluster_of(report.cluster);
  if (!cluster) return ReportRefusal::kUnknownCluster;
  const int64_t now = now_s();
  Resources batch;
  if (report.batch_allocatable) {
    batch =
        Resources{report.batch_allocatable->cpu_millicores, report.batch_allocatable->memory_bytes};
  }
  const std::string name = core_name(*cluster, report.node);
  batch_reported_[name] = batch;
  if (options_.require_node_objects && !batch_shown_.contains(name)) note_unknown_node(name);
  const Resources placeable = placeable_batch(name, batch);
  if (auto id = core_.clusters().find_node(name)) {
    const NodeHealth before = core_.clusters().node(*id).health;
    const int64_t last_report = core_.clusters().node(*id).reported_at;
    auto decisions = core_.report_node(*id, placeable, now);
    if (decisions) handle(*decisions);
    // Once per transition, as tick() logs the way down.
    const Node& n = core_.clusters().node(*id);
    if (before != NodeHealth::kFresh && n.health == NodeHealth::kFresh)
      spdlog::info("{}", health_change_message(n, before, last_report, now, options_.staleness));
  } else {
    NodeInfo info{name, *cluster, node_labels(*cluster, report.node), placeable};
    if (auto t = node_taints_.find(name); t != node_taints_.end()) info.taints = t->second;
    if (auto added = core_.upsert_node(info, now); !added) {
      spdlog::warn("report for node {}: {}", report.node, added.error().message);
      return ReportRefusal::kUnknownCluster;
    }
    // Pods bound there before the node's first report now take their room.
    for (auto& [uid, t] : pods_)
      if (t.view.cluster == *cluster && t.view.node == report.node) track_loose(t);
    push_regular(name);
  }
  const double lag_ms = static_cast<double>(
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_.wall_now().time_since_epoch())
          .count() -
      report.timestamp_unix_ms);
  counters_.report_accepted(lag_ms / 1000.0);
  if (nodes_) {
    // The report itself, not the capped room: the Node's figure follows the agent.
    std::optional<Resources> publish;
    if (report.batch_allocatable) publish = batch;
    nodes_(NodeBatch{*cluster, report.node, publish});
  }
  return std::nullopt;
}

Labels GangScheduler::node_labels(const std::string& cluster, const std::string& node) const {
  Labels labels;
  if (auto it = node_labels_.find(core_name(cluster, node)); it != node_labels_.end()) {
    labels = it->second;
  }
  labels[kClusterLabel] = cluster;  // the member cluster, whatever the Node says
  return labels;
}

void GangScheduler::observe_node(const std::string& cluster, const std::string& node,
                                 const Labels& labels, const Taints& taints,
                                 const std::optional<Resources>& allocatable,
                                 const std::optional<NodeBatchShown>& batch_shown) {
  std::lock_guard lock(mu_);
  const std::string name = core_name(cluster, node);
  if (batch_shown) {
    unknown_nodes_logged_.erase(name);
    auto [it, added] = batch_shown_.try_emplace(name, *batch_shown);
    if (added || it->second != *batch_shown) {
      it->second = *batch_shown;
      reapply_batch(name);
    }
  }
  if (allocatable) {
    node_allocatable_[name] = *allocatable;
  } else {
    node_allocatable_.erase(name);
  }
  push_regular(name);
  node_taints_[name] = taints;
  auto& known = node_labels_[name];
  const bool relabelled = known != labels;
  known = labels;
  if (auto id = core_.clusters().find_node(name)) {
    if (relabelled) core_.set_node_labels(*id, node_labels(cluster, node));
    core_.set_node_taints(*id, taints);
  }
}

void GangScheduler::observe_node_deleted(const std::string& cluster, const std::string& node) {
  std::lock_guard lock(mu_);
  const std::string name = core_name(cluster, node);
  batch_shown_[name] = NodeBatchShown{};
  reapply_batch(name);
}

void GangScheduler::note_unknown_node(const std::string& name) {
  counters_.report_for_unknown_node();
  // Logged once per node, and the names kept bounded: a client that invents node names must
  // not grow the scheduler's memory or its log.
  constexpr size_t kMaxRemembered = 1024;
  if (unknown_nodes_logged_.contains(name) || unknown_nodes_logged_.size() >= kMaxRemembered)
    return;
  unknown_nodes_logged_.insert(name);
  spdlog::warn(
      "report for node {}: no Node object of that name is known; it gets no batch room until "
      "one is seen (kube-scheduler places only on nodes its informer lists)",
      name);
}

Resources GangScheduler::placeable_batch(const std::string& name, const Resources& reported) const {
  Resources out = reported;
  auto it = batch_shown_.find(name);
  // Without a Node object, nothing could bind there: no room (live mode with informers).
  if (it == batch_shown_.end()) return options_.require_node_objects ? Resources{} : out;
  out.cpu_milli = std::min(out.cpu_milli, it->second.cpu_milli);
  out.memory_bytes = std::min(out.memory_bytes, it->second.memory_bytes);
  return out;
}

void GangScheduler::reapply_batch(const std::string& name) {
  auto id = core_.clusters().find_node(name);
  auto reported = batch_reported_.find(name);
  if (!id || reported == batch_reported_.end()) return;
  const Node& n = core_.clusters().node(*id);
  // A stale or degraded node keeps its held figure until its agent reports again: the
  // Node's value alone never makes it fresh.
  if (n.health != NodeHealth::kFresh) return;
  auto decisions = core_.report_node(*id, placeable_batch(name, reported->second), n.reported_at);
  if (decisions) handle(*decisions);
}

void GangScheduler::set_cluster_available(const std::string& cluster, bool available) {
  std::lock_guard lock(mu_);
  if (auto id = core_.clusters().find_cluster(cluster)) core_.set_cluster_available(*id, available);
}

void GangScheduler::place_waiting() {
  book_.visit(GangBook::List::kWaiting, [&](GangBook::iterator g) {
    if (g->second.waiting.empty() && g->second.unbound.empty()) return false;
    if (g->second.job) {
      bind_unbound(g->second);
      if (!g->second.waiting.empty()) attach_waiting(g->second);
    }
    return true;
  });
}

void GangScheduler::tick() {
  std::lock_guard lock(mu_);
  const int64_t now = now_s();
  for (NodeId id : core_.refresh_health(now, options_.staleness)) {
    const Node& n = core_.clusters().node(id);
    // refresh_health only ages nodes (a report is what makes one fresh): the way from
    // fresh to stale was a stale one when it became degraded.
    const NodeHealth before =
        n.health == NodeHealth::kDegraded ? NodeHealth::kStale : NodeHealth::kFresh;
    spdlog::warn("{}", health_change_message(n, before, n.reported_at, now, options_.staleness));
    if (n.health != NodeHealth::kDegraded || !nodes_) continue;
    const auto slash = n.name.find('/');
    nodes_(NodeBatch{n.name.substr(0, slash), n.name.substr(slash + 1), std::nullopt});
  }
  // Gangs found partly bound are finished (or released) before the pass places others.
  recover_gangs();
  handle(core_.check_timeouts(now));
  handle(core_.schedule(now));
  retry_binds();
  // Executors beyond their gang (dynamic allocation) and members that found no room take
  // what others gave back on this pass (a scale-down, a finished job, a node's batch
  // capacity grown back), not at the next resync.
  place_waiting();
  report_steered();
  // A pending job's reason is written once.
  for (JobId id : core_.pending_jobs()) {
    const std::string* key = book_.key_of_job(id);
    if (key == nullptr) continue;
    if (auto g = book_.find(*key); g != book_.end()) emit_pending_event(g->second);
  }
  // Placements not yet recorded are sent again; applications are submitted again.
  for (FleetPlacer::Retry& r : placer_.retries(book_, steady_s())) {
    if (r.send && actions_) actions_(std::move(*r.send));
    if (r.resubmit) submit(*r.gang, r.gang->app_shape, r.gang->app_priority, r.gang->app_queue);
  }
}

}  // namespace gleaner::scheduler::gang
