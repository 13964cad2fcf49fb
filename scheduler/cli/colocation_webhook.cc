#include "scheduler/cli/colocation_webhook.h"

#include <chrono>
#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "common/file_io.h"
#include "scheduler/kube/colocation_source.h"
#include "scheduler/kube/webhook_certs.h"
#include "scheduler/server/webhook_server.h"

namespace gleaner::scheduler {

namespace {

constexpr auto kCheckEvery = std::chrono::seconds(60);
constexpr auto kRetryEvery = std::chrono::seconds(10);

bool split_ref(const std::string& ref, std::string& ns, std::string& name) {
  const auto slash = ref.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == ref.size() ||
      ref.find('/', slash + 1) != std::string::npos)
    return false;
  ns = ref.substr(0, slash);
  name = ref.substr(slash + 1);
  return true;
}

}  // namespace

std::vector<std::string> webhook_flag_errors(const WebhookFlags& f) {
  std::vector<std::string> errors;
  if (f.listen.empty()) return errors;
  std::string ns;
  std::string name;
  if (f.cert_dir.empty() == f.secret.empty()) {
    errors.emplace_back(
        "--webhook-listen: give exactly one of --webhook-cert-dir and --webhook-secret");
  }
  if (!f.secret.empty() && !split_ref(f.secret, ns, name))
    errors.emplace_back("--webhook-secret: expected NAMESPACE/NAME, got " + f.secret);
  if (!split_ref(f.service, ns, name))
    errors.emplace_back("--webhook-service: expected NAMESPACE/NAME, got " + f.service);
  if (f.configuration.empty()) errors.emplace_back("--webhook-configuration: must not be empty");
  for (const auto& ref : f.ca_config_maps) {
    if (!split_ref(ref, ns, name))
      errors.emplace_back("--ca-configmap: expected NAMESPACE/NAME, got " + ref);
  }
  if (!f.ca_config_maps.empty() && f.secret.empty())
    errors.emplace_back("--ca-configmap: needs --webhook-secret (the CA the scheduler keeps)");
  if (!f.dns_names.empty() && f.secret.empty())
    errors.emplace_back("--webhook-dns-name: needs --webhook-secret (the certificate it issues)");
  for (const auto& ref : f.extra_services) {
    if (!split_ref(ref, ns, name))
      errors.emplace_back("--report-service: expected NAMESPACE/NAME, got " + ref);
  }
  return errors;
}

struct ColocationWebhook::Impl {
  Impl(boost::asio::io_context& io, server::LiveMetrics& m) : metrics(m), timer(io) {}

  // One cluster whose pods the webhook reviews: its API client and what it decides with.
  struct Served {
    Served(const std::string& name, const kube::KubeConfig& cfg, const Clock& clock,
           server::LiveMetrics& metrics, const std::string& batch_scheduler)
        : client(cfg, clock), source(client, metrics, {name, batch_scheduler}) {}
    kube::KubeClient client;
    kube_glue::ColocationSource source;
  };

  std::map<std::string, std::unique_ptr<Served>> clusters;
  std::string home;
  std::string configuration;
  server::LiveMetrics& metrics;
  std::unique_ptr<kube_glue::WebhookCertKeeper> keeper;
  std::string cert_dir;
  admission::KeyPair serving;
  std::unique_ptr<server::WebhookServer> server;
  boost::asio::steady_timer timer;
  std::function<void(const admission::KeyPair&)> on_new_certificate;

  net::HttpReply handle(std::string_view cluster, std::string_view body) {
    auto it = clusters.find(cluster.empty() ? home : std::string(cluster));
    if (it == clusters.end()) {
      metrics.webhook_review("bad_request");
      return net::HttpReply{404, "application/json",
                            dump_json(Json{{"error", "not_found"},
                                           {"message", "no cluster named " + std::string(cluster) +
                                                           " is served by this webhook"}}) +
                                "\n"};
    }
    return it->second->source.handle(body);
  }

  // The CA into every other cluster's webhook configuration; false if one failed (it is
  // tried again at the next check).
  bool spread_ca(const std::string& bundle) {
    bool all = true;
    for (auto& [name, served] : clusters) {
      if (name == home) continue;
      if (Status s = kube_glue::patch_ca_bundle(served->client, configuration, bundle, name); !s) {
        all = false;
        metrics.webhook_certificate_error();
        spdlog::warn("colocation webhook: {}; trying again at the next check", s.error().message);
      }
    }
    return all;
  }

  // The pair to serve now: the files, or the Secret after any renewal due.
  Result<admission::KeyPair> current_pair(bool& spread) {
    spread = true;
    if (keeper) {
      auto m = keeper->ensure();
      if (!m) return m.error();
      if (!m->external) spread = spread_ca(m->ca_bundle);
      return m->serving;
    }
    return admission::read_key_pair_dir(cert_dir, std::chrono::system_clock::now());
  }

