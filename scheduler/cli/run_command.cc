// `gleaner-scheduler run`: the live scheduler. The composition root: one io_context runs
// the HTTP port (report ingestion, read-only API, /metrics) and the scheduling timer;
// each member cluster has a ClusterLink (informers and an action worker). Without
// --kubeconfig or --cluster it runs "reports only": ingestion, the core and the API.
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/cli_main.h"
#include "common/file_io.h"
#include "common/log.h"
#include "kube/config.h"
#include "net/listen_address.h"
#include "scheduler/admission/certificates.h"
#include "scheduler/cli/colocation_webhook.h"
#include "scheduler/cli/commands.h"
#include "scheduler/cli/run_options.h"
#include "scheduler/estimator/estimator_server.h"
#include "scheduler/kube/agent_tokens.h"
#include "scheduler/kube/cluster_link.h"
#include "scheduler/kube/leader_election.h"
#include "scheduler/server/http_server.h"
#include "scheduler/sim/scenario.h"

namespace gleaner::scheduler {
namespace {

int run(const RunOptions& o) {
  if (o.check_config) return check_config(o);
  if (Status s = init_logging(o.log_level, o.log_format); !s) {
    std::cerr << "gleaner-scheduler run: " << s.error().message << "\n";
    return kExitUsage;
  }
  SchedulerPolicy policy;
  std::vector<QueueSpec> queues;
  if (!o.queues_file.empty()) {
    auto s = load_queues(o.queues_file);
    if (!s) {
      std::cerr << "gleaner-scheduler run: " << s.error().message << "\n";
      return kExitUsage;
    }
    queues = s->queues;
    policy = s->policy;
  }
  if (o.policy != "blocking" && o.policy != "nonblocking") {
    std::cerr << "gleaner-scheduler run: --policy: expected blocking or nonblocking\n";
    return kExitUsage;
  }
  policy.queueing =
      o.policy == "blocking" ? QueueingPolicy::kBlocking : QueueingPolicy::kNonBlocking;
  policy.driver_start_timeout_seconds = o.driver_start_timeout;
  policy.reservation_ttl_seconds = o.reservation_ttl;

  // Member clusters: NAME=KUBECONFIG pairs, or one --kubeconfig.
  std::map<std::string, kube::KubeConfig> configs;
  for (const auto& pair : o.clusters) {
    const auto eq = pair.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size()) {
      std::cerr << "gleaner-scheduler run: --cluster " << pair << ": expected NAME=KUBECONFIG\n";
      return kExitUsage;
    }
    auto cfg = cluster_config(pair.substr(eq + 1), o);
    if (!cfg || !configs.emplace(pair.substr(0, eq), *cfg).second) {
      std::cerr << "gleaner-scheduler run: --cluster " << pair << ": "
                << (cfg ? "duplicate cluster name" : cfg.error().message) << "\n";
      return kExitUsage;
    }
  }
  std::string hub_name;
  if (!o.hub.empty()) {
    const auto eq = o.hub.find('=');
    auto cfg = eq == std::string::npos
                   ? Result<kube::KubeConfig>(
                         make_error(ErrorCode::kInvalidArgument, "expected NAME=KUBECONFIG"))
                   : cluster_config(o.hub.substr(eq + 1), o);
    hub_name = eq == std::string::npos ? "" : o.hub.substr(0, eq);
    if (!cfg || hub_name.empty() || !configs.emplace(hub_name, *cfg).second) {
      std::cerr << "gleaner-scheduler run: --hub " << o.hub << ": "
                << (cfg ? "name also given with --cluster" : cfg.error().message) << "\n";
      return kExitUsage;
    }
  }
  if (!o.kubeconfig.empty()) {
    auto cfg = cluster_config(o.kubeconfig, o);
    if (!cfg || !configs.emplace(o.cluster_name, *cfg).second) {
      std::cerr << "gleaner-scheduler run: --kubeconfig: "
                << (cfg ? "cluster name also given with --cluster" : cfg.error().message) << "\n";
      return kExitUsage;
    }
  }

