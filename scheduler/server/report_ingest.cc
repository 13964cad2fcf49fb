#include "scheduler/server/report_ingest.h"

#include <algorithm>

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>

namespace gleaner::scheduler::server {

const char* to_string(RejectReason reason) {
  switch (reason) {
    case RejectReason::kUnauthorized:
      return "unauthorized";
    case RejectReason::kTooLarge:
      return "too_large";
    case RejectReason::kMalformed:
      return "malformed";
    case RejectReason::kOutOfOrder:
      return "out_of_order";
    case RejectReason::kUnknownCluster:
      return "unknown_cluster";
    case RejectReason::kForbidden:
      return "forbidden";
    case RejectReason::kAuthUnavailable:
      return "auth_unavailable";
    case RejectReason::kReplayed:
      return "replayed";
    case RejectReason::kClockSkew:
      return "clock_skew";
  }
  return "unknown";
}

namespace {

IngestVerdict reject(unsigned status, RejectReason reason, std::string message) {
  IngestVerdict v;
  v.status = status;
  v.rejected = reason;
  v.message = std::move(message);
  return v;
}

// A review's error as the agent is answered (report_auth.h).
IngestVerdict review_refusal(const Error& error) {
  switch (error.code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kParse:
      return reject(401, RejectReason::kUnauthorized, error.message);
    case ErrorCode::kPermission:
      return reject(403, RejectReason::kForbidden, error.message);
    case ErrorCode::kNotFound:
      return reject(422, RejectReason::kUnknownCluster, error.message);
    default:
      return reject(503, RejectReason::kAuthUnavailable,
                    "the token could not be reviewed now: " + error.message);
  }
}

}  // namespace

std::string_view bearer_token(std::string_view authorization) {
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization.size() <= kScheme.size() || authorization.substr(0, kScheme.size()) != kScheme)
    return {};
  return authorization.substr(kScheme.size());
}

ReportValidator::ReportValidator(const std::string& token_file, std::size_t max_body_bytes)
    : token_("", token_file),
      auth_required_(!token_file.empty()),
      max_body_bytes_(max_body_bytes) {}

ReportValidator::ReportValidator(AgentTokenReviewer& reviewer, std::size_t max_body_bytes)
    : token_("", ""), auth_required_(true), reviewer_(&reviewer), max_body_bytes_(max_body_bytes) {}

bool ReportValidator::authorized(std::string_view authorization) {
  if (!auth_required_) return true;
  if (reviewer_ != nullptr) {
    const std::string_view token = bearer_token(authorization);
    return !token.empty() && reviewer_->plausible(token).ok();
  }
  auto token = token_.get();
  // An unreadable or empty token file admits nobody rather than everybody.
  if (!token || token->empty()) return false;
  const std::string expected = "Bearer " + *token;
  // Constant time: the comparison must not tell an attacker how much of a guess was right.
  return authorization.size() == expected.size() &&
         CRYPTO_memcmp(authorization.data(), expected.data(), expected.size()) == 0;
}

IngestVerdict ReportValidator::check(std::string_view authorization, std::string_view body) {
  if (!authorized(authorization)) {
    return reject(401, RejectReason::kUnauthorized, "missing or invalid bearer token");
  }
  IngestVerdict parsed = parse(body);
  if (parsed.rejected) return parsed;
  IdentityVerdict identity = check_identity(authorization, *parsed.report, true);
  if (identity.refusal) return std::move(*identity.refusal);
  return admit(std::move(*parsed.report));
}

IngestVerdict ReportValidator::parse(std::string_view body) const {
  if (body.size() > max_body_bytes_) {
    return reject(413, RejectReason::kTooLarge,
                  "report of " + std::to_string(body.size()) + " bytes is above the limit of " +
                      std::to_string(max_body_bytes_));
  }
  auto report = reporter::parse_node_report(body);
  if (!report) return reject(400, RejectReason::kMalformed, report.error().message);
  IngestVerdict v;
  v.report = std::move(*report);
  return v;
}

IdentityVerdict ReportValidator::check_identity(std::string_view authorization,
                                                const reporter::NodeReport& report,
                                                bool may_block) {
  IdentityVerdict out;
  if (reviewer_ == nullptr) return out;  // the shared token (or none) was checked already
  const std::string_view token = bearer_token(authorization);
  std::optional<Result<AgentIdentity>> verdict = reviewer_->cached(report.cluster, token);
  if (!verdict) {
    if (!may_block) {
      out.pending = true;
      return out;
    }
    verdict = reviewer_->review(report.cluster, token);
  }
  if (!*verdict) {
    out.refusal = review_refusal(verdict->error());
  } else if ((*verdict)->node != report.node) {
    out.refusal = reject(403, RejectReason::kForbidden,
                         "the token of " + (*verdict)->pod + " (on node " + (*verdict)->node +
                             ") may not report for node " + report.node);
  }
  return out;
}

