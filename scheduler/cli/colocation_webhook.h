#pragma once
// The colocation webhook of `gleaner-scheduler run`: its HTTPS port, the live profiles,
// namespaces and PriorityClasses it decides with, and its certificates, either files
// (--webhook-cert-dir, e.g. a mounted cert-manager Secret) or kept by the scheduler in a
// Secret (--webhook-secret). Certificates are checked every minute; a renewal or a
// changed file is served to new connections without a restart.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "kube/api_client.h"
#include "kube/config.h"
#include "scheduler/admission/certificates.h"
#include "scheduler/server/live_metrics.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace gleaner::scheduler {

struct WebhookFlags {
  std::string listen;  // "" = no webhook
  std::string cert_dir;
  std::string secret;                                                // NAMESPACE/NAME
  std::string service = "gleaner-system/gleaner-scheduler-webhook";  // NAMESPACE/NAME
  std::string configuration = "gleaner-colocation";
  std::string cluster;  // whose API server holds the profiles ("" = the first)
  // With --webhook-secret: more Services the certificate is issued for (the report port
  // when it serves this certificate), and ConfigMaps the CA is published in (ca.crt).
  std::vector<std::string> extra_services;  // NAMESPACE/NAME
  std::vector<std::string> ca_config_maps;  // NAMESPACE/NAME
};

// Problems with the flags alone (for --check-config and start-up).
std::vector<std::string> webhook_flag_errors(const WebhookFlags& flags);

class ColocationWebhook {
 public:
  static Result<std::unique_ptr<ColocationWebhook>> start(boost::asio::io_context& io,
                                                          const WebhookFlags& flags,
                                                          const kube::KubeConfig& cluster,
                                                          const Clock& clock,
                                                          server::LiveMetrics& metrics);
  ~ColocationWebhook();
  ColocationWebhook(const ColocationWebhook&) = delete;
  ColocationWebhook& operator=(const ColocationWebhook&) = delete;

  [[nodiscard]] uint16_t port() const;
  // The certificate served now, and a call on the io_context's thread whenever another
  // one is served (for a port that serves the same certificate).
  [[nodiscard]] const admission::KeyPair& serving() const;
  void on_new_certificate(std::function<void(const admission::KeyPair&)> callback);
  void stop();

  struct Impl;

 private:
  explicit ColocationWebhook(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gleaner::scheduler
