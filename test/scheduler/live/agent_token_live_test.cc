// The TokenReviewer against the test API server's TokenRequest and TokenReview: a projected
// token of the agent's pod names the pod's node, with and without node names in reviews
// (Kubernetes before 1.30), verdicts are cached for their time and no longer, a deleted
// pod's token stops working, and an API server that cannot answer is not taken for a "no".
#include <gtest/gtest.h>

#include "common/json_util.h"
#include "scheduler/kube/agent_tokens.h"
#include "test/kube/test_apiserver.h"

namespace gleaner::scheduler::kube_glue {
namespace {

using kube::testing::TestApiServer;

constexpr const char* kReviews = "/apis/authentication.k8s.io/v1/tokenreviews";

class AgentTokenLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = TestApiServer::start();
    if (!server_) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py with /usr/bin/python3";
    api_ = std::make_unique<kube::KubeClient>(server_->config(), clock_);
    for (const auto& [ns, name] :
         {std::pair{"gleaner-system", "gleaner-agent"}, std::pair{"default", "default"}}) {
      ASSERT_TRUE(api_->create("/api/v1/namespaces/" + std::string(ns) + "/serviceaccounts",
                               {{"metadata", {{"name", name}}}})
                      .ok());
    }
    ASSERT_TRUE(api_->create("/api/v1/nodes", {{"metadata", {{"name", "node-a"}}}}).ok());
    agent_token_ = token_for(pod("gleaner-system", "agent-a", "gleaner-agent", "node-a"),
                             "gleaner-system", "gleaner-agent");
    reviewer_ = std::make_unique<TokenReviewer>(
        std::map<std::string, kube::KubeClient*>{{"default", api_.get()}}, AgentTokenOptions{},
        clock_, [this](const char* outcome) { ++outcomes_[outcome]; });
  }

  Json pod(const std::string& ns, const std::string& name, const std::string& sa,
           const std::string& node) {
    auto created = api_->create(
        "/api/v1/namespaces/" + ns + "/pods",
        {{"metadata", {{"name", name}}},
         {"spec",
          {{"serviceAccountName", sa}, {"nodeName", node}, {"containers", Json::array()}}}});
    EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error().message);
    return created.ok() ? *created : Json();
  }
  std::string token_for(const Json& bound_pod, const std::string& ns, const std::string& sa) {
    Json request = {{"apiVersion", "authentication.k8s.io/v1"},
                    {"kind", "TokenRequest"},
                    {"spec",
                     {{"audiences", {"gleaner-scheduler"}},
                      {"expirationSeconds", 3600},
                      {"boundObjectRef",
                       {{"kind", "Pod"},
                        {"apiVersion", "v1"},
                        {"name", bound_pod["metadata"]["name"]},
                        {"uid", bound_pod["metadata"]["uid"]}}}}}};
    auto issued =
        api_->create("/api/v1/namespaces/" + ns + "/serviceaccounts/" + sa + "/token", request);
    EXPECT_TRUE(issued.ok()) << (issued.ok() ? "" : issued.error().message);
    return issued.ok() ? string_at(*issued, "status/token") : "";
  }
  int reviews_asked() { return server_->count_requests("POST", kReviews, false); }

  FakeClock clock_;
  std::unique_ptr<TestApiServer> server_;
  std::unique_ptr<kube::KubeClient> api_;
  std::string agent_token_;
  std::map<std::string, int> outcomes_;
  std::unique_ptr<TokenReviewer> reviewer_;
};

TEST_F(AgentTokenLiveTest, APodsTokenNamesItsNodeAndTheVerdictIsCachedForItsTime) {
  EXPECT_TRUE(reviewer_->plausible(agent_token_).ok());
  EXPECT_FALSE(reviewer_->cached("default", agent_token_).has_value());
  auto who = reviewer_->review("default", agent_token_);
  ASSERT_TRUE(who.ok()) << who.error().message;
  EXPECT_EQ(who->node, "node-a");
  EXPECT_EQ(who->pod, "gleaner-system/agent-a");
  EXPECT_EQ(reviews_asked(), 1);
  EXPECT_EQ(outcomes_["authenticated"], 1);
  // Within the cache time, no second question to the API server.
  auto cached = reviewer_->cached("default", agent_token_);
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ((*cached)->node, "node-a");
  clock_.advance(std::chrono::seconds(121));
  EXPECT_FALSE(reviewer_->cached("default", agent_token_).has_value());
  EXPECT_TRUE(reviewer_->review("default", agent_token_).ok());
  EXPECT_EQ(reviews_asked(), 2);
}

TEST_F(AgentTokenLiveTest, BeforeKubernetes130ThePodNamesTheNode) {
  server_->admin("token-node-info", "on=false");
  auto who = reviewer_->review("default", agent_token_);
  ASSERT_TRUE(who.ok()) << who.error().message;
  EXPECT_EQ(who->node, "node-a");
  EXPECT_EQ(server_->count_requests("GET", "/api/v1/namespaces/gleaner-system/pods/agent-a", false),
            1);
}

TEST_F(AgentTokenLiveTest, ADeletedPodsTokenIsRefused) {
  ASSERT_TRUE(api_->remove("/api/v1/namespaces/gleaner-system/pods/agent-a").ok());
  auto who = reviewer_->review("default", agent_token_);
  ASSERT_FALSE(who.ok());
  EXPECT_EQ(who.error().code, ErrorCode::kInvalidArgument) << who.error().message;
  EXPECT_EQ(outcomes_["unauthenticated"], 1);
  // The refusal is remembered briefly, then asked again.
  ASSERT_TRUE(reviewer_->cached("default", agent_token_).has_value());
  clock_.advance(std::chrono::seconds(11));
  EXPECT_FALSE(reviewer_->cached("default", agent_token_).has_value());
}

TEST_F(AgentTokenLiveTest, AnotherAccountsTokenIsForbiddenEvenForOurAudience) {
  std::string other = token_for(pod("default", "web", "default", "node-a"), "default", "default");
  EXPECT_FALSE(reviewer_->plausible(other).ok()) << "refused before any review";
  auto who = reviewer_->review("default", other);
  ASSERT_FALSE(who.ok());
  EXPECT_EQ(who.error().code, ErrorCode::kPermission) << who.error().message;
  EXPECT_EQ(outcomes_["forbidden"], 1);
}

TEST_F(AgentTokenLiveTest, AnUnknownClusterOrAnApiServerThatCannotAnswerIsNoVerdict) {
  EXPECT_EQ(reviewer_->review("elsewhere", agent_token_).error().code, ErrorCode::kNotFound);
  server_->admin("fail", std::string("method=POST&code=500&count=1&prefix=") + kReviews);
  auto down = reviewer_->review("default", agent_token_);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().code, ErrorCode::kUnavailable) << down.error().message;
  EXPECT_EQ(outcomes_["error"], 1);
  // Not cached: the next report asks again, and is admitted.
  EXPECT_FALSE(reviewer_->cached("default", agent_token_).has_value());
  EXPECT_TRUE(reviewer_->review("default", agent_token_).ok());
}

}  // namespace
}  // namespace gleaner::scheduler::kube_glue
