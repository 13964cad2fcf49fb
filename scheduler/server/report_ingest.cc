#include "scheduler/server/report_ingest.h"

#include <openssl/crypto.h>

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
  std::lock_guard lock(mu_);
  forget_silent(now);
  auto it = last_.find(key);
  if (it != last_.end()) {
    const Last& last = it->second;
    const bool same_process = !report.epoch.empty() && report.epoch == last.epoch;
    if ((same_process || report.epoch.empty()) && report.sequence == last.sequence &&
        report.timestamp_unix_ms == last.timestamp_ms) {
      IngestVerdict v;
      v.duplicate = true;
      return v;
    }
    // Sequences grow within one agent process. Another epoch is another process (a
    // restart), whatever its sequence and its clock say; without epochs (an older agent)
    // a lower sequence with a newer sample time is taken as a restart.
    const bool newer_sequence = report.sequence > last.sequence;
    const bool restarted = report.epoch.empty() ? report.timestamp_unix_ms > last.timestamp_ms
                                                : report.epoch != last.epoch;
    if (!newer_sequence && !restarted) {
      return reject(409, RejectReason::kOutOfOrder,
                    "node " + report.node + ": sequence " + std::to_string(report.sequence) +
                        " is not after the last accepted " + std::to_string(last.sequence));
    }
  }
  last_[key] = Last{report.epoch, report.sequence, report.timestamp_unix_ms, now};
  IngestVerdict v;
  v.report = std::move(report);
  return v;
}

void ReportValidator::forget_silent(std::chrono::steady_clock::time_point now) {
  // At most once a minute: a pass over the table costs one comparison per node.
  if (now - last_sweep_ < std::chrono::minutes(1)) return;
  last_sweep_ = now;
  std::erase_if(last_,
                [&](const auto& entry) { return now - entry.second.received > kForgetAfter; });
}

}  // namespace gleaner::scheduler::server
