#include "scheduler/server/live_metrics.h"

#include <algorithm>
#include <initializer_list>

#include "net/prometheus_text.h"

namespace gleaner::scheduler::server {

using prometheus::MetricFamily;
using prometheus::MetricType;

namespace {

// A family with one series per known label value, zeros included (absent series would
// break rate() over a restart and hide a family from a dashboard until its first event).
MetricFamily known_values(std::string name, std::string help, const std::string& label,
                          std::initializer_list<const char*> values,
                          const std::map<std::string, uint64_t>& totals,
                          MetricType type = MetricType::Counter) {
  auto f = net::metric_family(std::move(name), std::move(help), type);
  for (const char* v : values) {
    auto it = totals.find(v);
    net::add_series(f, it == totals.end() ? 0.0 : static_cast<double>(it->second), {{label, v}});
  }
  return f;
}

}  // namespace

LiveMetrics::LiveMetrics()
    : estimator_latency_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      admission_latency_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
                          600, 1800, 3600}),
      report_lag_({0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300}) {}

void LiveMetrics::report_accepted(double lag_seconds) {
  std::lock_guard lock(mu_);
  ++accepted_;
  report_lag_.Observe(lag_seconds < 0 ? 0 : lag_seconds);
}
void LiveMetrics::report_duplicate() {
  std::lock_guard lock(mu_);
  ++duplicates_;
}
void LiveMetrics::report_rejected(RejectReason reason) {
  std::lock_guard lock(mu_);
  ++rejected_[static_cast<size_t>(reason)];
}
void LiveMetrics::admitted(double latency_seconds) {
  std::lock_guard lock(mu_);
  ++placements_;
  admission_latency_.Observe(latency_seconds < 0 ? 0 : latency_seconds);
}
void LiveMetrics::preempted() {
  std::lock_guard lock(mu_);
  ++preemptions_;
}
void LiveMetrics::rescheduled() {
  std::lock_guard lock(mu_);
  ++reschedules_;
}
void LiveMetrics::bind_result(bool ok) {
  std::lock_guard lock(mu_);
  ++(ok ? binds_ok_ : binds_failed_);
}
void LiveMetrics::bind_failed(const std::string& cause) {
  std::lock_guard lock(mu_);
  ++bind_failures_[cause];
}
void LiveMetrics::report_for_unknown_node() {
  std::lock_guard lock(mu_);
  ++unknown_node_reports_;
}
void LiveMetrics::bind_given_up() {
  std::lock_guard lock(mu_);
  ++binds_given_up_;
}
void LiveMetrics::bind_waited_for_victims() {
  std::lock_guard lock(mu_);
  ++binds_waiting_for_victims_;
}
void LiveMetrics::gang_recovered(const std::string& outcome) {
  std::lock_guard lock(mu_);
  ++recovered_gangs_[outcome];
}
void LiveMetrics::node_status_patch(bool ok) {
  std::lock_guard lock(mu_);
  ++(ok ? patches_ok_ : patches_failed_);
}
void LiveMetrics::event_emitted() {
  std::lock_guard lock(mu_);
  ++events_;
}

uint64_t LiveMetrics::reports_accepted() const {
  std::lock_guard lock(mu_);
  return accepted_;
}
uint64_t LiveMetrics::reports_rejected(RejectReason reason) const {
  std::lock_guard lock(mu_);
  return rejected_[static_cast<size_t>(reason)];
}
uint64_t LiveMetrics::placements() const {
  std::lock_guard lock(mu_);
  return placements_;
}

void LiveMetrics::webhook_review(const std::string& outcome) {
  std::lock_guard lock(mu_);
  ++webhook_reviews_[outcome];
}
void LiveMetrics::set_listener_source(std::function<net::ListenerStats()> source) {
  std::lock_guard lock(mu_);
  listener_source_ = std::move(source);
}

void LiveMetrics::fleet_retry(const std::string& step) {
  std::lock_guard lock(mu_);
  ++fleet_retries_[step];
}
uint64_t LiveMetrics::fleet_retries(const std::string& step) const {
  std::lock_guard lock(mu_);
  auto it = fleet_retries_.find(step);
  return it == fleet_retries_.end() ? 0 : it->second;
}

