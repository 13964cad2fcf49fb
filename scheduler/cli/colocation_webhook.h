#pragma once
// The colocation webhook of `gleaner-scheduler run`: its HTTPS port, the live profiles,
// namespaces and PriorityClasses it decides with, and its certificates, either files
// (--webhook-cert-dir, e.g. a mounted cert-manager Secret) or kept by the scheduler in a
// Secret (--webhook-secret). Certificates are checked every minute; a renewal or a
// changed file is served to new connections without a restart.
//
// It serves every cluster it is given (a fleet's members): a review posted to
// /mutate-pod/<cluster> is decided with that cluster's own profiles, namespaces and
// PriorityClasses, one posted to /mutate-pod with the home cluster's (--webhook-cluster,
// where the Secret lives). With --webhook-secret the CA goes into the caBundle of
// --webhook-configuration in every one of them; a cluster that cannot be reached is
// counted, logged and tried again at the next check, and holds up no other.

#include <functional>
#include <map>
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
  std::string cluster;  // the home cluster: the Secret's, and /mutate-pod's ("" = the first)
  // The scheduler a batch pod that names none is given ("" = leave spec.schedulerName).
  std::string batch_scheduler;
  // More DNS names for the certificate (a URL's host other clusters call the webhook at).
  std::vector<std::string> dns_names;
  // With --webhook-secret: more Services the certificate is issued for (the report port
  // when it serves this certificate), and ConfigMaps the CA is published in (ca.crt).
  std::vector<std::string> extra_services;  // NAMESPACE/NAME
  std::vector<std::string> ca_config_maps;  // NAMESPACE/NAME
};

// Problems with the flags alone (for --check-config and start-up).
std::vector<std::string> webhook_flag_errors(const WebhookFlags& flags);

class ColocationWebhook {
 public:
  // `clusters`: the clusters whose pods it reviews, by name (at least one).
  static Result<std::unique_ptr<ColocationWebhook>> start(
      boost::asio::io_context& io, const WebhookFlags& flags,
      const std::map<std::string, kube::KubeConfig>& clusters, const Clock& clock,
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
