#pragma once
// The parts `gleaner-scheduler run` is composed of, each made from flags validate() has
// passed: the clusters' configurations, one ClusterLink per cluster wired to the live
// scheduler, and who may report (the report validator and what it asks).

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "kube/api_client.h"
#include "kube/config.h"
#include "scheduler/cli/run_options.h"
#include "scheduler/gang/gang_scheduler.h"
#include "scheduler/kube/agent_tokens.h"
#include "scheduler/kube/cluster_link.h"
#include "scheduler/server/live_metrics.h"
#include "scheduler/server/report_ingest.h"

namespace gleaner::scheduler {

// Every cluster of --cluster, --hub and --kubeconfig by name.
struct ClusterConfigs {
  std::map<std::string, kube::KubeConfig> configs;
  std::string hub;  // the hub's name; "" = no hub
};
// Loads every kubeconfig with --qps and --burst; the first one that fails is the error.
Result<ClusterConfigs> load_cluster_configs(const RunOptions& o);

// One ClusterLink per cluster, started later (once this replica schedules).
using ClusterLinks = std::map<std::string, std::unique_ptr<kube_glue::ClusterLink>>;
ClusterLinks make_cluster_links(const RunOptions& o, const ClusterConfigs& clusters,
                                const Clock& clock, gang::GangScheduler& live,
                                server::LiveMetrics& metrics);
// The scheduler's actions and node batches go to their cluster's link; a link forwards a
// multi-cluster SparkApplication's copy to the chosen cluster's. Undone by
// live.set_sinks(nullptr, nullptr) before the links are destroyed.
void connect_links(ClusterLinks& links, gang::GangScheduler& live);

// Who may report: agents' own tokens reviewed by their cluster's API server, a shared
// token, or anyone. Not movable: the validator holds the reviewer.
struct ReportAuth {
  ReportAuth(const RunOptions& o, const ClusterConfigs& clusters, const Clock& clock,
             server::LiveMetrics& metrics);
  ReportAuth(const ReportAuth&) = delete;
  ReportAuth& operator=(const ReportAuth&) = delete;

  std::map<std::string, std::unique_ptr<kube::KubeClient>> review_clients;
  std::unique_ptr<kube_glue::TokenReviewer> reviewer;
  std::optional<server::ReportValidator> validator;
};

}  // namespace gleaner::scheduler
