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

TEST(Base64, RejectsMisplacedPaddingAndTruncationNamingTheFault) {
  auto error_of = [](std::string_view text) {
    auto r = base64_decode(text);
    return r.ok() ? std::string("ok") : r.error().message;
  };
  EXPECT_NE(error_of("Zg=a").find("unexpected character 'a'"), std::string::npos);
  EXPECT_NE(error_of("Zg===").find("padding"), std::string::npos);
  EXPECT_NE(error_of("Z").find("truncated"), std::string::npos);
  EXPECT_NE(error_of(std::string("Zg\x01=", 4)).find("0x01"), std::string::npos);
  // Wrapped lines and spaces, as kubeconfig and Secret data may carry, are skipped.
  EXPECT_EQ(base64_decode(" Zm9v\r\nYg==\n").value_or("?"), "foob");
}

TEST(Base64, EncodesEveryPaddingCase) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(Base64, DecodesEveryPaddingCaseWithAndWithoutPadding) {
  // Trailing zero bytes are data, not padding: the lengths must come out exact.
  EXPECT_EQ(base64_decode("").value_or("?"), "");
  EXPECT_EQ(base64_decode("Zg==").value_or("?"), "f");
  EXPECT_EQ(base64_decode("Zm8=").value_or("?"), "fo");
  EXPECT_EQ(base64_decode("Zm9v").value_or("?"), "foo");
  EXPECT_EQ(base64_decode("Zg").value_or("?"), "f");  // base64url tokens carry no padding
  EXPECT_EQ(base64_decode("Zm8").value_or("?"), "fo");
  EXPECT_EQ(base64_decode("AA==").value_or("?"), std::string(1, '\0'));
  EXPECT_EQ(base64_decode("AAAA").value_or("?"), std::string(3, '\0'));
  std::string every_byte;
  for (int i = 0; i < 256; ++i)
    every_byte += static_cast<char>(i);
  for (size_t len : {0, 1, 2, 3, 254, 255, 256}) {
    const std::string bytes = every_byte.substr(0, len);
    EXPECT_EQ(base64_decode(base64_encode(bytes)).value_or("?"), bytes) << len;
  }
}

TEST(Base64, RejectsMalformedInputSayingWhy) {
  auto message = [](std::string_view text) {
    auto r = base64_decode(text);
    return r ? std::string("accepted") : r.error().message;
  };
  EXPECT_EQ(message("Zg==Zg=="), "base64: unexpected character 'Z'");  // data after padding
  EXPECT_EQ(message("Z=g="), "base64: unexpected character 'g'");
  EXPECT_EQ(message("Zm9vY"), "base64: truncated input");  // 6 bits cannot make a byte
  EXPECT_EQ(message("Zg="), "base64: padding does not complete a group of 4");
  EXPECT_EQ(message("Zm9v="), "base64: padding does not complete a group of 4");
  EXPECT_EQ(message("Zm9-"), "base64: unexpected character '-'");  // base64url, not standard
  EXPECT_EQ(message("Zm9v\tYg=="), "base64: unexpected byte 0x09");
  EXPECT_EQ(message(std::string("Zm\0v", 4)), "base64: unexpected byte 0x00");
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