  if (!o.quota_tree_cluster.empty() && configs.count(o.quota_tree_cluster) == 0) {
    std::cerr << "gleaner-scheduler run: --quota-tree-cluster: no cluster named "
              << o.quota_tree_cluster << "\n";
    return kExitUsage;
  }

  gang::GangOptions live_options;
  live_options.policy = policy;
  live_options.staleness = StalenessPolicy{o.stale_after, o.degrade_after};
  for (const auto& [name, cfg] : configs)
    live_options.clusters.push_back(name);

  SystemClock clock;
  server::LiveMetrics metrics;
  auto live = gang::GangScheduler::create(live_options, queues, clock, metrics);
  if (!live) {
    std::cerr << "gleaner-scheduler run: queues: " << live.error().message << "\n";
    return kExitUsage;
  }
  std::map<std::string, std::unique_ptr<kube_glue::ClusterLink>> links;
  for (const auto& [name, cfg] : configs) {
    kube_glue::ClusterLinkOptions lo;
    lo.name = name;
    lo.config = cfg;
    lo.scheduler_name = o.scheduler_name;
    lo.publish = kube_glue::PublishPolicy{o.resource_diff_threshold, o.update_time_threshold};
    lo.slo_config = o.slo_config;
    // The quota tree: a --queues-file is fixed; otherwise one cluster's ElasticQuotaTree.
    const std::string quota_cluster = !o.quota_tree_cluster.empty() ? o.quota_tree_cluster
                                      : !hub_name.empty()           ? hub_name
                                                                    : configs.begin()->first;
    lo.watch_quota_tree = o.queues_file.empty() && name == quota_cluster;
    if (name == hub_name) {
      lo.hub = true;
      lo.policy_group = o.hub_policy_group;
      lo.cluster_objects = o.hub_cluster_objects;
      for (const auto& [member, unused] : configs)
        if (member != hub_name) lo.members.push_back(member);
    }
    links.emplace(name, std::make_unique<kube_glue::ClusterLink>(lo, clock, **live, metrics));
  }
  auto route = [&links](gang::Action a) {
    if (auto it = links.find(a.cluster); it != links.end()) it->second->enqueue(std::move(a));
  };
  // A link forwards the copy of a multi-cluster SparkApplication to the chosen cluster's.
  for (auto& [name, link] : links)
    link->set_forward(route);
  (*live)->set_sinks(route, [&links](const gang::NodeBatch& b) {
    if (auto it = links.find(b.cluster); it != links.end()) it->second->publish(b);
  });

