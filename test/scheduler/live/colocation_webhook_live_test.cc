// The colocation webhook of `gleaner-scheduler run` called by the test API server the way
// kube-apiserver calls it (AdmissionReview over HTTPS to the Service, caBundle verified,
// JSON patch applied, failurePolicy Fail): certificates kept in a Secret with the CA
// patched into the MutatingWebhookConfiguration, profiles read live, and the pods the
// API server stores.
#include <map>
#include <memory>

#include <gtest/gtest.h>

#include "kube/config.h"
#include "scheduler/admission/manifest_files.h"
#include "scheduler/cli/colocation_webhook.h"
#include "scheduler/kube/webhook_certs.h"
#include "test/kube/test_apiserver.h"
#include "test/scheduler/live/live_fixture.h"
#include "test/support/eventually.h"

namespace gleaner::scheduler {
namespace {

using gleaner::testing::eventually;
using kube::testing::TestApiServer;

const char* kWebhookConfig = R"({
  "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
  "metadata": {"name": "gleaner-colocation"},
  "webhooks": [{
    "name": "colocation.gleaner.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
    "failurePolicy": "Fail", "timeoutSeconds": 5, "reinvocationPolicy": "IfNeeded",
    "clientConfig": {"service": {"namespace": "gleaner-system",
                                 "name": "gleaner-scheduler-webhook", "path": "/mutate-pod"}},
    "namespaceSelector": {"matchLabels": {"gleaner.io/colocation": "enabled"}},
    "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
               "resources": ["pods"]}]}]})";

Json executor_pod(const std::string& name, const std::string& ns) {
  Json pod = Json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"labels": {"spark-role": "executor", "sparkoperator.k8s.io/app-name": "pi"}},
    "spec": {"containers": [{"name": "spark-kubernetes-executor", "image": "spark:3.5.1",
                             "resources": {"requests": {"cpu": "2", "memory": "4505Mi"},
                                           "limits": {"memory": "4505Mi"}}}]}})");
  pod["metadata"]["name"] = name;
  pod["metadata"]["namespace"] = ns;
  return pod;
}

// What an operator applies to a cluster: the webhook configuration (calling `path`), the
// labelled namespace spark and, with `shipped`, the shipped PriorityClasses and example
// profile.
void create_cluster_objects(kube::KubeClient& client, const std::string& path, bool shipped) {
  Json config = Json::parse(kWebhookConfig);
  config["webhooks"][0]["clientConfig"]["service"]["path"] = path;
  ASSERT_TRUE(
      client.create("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", config)
          .ok());
  ASSERT_TRUE(
      client
          .create(kube::namespaces_path(),
                  Json{{"apiVersion", "v1"},
                       {"kind", "Namespace"},
                       {"metadata",
                        {{"name", "spark"}, {"labels", {{"gleaner.io/colocation", "enabled"}}}}}})
          .ok());
  if (!shipped) return;
  for (const char* file : {"/deploy/manifests/priority-classes/priority-classes.yaml",
                           "/deploy/examples/colocation-profile.yaml"}) {
    auto objects = admission::read_objects(std::string(GLEANER_SOURCE_DIR) + file);
    ASSERT_TRUE(objects.ok()) << objects.error().message;
    for (const Json& o : *objects) {
      const std::string at = o["kind"] == "PriorityClass" ? kube::priority_classes_path()
                                                          : kube::colocation_profiles_path();
      auto r = client.create(at, o);
      ASSERT_TRUE(r.ok()) << r.error().message;
    }
  }
}

class ColocationWebhookLive : public ::testing::Test {
 protected:
  void SetUp() override {
    api_ = TestApiServer::start();
    if (!api_) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py";
    client_ = std::make_unique<kube::KubeClient>(api_->config(), clock_);
    create_cluster_objects(*client_, "/mutate-pod", true);
    start_webhook();
  }
  void TearDown() override {
    if (webhook_) webhook_->stop();
    webhook_.reset();
  }
  void start_webhook(std::vector<std::string> extra_services = {},
                     std::vector<std::string> ca_config_maps = {}) {
    WebhookFlags flags;
    flags.listen = "127.0.0.1:0";
    flags.secret = "gleaner-system/gleaner-webhook-tls";
    flags.extra_services = std::move(extra_services);
    flags.ca_config_maps = std::move(ca_config_maps);
    auto started =
        ColocationWebhook::start(io_.io(), flags, {{"default", api_->config()}}, clock_, metrics_);
    ASSERT_TRUE(started.ok()) << started.error().message;
    webhook_ = std::move(*started);
    api_->admin(
        "webhook-service",
        "namespace=gleaner-system&name=gleaner-scheduler-webhook&port=443&address=127.0.0.1:" +
            std::to_string(webhook_->port()));
  }
  Json secret() {
    return *client_->get(kube::secret_path("gleaner-system", "gleaner-webhook-tls"));
  }
  // Creates the pod once the webhook answers (its informers synced): a dry run first.
  Result<Json> create_pod(const Json& pod) {
    const std::string path = kube::pods_path(pod["metadata"]["namespace"]);
    EXPECT_TRUE(eventually([&] { return client_->create(path + "?dryRun=All", pod).ok(); }));
    return client_->create(path, pod);
  }

