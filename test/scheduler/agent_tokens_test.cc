// Reading agent tokens and TokenReview answers: what is refused before asking the API
// server, and what a review's answer allows.
#include "scheduler/kube/agent_tokens.h"

#include <gtest/gtest.h>

#include "kube/config.h"

namespace gleaner::scheduler::kube_glue {
namespace {

std::string base64url(const std::string& bytes) {
  std::string s = kube::base64_encode(bytes);
  for (char& c : s) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  while (!s.empty() && s.back() == '=')
    s.pop_back();
  return s;
}

std::string jwt(const Json& claims) {
  return base64url(R"({"alg":"RS256","kid":"k"})") + "." + base64url(claims.dump()) + ".c2ln";
}

constexpr int64_t kNow = 1'800'000'000;

Json agent_claims() {
  return Json{{"aud", {"gleaner-scheduler"}},
              {"exp", kNow + 3600},
              {"sub", "system:serviceaccount:gleaner-system:gleaner-agent"}};
}

Json review(bool authenticated, Json extra = Json::object(),
            std::string user = "system:serviceaccount:gleaner-system:gleaner-agent") {
  Json status = {{"user", {{"username", user}, {"extra", extra}}},
                 {"audiences", {"gleaner-scheduler"}}};
  if (authenticated) status["authenticated"] = true;
  if (!authenticated) status = {{"user", Json::object()}, {"error", "invalid bearer token"}};
  return Json{{"kind", "TokenReview"}, {"status", status}};
}

Json pod_extra(bool with_node) {
  Json extra = {{"authentication.kubernetes.io/pod-name", {"gleaner-agent-x7"}},
                {"authentication.kubernetes.io/pod-uid", {"uid-1"}}};
  if (with_node) extra["authentication.kubernetes.io/node-name"] = {"node-a"};
  return extra;
}

TEST(AgentTokens, ServiceAccountUserNamesNamespaceAndName) {
  EXPECT_EQ(service_account_user("ns/sa"), "system:serviceaccount:ns:sa");
  for (const char* bad : {"", "sa", "/sa", "ns/", "a/b/c"})
    EXPECT_EQ(service_account_user(bad), "") << bad;
}

TEST(AgentTokens, ReadsTheClaimsOfAJwtWithoutVerifyingIt) {
  auto claims = peek_token_claims(jwt(agent_claims()));
  ASSERT_TRUE(claims.ok()) << claims.error().message;
  EXPECT_EQ(claims->audiences, std::vector<std::string>{"gleaner-scheduler"});
  EXPECT_EQ(claims->expires_unix, kNow + 3600);
  // aud may be a single string.
  Json single = agent_claims();
  single["aud"] = "gleaner-scheduler";
  EXPECT_EQ(peek_token_claims(jwt(single))->audiences.size(), 1u);
}

TEST(AgentTokens, RefusesWhatCannotBeAServiceAccountToken) {
  for (const std::string& bad :
       {std::string("s3cret"), std::string("a.b"), std::string("a.b.c.d"), std::string("x.!!!.y"),
        "x." + base64url("[1]") + ".y", "x." + base64url("{not json") + ".y"}) {
    auto claims = peek_token_claims(bad);
    ASSERT_FALSE(claims.ok()) << bad;
    EXPECT_EQ(claims.error().code, ErrorCode::kInvalidArgument);
  }
  Json no_exp = agent_claims();
  no_exp.erase("exp");
  EXPECT_FALSE(peek_token_claims(jwt(no_exp)).ok());
}

TEST(AgentTokens, APlausibleTokenIsForUsOfTheAgentAccountAndNotExpired) {
  AgentTokenOptions o;
  auto ok = peek_token_claims(jwt(agent_claims()));
  EXPECT_TRUE(plausible_claims(*ok, o, kNow).ok());
  EXPECT_FALSE(plausible_claims(*ok, o, kNow + 3600).ok()) << "expired";
  Json other_aud = agent_claims();
  other_aud["aud"] = {"https://kubernetes.default.svc.cluster.local"};
  EXPECT_FALSE(plausible_claims(*peek_token_claims(jwt(other_aud)), o, kNow).ok());
  Json other_sa = agent_claims();
  other_sa["sub"] = "system:serviceaccount:default:default";
  EXPECT_FALSE(plausible_claims(*peek_token_claims(jwt(other_sa)), o, kNow).ok());
}

TEST(AgentTokens, AReviewNamesThePodAndItsNode) {
  auto agent = read_token_review(review(true, pod_extra(true)), {});
  ASSERT_TRUE(agent.ok()) << agent.error().message;
  EXPECT_EQ(agent->pod_namespace, "gleaner-system");
  EXPECT_EQ(agent->pod_name, "gleaner-agent-x7");
  EXPECT_EQ(agent->pod_uid, "uid-1");
  EXPECT_EQ(agent->node, "node-a");
  // Before Kubernetes 1.30: no node in the review (the pod is read instead).
  auto older = read_token_review(review(true, pod_extra(false)), {});
  ASSERT_TRUE(older.ok());
  EXPECT_EQ(older->node, "");
}

TEST(AgentTokens, ARefusedReviewIsInvalidAndSaysWhy) {
  auto agent = read_token_review(review(false), {});
  ASSERT_FALSE(agent.ok());
  EXPECT_EQ(agent.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(agent.error().message.find("invalid bearer token"), std::string::npos);
}

TEST(AgentTokens, AReviewMustConfirmOurAudience) {
  Json r = review(true, pod_extra(true));
  r["status"].erase("audiences");
  EXPECT_EQ(read_token_review(r, {}).error().code, ErrorCode::kInvalidArgument);
  r["status"]["audiences"] = {"https://kubernetes.default.svc.cluster.local"};
  EXPECT_EQ(read_token_review(r, {}).error().code, ErrorCode::kInvalidArgument);
}

TEST(AgentTokens, AnotherAccountOrAnUnboundTokenIsForbidden) {
  auto other =
      read_token_review(review(true, pod_extra(true), "system:serviceaccount:default:default"), {});
  EXPECT_EQ(other.error().code, ErrorCode::kPermission);
  auto unbound = read_token_review(review(true, Json::object()), {});
  EXPECT_EQ(unbound.error().code, ErrorCode::kPermission);
}

TEST(AgentTokens, AnAnswerOfTheWrongShapeIsAParseError) {
  for (const Json& bad : {Json(nullptr), Json::array(), Json{{"status", "x"}}}) {
    auto agent = read_token_review(bad, {});
    ASSERT_FALSE(agent.ok());
    EXPECT_EQ(agent.error().code, ErrorCode::kParse) << bad.dump();
  }
  // "user" of the wrong shape is not a crash but a refusal.
  Json r = review(true);
  r["status"]["user"] = 5;
  EXPECT_EQ(read_token_review(r, {}).error().code, ErrorCode::kPermission);
}

TEST(AgentTokens, TheRequestAsksForOurAudience) {
  Json req = token_review_request("t", {});
  EXPECT_EQ(req["apiVersion"], "authentication.k8s.io/v1");
  EXPECT_EQ(req["kind"], "TokenReview");
  EXPECT_EQ(req["spec"]["token"], "t");
  EXPECT_EQ(req["spec"]["audiences"], Json({"gleaner-scheduler"}));
}

}  // namespace
}  // namespace gleaner::scheduler::kube_glue
