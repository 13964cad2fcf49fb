#pragma once
// The live scheduler's Prometheus metrics (docs/metrics.md): plain counters under one
// lock, rendered at scrape time through net/prometheus_text.h (prometheus-cpp's families
// and TextSerializer, as the agent's). Thread-safe; every family has bounded labels.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/histogram.h>

#include "net/listener_stats.h"
#include "scheduler/gang/gang_counters.h"
#include "scheduler/server/report_ingest.h"

namespace gleaner::scheduler::server {

class LiveMetrics final : public gang::GangCounters {
 public:
  LiveMetrics();

  void report_accepted(double lag_seconds) override;
  void report_duplicate();
  void report_rejected(RejectReason reason);
  void admitted(double latency_seconds) override;
  void preempted() override;
  void rescheduled() override;
  void bind_result(bool ok) override;
  void bind_failed(const std::string& cause) override;
  void bind_given_up() override;
  void bind_waited_for_victims() override;
  void gang_recovered(const std::string& outcome) override;
  void node_status_patch(bool ok);
  void event_emitted() override;
  void report_for_unknown_node() override;
  // The colocation webhook: a review answered ("skipped", "unchanged", "mutated",
  // "denied"), a request it could not read or answer ("bad_request", "not_ready"), a
  // ClusterColocationProfile or certificate check that failed.
  void webhook_review(const std::string& outcome);
  // A multi-cluster step the API refused, to be tried again ("place", "create", "mirror",
  // "delete", "unplace"): gleaner_scheduler_fleet_retries_total{step}.
  void fleet_retry(const std::string& step);
  [[nodiscard]] uint64_t fleet_retries(const std::string& step) const;
  void colocation_profile_rejected();
  void webhook_certificate_error();
  // An agent token reviewed with the API server: "authenticated", "unauthenticated",
  // "forbidden" (valid, not an agent's), "error" (the API server could not say).
  void token_review(const std::string& outcome);
  // A Karmada estimator call answered: `method` MaxAvailableReplicas,
  // MaxAvailableComponentSets or GetUnschedulableReplicas; `outcome` "answered",
  // "no_opinion" (-1), "invalid" (a gRPC error).
  void estimator_call(const std::string& method, const std::string& outcome, double seconds);
  // An ElasticQuotaTree version refused (the current quota tree stays).
  void quota_tree_rejected();
  // A hub's PropagationPolicy version refused (it governs nothing until fixed).
  void propagation_policy_rejected();
  // A hub's Karmada Cluster object version refused (the member keeps its last good labels
  // and taints).
  void member_cluster_rejected();
  // A hub's training job (gang/training_kinds.h) version refused as unreadable (nothing is
  // propagated).
  void hub_job_rejected();
  void app_other_scheduler() override;
  void placement_steered_away() override;
  // Whether a managed cluster's API server answers (gleaner_scheduler_member_api_available).
  void member_api_available(const std::string& cluster, bool available);
  // Whether this replica schedules (leader, or no leader election): gleaner_scheduler_leader.
  void set_leading(bool leading);
  // The HTTP port's listener, read at each render.
  void set_listener_source(std::function<net::ListenerStats()> source);
  [[nodiscard]] uint64_t webhook_reviews(const std::string& outcome) const;

  [[nodiscard]] uint64_t reports_accepted() const;
  [[nodiscard]] uint64_t reports_rejected(RejectReason reason) const;
  [[nodiscard]] uint64_t placements() const;

  [[nodiscard]] std::string render(const gang::StateGauges& gauges) const;

 private:
  mutable std::mutex mu_;
  uint64_t accepted_ = 0;
  uint64_t duplicates_ = 0;
  std::array<uint64_t, kRejectReasonCount> rejected_{};
  uint64_t placements_ = 0;
  uint64_t preemptions_ = 0;
  uint64_t reschedules_ = 0;
  uint64_t binds_ok_ = 0;
  uint64_t binds_failed_ = 0;
  std::map<std::string, uint64_t> bind_failures_;  // by cause
  uint64_t binds_given_up_ = 0;
  uint64_t binds_waiting_for_victims_ = 0;
  uint64_t unknown_node_reports_ = 0;
  std::map<std::string, uint64_t> recovered_gangs_;  // by outcome
  uint64_t patches_ok_ = 0;
  uint64_t patches_failed_ = 0;
  uint64_t events_ = 0;
  std::map<std::string, uint64_t> webhook_reviews_;
  std::map<std::string, uint64_t> token_reviews_;
  std::map<std::string, uint64_t> fleet_retries_;
  std::map<std::pair<std::string, std::string>, uint64_t> estimator_calls_;
  prometheus::Histogram estimator_latency_;
  uint64_t profiles_rejected_ = 0;
  uint64_t certificate_errors_ = 0;
  uint64_t quota_trees_rejected_ = 0;
  uint64_t policies_rejected_ = 0;
  uint64_t member_clusters_rejected_ = 0;
  uint64_t hub_jobs_rejected_ = 0;
  uint64_t apps_other_scheduler_ = 0;
  uint64_t placements_steered_away_ = 0;
  std::map<std::string, bool> member_api_available_;  // clusters whose state was reported
  bool leading_ = false;
  std::function<net::ListenerStats()> listener_source_;
  prometheus::Histogram admission_latency_;
  prometheus::Histogram report_lag_;
};

}  // namespace gleaner::scheduler::server