void LiveMetrics::token_review(const std::string& outcome) {
  std::lock_guard lock(mu_);
  ++token_reviews_[outcome];
}
void LiveMetrics::estimator_call(const std::string& method, const std::string& outcome,
                                 double seconds) {
  std::lock_guard lock(mu_);
  ++estimator_calls_[{method, outcome}];
  estimator_latency_.Observe(seconds);
}
void LiveMetrics::colocation_profile_rejected() {
  std::lock_guard lock(mu_);
  ++profiles_rejected_;
}
void LiveMetrics::webhook_certificate_error() {
  std::lock_guard lock(mu_);
  ++certificate_errors_;
}
void LiveMetrics::set_leading(bool leading) {
  std::lock_guard lock(mu_);
  leading_ = leading;
}
void LiveMetrics::quota_tree_rejected() {
  std::lock_guard lock(mu_);
  ++quota_trees_rejected_;
}
void LiveMetrics::propagation_policy_rejected() {
  std::lock_guard lock(mu_);
  ++policies_rejected_;
}
void LiveMetrics::member_cluster_rejected() {
  std::lock_guard lock(mu_);
  ++member_clusters_rejected_;
}
void LiveMetrics::hub_job_rejected() {
  std::lock_guard lock(mu_);
  ++hub_jobs_rejected_;
}
void LiveMetrics::app_other_scheduler() {
  std::lock_guard lock(mu_);
  ++apps_other_scheduler_;
}
void LiveMetrics::placement_steered_away() {
  std::lock_guard lock(mu_);
  ++placements_steered_away_;
}
void LiveMetrics::member_api_available(const std::string& cluster, bool available) {
  std::lock_guard lock(mu_);
  member_api_available_[cluster] = available;
}
uint64_t LiveMetrics::webhook_reviews(const std::string& outcome) const {
  std::lock_guard lock(mu_);
  auto it = webhook_reviews_.find(outcome);
  return it == webhook_reviews_.end() ? 0 : it->second;
}

