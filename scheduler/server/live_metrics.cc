#include "scheduler/server/live_metrics.h"

#include <fmt/format.h>

namespace gleaner::scheduler::server {

namespace {

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void single(std::string& out, const char* name, const char* type, const char* help, double value) {
  header(out, name, type, help);
  out += fmt::format("{} {}\n", name, value);
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i])
    ++i;
  ++buckets_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(const std::string& name, std::string& out) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += buckets_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count_);
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum_, name, count_);
}

LiveMetrics::LiveMetrics()
    : estimator_latency_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      admission_latency_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
                          600, 1800, 3600}),
      report_lag_({0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300}) {}

void LiveMetrics::report_accepted(double lag_seconds) {
  std::lock_guard lock(mu_);
  ++accepted_;
  report_lag_.observe(lag_seconds < 0 ? 0 : lag_seconds);
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
  admission_latency_.observe(latency_seconds < 0 ? 0 : latency_seconds);
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
void LiveMetrics::set_listener_source(std::function<reporter::HttpListener::Stats()> source) {
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
  estimator_latency_.observe(seconds);
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
uint64_t LiveMetrics::webhook_reviews(const std::string& outcome) const {
  std::lock_guard lock(mu_);
  auto it = webhook_reviews_.find(outcome);
  return it == webhook_reviews_.end() ? 0 : it->second;
}

std::string LiveMetrics::render(const StateGauges& g) const {
  std::lock_guard lock(mu_);
  std::string out;
  single(out, "gleaner_scheduler_leader", "gauge",
         "1 while this replica schedules (the leader, or no leader election), 0 on a standby.",
         leading_ ? 1.0 : 0.0);
  header(out, "gleaner_scheduler_jobs", "gauge", "Spark jobs known to the scheduler by phase.");
  out += fmt::format("gleaner_scheduler_jobs{{phase=\"pending\"}} {}\n", g.pending_jobs);
  out += fmt::format("gleaner_scheduler_jobs{{phase=\"admitted\"}} {}\n", g.admitted_jobs);
  out += fmt::format("gleaner_scheduler_jobs{{phase=\"running\"}} {}\n", g.running_jobs);
  single(out, "gleaner_scheduler_pending_jobs", "gauge", "Jobs waiting in their queues.",
         static_cast<double>(g.pending_jobs));
  header(out, "gleaner_scheduler_nodes", "gauge", "Nodes by report health.");
  for (const char* h : {"fresh", "stale", "degraded"}) {
    auto it = g.nodes_by_health.find(h);
    out += fmt::format("gleaner_scheduler_nodes{{health=\"{}\"}} {}\n", h,
                       it == g.nodes_by_health.end() ? 0 : it->second);
  }
  header(out, "gleaner_scheduler_admission_latency_seconds", "histogram",
         "Time from a job's driver pod being seen to its admission.");
  admission_latency_.render("gleaner_scheduler_admission_latency_seconds", out);
  single(out, "gleaner_scheduler_placements_total", "counter", "Jobs admitted (gangs placed).",
         static_cast<double>(placements_));
  single(out, "gleaner_scheduler_preemptions_total", "counter",
         "Jobs preempted to reclaim borrowed quota.", static_cast<double>(preemptions_));
  single(out, "gleaner_scheduler_reschedules_total", "counter",
         "Jobs sent back to their queue (driver start timeout, lost pods).",
         static_cast<double>(reschedules_));
  header(out, "gleaner_scheduler_report_lag_seconds", "histogram",
         "Age of a node report's sample when the scheduler accepted it.");
  report_lag_.render("gleaner_scheduler_report_lag_seconds", out);
  single(out, "gleaner_scheduler_reports_accepted_total", "counter", "Node reports applied.",
         static_cast<double>(accepted_));
  single(out, "gleaner_scheduler_reports_duplicate_total", "counter",
         "Retried node reports answered without applying them again.",
         static_cast<double>(duplicates_));
  header(out, "gleaner_scheduler_reports_rejected_total", "counter",
         "Node reports refused, by reason.");
  for (int i = 0; i < kRejectReasonCount; ++i) {
    out += fmt::format("gleaner_scheduler_reports_rejected_total{{reason=\"{}\"}} {}\n",
                       to_string(static_cast<RejectReason>(i)), rejected_[static_cast<size_t>(i)]);
  }
  header(out, "gleaner_scheduler_bindings_total", "counter", "pods/binding calls by result.");
  out += fmt::format("gleaner_scheduler_bindings_total{{result=\"ok\"}} {}\n", binds_ok_);
  out += fmt::format("gleaner_scheduler_bindings_total{{result=\"error\"}} {}\n", binds_failed_);
  header(out, "gleaner_scheduler_node_status_patches_total", "counter",
         "Node status patches of the batch resources by result.");
  out +=
      fmt::format("gleaner_scheduler_node_status_patches_total{{result=\"ok\"}} {}\n", patches_ok_);
  out += fmt::format("gleaner_scheduler_node_status_patches_total{{result=\"error\"}} {}\n",
                     patches_failed_);
  single(out, "gleaner_scheduler_events_total", "counter", "Events written on pods.",
         static_cast<double>(events_));
  header(out, "gleaner_scheduler_webhook_reviews_total", "counter",
         "Colocation webhook requests by outcome.");
  for (const char* o : {"skipped", "unchanged", "mutated", "denied", "bad_request", "not_ready"}) {
    auto it = webhook_reviews_.find(o);
    out += fmt::format("gleaner_scheduler_webhook_reviews_total{{outcome=\"{}\"}} {}\n", o,
                       it == webhook_reviews_.end() ? 0 : it->second);
  }
  if (listener_source_) {
    const auto http = listener_source_();
    single(out, "gleaner_scheduler_http_connections", "gauge",
           "Open connections to the scheduler's HTTP port (reports, API, metrics).",
           static_cast<double>(http.open_connections));
    single(out, "gleaner_scheduler_http_connection_limit", "gauge",
           "The connection cap of the HTTP port (new connections wait beyond it).",
           static_cast<double>(http.max_connections));
    single(out, "gleaner_scheduler_http_accept_errors_total", "counter",
           "accept() failures on the HTTP port (out of file descriptors).",
           static_cast<double>(http.accept_errors));
    single(out, "gleaner_scheduler_http_connection_cap_reached_total", "counter",
           "Times the HTTP port reached its connection cap.",
           static_cast<double>(http.capacity_reached));
  }
  header(out, "gleaner_scheduler_fleet_retries_total", "counter",
         "Multi-cluster steps the API refused and that are tried again every 5 s (place: the "
         "placement on the origin or the ResourceBinding, create: the copy, mirror: the "
         "copy's state, delete: the copy, unplace: a reclaim on the hub).");
  for (const char* s : {"place", "create", "mirror", "delete", "unplace"}) {
    auto it = fleet_retries_.find(s);
    out += fmt::format("gleaner_scheduler_fleet_retries_total{{step=\"{}\"}} {}\n", s,
                       it == fleet_retries_.end() ? 0 : it->second);
  }
  header(out, "gleaner_scheduler_token_reviews_total", "counter",
         "Agent tokens reviewed with the API server (TokenReview), by outcome.");
  for (const char* o : {"authenticated", "unauthenticated", "forbidden", "error"}) {
    auto it = token_reviews_.find(o);
    out += fmt::format("gleaner_scheduler_token_reviews_total{{outcome=\"{}\"}} {}\n", o,
                       it == token_reviews_.end() ? 0 : it->second);
  }
  header(out, "gleaner_scheduler_estimator_calls_total", "counter",
         "Karmada scheduler-estimator calls answered (--estimator-listen), by method and "
         "outcome.");
  for (const char* m :
       {"MaxAvailableReplicas", "MaxAvailableComponentSets", "GetUnschedulableReplicas"}) {
    for (const char* o : {"answered", "no_opinion", "invalid"}) {
      auto it = estimator_calls_.find({m, o});
      out += fmt::format(
          "gleaner_scheduler_estimator_calls_total{{method=\"{}\",outcome=\"{}\"}} {}\n", m, o,
          it == estimator_calls_.end() ? 0 : it->second);
    }
  }
  header(out, "gleaner_scheduler_estimator_seconds", "histogram",
         "Time to answer a Karmada estimator call.");
  estimator_latency_.render("gleaner_scheduler_estimator_seconds", out);
  single(out, "gleaner_scheduler_colocation_profiles_rejected_total", "counter",
         "ClusterColocationProfile versions refused as invalid (the last good one stays).",
         static_cast<double>(profiles_rejected_));
  single(out, "gleaner_scheduler_quota_trees_rejected_total", "counter",
         "ElasticQuotaTree versions refused as invalid (the current quota tree stays).",
         static_cast<double>(quota_trees_rejected_));
  single(out, "gleaner_scheduler_propagation_policies_rejected_total", "counter",
         "A hub's PropagationPolicy or ClusterPropagationPolicy versions refused as invalid "
         "(such a policy governs nothing until fixed).",
         static_cast<double>(policies_rejected_));
  single(out, "gleaner_scheduler_member_clusters_rejected_total", "counter",
         "A hub's Karmada Cluster object versions refused as invalid (the member keeps its "
         "last good labels and taints).",
         static_cast<double>(member_clusters_rejected_));
  single(out, "gleaner_scheduler_hub_jobs_rejected_total", "counter",
         "A hub's PyTorchJob or TFJob versions refused as unreadable (a Warning Event on the "
         "job names the field; nothing is propagated).",
         static_cast<double>(hub_jobs_rejected_));
  single(out, "gleaner_scheduler_webhook_certificate_errors_total", "counter",
         "Failed checks or renewals of the webhook's certificates.",
         static_cast<double>(certificate_errors_));
  return out;
}

}  // namespace gleaner::scheduler::server