  SystemClock clock_;
  server::LiveMetrics metrics_;
  live_testing::IoThread io_;
  std::unique_ptr<TestApiServer> api_;
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<ColocationWebhook> webhook_;
};

TEST_F(ColocationWebhookLive, SparkPodsInAColocatedNamespaceAreStoredAsBatchPods) {
  // The scheduler made its CA and certificate, kept them in the Secret and gave
  // kube-apiserver the CA: the calls below are verified against it.
  const Json s = secret();
  EXPECT_EQ(s["type"], "kubernetes.io/tls");
  auto config = client_->get(
      "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
      "gleaner-colocation");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ((*config)["webhooks"][0]["clientConfig"]["caBundle"], s["data"]["ca.crt"]);

  auto stored = create_pod(executor_pod("pi-exec-1", "spark"));
  ASSERT_TRUE(stored.ok()) << stored.error().message;
  const Json& c = (*stored)["spec"]["containers"][0]["resources"];
  EXPECT_EQ(c["requests"], (Json{{"kubernetes.io/batch-cpu", "2000"},
                                 {"kubernetes.io/batch-memory", std::to_string(4505LL << 20)}}));
  EXPECT_EQ(c["limits"], c["requests"]);
  EXPECT_EQ((*stored)["metadata"]["labels"]["koordinator.sh/qosClass"], "BE");
  EXPECT_EQ((*stored)["spec"]["priorityClassName"], "koord-batch");
  EXPECT_EQ((*stored)["spec"]["priority"], 5000);
  EXPECT_EQ((*stored)["spec"]["schedulerName"], "gleaner-scheduler");
  EXPECT_GE(metrics_.webhook_reviews("mutated"), 2u);  // the dry run and the create

  // A namespace without the label is not sent to the webhook at all.
  auto other = client_->create(kube::pods_path("default"), executor_pod("pi-exec-2", "default"));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*other)["spec"]["containers"][0]["resources"]["requests"]["cpu"], "2");
}

TEST_F(ColocationWebhookLive, ARestartedSchedulerServesTheCertificateInItsSecret) {
  const std::string first = secret()["data"]["tls.crt"];
  webhook_->stop();
  webhook_.reset();
  start_webhook();
  EXPECT_EQ(secret()["data"]["tls.crt"], first);
  EXPECT_TRUE(create_pod(executor_pod("pi-exec-1", "spark")).ok());
}

TEST_F(ColocationWebhookLive, ForTheReportPortTheCertificateCoversItsServiceAndTheCaIsPublished) {
  const std::string first = secret()["data"]["tls.crt"];
  webhook_->stop();
  webhook_.reset();
  start_webhook({"gleaner-system/gleaner-scheduler"}, {"kube-system/gleaner-scheduler-ca"});
  // The Secret's certificate did not name the report Service: re-issued from the same CA.
  EXPECT_NE(secret()["data"]["tls.crt"], first);
  const auto names = kube_glue::service_dns_names("gleaner-scheduler", "gleaner-system");
  EXPECT_TRUE(admission::check_serving_pair(webhook_->serving(), names,
                                            std::chrono::system_clock::now(),
                                            std::chrono::seconds(0))
                  .ok());
  auto map = client_->get("/api/v1/namespaces/kube-system/configmaps/gleaner-scheduler-ca");
  ASSERT_TRUE(map.ok()) << map.error().message;
  auto ca = kube::base64_decode(secret()["data"]["ca.crt"].get<std::string>());
  ASSERT_TRUE(ca.ok());
  EXPECT_EQ((*map)["data"]["ca.crt"], *ca);
  // The webhook still works with the new certificate.
  EXPECT_TRUE(create_pod(executor_pod("pi-exec-1", "spark")).ok());
}