  // Who may report: agents' own tokens are reviewed by their cluster's API server.
  const std::string report_auth = report_auth_mode(o);
  if (auto errors = report_auth_errors(o); !errors.empty()) {
    for (const auto& e : errors)
      std::cerr << "gleaner-scheduler run: " << e << "\n";
    return kExitUsage;
  }
  std::map<std::string, std::unique_ptr<kube::KubeClient>> review_clients;
  std::unique_ptr<kube_glue::TokenReviewer> reviewer;
  std::optional<server::ReportValidator> validator;
  if (report_auth == "token-review") {
    std::map<std::string, kube::KubeClient*> clients;
    for (const auto& [name, cfg] : configs) {
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
    validator.emplace(report_auth == "shared-token" ? o.token_file : "", o.max_report_bytes);
    if (report_auth == "none" && !configs.empty())
      spdlog::warn("--report-auth none: any client may report for any node");
  }
  spdlog::info("gleaner-scheduler: reports authenticated by {}", report_auth);

  boost::asio::io_context io;
  server::ApiRoutes routes(*validator, **live, metrics);
  std::optional<admission::KeyPair> tls;
  if (!o.tls_cert_dir.empty()) {
    auto pair = admission::read_key_pair_dir(o.tls_cert_dir, std::chrono::system_clock::now());
    if (!pair) {
      std::cerr << "gleaner-scheduler run: --tls-cert-dir: " << pair.error().message << "\n";
      return kExitUsage;
    }
    tls = *pair;
  }
  std::unique_ptr<ColocationWebhook> webhook;
  if (!o.webhook.listen.empty()) {
    if (configs.empty()) {
      std::cerr << "gleaner-scheduler run: --webhook-listen: needs a cluster (--kubeconfig or "
                   "--cluster)\n";
      return kExitUsage;
    }
    // Every cluster where pods are made (a fleet's members; not its hub) is served, each
    // with its own profiles, namespaces and PriorityClasses.
    std::map<std::string, kube::KubeConfig> served;
    for (const auto& [name, cfg] : configs)
      if (name != hub_name) served.emplace(name, cfg);
    if (!o.webhook.cluster.empty() && served.count(o.webhook.cluster) == 0) {
      std::cerr << "gleaner-scheduler run: --webhook-cluster: no member cluster named "
                << o.webhook.cluster << "\n";
      return kExitUsage;
    }
    WebhookFlags flags = o.webhook;
    if (o.tls_from_webhook) flags.extra_services.push_back(o.report_service);
    if (o.webhook_assign_scheduler) flags.batch_scheduler = o.scheduler_name;
    auto started = ColocationWebhook::start(io, flags, served, clock, metrics);
    if (!started) {
      std::cerr << "gleaner-scheduler run: " << started.error().message << "\n";
      return 1;
    }
    webhook = std::move(*started);
  }
  if (o.tls_from_webhook) {
    if (!webhook) {
      std::cerr << "gleaner-scheduler run: --tls-from-webhook: needs --webhook-listen\n";
      return kExitUsage;
    }
    tls = webhook->serving();
  }
  auto http = server::HttpServer::create(io, o.listen, routes, tls ? &*tls : nullptr);
  if (!http) {
    std::cerr << "gleaner-scheduler run: " << http.error().message << "\n";
    return 1;
  }
  metrics.set_listener_source([&http] { return (*http)->listener_stats(); });
  std::unique_ptr<estimator::EstimatorServer> karmada_estimator;
  if (!o.estimator_listen.empty()) {
    if (auto address = net::parse_listen_address(o.estimator_listen); !address) {
      std::cerr << "gleaner-scheduler run: --estimator-listen: " << address.error().message << "\n";
      return kExitUsage;
    }
    auto started = estimator::EstimatorServer::start(estimator_options(o), **live, metrics);
    if (!started) {
      std::cerr << "gleaner-scheduler run: " << started.error().message << "\n";
      return 1;
    }
    karmada_estimator = std::move(*started);
  }
  spdlog::info("gleaner-scheduler: listening on port {} ({}), {} cluster(s){}", (*http)->port(),
               tls ? "HTTPS" : "HTTP", links.size(), links.empty() ? " (reports only)" : "");
  if (o.tls_from_webhook) {
    // The webhook's renewals are served on this port too.
    webhook->on_new_certificate([&http](const admission::KeyPair& pair) {
      if (Status s = (*http)->set_certificate(pair); !s)
        spdlog::warn("--tls-from-webhook: {}; serving the current certificate", s.error().message);
    });
  }
  // A renewed certificate in --tls-cert-dir (cert-manager rewrites the mounted Secret) is
  // served to new connections within --tls-reload-seconds (a minute).
  boost::asio::steady_timer tls_timer(io);
  std::function<void()> watch_tls = [&] {
    tls_timer.expires_after(std::chrono::seconds(o.tls_reload_seconds));
    tls_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      auto pair = admission::read_key_pair_dir(o.tls_cert_dir, std::chrono::system_clock::now());
      if (!pair) {
        metrics.webhook_certificate_error();
        spdlog::warn("--tls-cert-dir: {}; serving the current certificate", pair.error().message);
      } else if (pair->cert_pem != tls->cert_pem || pair->key_pem != tls->key_pem) {
        if (Status st = (*http)->set_certificate(*pair); st) {
          tls = *pair;
          spdlog::info("--tls-cert-dir: serving a new certificate");
        }
      }
      watch_tls();
    });
  };
  if (!o.tls_cert_dir.empty()) watch_tls();

