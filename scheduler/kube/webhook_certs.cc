#include "scheduler/kube/webhook_certs.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kube/config.h"

namespace gleaner::scheduler::kube_glue {

namespace {

constexpr const char* kCertManagerAnnotation = "cert-manager.io/certificate-name";
constexpr const char* kCaInjectAnnotation = "cert-manager.io/inject-ca-from";

// The decoded data[key] of a Secret, "" when absent or not base64.
std::string secret_data(const Json& secret, const char* key) {
  const Json* data = find_path(secret, "data");
  if (data == nullptr || !data->is_object() || !data->contains(key) || !(*data)[key].is_string())
    return "";
  auto decoded = kube::base64_decode((*data)[key].get<std::string>());
  return decoded ? *decoded : "";
}

bool issued_by_cert_manager(const Json& secret) {
  const Json* a = find_path(secret, "metadata/annotations");
  return a != nullptr && a->is_object() && a->contains(kCertManagerAnnotation);
}

// The CAs of a bundle that are still valid at `now`, as PEM.
std::string valid_cas(const std::string& bundle, admission::CertTime now) {
  std::string out;
  const std::string end = "-----END CERTIFICATE-----";
  size_t pos = 0;
  while (true) {
    const size_t b = bundle.find("-----BEGIN CERTIFICATE-----", pos);
    if (b == std::string::npos) break;
    const size_t e = bundle.find(end, b);
    if (e == std::string::npos) break;
    const std::string pem = bundle.substr(b, e + end.size() - b) + "\n";
    if (auto info = admission::read_cert(pem); info && info->not_after > now) out += pem;
    pos = e + end.size();
  }
  return out;
}

}  // namespace

std::vector<std::string> service_dns_names(const std::string& service, const std::string& ns) {
  return {service, service + "." + ns, service + "." + ns + ".svc",
          service + "." + ns + ".svc.cluster.local"};
}

std::vector<std::string> serving_dns_names(const WebhookCertOptions& o) {
  auto names = service_dns_names(o.service_name, o.service_namespace);
  for (const auto& [ns, name] : o.extra_services) {
    for (auto& n : service_dns_names(name, ns))
      names.push_back(std::move(n));
  }
  names.insert(names.end(), o.extra_dns_names.begin(), o.extra_dns_names.end());
  return names;
}

CertPlan plan_certs(const std::optional<Json>& secret, const WebhookCertOptions& o,
                    admission::CertTime now) {
  using Action = CertPlan::Action;
  if (!secret) return {Action::kIssueAll, "Secret " + o.secret_name + " does not exist"};
  const admission::KeyPair serving{secret_data(*secret, "tls.crt"),
                                   secret_data(*secret, "tls.key")};
  if (issued_by_cert_manager(*secret)) return {Action::kUseExternal, "issued by cert-manager"};
  const admission::KeyPair ca{secret_data(*secret, "ca.crt"), secret_data(*secret, "ca.key")};
  auto ca_info = admission::read_cert(ca.cert_pem);
  if (!ca_info || ca.key_pem.empty()) return {Action::kIssueAll, "the Secret holds no CA"};
  if (ca_info->not_after - o.renew_before - o.serving_lifetime <= now)
    return {Action::kIssueAll, "the CA ends before another serving certificate would"};
  const Status pair =
      admission::check_serving_pair(serving, serving_dns_names(o), now, o.renew_before);
  if (!pair) return {Action::kIssueServing, pair.error().message};
  if (!admission::signed_by(serving.cert_pem, ca.cert_pem))
    return {Action::kIssueServing, "tls.crt is not signed by ca.crt"};
  return {Action::kUse, "valid"};
}

WebhookCertKeeper::WebhookCertKeeper(kube::KubeClient& client, WebhookCertOptions options,
                                     const Clock& clock)
    : client_(client), options_(std::move(options)), clock_(clock) {}

Result<ServingMaterial> WebhookCertKeeper::ensure() {
  const auto now = clock_.wall_now();
  auto found = client_.find(kube::secret_path(options_.secret_namespace, options_.secret_name));
  if (!found) return found.error();
  const std::optional<Json>& secret = *found;
  const CertPlan plan = plan_certs(secret, options_, now);
  ServingMaterial m;
  if (plan.action == CertPlan::Action::kUse || plan.action == CertPlan::Action::kUseExternal) {
    m.serving = {secret_data(*secret, "tls.crt"), secret_data(*secret, "tls.key")};
    m.ca_bundle = secret_data(*secret, "ca.crt");
    m.external = plan.action == CertPlan::Action::kUseExternal;
    if (m.external) {
      if (Status s = admission::check_serving_pair(m.serving, {}, now, std::chrono::seconds(0));
          !s) {
        return make_error(s.error().code, "Secret " + options_.secret_name +
                                              " (cert-manager): " + s.error().message);
      }
      if (Status s = publish_ca(m.ca_bundle); !s) return s.error();
      return m;
    }
    if (Status s = patch_ca_bundle(client_, options_.webhook_configuration, m.ca_bundle, ""); !s)
      return s.error();
    if (Status s = publish_ca(m.ca_bundle); !s) return s.error();
    return m;
  }
  spdlog::info("webhook certificates: {} ({})",
               plan.action == CertPlan::Action::kIssueAll ? "new CA and serving certificate"
                                                          : "new serving certificate",
               plan.why);
  admission::KeyPair ca;
  std::string old_cas;
  if (plan.action == CertPlan::Action::kIssueServing) {
    ca = {secret_data(*secret, "ca.crt"), secret_data(*secret, "ca.key")};
    old_cas = valid_cas(ca.cert_pem, now);
  } else {
    auto made = admission::make_ca("gleaner-webhook-ca", now, options_.ca_lifetime);
    if (!made) return made.error();
    ca = *made;
    // Still-valid old CAs stay trusted until replicas serving their certificates move on.
    if (secret) old_cas = valid_cas(secret_data(*secret, "ca.crt"), now);
  }
  auto serving =
      admission::make_serving_cert(ca, serving_dns_names(options_), now, options_.serving_lifetime);
  if (!serving) return serving.error();
  m.serving = *serving;
  // The first certificate of ca.crt is the signing CA (kept with ca.key).
  m.ca_bundle =
      plan.action == CertPlan::Action::kIssueServing ? ca.cert_pem : ca.cert_pem + old_cas;
  if (Status s = write_secret(secret, m, ca); !s) return s.error();
  if (Status s = patch_ca_bundle(client_, options_.webhook_configuration, m.ca_bundle, ""); !s)
    return s.error();
  if (Status s = publish_ca(m.ca_bundle); !s) return s.error();
  return m;
}

Status WebhookCertKeeper::publish_ca(const std::string& bundle) {
  for (const auto& [ns, name] : options_.ca_config_maps) {
    const std::string ref = fmt::format("{}/{}", ns, name);
    const std::string path = fmt::format("/api/v1/namespaces/{}/configmaps/{}", ns, name);
    auto found = client_.find(path);
    if (!found) {
      return make_error(found.error().code, "ConfigMap " + ref + ": " + found.error().message);
    }
    if (*found && string_at(**found, "data/ca.crt") == bundle) continue;
    Json map = *found ? **found
                      : Json{{"apiVersion", "v1"},
                             {"kind", "ConfigMap"},
                             {"metadata",
                              {{"name", name},
                               {"namespace", ns},
                               {"labels", {{"app.kubernetes.io/name", "gleaner-scheduler"}}}}}};
    if (!map.contains("data") || !map["data"].is_object()) map["data"] = Json::object();
    map["data"]["ca.crt"] = bundle;
    // A replace carries the resourceVersion read: of two replicas, one writes.
    auto written = *found ? client_.replace(path, map)
                          : client_.create("/api/v1/namespaces/" + ns + "/configmaps", map);
    if (!written) {
      return make_error(written.error().code, "ConfigMap " + ref + ": " + written.error().message);
    }
    spdlog::info("scheduler CA published in ConfigMap {}", ref);
  }
  return ok_status();
}

Status WebhookCertKeeper::write_secret(const std::optional<Json>& existing,
                                       const ServingMaterial& m, const admission::KeyPair& ca) {
  Json secret = existing ? *existing
                         : Json{{"apiVersion", "v1"},
                                {"kind", "Secret"},
                                {"metadata",
                                 {{"name", options_.secret_name},
                                  {"namespace", options_.secret_namespace},
                                  {"labels", {{"app.kubernetes.io/name", "gleaner-scheduler"}}}}},
                                {"type", "kubernetes.io/tls"}};
  secret["data"] = Json{{"tls.crt", kube::base64_encode(m.serving.cert_pem)},
                        {"tls.key", kube::base64_encode(m.serving.key_pem)},
                        {"ca.crt", kube::base64_encode(m.ca_bundle)},
                        {"ca.key", kube::base64_encode(ca.key_pem)}};
  const std::string path = kube::secret_path(options_.secret_namespace, options_.secret_name);
  auto written =
      existing
          ? client_.replace(path, secret)
          : client_.create("/api/v1/namespaces/" + options_.secret_namespace + "/secrets", secret);
  if (!written) {
    return make_error(written.error().code,
                      "Secret " + options_.secret_name + ": " + written.error().message);
  }
  return ok_status();
}

Status patch_ca_bundle(kube::KubeClient& client, const std::string& configuration,
                       const std::string& bundle, const std::string& cluster) {
  const std::string what = "MutatingWebhookConfiguration " + configuration +
                           (cluster.empty() ? "" : " of cluster " + cluster);
  const std::string path = kube::mutating_webhook_configuration_path(configuration);
  auto found = client.find(path);
  if (!found) return make_error(found.error().code, what + ": " + found.error().message);
  if (!*found) return make_error(ErrorCode::kNotFound, what + " does not exist");
  const Json& config = **found;
  const Json* a = find_path(config, "metadata/annotations");
  if (a != nullptr && a->is_object() && a->contains(kCaInjectAnnotation)) return ok_status();
  const std::string encoded = kube::base64_encode(bundle);
  Json ops = Json::array();
  const Json webhooks = config.value("webhooks", Json::array());
  if (!webhooks.is_array()) return make_error(ErrorCode::kParse, what + ": webhooks is not a list");
  for (size_t i = 0; i < webhooks.size(); ++i) {
    if (string_at(webhooks[i], "clientConfig/caBundle") == encoded) continue;
    const std::string at = "/webhooks/" + std::to_string(i);
    // The test op pins the entry: a concurrent edit that reorders webhooks fails the patch.
    ops.push_back(
        Json{{"op", "test"}, {"path", at + "/name"}, {"value", string_at(webhooks[i], "name")}});
    ops.push_back(Json{{"op", "add"}, {"path", at + "/clientConfig/caBundle"}, {"value", encoded}});
  }
  if (ops.empty()) return ok_status();
  auto patched = client.patch(path, ops, kube::PatchType::kJsonPatch);
  if (!patched) return make_error(patched.error().code, what + ": " + patched.error().message);
  spdlog::info("webhook certificates: caBundle of {} updated", what);
  return ok_status();
}

}  // namespace gleaner::scheduler::kube_glue