  void check() {
    bool spread = true;
    auto pair = current_pair(spread);
    if (!pair) {
      metrics.webhook_certificate_error();
      spdlog::warn("colocation webhook: certificates: {}; serving the current ones",
                   pair.error().message);
    } else if (pair->cert_pem != serving.cert_pem || pair->key_pem != serving.key_pem) {
      if (Status s = server->set_certificate(*pair); !s) {
        metrics.webhook_certificate_error();
        spdlog::warn("colocation webhook: {}; serving the current certificate", s.error().message);
      } else {
        serving = *pair;
        spdlog::info("colocation webhook: serving a new certificate");
        if (on_new_certificate) on_new_certificate(serving);
      }
    }
    arm(spread);
  }

  // A cluster still without the CA refuses pods under failurePolicy Fail: sooner then.
  void arm(bool spread) {
    timer.expires_after(spread ? kCheckEvery : kRetryEvery);
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) check();
    });
  }
};

ColocationWebhook::ColocationWebhook(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ColocationWebhook::~ColocationWebhook() {
  stop();
}

Result<std::unique_ptr<ColocationWebhook>> ColocationWebhook::start(
    boost::asio::io_context& io, const WebhookFlags& flags,
    const std::map<std::string, kube::KubeConfig>& clusters, const Clock& clock,
    server::LiveMetrics& metrics) {
  if (auto errors = webhook_flag_errors(flags); !errors.empty())
    return make_error(ErrorCode::kInvalidArgument, errors.front());
  if (clusters.empty())
    return make_error(ErrorCode::kInvalidArgument, "colocation webhook: no cluster to serve");
  auto impl = std::make_unique<Impl>(io, metrics);
  impl->home = flags.cluster.empty() ? clusters.begin()->first : flags.cluster;
  if (clusters.count(impl->home) == 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--webhook-cluster: no cluster named " + impl->home);
  }
  impl->configuration = flags.configuration;
  for (const auto& [name, cfg] : clusters) {
    impl->clusters.emplace(
        name, std::make_unique<Impl::Served>(name, cfg, clock, metrics, flags.batch_scheduler));
  }
  if (!flags.secret.empty()) {
    kube_glue::WebhookCertOptions o;
    split_ref(flags.secret, o.secret_namespace, o.secret_name);
    split_ref(flags.service, o.service_namespace, o.service_name);
    o.webhook_configuration = flags.configuration;
    o.extra_dns_names = flags.dns_names;
    for (const auto& ref : flags.extra_services) {
      std::pair<std::string, std::string> service;
      split_ref(ref, service.first, service.second);
      o.extra_services.push_back(std::move(service));
    }
    for (const auto& ref : flags.ca_config_maps) {
      std::pair<std::string, std::string> map;
      split_ref(ref, map.first, map.second);
      o.ca_config_maps.push_back(std::move(map));
    }
    impl->keeper = std::make_unique<kube_glue::WebhookCertKeeper>(
        impl->clusters.at(impl->home)->client, o, clock);
  } else {
    impl->cert_dir = flags.cert_dir;
  }
  // Without a certificate there is nothing to serve: start-up fails and says why. Another
  // cluster that cannot take the CA yet does not stop it.
  bool spread = true;
  auto pair = impl->current_pair(spread);
  if (!pair) return make_error(pair.error().code, "colocation webhook: " + pair.error().message);
  impl->serving = *pair;
  Impl* raw = impl.get();
  auto server = server::WebhookServer::create(
      io, flags.listen,
      [raw](std::string_view cluster, std::string_view body) { return raw->handle(cluster, body); },
      impl->serving);
  if (!server) return server.error();
  impl->server = std::move(*server);
  for (auto& [name, served] : impl->clusters)
    served->source.start();
  impl->arm(spread);
  spdlog::info(
      "colocation webhook: listening on port {} for {} cluster(s), home {} "
      "(certificates from {})",
      impl->server->port(), impl->clusters.size(), impl->home,
      flags.secret.empty() ? flags.cert_dir : "Secret " + flags.secret);
  return std::unique_ptr<ColocationWebhook>(new ColocationWebhook(std::move(impl)));
}

uint16_t ColocationWebhook::port() const {
  return impl_->server->port();
}

const admission::KeyPair& ColocationWebhook::serving() const {
  return impl_->serving;
}

void ColocationWebhook::on_new_certificate(
    std::function<void(const admission::KeyPair&)> callback) {
  impl_->on_new_certificate = std::move(callback);
}

void ColocationWebhook::stop() {
  if (!impl_) return;
  impl_->timer.cancel();
  if (impl_->server) impl_->server->stop();
  for (auto& [name, served] : impl_->clusters)
    served->source.stop();
}

}  // namespace gleaner::scheduler
