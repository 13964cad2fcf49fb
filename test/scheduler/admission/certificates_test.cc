// The webhook's certificates: what make_ca / make_serving_cert produce, and the keeper's
// plan for each state the Secret can be in.
#include "scheduler/admission/certificates.h"

#include <gtest/gtest.h>

#include "kube/config.h"
#include "scheduler/kube/webhook_certs.h"

namespace gleaner::scheduler {
namespace {

using admission::CertTime;
using std::chrono::hours;
using Action = kube_glue::CertPlan::Action;

const CertTime kNow = std::chrono::system_clock::from_time_t(1'800'000'000);
constexpr auto kDay = hours(24);

kube_glue::WebhookCertOptions options() {
  kube_glue::WebhookCertOptions o;
  o.secret_namespace = "gleaner-system";
  o.service_namespace = "gleaner-system";
  return o;
}

Json secret_of(const admission::KeyPair& serving, const admission::KeyPair& ca) {
  return Json{{"metadata", {{"name", "gleaner-webhook-tls"}}},
              {"data",
               {{"tls.crt", kube::base64_encode(serving.cert_pem)},
                {"tls.key", kube::base64_encode(serving.key_pem)},
                {"ca.crt", kube::base64_encode(ca.cert_pem)},
                {"ca.key", kube::base64_encode(ca.key_pem)}}}};
}

TEST(WebhookCertificates, ServingCertificateNamesTheServiceAndChainsToItsCa) {
  auto ca = admission::make_ca("test-ca", kNow, kDay * 3650);
  ASSERT_TRUE(ca.ok()) << ca.error().message;
  const auto names = kube_glue::service_dns_names("hook", "ns");
  EXPECT_EQ(names[2], "hook.ns.svc");
  auto serving = admission::make_serving_cert(*ca, names, kNow, kDay * 365);
  ASSERT_TRUE(serving.ok()) << serving.error().message;
  auto info = admission::read_cert(serving->cert_pem);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->dns_names, names);
  EXPECT_EQ(info->not_after, kNow + kDay * 365);
  EXPECT_TRUE(admission::signed_by(serving->cert_pem, ca->cert_pem));
  auto other = admission::make_ca("other", kNow, kDay);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(admission::signed_by(serving->cert_pem, other->cert_pem));
  EXPECT_TRUE(admission::check_serving_pair(*serving, names, kNow, kDay * 30).ok());
  // Near its end, for another name, or with a key that is not its own: not usable.
  EXPECT_FALSE(admission::check_serving_pair(*serving, names, kNow + kDay * 340, kDay * 30).ok());
  auto wrong_name = admission::check_serving_pair(*serving, {"other.ns.svc"}, kNow, kDay);
  ASSERT_FALSE(wrong_name.ok());
  EXPECT_NE(wrong_name.error().message.find("does not name other.ns.svc"), std::string::npos);
  admission::KeyPair mismatched{serving->cert_pem, ca->key_pem};
  auto mismatch = admission::check_serving_pair(mismatched, names, kNow, kDay);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.error().message.find("does not match"), std::string::npos);
}

TEST(WebhookCertificates, KeeperPlansFollowTheSecretsState) {
  const auto o = options();
  EXPECT_EQ(kube_glue::plan_certs(std::nullopt, o, kNow).action, Action::kIssueAll);
  auto ca = admission::make_ca("ca", kNow, o.ca_lifetime);
  ASSERT_TRUE(ca.ok());
  auto serving = admission::make_serving_cert(
      *ca, kube_glue::service_dns_names(o.service_name, o.service_namespace), kNow,
      o.serving_lifetime);
  ASSERT_TRUE(serving.ok());
  const Json secret = secret_of(*serving, *ca);
  EXPECT_EQ(kube_glue::plan_certs(secret, o, kNow).action, Action::kUse);
  // 30 days before the serving certificate ends it is re-issued from the same CA.
  EXPECT_EQ(kube_glue::plan_certs(secret, o, kNow + kDay * 336).action, Action::kIssueServing);
  // A CA that would end within the next serving certificate's life is replaced.
  EXPECT_EQ(kube_glue::plan_certs(secret, o, kNow + kDay * 3300).action, Action::kIssueAll);
  // A serving certificate for another Service is re-issued.
  auto other = options();
  other.service_name = "renamed";
  EXPECT_EQ(kube_glue::plan_certs(secret, other, kNow).action, Action::kIssueServing);
  // The report port serving the same certificate: its Service's names are added.
  auto reports = options();
  reports.extra_services = {{"gleaner-system", "gleaner-scheduler"}};
  EXPECT_EQ(kube_glue::plan_certs(secret, reports, kNow).action, Action::kIssueServing);
  auto both = admission::make_serving_cert(*ca, kube_glue::serving_dns_names(reports), kNow,
                                           o.serving_lifetime);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(kube_glue::plan_certs(secret_of(*both, *ca), reports, kNow).action, Action::kUse);
  EXPECT_EQ(kube_glue::serving_dns_names(reports).back(),
            "gleaner-scheduler.gleaner-system.svc.cluster.local");
  // cert-manager's Secret is used as it is, whatever it holds.
  Json managed = secret;
  managed["metadata"]["annotations"]["cert-manager.io/certificate-name"] = "gleaner-webhook";
  EXPECT_EQ(kube_glue::plan_certs(managed, o, kNow + kDay * 400).action, Action::kUseExternal);
  Json no_ca = secret;
  no_ca["data"].erase("ca.key");
  EXPECT_EQ(kube_glue::plan_certs(no_ca, o, kNow).action, Action::kIssueAll);
}

TEST(Base64, EncodesAsTheStandardAlphabetAndRoundTrips) {
  EXPECT_EQ(kube::base64_encode(""), "");
  EXPECT_EQ(kube::base64_encode("f"), "Zg==");
  EXPECT_EQ(kube::base64_encode("fo"), "Zm8=");
  EXPECT_EQ(kube::base64_encode("foo"), "Zm9v");
  const std::string bytes("\x00\xff\x10gleaner", 10);
  auto back = kube::base64_decode(kube::base64_encode(bytes));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bytes);
}

}  // namespace
}  // namespace gleaner::scheduler
