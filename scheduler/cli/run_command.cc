// `gleaner-scheduler run`: the live scheduler. The composition root: one io_context runs
// the HTTP port (report ingestion, read-only API, /metrics) and the scheduling timer;
// each member cluster has a ClusterLink (informers and an action worker; run_parts.h).
// The flags are checked before anything is made (run_flags.cc, validate()). Without
// --kubeconfig or --cluster it runs "reports only": ingestion, the core and the API.
#include <csignal>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "common/cli_main.h"
#include "common/log.h"
#include "scheduler/admission/certificates.h"
#include "scheduler/cli/colocation_webhook.h"
#include "scheduler/cli/commands.h"
#include "scheduler/cli/run_options.h"
#include "scheduler/cli/run_parts.h"
#include "scheduler/estimator/estimator_server.h"
#include "scheduler/kube/leader_election.h"
#include "scheduler/server/scheduler_port.h"

namespace gleaner::scheduler {
namespace {

int run(const RunOptions& o) {
  if (o.check_config) return check_config(o);
  // The one validation path: what --check-config reports, run refuses to start with.
  if (auto errors = validate(o); !errors.empty()) {
    for (const auto& e : errors)
      std::cerr << "gleaner-scheduler run: " << e << "\n";
    return kExitUsage;
  }
  if (Status s = init_logging(o.log_level, o.log_format); !s) {
    std::cerr << "gleaner-scheduler run: " << s.error().message << "\n";
    return kExitUsage;
  }
  // The files are read again here: one may have changed since validate().
  auto config = live_config(o);
  if (!config) {
    std::cerr << "gleaner-scheduler run: " << config.error().message << "\n";
    return kExitUsage;
  }
  const SchedulerPolicy& policy = config->policy;
  const std::vector<QueueSpec>& queues = config->queues;

  // Files named by the flags are read again here: one may have changed since validate().
  auto clusters = load_cluster_configs(o);
  if (!clusters) {
    std::cerr << "gleaner-scheduler run: " << clusters.error().message << "\n";
    return kExitUsage;
  }
  const auto& configs = clusters->configs;
  gang::GangOptions live_options;
  live_options.policy = policy;
  live_options.staleness = StalenessPolicy{o.stale_after, o.degrade_after};
  for (const auto& [name, cfg] : configs)
    live_options.clusters.push_back(name);
  // With clusters, every node comes from a Node informer: a report alone places nothing.
  live_options.require_node_objects = !configs.empty();

  SystemClock clock;
  server::LiveMetrics metrics;
  auto live = gang::GangScheduler::create(live_options, queues, clock, metrics);
  if (!live) {
    std::cerr << "gleaner-scheduler run: queues: " << live.error().message << "\n";
    return kExitUsage;
  }
  ClusterLinks links = make_cluster_links(o, *clusters, clock, **live, metrics);
  connect_links(links, **live);
  ReportAuth auth(o, *clusters, clock, metrics);

  boost::asio::io_context io;
  server::ApiRoutes routes(*auth.validator, **live, metrics);
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
    // Every cluster where pods are made (a fleet's members; not its hub) is served, each
    // with its own profiles, namespaces and PriorityClasses.
    std::map<std::string, kube::KubeConfig> served;
    for (const auto& [name, cfg] : configs)
      if (name != clusters->hub) served.emplace(name, cfg);
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
    tls = webhook->serving();
  }
  auto http = server::SchedulerPort::create(io, o.listen, routes, tls ? &*tls : nullptr);
  if (!http) {
    std::cerr << "gleaner-scheduler run: " << http.error().message << "\n";
    return 1;
  }
  metrics.set_listener_source([&http] { return (*http)->listener_stats(); });
  std::unique_ptr<estimator::EstimatorServer> karmada_estimator;
  if (!o.estimator_listen.empty()) {
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
    const auto e = election_options(o);
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
  add_run_flags(*cmd, *o);
  cmd->callback([o] { set_exit_code(run(*o)); });
}

}  // namespace gleaner::scheduler
