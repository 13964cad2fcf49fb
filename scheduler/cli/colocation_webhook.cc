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
  for (const auto& ref : f.extra_services) {
    if (!split_ref(ref, ns, name))
      errors.emplace_back("--report-service: expected NAMESPACE/NAME, got " + ref);
  }
  return errors;
}

struct ColocationWebhook::Impl {
  Impl(boost::asio::io_context& io, const kube::KubeConfig& cfg, const Clock& c,
       server::LiveMetrics& m)
      : client(cfg, c), source(client, m), metrics(m), timer(io) {}

  kube::KubeClient client;
  kube_glue::ColocationSource source;
  server::LiveMetrics& metrics;
  std::unique_ptr<kube_glue::WebhookCertKeeper> keeper;
  std::string cert_dir;
  admission::KeyPair serving;
  std::unique_ptr<server::WebhookServer> server;
  boost::asio::steady_timer timer;
  std::function<void(const admission::KeyPair&)> on_new_certificate;

  // The pair to serve now: the files, or the Secret after any renewal due.
  Result<admission::KeyPair> current_pair() {
    if (keeper) {
      auto m = keeper->ensure();
      if (!m) return m.error();
      return m->serving;
    }
    return admission::read_key_pair_dir(cert_dir, std::chrono::system_clock::now());
  }

  void check() {
    auto pair = current_pair();
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
    timer.expires_after(kCheckEvery);
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) check();
    });
  }
};

ColocationWebhook::ColocationWebhook(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ColocationWebhook::~ColocationWebhook() {
  stop();
}

Result<std::unique_ptr<ColocationWebhook>> ColocationWebhook::start(boost::asio::io_context& io,
                                                                    const WebhookFlags& flags,
                                                                    const kube::KubeConfig& cluster,
                                                                    const Clock& clock,
                                                                    server::LiveMetrics& metrics) {
  if (auto errors = webhook_flag_errors(flags); !errors.empty())
    return make_error(ErrorCode::kInvalidArgument, errors.front());
  auto impl = std::make_unique<Impl>(io, cluster, clock, metrics);
  if (!flags.secret.empty()) {
    kube_glue::WebhookCertOptions o;
    split_ref(flags.secret, o.secret_namespace, o.secret_name);
    split_ref(flags.service, o.service_namespace, o.service_name);
    o.webhook_configuration = flags.configuration;
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
    impl->keeper = std::make_unique<kube_glue::WebhookCertKeeper>(impl->client, o, clock);
  } else {
    impl->cert_dir = flags.cert_dir;
  }
  // Without a certificate there is nothing to serve: start-up fails and says why.
  auto pair = impl->current_pair();
  if (!pair) return make_error(pair.error().code, "colocation webhook: " + pair.error().message);
  impl->serving = *pair;
  Impl* raw = impl.get();
  auto server = server::WebhookServer::create(
      io, flags.listen, [raw](std::string_view body) { return raw->source.handle(body); },
      impl->serving);
  if (!server) return server.error();
  impl->server = std::move(*server);
  impl->source.start();
  impl->timer.expires_after(kCheckEvery);
  impl->timer.async_wait([raw](const boost::system::error_code& ec) {
    if (!ec) raw->check();
  });
  spdlog::info("colocation webhook: listening on port {} (certificates from {})",
               impl->server->port(),
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
  impl_->source.stop();
}

}  // namespace gleaner::scheduler