IngestVerdict ReportValidator::admit(reporter::NodeReport report) {
  const std::string key = report.cluster + "/" + report.node;
  const auto now = std::chrono::steady_clock::now();
  const int64_t now_wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  std::lock_guard lock(mu_);
  forget_silent(now);
  Last& last = last_[key];
  const bool first = last.received_wall_ms == 0;  // nothing accepted from the node yet
  const bool new_epoch = !report.epoch.empty() && !last.epochs.contains(report.epoch);
  if (!first) {
    const bool same_process = !report.epoch.empty() && report.epoch == last.epoch;
    if ((same_process || report.epoch.empty()) && report.sequence == last.sequence &&
        report.timestamp_unix_ms == last.timestamp_ms) {
      IngestVerdict v;
      v.duplicate = true;
      return v;
    }
  }
  if (new_epoch) {
    // A new epoch is a restarted agent only if its sample is later than the node's last
    // accepted one (by the node's own clock) or than when that one arrived (by ours, should
    // the old process's clock have run ahead): an old report re-sent under an epoch no
    // longer remembered is neither. Both compare the node with itself, not its clock with
    // ours: kubelet works with any node clock, and a node whose clock is off by minutes
    // must be able to report (before, a new epoch more than 5 min from the scheduler's
    // clock was refused as clock_skew, every report, for as long as the clock stayed off).
    // A node's first report (none accepted since the scheduler started, or since the node
    // was silent for kForgetAfter) is taken as it comes: there is nothing to order it by.
    if (!first && report.timestamp_unix_ms <= std::min(last.timestamp_ms, last.received_wall_ms)) {
      return refuse_epoch(last, report, RejectReason::kReplayed,
                          "its sample time is not after the node's last accepted report", now);
    }
  } else if (!report.epoch.empty()) {
    // An epoch used before continues only past its own last sequence: anything else is an
    // old report sent again.
    const EpochSeen& seen = last.epochs.at(report.epoch);
    if (report.sequence <= seen.sequence) {
      if (report.epoch == last.epoch) {
        return reject(409, RejectReason::kOutOfOrder,
                      "node " + report.node + ": sequence " + std::to_string(report.sequence) +
                          " is not after the last accepted " + std::to_string(seen.sequence));
      }
      return refuse_epoch(last, report, RejectReason::kReplayed,
                          "epoch " + report.epoch + " was used before, up to sequence " +
                              std::to_string(seen.sequence),
                          now);
    }
  } else if (!first && report.sequence <= last.sequence &&
             report.timestamp_unix_ms <= last.timestamp_ms) {
    // Without epochs (an older agent) a lower sequence with a newer sample time is taken
    // as a restart.
    return reject(409, RejectReason::kOutOfOrder,
                  "node " + report.node + ": sequence " + std::to_string(report.sequence) +
                      " is not after the last accepted " + std::to_string(last.sequence));
  }
  last.epoch = report.epoch;
  last.sequence = report.sequence;
  last.timestamp_ms = report.timestamp_unix_ms;
  last.received = now;
  last.received_wall_ms = now_wall_ms;
  if (!report.epoch.empty()) {
    last.epochs[report.epoch] =
        EpochSeen{report.sequence, report.timestamp_unix_ms, ++last.accepted};
    if (last.epochs.size() > kEpochsKept) {
      auto oldest = std::min_element(
          last.epochs.begin(), last.epochs.end(),
          [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
      last.epochs.erase(oldest);
    }
  }
  IngestVerdict v;
  v.report = std::move(report);
  return v;
}

IngestVerdict ReportValidator::refuse_epoch(Last& last, const reporter::NodeReport& report,
                                            RejectReason reason, const std::string& why,
                                            std::chrono::steady_clock::time_point now) {
  std::string message = "node " + report.node + ": a report of epoch " + report.epoch +
                        " (sequence " + std::to_string(report.sequence) +
                        ") is not from the node's running agent: " + why;
  if (now - last.refusal_logged >= std::chrono::minutes(1)) {
    last.refusal_logged = now;
    spdlog::warn("reports: {} (said once a minute per node)", message);
  }
  return reject(409, reason, std::move(message));
}

void ReportValidator::forget_silent(std::chrono::steady_clock::time_point now) {
  // At most once a minute: a pass over the table costs one comparison per node.
  if (now - last_sweep_ < std::chrono::minutes(1)) return;
  last_sweep_ = now;
  std::erase_if(last_,
                [&](const auto& entry) { return now - entry.second.received > kForgetAfter; });
}

}  // namespace gleaner::scheduler::server