  boost::asio::steady_timer timer(io);
  std::function<void()> arm = [&] {
    timer.expires_after(std::chrono::milliseconds(o.tick_ms));
    timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      (*live)->tick();
      arm();
    });
  };
  // Scheduling starts now, or once this replica leads: a standby serves health, metrics
  // and the webhook, and answers /readyz 503 so the Services send their traffic to the
  // leader.
  auto begin_scheduling = [&] {
    metrics.set_leading(true);
    for (auto& [name, link] : links)
      link->start();
    arm();
  };
  int exit_status = 0;
  std::unique_ptr<kube::KubeClient> lease_client;
  std::unique_ptr<kube_glue::LeaderElector> elector;
  if (o.leader_elect) {
    if (configs.empty()) {
      std::cerr << "gleaner-scheduler run: --leader-elect: needs a cluster to hold the Lease\n";
      return kExitUsage;
    }
    const auto e = election_options(o);
    if (Status s = kube_glue::check_leader_election(e); !s) {
      std::cerr << "gleaner-scheduler run: " << s.error().message << "\n";
      return kExitUsage;
    }
    lease_client = std::make_unique<kube::KubeClient>(configs.begin()->second, clock);
    elector = std::make_unique<kube_glue::LeaderElector>(*lease_client, e, clock);
    routes.set_active([&elector] { return elector->leading(); });
    elector->start([&] { boost::asio::post(io, begin_scheduling); },
                   [&] {
                     // Another replica may lead from now on: stop acting at once.
                     boost::asio::post(io, [&] {
                       exit_status = 1;
                       timer.cancel();
                       (*http)->stop();
                       if (webhook) webhook->stop();
                       io.stop();
                     });
                   });
    spdlog::info("gleaner-scheduler: standby until it leads (Lease {}, identity {})", o.lease,
                 e.identity);
  } else {
    begin_scheduling();
  }
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    spdlog::info("gleaner-scheduler: signal {}, stopping", sig);
    timer.cancel();
    tls_timer.cancel();
    (*http)->stop();
    if (webhook) webhook->stop();
    io.stop();
  });
  io.run();
  if (karmada_estimator) karmada_estimator->stop();
  metrics.set_listener_source(nullptr);
  for (auto& [name, link] : links)
    link->stop();
  (*live)->set_sinks(nullptr, nullptr);
  if (elector) elector->stop();
  if (exit_status != 0) {
    std::cerr << "gleaner-scheduler run: lost the leader Lease; exiting (a restart makes this "
                 "replica a candidate again)\n";
  }
  return exit_status;
}

}  // namespace

