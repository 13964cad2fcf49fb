// HTTPS against the test API server with a certificate made here by the openssl CLI:
// verification against a CA, a rejected unknown certificate, insecure-skip-tls-verify, and
// the kubelet client verifying kubelet's certificate unless told not to.
#include <cstdlib>

#include <gtest/gtest.h>

#include "kube/api_client.h"
#include "kube/kubelet_client.h"
#include "test/kube/test_apiserver.h"
#include "test/support/temp_tree.h"

namespace gleaner::kube {
namespace {

using testing::TestApiServer;

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string cmd =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1"
        " -addext subjectAltName=IP:127.0.0.1 -keyout " +
        (dir_ / "key.pem") + " -out " + (dir_ / "cert.pem") + " 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "openssl CLI cannot make a certificate";
    server_ = TestApiServer::start({"--tls-cert", dir_ / "cert.pem", "--tls-key", dir_ / "key.pem",
                                    "--token", "tls-token", "--kubelet-node", "n1"});
    if (!server_) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py with TLS";
  }
  KubeConfig https_config() {
    KubeConfig c;
    c.endpoint = net::HttpUrl{"https", "127.0.0.1", server_->port()};
    c.token = "tls-token";
    c.qps = 0;
    c.timeout = std::chrono::milliseconds(5000);
    return c;
  }

  gleaner::testing::TempDir dir_;
  SystemClock clock_;
  std::unique_ptr<TestApiServer> server_;
};

TEST_F(TlsTest, VerifiesTheServerAgainstTheGivenCa) {
  KubeConfig c = https_config();
  c.tls.ca_file = dir_ / "cert.pem";
  KubeClient client(c, clock_);
  auto r = client.create(nodes_path(), {{"metadata", {{"name", "n1"}}}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto w = client.watch(nodes_path(), {});
  ASSERT_TRUE(w.ok()) << w.error().message;
  auto ev = (*w)->next();
  ASSERT_TRUE(ev.ok() && ev->has_value()) << (ev.ok() ? "ended" : ev.error().message);
  EXPECT_EQ((*ev)->object["metadata"]["name"], "n1");
}

TEST_F(TlsTest, RejectsAnUnknownCertificate) {
  KubeClient client(https_config(), clock_);  // system CA store: does not know our cert
  auto r = client.get(nodes_path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("TLS handshake"), std::string::npos) << r.error().message;
}

TEST_F(TlsTest, InsecureSkipVerifyAccepts) {
  KubeConfig c = https_config();
  c.tls.verify = false;
  KubeClient client(c, clock_);
  EXPECT_TRUE(client.get(nodes_path()).ok());
}

TEST_F(TlsTest, KubeletClientVerifiesKubeletsCertificateAndSendsTheToken) {
  KubeletOptions o;
  o.port = server_->port();
  o.token = "tls-token";
  o.ca_file = dir_ / "cert.pem";
  KubeletClient kubelet(o, clock_);
  auto pods = kubelet.fetch();
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  o.token = "wrong";
  KubeletClient denied(o, clock_);
  EXPECT_EQ(denied.fetch().error().code, ErrorCode::kPermission);
}

TEST_F(TlsTest, KubeletClientRefusesAnUnknownKubeletUnlessToldToBeInsecure) {
  KubeletOptions o;
  o.port = server_->port();
  o.token = "tls-token";             // never sent: the handshake fails first
  KubeletClient unknown(o, clock_);  // the system trust store does not know the certificate
  auto refused = unknown.fetch();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("TLS handshake"), std::string::npos)
      << refused.error().message;
  o.verify_tls = false;
  KubeletClient insecure(o, clock_);
  EXPECT_TRUE(insecure.fetch().ok());
}

}  // namespace
}  // namespace gleaner::kube
