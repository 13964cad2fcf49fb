#pragma once
// Who may report for which node. Either one shared bearer token (whoever holds it may
// report for any node: for clusters without the TokenReview API), or each agent's own
// projected ServiceAccount token, which the API server vouches for (TokenReview) and which
// admits a report only for the node that agent's pod runs on.

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gleaner::scheduler::server {

// The agent a token belongs to, as its cluster's API server says.
struct AgentIdentity {
  std::string node;  // the node its pod is bound to: the only node it may report for
  std::string pod;   // "namespace/name", for messages
};

// How a review's error codes are answered (api_routes.cc):
//   kInvalidArgument / kParse  the token is not valid (401)
//   kPermission                valid, but not an agent's, or its pod is on no node (403)
//   kNotFound                  the report names a cluster this scheduler does not manage (422)
//   anything else              the API server could not be asked (503: the agent retries)
class AgentTokenReviewer {
 public:
  virtual ~AgentTokenReviewer() = default;
  // Before the body is read, without asking anyone: whether `token` can be an agent's
  // token at all (its shape, audience and expiry, read unverified). Refuses garbage cheaply.
  virtual Status plausible(std::string_view token) = 0;
  // A recent verdict on this token in this cluster, if there is one. Never blocks.
  virtual std::optional<Result<AgentIdentity>> cached(const std::string& cluster,
                                                      std::string_view token) = 0;
  // Asks the cluster's API server (blocks for a round trip) and remembers the verdict.
  virtual Result<AgentIdentity> review(const std::string& cluster, std::string_view token) = 0;
};

// "Bearer <token>" -> "<token>"; "" when the header is absent or of another scheme.
std::string_view bearer_token(std::string_view authorization);

}  // namespace gleaner::scheduler::server
