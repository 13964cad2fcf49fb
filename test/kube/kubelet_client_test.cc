// The kubelet /pods client against the test server's kubelet endpoint (read-only style
// plain HTTP): node pods, and keeping the last good list through failures.
#include "kube/kubelet_client.h"

#include <gtest/gtest.h>

#include "kube/api_client.h"
#include "test/kube/test_apiserver.h"

namespace gleaner::kube {
namespace {

using testing::TestApiServer;

class KubeletClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = TestApiServer::start({"--kubelet-node", "node-1"});
    if (!server_) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py with /usr/bin/python3";
    api_ = std::make_unique<KubeClient>(server_->config(), clock_);
    KubeletOptions o;
    o.host = "127.0.0.1";
    o.port = server_->port();
    o.https = false;
    o.timeout = std::chrono::milliseconds(2000);
    kubelet_ = std::make_unique<KubeletClient>(o, clock_);
  }
  void create(const std::string& name, const std::string& node) {
    ASSERT_TRUE(api_->create(pods_path("default"),
                             {{"metadata", {{"name", name}}}, {"spec", {{"nodeName", node}}}})
                    .ok());
  }

  SystemClock clock_;
  std::unique_ptr<TestApiServer> server_;
  std::unique_ptr<KubeClient> api_;
  std::unique_ptr<KubeletClient> kubelet_;
};

TEST_F(KubeletClientTest, ListsThePodsOfItsNode) {
  create("here", "node-1");
  create("there", "node-2");
  auto pods = kubelet_->pods();
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->pods.size(), 1u);
  EXPECT_EQ(pods->pods[0]["metadata"]["name"], "here");
  EXPECT_FALSE(pods->stale);
}

TEST_F(KubeletClientTest, KeepsTheLastGoodListWhenACallFails) {
  create("here", "node-1");
  ASSERT_TRUE(kubelet_->pods().ok());
  for (const char* mode : {"fail", "garbage"}) {
    server_->admin("kubelet", std::string("mode=") + mode);
    EXPECT_FALSE(kubelet_->fetch().ok()) << mode;
    auto pods = kubelet_->pods();
    ASSERT_TRUE(pods.ok());
    EXPECT_TRUE(pods->stale) << mode;
    EXPECT_EQ(pods->pods.size(), 1u);
    EXPECT_FALSE(pods->last_error.empty());
  }
}

TEST_F(KubeletClientTest, BelievesASuddenEmptyListOnlyAfterConfirmations) {
  create("here", "node-1");
  ASSERT_TRUE(kubelet_->pods().ok());
  server_->admin("kubelet", "mode=empty");
  for (int i = 0; i < 2; ++i) {
    auto pods = kubelet_->pods();
    ASSERT_TRUE(pods.ok());
    EXPECT_TRUE(pods->stale) << i;
    EXPECT_EQ(pods->pods.size(), 1u) << i;
  }
  auto third = kubelet_->pods();
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(third->stale);
  EXPECT_TRUE(third->pods.empty());
}

TEST_F(KubeletClientTest, FailsWithoutAnyGoodListYet) {
  server_->admin("kubelet", "mode=fail");
  auto pods = kubelet_->pods();
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.error().code, ErrorCode::kUnavailable);
}

TEST_F(KubeletClientTest, UnreachableKubeletIsUnavailable) {
  KubeletOptions o;
  o.port = 1;
  o.https = false;
  KubeletClient nowhere(o, clock_);
  auto r = nowhere.fetch();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace gleaner::kube
