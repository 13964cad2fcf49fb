#include "scheduler/kube/agent_tokens.h"

#include <algorithm>

#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include "kube/config.h"

namespace gleaner::scheduler::kube_glue {

namespace {

constexpr const char* kReviewPath = "/apis/authentication.k8s.io/v1/tokenreviews";
constexpr const char* kExtraPodName = "authentication.kubernetes.io/pod-name";
constexpr const char* kExtraPodUid = "authentication.kubernetes.io/pod-uid";
constexpr const char* kExtraNodeName = "authentication.kubernetes.io/node-name";

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

Result<std::string> base64url_decode(std::string_view text) {
  std::string standard(text);
  std::replace(standard.begin(), standard.end(), '-', '+');
  std::replace(standard.begin(), standard.end(), '_', '/');
  standard.append((4 - standard.size() % 4) % 4, '=');
  return kube::base64_decode(standard);
}

// The first value of a user's "extra" entry (a list of strings), or "".
std::string extra_value(const Json& user, const char* key) {
  const Json* extra = user.is_object() ? find_path(user, "extra") : nullptr;
  if (extra == nullptr || !extra->is_object()) return "";
  auto it = extra->find(key);
  if (it == extra->end() || !it->is_array() || it->empty() || !(*it)[0].is_string()) return "";
  return (*it)[0].get<std::string>();
}

std::string cache_key(const std::string& cluster, std::string_view token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  std::string key = cluster;
  key.push_back('\0');
  key.append(reinterpret_cast<const char*>(digest), sizeof digest);
  return key;
}

int64_t unix_seconds(WallTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

std::string service_account_user(std::string_view ns_name) {
  const auto slash = ns_name.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == ns_name.size() ||
      ns_name.find('/', slash + 1) != std::string_view::npos)
    return "";
  return "system:serviceaccount:" + std::string(ns_name.substr(0, slash)) + ":" +
         std::string(ns_name.substr(slash + 1));
}

Result<TokenClaims> peek_token_claims(std::string_view token) {
  const auto first = token.find('.');
  const auto second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos)
    return invalid("the bearer token is not a JWT (a ServiceAccount token)");
  auto payload = base64url_decode(token.substr(first + 1, second - first - 1));
  if (!payload) return invalid("the bearer token's payload is not base64url");
  auto json = parse_json(*payload, "token payload");
  if (!json || !json->is_object())
    return invalid("the bearer token's payload is not a JSON object");
  TokenClaims claims;
  const auto aud = json->find("aud");
  if (aud != json->end() && aud->is_string()) claims.audiences.push_back(aud->get<std::string>());
  if (aud != json->end() && aud->is_array()) {
    for (const auto& a : *aud) {
      if (a.is_string()) claims.audiences.push_back(a.get<std::string>());
    }
  }
  const auto exp = json->find("exp");
  if (exp == json->end() || !exp->is_number_integer())
    return invalid("the bearer token has no expiry (exp)");
  claims.expires_unix = exp->get<int64_t>();
  claims.subject = string_at(*json, "sub");
  return claims;
}

Status plausible_claims(const TokenClaims& claims, const AgentTokenOptions& options,
                        int64_t now_unix) {
  if (std::find(claims.audiences.begin(), claims.audiences.end(), options.audience) ==
      claims.audiences.end())
    return invalid("the token is not for audience " + options.audience);
  if (claims.expires_unix <= now_unix) return invalid("the token has expired");
  if (claims.subject != service_account_user(options.service_account))
    return invalid("the token is not the agent ServiceAccount's (" + options.service_account + ")");
  return ok_status();
}

Json token_review_request(std::string_view token, const AgentTokenOptions& options) {
  return Json{{"apiVersion", "authentication.k8s.io/v1"},
              {"kind", "TokenReview"},
              {"spec", {{"token", std::string(token)}, {"audiences", {options.audience}}}}};
}

Result<ReviewedAgent> read_token_review(const Json& review, const AgentTokenOptions& options) {
  const Json* status = review.is_object() ? find_path(review, "status") : nullptr;
  if (status == nullptr || !status->is_object())
    return make_error(ErrorCode::kParse, "TokenReview answer has no status");
  const auto authenticated = status->find("authenticated");
  if (authenticated == status->end() || !authenticated->is_boolean() ||
      !authenticated->get<bool>()) {
    const std::string why = string_at(*status, "error");
    return invalid("the token is not valid" + (why.empty() ? "" : ": " + why));
  }
  // A server that knows audiences says which one it checked; one that does not, checked
  // none, and any token of the account would pass.
  const Json* audiences = find_path(*status, "audiences");
  if (audiences == nullptr || !audiences->is_array() ||
      std::find(audiences->begin(), audiences->end(), Json(options.audience)) == audiences->end())
    return invalid("the API server did not confirm the token is for audience " + options.audience);
  const Json* user = find_path(*status, "user");
  const std::string username = user != nullptr ? string_at(*user, "username") : "";
  if (username != service_account_user(options.service_account)) {
    return make_error(ErrorCode::kPermission, "the token belongs to " + username +
                                                  ", not to the agent ServiceAccount " +
                                                  options.service_account);
  }
  ReviewedAgent agent;
  agent.pod_namespace = options.service_account.substr(0, options.service_account.find('/'));
  agent.pod_name = extra_value(*user, kExtraPodName);
  agent.pod_uid = extra_value(*user, kExtraPodUid);
  agent.node = extra_value(*user, kExtraNodeName);
  if (agent.pod_name.empty() || agent.pod_uid.empty()) {
    return make_error(ErrorCode::kPermission,
                      "the token is not bound to a pod (use the pod's projected token)");
  }
  return agent;
}

TokenReviewer::TokenReviewer(std::map<std::string, kube::KubeClient*> clusters,
                             AgentTokenOptions options, const Clock& clock,
                             std::function<void(const char*)> on_review)
    : clusters_(std::move(clusters)),
      options_(std::move(options)),
      clock_(clock),
      on_review_(std::move(on_review)) {}

Status TokenReviewer::plausible(std::string_view token) {
  auto claims = peek_token_claims(token);
  if (!claims) return claims.error();
  return plausible_claims(*claims, options_, unix_seconds(clock_.wall_now()));
}

std::optional<Result<server::AgentIdentity>> TokenReviewer::cached(const std::string& cluster,
                                                                   std::string_view token) {
  std::lock_guard lock(mu_);
  auto it = cache_.find(cache_key(cluster, token));
  if (it == cache_.end() || clock_.now() >= it->second.until) return std::nullopt;
  return it->second.verdict;
}

Result<server::AgentIdentity> TokenReviewer::review(const std::string& cluster,
                                                    std::string_view token) {
  auto client = clusters_.find(cluster);
  if (client == clusters_.end()) {
    return make_error(ErrorCode::kNotFound,
                      "cluster '" + cluster + "' is not managed by this scheduler");
  }
  auto claims = peek_token_claims(token);
  if (!claims) return claims.error();
  Result<server::AgentIdentity> verdict = ask(*client->second, token);
  const bool transient = !verdict && verdict.error().code != ErrorCode::kInvalidArgument &&
                         verdict.error().code != ErrorCode::kPermission;
  if (!transient) remember(cache_key(cluster, token), verdict, claims->expires_unix);
  return verdict;
}

Result<server::AgentIdentity> TokenReviewer::ask(kube::KubeClient& client, std::string_view token) {
  auto unavailable = [&](const std::string& what, const Error& e) -> Error {
    count("error");
    const auto now = clock_.now();
    std::unique_lock lock(mu_);
    if (now - last_error_log_ >= std::chrono::minutes(1)) {
      last_error_log_ = now;
      lock.unlock();
      spdlog::error("agent token review: {}: {}{}; reports are refused 503 meanwhile", what,
                    e.describe(),
                    e.code == ErrorCode::kPermission
                        ? " (the scheduler's ServiceAccount needs create on tokenreviews and get "
                          "on pods)"
                        : "");
    }
    return make_error(ErrorCode::kUnavailable, what + ": " + e.describe());
  };
  auto answer = client.create(kReviewPath, token_review_request(token, options_));
  if (!answer) return unavailable("TokenReview", answer.error());
  auto agent = read_token_review(*answer, options_);
  if (!agent) {
    count(agent.error().code == ErrorCode::kPermission ? "forbidden"
          : agent.error().code == ErrorCode::kParse    ? "error"
                                                       : "unauthenticated");
    if (agent.error().code == ErrorCode::kParse) return unavailable("TokenReview", agent.error());
    return agent.error();
  }
  const std::string pod = agent->pod_namespace + "/" + agent->pod_name;
  if (agent->node.empty()) {
    // Before Kubernetes 1.30 the review does not name the node: the pod does.
    auto found =
        client.find("/api/v1/namespaces/" + agent->pod_namespace + "/pods/" + agent->pod_name);
    if (!found) return unavailable("GET pod " + pod, found.error());
    if (!*found || string_at(**found, "metadata/uid") != agent->pod_uid) {
      count("unauthenticated");
      return invalid("the token's pod " + pod + " no longer exists");
    }
    agent->node = string_at(**found, "spec/nodeName");
    if (agent->node.empty()) {
      count("forbidden");
      return make_error(ErrorCode::kPermission, "the token's pod " + pod + " is on no node");
    }
  }
  count("authenticated");
  return server::AgentIdentity{agent->node, pod};
}

void TokenReviewer::remember(std::string key, const Result<server::AgentIdentity>& verdict,
                             std::optional<int64_t> expires_unix) {
  const auto now = clock_.now();
  auto ttl = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      verdict ? options_.valid_for : options_.refused_for);
  if (verdict && expires_unix) {
    // Never trusted past the token's own end.
    const auto left = std::chrono::seconds(*expires_unix - unix_seconds(clock_.wall_now()));
    ttl =
        std::min<std::chrono::steady_clock::duration>(ttl, std::max(left, std::chrono::seconds(0)));
  }
  std::lock_guard lock(mu_);
  if (cache_.size() >= options_.max_cached) {
    std::erase_if(cache_, [&](const auto& e) { return now >= e.second.until; });
    if (cache_.size() >= options_.max_cached) cache_.erase(cache_.begin());
  }
  cache_.insert_or_assign(std::move(key), Entry{verdict, now + ttl});
}

void TokenReviewer::count(const char* outcome) const {
  if (on_review_) on_review_(outcome);
}

}  // namespace gleaner::scheduler::kube_glue