TEST_F(ColocationWebhookLive, AnInvalidProfileEditKeepsTheLastGoodVersion) {
  ASSERT_TRUE(create_pod(executor_pod("pi-exec-1", "spark")).ok());
  auto edited = client_->patch(kube::colocation_profiles_path() + "/spark-batch",
                               Json{{"spec", {{"qosClass", "Gold"}}}}, kube::PatchType::kMerge);
  ASSERT_TRUE(edited.ok()) << edited.error().message;
  ASSERT_TRUE(eventually([&] {
    return metrics_.render({}).find("gleaner_scheduler_colocation_profiles_rejected_total 1\n") !=
           std::string::npos;
  }));
  auto stored = client_->create(kube::pods_path("spark"), executor_pod("pi-exec-2", "spark"));
  ASSERT_TRUE(stored.ok()) << stored.error().message;
  EXPECT_EQ((*stored)["metadata"]["labels"]["koordinator.sh/qosClass"], "BE");
}

TEST_F(ColocationWebhookLive, AWebhookThatIsDownRefusesPodsUnderFailurePolicyFail) {
  webhook_->stop();
  auto refused = client_->create(kube::pods_path("spark"), executor_pod("pi-exec-1", "spark"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("failed calling webhook"), std::string::npos)
      << refused.error().message;
}

// A fleet's members, each with its own API server: the CA reaches every member's
// configuration, and each member's pods are decided with its own profiles.
TEST(ColocationWebhookFleet, EveryMemberHasTheCaAndItsPodsAreDecidedWithItsOwnProfiles) {
  SystemClock clock;
  server::LiveMetrics metrics;
  live_testing::IoThread io;
  std::map<std::string, std::unique_ptr<TestApiServer>> apis;
  std::map<std::string, std::unique_ptr<kube::KubeClient>> clients;
  std::map<std::string, kube::KubeConfig> configs;
  for (const char* name : {"c1", "c2"}) {
    auto api = TestApiServer::start();
    if (!api) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py";
    configs.emplace(name, api->config());
    auto client = std::make_unique<kube::KubeClient>(api->config(), clock);
    // Only c2 has the profile (and the PriorityClasses it names): c1's pods stay as they are.
    create_cluster_objects(*client, std::string("/mutate-pod/") + name, name == std::string("c2"));
    apis.emplace(name, std::move(api));
    clients.emplace(name, std::move(client));
  }
  WebhookFlags flags;
  flags.listen = "127.0.0.1:0";
  flags.secret = "gleaner-system/gleaner-webhook-tls";
  flags.cluster = "c1";
  auto webhook = ColocationWebhook::start(io.io(), flags, configs, clock, metrics);
  ASSERT_TRUE(webhook.ok()) << webhook.error().message;
  for (auto& [name, api] : apis) {
    api->admin("webhook-service",
               "namespace=gleaner-system&name=gleaner-scheduler-webhook&port=443&address=127.0.0."
               "1:" +
                   std::to_string((*webhook)->port()));
  }
  // The Secret is in the home cluster; its CA is in both members' configurations.
  auto secret = clients["c1"]->get(kube::secret_path("gleaner-system", "gleaner-webhook-tls"));
  ASSERT_TRUE(secret.ok()) << secret.error().message;
  for (auto& [name, client] : clients) {
    EXPECT_TRUE(eventually([&] {
      auto config = client->get(
          "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
          "gleaner-colocation");
      return config.ok() &&
             (*config)["webhooks"][0]["clientConfig"]["caBundle"] == (*secret)["data"]["ca.crt"];
    })) << name;
  }
  auto create = [&](const std::string& cluster, const std::string& pod) {
    const std::string path = kube::pods_path("spark");
    const Json p = executor_pod(pod, "spark");
    EXPECT_TRUE(eventually([&] { return clients[cluster]->create(path + "?dryRun=All", p).ok(); }));
    return clients[cluster]->create(path, p);
  };
  auto in_c2 = create("c2", "pi-exec-1");
  ASSERT_TRUE(in_c2.ok()) << in_c2.error().message;
  EXPECT_EQ((*in_c2)["metadata"]["labels"]["koordinator.sh/qosClass"], "BE");
  EXPECT_EQ((*in_c2)["spec"]["priority"], 5000);  // c2's koord-batch
  EXPECT_TRUE((*in_c2)["spec"]["containers"][0]["resources"]["requests"].contains(
      "kubernetes.io/batch-cpu"));
  auto in_c1 = create("c1", "pi-exec-1");
  ASSERT_TRUE(in_c1.ok()) << in_c1.error().message;
  EXPECT_FALSE((*in_c1)["metadata"]["labels"].contains("koordinator.sh/qosClass"));
  EXPECT_EQ((*in_c1)["spec"]["containers"][0]["resources"]["requests"]["cpu"], "2");
  (*webhook)->stop();
}

}  // namespace
}  // namespace gleaner::scheduler