void register_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run", "Run the live scheduler: node report ingestion, HTTP API, Kubernetes binding");
  cmd->add_option("--listen", o->listen, "HTTP address for reports, API and /metrics")
      ->capture_default_str();
  cmd->add_option(
      "--tls-cert-dir", o->tls_cert_dir,
      "serve --listen over HTTPS with tls.crt and tls.key of this directory (e.g. a "
      "mounted Secret; re-read every --tls-reload-seconds); agents then use an https:// "
      "--scheduler-url and --scheduler-ca-file");
  cmd->add_option("--estimator-listen", o->estimator_listen,
                  "serve Karmada's scheduler-estimator gRPC API here (e.g. :10352), answering "
                  "karmada-scheduler for every member cluster that reports");
  cmd->add_option("--tls-reload-seconds", o->tls_reload_seconds,
                  "how often --tls-cert-dir is re-read for a renewed certificate")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  cmd->add_option("--estimator-tls-cert-dir", o->estimator_tls_cert_dir,
                  "serve the estimator over TLS with tls.crt and tls.key of this directory "
                  "(re-read every minute); default plain gRPC, as karmada-scheduler dials "
                  "without --scheduler-estimator-ca-file");
  cmd->add_option("--estimator-batch-classes", o->estimator_batch_classes,
                  "priority classes whose plain cpu/memory requests the estimator counts as "
                  "batch-cpu/batch-memory")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--report-auth", o->report_auth,
                  "who may report: token-review (each agent's projected ServiceAccount token, "
                  "checked with the API server, for its own node only), shared-token "
                  "(--token-file), none, or auto (shared-token with --token-file, token-review "
                  "with a cluster, else none)")
      ->capture_default_str();
  cmd->add_option("--agent-token-audience", o->agent_audience,
                  "token-review: the audience agents' tokens must be issued for")
      ->capture_default_str();
  cmd->add_option("--agent-service-account", o->agent_service_account,
                  "token-review: NAMESPACE/NAME of the agents' ServiceAccount")
      ->capture_default_str();
  cmd->add_flag("--tls-from-webhook", o->tls_from_webhook,
                "serve --listen over HTTPS with the colocation webhook's certificate (kept in "
                "--webhook-secret, then also issued for --report-service; renewals served "
                "without restart)");
  cmd->add_option("--report-service", o->report_service,
                  "with --tls-from-webhook: NAMESPACE/NAME of the Service agents report to")
      ->capture_default_str();
  cmd->add_option("--ca-configmap", o->webhook.ca_config_maps,
                  "NAMESPACE/NAME of a ConfigMap to publish the scheduler's CA in as ca.crt, "
                  "for agents' --scheduler-ca-file (repeatable; with --webhook-secret)");
  cmd->add_option("--token-file", o->token_file,
                  "shared-token: the bearer token agents must present (re-read when it "
                  "changes)");
  cmd->add_option("--max-report-bytes", o->max_report_bytes, "largest report body accepted")
      ->capture_default_str();
  cmd->add_option("--kubeconfig", o->kubeconfig, "kubeconfig of the (single) cluster");
  cmd->add_option("--cluster-name", o->cluster_name, "name of the --kubeconfig cluster")
      ->capture_default_str();
  cmd->add_option("--cluster", o->clusters, "member cluster NAME=KUBECONFIG (repeatable)");
  cmd->add_option("--hub", o->hub,
                  "a fleet's hub NAME=KUBECONFIG: its SparkApplications that a propagation "
                  "policy governs go to the --cluster members");
  cmd->add_option("--hub-policy-group", o->hub_policy_group,
                  "API group of the hub's PropagationPolicies (policy.karmada.io or "
                  "policy.one.alibabacloud.com)")
      ->capture_default_str();
  cmd->add_option("--hub-cluster-objects", o->hub_cluster_objects,
                  "read the members' labels and taints from the hub's Karmada Cluster objects "
                  "(cluster.karmada.io/v1alpha1); false for a hub without them")
      ->capture_default_str();
  cmd->add_option("--scheduler-name", o->scheduler_name, "spec.schedulerName of pods to place")
      ->capture_default_str();
  cmd->add_option("--qps", o->qps, "API requests per second per cluster")->capture_default_str();
  cmd->add_option("--burst", o->burst, "API request burst per cluster")->capture_default_str();
  cmd->add_option("--stale-after", o->stale_after, "seconds: no new placements on the node")
      ->capture_default_str();
  cmd->add_option("--degrade-after", o->degrade_after,
                  "seconds: the node's batch counts as zero and is removed from its status")
      ->capture_default_str();
  cmd->add_option("--update-time-threshold", o->update_time_threshold,
                  "seconds: re-publish a node's batch resources at least this often")
      ->capture_default_str();
  cmd->add_option("--resource-diff-threshold", o->resource_diff_threshold,
                  "publish when batch cpu or memory moved by more than this fraction")
      ->capture_default_str();
  cmd->add_option("--slo-config", o->slo_config,
                  "NAMESPACE/NAME of the ack-slo-config whose colocation-config "
                  "updateTimeThresholdSeconds and resourceDiffThreshold (per nodeConfigs "
                  "entry too) override the two flags above; \"\" for none")
      ->capture_default_str();
  cmd->add_option("--queues-file", o->queues_file,
                  "elastic quota tree: the scenario format's queues (and policy)");
  cmd->add_flag("--leader-elect", o->leader_elect,
                "run as one of several replicas: only the holder of the Lease schedules");
  cmd->add_option("--leader-elect-lease", o->lease, "NAMESPACE/NAME of the Lease")
      ->capture_default_str();
  cmd->add_option("--leader-elect-identity", o->identity,
                  "this replica's name in the Lease (default: $POD_NAME or the host name, "
                  "plus a random suffix)");
  cmd->add_option("--leader-elect-lease-duration", o->lease_duration,
                  "seconds a candidate waits on an unrenewed Lease before taking it")
      ->capture_default_str();
  cmd->add_option("--leader-elect-renew-deadline", o->renew_deadline,
                  "seconds the leader keeps trying to renew before it gives up leading")
      ->capture_default_str();
  cmd->add_option("--leader-elect-retry-period", o->retry_period,
                  "seconds between tries to acquire or renew")
      ->capture_default_str();
  cmd->add_option("--quota-tree-cluster", o->quota_tree_cluster,
                  "cluster whose ElasticQuotaTree is the quota tree (default: the first; "
                  "not watched with --queues-file)");
  cmd->add_option("--policy", o->policy, "queueing: blocking | nonblocking")->capture_default_str();
  cmd->add_option("--driver-start-timeout", o->driver_start_timeout,
                  "seconds before an admitted job whose driver is not running is reclaimed")
      ->capture_default_str();
  cmd->add_option("--reservation-ttl", o->reservation_ttl, "seconds executor room stays reserved")
      ->capture_default_str();
  cmd->add_option("--tick-ms", o->tick_ms, "scheduling pass interval")->capture_default_str();
  cmd->add_option("--log-level", o->log_level, "trace|debug|info|warn|error")
      ->capture_default_str();
  cmd->add_option("--log-format", o->log_format,
                  "text, or json (one object per line: time, level, msg)")
      ->capture_default_str();
  cmd->add_option("--webhook-listen", o->webhook.listen,
                  "HTTPS address of the colocation webhook (POST /mutate-pod); empty: none");
  cmd->add_option("--webhook-cert-dir", o->webhook.cert_dir,
                  "directory with tls.crt and tls.key (e.g. a mounted cert-manager Secret)");
  cmd->add_option("--webhook-secret", o->webhook.secret,
                  "NAMESPACE/NAME of a Secret the scheduler keeps its own CA and certificate in");
  cmd->add_option("--webhook-service", o->webhook.service,
                  "NAMESPACE/NAME of the webhook's Service (the certificate's DNS names)")
      ->capture_default_str();
  cmd->add_option("--webhook-configuration", o->webhook.configuration,
                  "MutatingWebhookConfiguration whose caBundle the scheduler keeps")
      ->capture_default_str();
  cmd->add_option("--webhook-cluster", o->webhook.cluster,
                  "cluster whose Secret holds the webhook's certificates and whose pods "
                  "/mutate-pod reviews (default: the first member); each cluster's own are "
                  "at /mutate-pod/<cluster>");
  cmd->add_option("--webhook-dns-name", o->webhook.dns_names,
                  "more DNS names for the webhook's certificate: the host of the "
                  "clientConfig.url other clusters call it at (repeatable; with "
                  "--webhook-secret)");
  cmd->add_option("--webhook-assign-scheduler", o->webhook_assign_scheduler,
                  "give a pod the webhook makes a batch pod --scheduler-name when it names no "
                  "scheduler or default-scheduler (false: leave spec.schedulerName alone)")
      ->capture_default_str();
  cmd->add_flag("--check-config", o->check_config,
                "validate the flags and the files they name, print \"config OK\" or every "
                "error, and exit 0 or 1 without starting");
  cmd->callback([o] { set_exit_code(run(*o)); });
}

}  // namespace gleaner::scheduler
