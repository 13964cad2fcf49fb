#pragma once
// The checks every POSTed NodeReport passes before it reaches the scheduler: who sent it
// (a shared bearer token, or the agent's own token reviewed by the API server, which ties
// it to one node: report_auth.h), body size, the strict v1 parser
// (reporter/wire/node_report.h) and the report's sequence. Pure apart from the token file
// and the reviewer: the HTTP server only moves bytes, so these rules are tested without
// sockets.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "net/token_source.h"
#include "reporter/wire/node_report.h"
#include "scheduler/server/report_auth.h"

namespace gleaner::scheduler::server {

// Metric label values of gleaner_scheduler_reports_rejected_total{reason}.
enum class RejectReason {
  kUnauthorized,     // missing or wrong bearer token (401)
  kTooLarge,         // body above the limit (413)
  kMalformed,        // not a valid NodeReport v1 (400)
  kOutOfOrder,       // sequence not above the last accepted one of that agent (409)
  kUnknownCluster,   // the report names a cluster this scheduler does not manage (422)
  kForbidden,        // a valid agent token, but for another node (or not an agent's) (403)
  kAuthUnavailable,  // the API server could not review the token, or too many at once (503)
  kReplayed,         // an epoch the node used before, or a new one not after the last (409)
  // No longer given: a new epoch is ordered against the node's own reports, whatever its
  // clock says (admit). Kept so that the metric's series and alert rules stay.
  kClockSkew,
};
inline constexpr int kRejectReasonCount = 9;
const char* to_string(RejectReason reason);

struct IngestVerdict {
  unsigned status = 200;
  std::optional<RejectReason> rejected;
  bool duplicate = false;  // the last accepted report again (a retry): 200, not applied
  std::string message;     // the answer's body on rejection
  std::optional<reporter::NodeReport> report;
};

// The identity check of a parsed report under token review.
struct IdentityVerdict {
  bool pending = false;                  // no recent verdict: review on a worker thread
  std::optional<IngestVerdict> refusal;  // otherwise: refused, or admitted (nullopt)
};

class ReportValidator {
 public:
  // A shared token; token_file empty: no authentication (loopback demos, tests).
  ReportValidator(const std::string& token_file, std::size_t max_body_bytes);
  // Each agent's own token, reviewed by its cluster's API server.
  ReportValidator(AgentTokenReviewer& reviewer, std::size_t max_body_bytes);

  [[nodiscard]] std::size_t max_body_bytes() const { return max_body_bytes_; }
  [[nodiscard]] bool reviews_tokens() const { return reviewer_ != nullptr; }
  // All the checks in order; may block on a token review. `authorization` is the
  // Authorization header value ("" when absent).
  IngestVerdict check(std::string_view authorization, std::string_view body);
  // Checked first, before the body is read: the server answers 401 without reading it.
  bool authorized(std::string_view authorization);
  // The body's size and its parse.
  IngestVerdict parse(std::string_view body) const;
  // Under token review: whether the token's agent may report for `report`'s node. Without
  // `may_block`, a token with no recent verdict comes back pending instead of reviewed.
  IdentityVerdict check_identity(std::string_view authorization, const reporter::NodeReport& report,
                                 bool may_block);
  // The report's epoch and sequence against those accepted from its node before.
  // `report.cluster` must be the managed cluster's own name (ApiRoutes resolves it), so a
  // node's reports are tracked once whatever name their agent gives its cluster.
  IngestVerdict admit(reporter::NodeReport report);

  // Epochs remembered per node: a replay of any of them is refused.
  static constexpr std::size_t kEpochsKept = 16;

 private:
  struct EpochSeen {
    uint64_t sequence = 0;
    int64_t timestamp_ms = 0;
    uint64_t used = 0;  // the node's report count when last accepted: the oldest goes first
  };
  struct Last {
    std::string epoch;  // the current one ("" from agents that predate epochs)
    uint64_t sequence = 0;
    int64_t timestamp_ms = 0;
    std::chrono::steady_clock::time_point received;
    int64_t received_wall_ms = 0;  // the scheduler's clock when it was accepted
    std::map<std::string, EpochSeen> epochs;
    uint64_t accepted = 0;
    std::chrono::steady_clock::time_point refusal_logged{};
  };
  // Refusal of a report whose epoch cannot be a live agent's; logged once a minute per node.
  IngestVerdict refuse_epoch(Last& last, const reporter::NodeReport& report, RejectReason reason,
                             const std::string& why, std::chrono::steady_clock::time_point now);
  // Entries of nodes silent this long are dropped (a node gone from the cluster, or a
  // name someone made up): the table stays as large as the nodes that report.
  static constexpr std::chrono::hours kForgetAfter{1};
  void forget_silent(std::chrono::steady_clock::time_point now);

  net::TokenSource token_;
  bool auth_required_;
  AgentTokenReviewer* reviewer_ = nullptr;
  std::size_t max_body_bytes_;
  std::mutex mu_;
  std::map<std::string, Last> last_;  // "cluster/node"
  std::chrono::steady_clock::time_point last_sweep_;
};

}  // namespace gleaner::scheduler::server
