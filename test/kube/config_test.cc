#include "kube/config.h"

#include <map>

#include <gtest/gtest.h>

#include "common/file_io.h"
#include "common/json_util.h"
#include "kube/yaml_json.h"
#include "test/support/bad_input.h"
#include "test/support/temp_tree.h"

namespace gleaner::kube {
namespace {

using gleaner::testing::TempDir;

const std::string kKubeconfig = GLEANER_SOURCE_DIR "/test/kube/testdata/kubeconfig.yaml";

// A kubeconfig written by `kubectl config set-cluster/set-credentials/set-context`.
TEST(Kubeconfig, CurrentContextWithEmbeddedCaAndToken) {
  auto c = load_kubeconfig(kKubeconfig);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->endpoint.scheme, "https");
  EXPECT_EQ(c->endpoint.host, "10.0.0.1");
  EXPECT_EQ(c->endpoint.port, 6443);
  EXPECT_TRUE(c->tls.verify);
  EXPECT_EQ(c->tls.ca_pem, "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n");
  EXPECT_EQ(c->token, "s3cr3t");
}

TEST(Kubeconfig, NamedContextWithClientCertRelativeToTheFile) {
  auto c = load_kubeconfig(kKubeconfig, "lab");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->endpoint.host, "lab.example");
  EXPECT_EQ(c->endpoint.port, 443);
  EXPECT_FALSE(c->tls.verify);  // insecure-skip-tls-verify: true
  EXPECT_EQ(c->tls.client_cert_file, GLEANER_SOURCE_DIR "/test/kube/testdata/certs/client.crt");
  EXPECT_EQ(c->tls.client_key_file, GLEANER_SOURCE_DIR "/test/kube/testdata/certs/client.key");
  EXPECT_TRUE(c->token.empty());
}

TEST(Kubeconfig, ErrorsNameTheProblem) {
  gleaner::testing::expect_each_rejected(
      {
          {"clusters: [\n", "kc:"},
          {"kind: Config\n", "no current-context"},
          {"current-context: x\ncontexts: []\n", "context \"x\" not found"},
          {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n", "cluster \"c\""},
          {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
           "clusters:\n- name: c\n  cluster: {server: 'ftp://h'}\n",
           "scheme"},
          {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
           "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
           "users:\n- name: u\n  user: {exec: {command: aws}}\n",
           "exec"},
          {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
           "clusters:\n- name: c\n  cluster: {server: 'https://h', certificate-authority-data: "
           "'@@'}\n",
           "base64"},
      },
      [](const char* yaml) { return kubeconfig_from_text(yaml, "kc"); });
}

TEST(Kubeconfig, PlainHttpServerForLoopback) {
  auto c = kubeconfig_from_text(
      "current-context: t\ncontexts:\n- name: t\n  context: {cluster: t}\n"
      "clusters:\n- name: t\n  cluster:\n    server: http://127.0.0.1:8080\n",
      "kc");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->endpoint.scheme, "http");
  EXPECT_EQ(c->endpoint.port, 8080);
}

TEST(InCluster, UsesServiceEnvAndMountedServiceAccount) {
  TempDir sa;
  sa.write("token", "tok-1\n");
  sa.write("ca.crt", "PEM");
  std::map<std::string, std::string> env{{"KUBERNETES_SERVICE_HOST", "fd00::1"},
                                         {"KUBERNETES_SERVICE_PORT", "443"}};
  auto lookup = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    return it == env.end() ? std::nullopt : std::optional(it->second);
  };
  auto c = in_cluster_config(lookup, sa.path());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->endpoint.host, "fd00::1");
  EXPECT_EQ(c->endpoint.port, 443);
  EXPECT_EQ(c->tls.ca_file, sa / "ca.crt");
  EXPECT_EQ(c->token_file, sa / "token");
  env.clear();
  auto outside = in_cluster_config(lookup, sa.path());
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message.find("KUBERNETES_SERVICE_HOST"), std::string::npos);
}

TEST(Base64, DecodesPaddedAndRejectsJunk) {
  EXPECT_EQ(base64_decode("aGVsbG8=").value_or("?"), "hello");
  EXPECT_EQ(base64_decode("aGVs\nbG8h").value_or("?"), "hello!");
  EXPECT_FALSE(base64_decode("aGV$").ok());
}

TEST(Yaml, ScalarsKeepTheirTypes) {
  auto j = yaml_to_json("a: 1\nb: 'x'\nc: true\nd: [1, two]\ne: \"007\"\nf:\n", "y");
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_EQ(*j, Json::parse(R"({"a":1,"b":"x","c":true,"d":[1,"two"],"e":"007","f":null})"));
  auto bad = yaml_to_json("a: [1,\n", "y.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("y.yaml:"), std::string::npos);
}

}  // namespace
}  // namespace gleaner::kube
