#include "scheduler/cli/run_parts.h"

#include <spdlog/spdlog.h>

#include "scheduler/kube/hub_role.h"

namespace gleaner::scheduler {
namespace {

Error bad(const std::string& flag, const std::string& message) {
  return make_error(ErrorCode::kInvalidArgument, flag + ": " + message);
}

}  // namespace

Result<ClusterConfigs> load_cluster_configs(const RunOptions& o) {
  ClusterConfigs out;
  // NAME=KUBECONFIG of --cluster and --hub; validate() has checked the form and the names.
  auto add_pair = [&](const std::string& flag, const std::string& pair) -> Status {
    const auto eq = pair.find('=');
    if (eq == std::string::npos) return bad(flag + " " + pair, "expected NAME=KUBECONFIG");
    auto cfg = cluster_config(pair.substr(eq + 1), o);
    if (!cfg) return bad(flag + " " + pair, cfg.error().message);
    if (!out.configs.emplace(pair.substr(0, eq), *cfg).second)
      return bad(flag + " " + pair, "duplicate cluster name");
    return ok_status();
  };
  for (const auto& pair : o.clusters) {
    if (Status s = add_pair("--cluster", pair); !s) return s.error();
  }
  if (!o.hub.empty()) {
    if (Status s = add_pair("--hub", o.hub); !s) return s.error();
    out.hub = o.hub.substr(0, o.hub.find('='));
  }
  if (!o.kubeconfig.empty()) {
    auto cfg = cluster_config(o.kubeconfig, o);
    if (!cfg) return bad("--kubeconfig", cfg.error().message);
    if (!out.configs.emplace(o.cluster_name, *cfg).second)
      return bad("--kubeconfig", "cluster name also given with --cluster");
  }
  return out;
}

ClusterLinks make_cluster_links(const RunOptions& o, const ClusterConfigs& clusters,
                                const Clock& clock, gang::GangScheduler& live,
                                server::LiveMetrics& metrics) {
  ClusterLinks links;
  // The quota tree: a --queues-file is fixed; otherwise one cluster's ElasticQuotaTree.
  const std::string quota_cluster = !o.quota_tree_cluster.empty() ? o.quota_tree_cluster
                                    : !clusters.hub.empty()       ? clusters.hub
                                    : clusters.configs.empty()    ? ""
                                                                  : clusters.configs.begin()->first;
  for (const auto& [name, cfg] : clusters.configs) {
    kube_glue::ClusterLinkOptions lo;
    lo.name = name;
    lo.config = cfg;
    lo.scheduler_name = o.scheduler_name;
    lo.publish = kube_glue::PublishPolicy{o.resource_diff_threshold, o.update_time_threshold};
    lo.slo_config = o.slo_config;
    lo.watch_quota_tree = o.queues_file.empty() && name == quota_cluster;
    // The role each cluster plays is chosen here, once (kube/cluster_role.h).
    std::unique_ptr<kube_glue::ClusterRole> role = std::make_unique<kube_glue::MemberRole>();
    if (name == clusters.hub) {
      kube_glue::HubOptions hub;
      hub.policy_group = o.hub_policy_group;
      hub.cluster_objects = o.hub_cluster_objects;
      for (const auto& [member, unused] : clusters.configs)
        if (member != clusters.hub) hub.members.push_back(member);
      role = std::make_unique<kube_glue::HubRole>(std::move(hub));
    }
    links.emplace(
        name, std::make_unique<kube_glue::ClusterLink>(lo, std::move(role), clock, live, metrics));
  }
  return links;
}

void connect_links(ClusterLinks& links, gang::GangScheduler& live) {
  auto route = [&links](gang::Action a) {
    if (auto it = links.find(a.cluster); it != links.end()) it->second->enqueue(std::move(a));
  };
  for (auto& [name, link] : links)
    link->set_forward(route);
  live.set_sinks(route, [&links](const gang::NodeBatch& b) {
    if (auto it = links.find(b.cluster); it != links.end()) it->second->publish(b);
  });
}

ReportAuth::ReportAuth(const RunOptions& o, const ClusterConfigs& clusters, const Clock& clock,
                       server::LiveMetrics& metrics) {
  const std::string mode = report_auth_mode(o);
  if (mode == "token-review") {
    std::map<std::string, kube::KubeClient*> clients;
    for (const auto& [name, cfg] : clusters.configs) {
      auto& c = review_clients[name] = std::make_unique<kube::KubeClient>(cfg, clock);
      clients.emplace(name, c.get());
    }
    kube_glue::AgentTokenOptions to;
    to.audience = o.agent_audience;
    to.service_account = o.agent_service_account;
    reviewer = std::make_unique<kube_glue::TokenReviewer>(
        clients, to, clock, [&metrics](const char* outcome) { metrics.token_review(outcome); });
    validator.emplace(*reviewer, o.max_report_bytes);
  } else {
    validator.emplace(mode == "shared-token" ? o.token_file : "", o.max_report_bytes);
    if (mode == "none" && !clusters.configs.empty())
      spdlog::warn("--report-auth none: any client may report for any node");
  }
  spdlog::info("gleaner-scheduler: reports authenticated by {}", mode);
}

}  // namespace gleaner::scheduler
