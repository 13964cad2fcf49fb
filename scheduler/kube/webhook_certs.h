#pragma once
// The colocation webhook's certificates, kept by the scheduler itself in a Secret
// (type kubernetes.io/tls: tls.crt, tls.key, ca.crt, and ca.key to sign renewals) with
// the CA patched into the MutatingWebhookConfiguration's caBundle:
// - a valid pair in the Secret is used (every replica shares it);
// - a Secret issued by cert-manager (annotation cert-manager.io/certificate-name) is
//   used as it is and never written: cert-manager renews it and its CA injector sets
//   the caBundle;
// - otherwise a CA (10 years) and a serving certificate (1 year) are made; a serving
//   certificate within `renew_before` of its end is re-issued from the same CA, so the
//   caBundle stays; a CA near its own end is replaced, and the caBundle holds the old and
//   the new CA until the old one expires.
// Writes use the Secret's resourceVersion: of two replicas racing, one writes and the
// other reads what it wrote on its next check.

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/json_fwd.h"
#include "common/result.h"
#include "kube/api_client.h"
#include "scheduler/admission/certificates.h"

namespace gleaner::scheduler::kube_glue {

struct WebhookCertOptions {
  std::string secret_namespace;
  std::string secret_name = "gleaner-webhook-tls";
  std::string service_name = "gleaner-scheduler-webhook";
  std::string service_namespace;
  std::string webhook_configuration = "gleaner-colocation";
  // More Services the serving certificate is for (NAMESPACE, NAME): the report port when it
  // serves TLS with this same certificate.
  std::vector<std::pair<std::string, std::string>> extra_services;
  // More DNS names it is for: the host of a `clientConfig.url` by which other clusters (a
  // fleet's members) reach the webhook.
  std::vector<std::string> extra_dns_names;
  // ConfigMaps (NAMESPACE, NAME) the CA bundle is published in, as ca.crt, for clients
  // that verify the scheduler with it (agents mount it: --scheduler-ca-file).
  std::vector<std::pair<std::string, std::string>> ca_config_maps;
  std::chrono::seconds ca_lifetime{std::chrono::hours(24 * 3650)};
  std::chrono::seconds serving_lifetime{std::chrono::hours(24 * 365)};
  std::chrono::seconds renew_before{std::chrono::hours(24 * 30)};
};

// The DNS names kube-apiserver may use for the Service: name, name.ns, name.ns.svc,
// name.ns.svc.cluster.local.
std::vector<std::string> service_dns_names(const std::string& service, const std::string& ns);
// Every DNS name the serving certificate must hold: the webhook's and the extra Services'.
std::vector<std::string> serving_dns_names(const WebhookCertOptions& options);

struct CertPlan {
  enum class Action { kUse, kUseExternal, kIssueServing, kIssueAll };
  Action action = Action::kIssueAll;
  std::string why;  // for the log line
};
// What to do with the Secret as read (nullopt: it does not exist). Pure.
CertPlan plan_certs(const std::optional<Json>& secret, const WebhookCertOptions& options,
                    admission::CertTime now);

struct ServingMaterial {
  admission::KeyPair serving;
  std::string ca_bundle;  // PEM, one or more CAs
  bool external = false;  // issued by cert-manager
};

// The CA bundle into the caBundle of every webhook of one cluster's
// MutatingWebhookConfiguration `configuration`, unless it has it already or cert-manager's
// CA injector keeps it (annotation cert-manager.io/inject-ca-from). `cluster` names it in
// errors and the log.
Status patch_ca_bundle(kube::KubeClient& client, const std::string& configuration,
                       const std::string& bundle, const std::string& cluster);

class WebhookCertKeeper {
 public:
  WebhookCertKeeper(kube::KubeClient& client, WebhookCertOptions options, const Clock& clock);
  // Reads the Secret, renews or creates what is due, writes it back and patches the
  // caBundle. Errors leave the previous material in use (the caller keeps serving it).
  Result<ServingMaterial> ensure();

 private:
  Status write_secret(const std::optional<Json>& existing, const ServingMaterial& m,
                      const admission::KeyPair& ca);
  // The CA bundle into every ca_config_maps entry that does not hold it yet.
  Status publish_ca(const std::string& bundle);

  kube::KubeClient& client_;
  WebhookCertOptions options_;
  const Clock& clock_;
};

}  // namespace gleaner::scheduler::kube_glue
