#pragma once
// Agents prove which node they speak for with their own projected ServiceAccount token
// (audience-bound, rotated by kubelet). The scheduler asks the agent's cluster
// (authentication.k8s.io/v1 TokenReview) whether the token is valid, for our audience,
// of the agent ServiceAccount, and bound to a pod; that pod's node is the only node the
// token may report for. Kubernetes 1.30+ names the node in the review
// (authentication.kubernetes.io/node-name); before that the pod is read to find it.
//
// Verdicts are cached (valid ones for `valid_for`, never past the token's expiry; refusals
// for `refused_for`) so a cluster's agents cost one review per token and interval, not per
// report; a failed call to the API server is not cached.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/json_fwd.h"
#include "common/result.h"
#include "kube/api_client.h"
#include "scheduler/server/report_auth.h"

namespace gleaner::scheduler::kube_glue {

struct AgentTokenOptions {
  std::string audience = "gleaner-scheduler";
  std::string service_account = "gleaner-system/gleaner-agent";  // NAMESPACE/NAME
  std::chrono::seconds valid_for{120};
  std::chrono::seconds refused_for{10};
  std::size_t max_cached = 65536;
};

// "system:serviceaccount:NS:NAME" for "NS/NAME"; "" when not of that form.
std::string service_account_user(std::string_view ns_name);

// What a token says about itself, read without verifying it: only to refuse what cannot
// be an agent's token before asking the API server.
struct TokenClaims {
  std::vector<std::string> audiences;
  int64_t expires_unix = 0;
  std::string subject;
};
// A JWT's payload. kInvalidArgument when `token` is not a JWT with aud, exp and sub.
Result<TokenClaims> peek_token_claims(std::string_view token);
// Whether the claims can be an agent's token now (audience, subject, not expired).
Status plausible_claims(const TokenClaims& claims, const AgentTokenOptions& options,
                        int64_t now_unix);

// A TokenReview's answer for an agent token. Pure. Errors as report_auth.h describes:
// kInvalidArgument (not authenticated, or not for our audience), kPermission (another
// account, or not bound to a pod).
struct ReviewedAgent {
  std::string pod_namespace, pod_name, pod_uid;
  std::string node;  // "" when the API server predates node names in reviews
};
Result<ReviewedAgent> read_token_review(const Json& review, const AgentTokenOptions& options);
// The TokenReview to POST for `token`.
Json token_review_request(std::string_view token, const AgentTokenOptions& options);

class TokenReviewer : public server::AgentTokenReviewer {
 public:
  // `clusters`: each managed cluster's API client by name. A report's cluster reaches the
  // reviewer as the scheduler names it (ApiRoutes resolves an agent's empty name).
  // `on_review` counts reviews by outcome: authenticated, unauthenticated, forbidden, error.
  TokenReviewer(std::map<std::string, kube::KubeClient*> clusters, AgentTokenOptions options,
                const Clock& clock, std::function<void(const char*)> on_review = nullptr);

  Status plausible(std::string_view token) override;
  std::optional<Result<server::AgentIdentity>> cached(const std::string& cluster,
                                                      std::string_view token) override;
  Result<server::AgentIdentity> review(const std::string& cluster, std::string_view token) override;

 private:
  struct Entry {
    Result<server::AgentIdentity> verdict;
    SteadyTime until;
  };
  Result<server::AgentIdentity> ask(kube::KubeClient& client, std::string_view token);
  void remember(std::string key, const Result<server::AgentIdentity>& verdict,
                std::optional<int64_t> expires_unix);
  void count(const char* outcome) const;

  std::map<std::string, kube::KubeClient*> clusters_;
  AgentTokenOptions options_;
  const Clock& clock_;
  std::function<void(const char*)> on_review_;
  std::mutex mu_;
  std::map<std::string, Entry> cache_;  // cluster + NUL + SHA-256 of the token
  SteadyTime last_error_log_{};
};

}  // namespace gleaner::scheduler::kube_glue