std::string LiveMetrics::render(const gang::StateGauges& g) const {
  std::lock_guard lock(mu_);
  std::vector<MetricFamily> out;
  out.reserve(40);
  auto gauge = [&](const char* name, const char* help, double value) {
    out.push_back(net::gauge_family(name, help, value));
  };
  auto counter = [&](const char* name, const char* help, uint64_t value) {
    out.push_back(net::counter_family(name, help, static_cast<double>(value)));
  };
  gauge("gleaner_scheduler_leader",
        "1 while this replica schedules (the leader, or no leader election), 0 on a standby.",
        leading_ ? 1.0 : 0.0);
  auto jobs = net::metric_family("gleaner_scheduler_jobs",
                                 "Spark jobs known to the scheduler by phase.", MetricType::Gauge);
  net::add_series(jobs, static_cast<double>(g.pending_jobs), {{"phase", "pending"}});
  net::add_series(jobs, static_cast<double>(g.admitted_jobs), {{"phase", "admitted"}});
  net::add_series(jobs, static_cast<double>(g.running_jobs), {{"phase", "running"}});
  out.push_back(std::move(jobs));
  gauge("gleaner_scheduler_pending_jobs", "Jobs waiting in their queues.",
        static_cast<double>(g.pending_jobs));
  std::map<std::string, uint64_t> health;
  for (const auto& [h, n] : g.nodes_by_health)
    health[h] = static_cast<uint64_t>(std::max<int64_t>(n, 0));
  out.push_back(known_values("gleaner_scheduler_nodes", "Nodes by report health.", "health",
                             {"fresh", "stale", "degraded"}, health, MetricType::Gauge));
  out.push_back(net::histogram_family("gleaner_scheduler_admission_latency_seconds",
                                      "Time from a job's driver pod being seen to its admission.",
                                      admission_latency_));
  counter("gleaner_scheduler_placements_total", "Jobs admitted (gangs placed).", placements_);
  counter("gleaner_scheduler_preemptions_total", "Jobs preempted to reclaim borrowed quota.",
          preemptions_);
  counter("gleaner_scheduler_reschedules_total",
          "Jobs sent back to their queue (driver start timeout, lost pods).", reschedules_);
  out.push_back(net::histogram_family(
      "gleaner_scheduler_report_lag_seconds",
      "Age of a node report's sample when the scheduler accepted it.", report_lag_));
  counter("gleaner_scheduler_reports_accepted_total", "Node reports applied.", accepted_);
  counter("gleaner_scheduler_reports_duplicate_total",
          "Retried node reports answered without applying them again.", duplicates_);
  auto rejected = net::metric_family("gleaner_scheduler_reports_rejected_total",
                                     "Node reports refused, by reason.", MetricType::Counter);
  for (int i = 0; i < kRejectReasonCount; ++i) {
    net::add_series(rejected, static_cast<double>(rejected_[static_cast<size_t>(i)]),
                    {{"reason", to_string(static_cast<RejectReason>(i))}});
  }
  out.push_back(std::move(rejected));
  out.push_back(known_values("gleaner_scheduler_bindings_total", "pods/binding calls by result.",
                             "result", {"ok", "error"},
                             {{"ok", binds_ok_}, {"error", binds_failed_}}));
  out.push_back(known_values(
      "gleaner_scheduler_bind_failures_total",
      "pods/binding calls that failed, by cause (each is tried again with back-off; the pod "
      "is never deleted for it).",
      "cause", {"server_error", "throttled", "timeout", "conflict", "not_found", "other"},
      bind_failures_));
  counter("gleaner_scheduler_reports_unknown_node_total",
          "Reports accepted for a node no Node object names: it gets no batch room until its "
          "Node is seen.",
          unknown_node_reports_);
  counter("gleaner_scheduler_bind_requeues_total",
          "Jobs none of whose pods could be bound after the retries: their room went back and "
          "they wait in their queue again.",
          binds_given_up_);
  counter("gleaner_scheduler_binds_waiting_for_victims_total",
          "Pods whose binding waited because the room reserved for them was still held by "
          "pods deleted for them (preempted, still terminating on the node).",
          binds_waiting_for_victims_);
  out.push_back(known_values("gleaner_scheduler_recovered_gangs_total",
                             "Gangs found partly bound after a restart, by outcome (resumed "
                             "around their bound pods, or released after the reservation TTL).",
                             "outcome", {"resumed", "released"}, recovered_gangs_));
  gauge("gleaner_scheduler_partial_gangs",
        "Gangs partly bound that the scheduler is still finishing (found so after a restart, "
        "or a member's binding failing).",
        static_cast<double>(g.partial_gangs));
  gauge("gleaner_scheduler_oldest_partial_gang_seconds",
        "How long the oldest partly bound gang has been so (0: none); bounded by the "
        "reservation TTL.",
        g.oldest_partial_gang_seconds);
  out.push_back(known_values("gleaner_scheduler_node_status_patches_total",
                             "Node status patches of the batch resources by result.", "result",
                             {"ok", "error"}, {{"ok", patches_ok_}, {"error", patches_failed_}}));
  counter("gleaner_scheduler_events_total", "Events written on pods.", events_);
  out.push_back(known_values(
      "gleaner_scheduler_webhook_reviews_total", "Colocation webhook requests by outcome.",
      "outcome", {"skipped", "unchanged", "mutated", "denied", "bad_request", "not_ready"},
      webhook_reviews_));
  if (listener_source_) {
    const auto http = listener_source_();
    gauge("gleaner_scheduler_http_connections",
          "Open connections to the scheduler's HTTP port (reports, API, metrics).",
          static_cast<double>(http.open_connections));
    gauge("gleaner_scheduler_http_connection_limit",
          "The connection cap of the HTTP port (new connections wait beyond it).",
          static_cast<double>(http.max_connections));
    counter("gleaner_scheduler_http_accept_errors_total",
            "accept() failures on the HTTP port (out of file descriptors).", http.accept_errors);
    counter("gleaner_scheduler_http_connection_cap_reached_total",
            "Times the HTTP port reached its connection cap.", http.capacity_reached);
  }
  out.push_back(known_values(
      "gleaner_scheduler_fleet_retries_total",
      "Multi-cluster steps the API refused and that are tried again every 5 s (place: the "
      "placement on the origin or the ResourceBinding, create: the copy, mirror: the "
      "copy's state, delete: the copy, unplace: a reclaim on the hub).",
      "step", {"place", "create", "mirror", "delete", "unplace"}, fleet_retries_));
  out.push_back(known_values("gleaner_scheduler_token_reviews_total",
                             "Agent tokens reviewed with the API server (TokenReview), by outcome.",
                             "outcome", {"authenticated", "unauthenticated", "forbidden", "error"},
                             token_reviews_));
  auto calls = net::metric_family(
      "gleaner_scheduler_estimator_calls_total",
      "Karmada scheduler-estimator calls answered (--estimator-listen), by method and outcome.",
      MetricType::Counter);
  for (const char* m :
       {"MaxAvailableReplicas", "MaxAvailableComponentSets", "GetUnschedulableReplicas"}) {
    for (const char* o : {"answered", "no_opinion", "invalid"}) {
      auto it = estimator_calls_.find({m, o});
      net::add_series(calls, it == estimator_calls_.end() ? 0.0 : static_cast<double>(it->second),
                      {{"method", m}, {"outcome", o}});
    }
  }
  out.push_back(std::move(calls));
  out.push_back(net::histogram_family("gleaner_scheduler_estimator_seconds",
                                      "Time to answer a Karmada estimator call.",
                                      estimator_latency_));
  counter("gleaner_scheduler_colocation_profiles_rejected_total",
          "ClusterColocationProfile versions refused as invalid (the last good one stays).",
          profiles_rejected_);
  counter("gleaner_scheduler_quota_trees_rejected_total",
          "ElasticQuotaTree versions refused as invalid (the current quota tree stays).",
          quota_trees_rejected_);
  counter("gleaner_scheduler_propagation_policies_rejected_total",
          "A hub's PropagationPolicy or ClusterPropagationPolicy versions refused as invalid "
          "(such a policy governs nothing until fixed).",
          policies_rejected_);
  counter("gleaner_scheduler_member_clusters_rejected_total",
          "A hub's Karmada Cluster object versions refused as invalid (the member keeps its "
          "last good labels and taints).",
          member_clusters_rejected_);
  counter("gleaner_scheduler_hub_jobs_rejected_total",
          "A hub's training job (PyTorchJob, TFJob, MPIJob) versions refused as unreadable (a "
          "Warning Event on the "
          "job names the field; nothing is propagated).",
          hub_jobs_rejected_);
  counter("gleaner_scheduler_apps_other_scheduler_total",
          "Multi-cluster applications (a hub's, or labelled gleaner.io/multi-cluster) not placed "
          "because spec.batchScheduler gives their pods to another scheduler (a Warning Event "
          "GleanerOtherScheduler on each says so).",
          apps_other_scheduler_);
  counter("gleaner_scheduler_placements_steered_away_total",
          "Pods placed elsewhere than the node the placement rules chose, because their job lost "
          "a pod to an eviction there and that node's batch room has not come back and held for "
          "--reclaim-hold (a Normal Event GleanerAvoidedNode on the pod says why).",
          placements_steered_away_);
  if (!member_api_available_.empty()) {
    auto members = net::metric_family(
        "gleaner_scheduler_member_api_available",
        "1 while a managed cluster's API server answers, 0 while it does not (no new "
        "placement goes there).",
        MetricType::Gauge);
    for (const auto& [cluster, available] : member_api_available_)
      net::add_series(members, available ? 1.0 : 0.0, {{"cluster", cluster}});
    out.push_back(std::move(members));
  }
  counter("gleaner_scheduler_webhook_certificate_errors_total",
          "Failed checks or renewals of the webhook's certificates.", certificate_errors_);
  return net::serialize_families(out);
}

}  // namespace gleaner::scheduler::server
