#pragma once
// The checks every POSTed NodeReport passes before it reaches the scheduler: bearer
// token, body size, the strict v1 parser (reporter/wire/node_report.h) and the report's
// sequence. Pure apart from the token file: the HTTP server only moves bytes, so these
// rules are tested without sockets.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "kube/config.h"
#include "reporter/wire/node_report.h"

namespace gleaner::scheduler::server {

// Metric label values of gleaner_scheduler_reports_rejected_total{reason}.
enum class RejectReason {
  kUnauthorized,    // missing or wrong bearer token (401)
  kTooLarge,        // body above the limit (413)
  kMalformed,       // not a valid NodeReport v1 (400)
  kOutOfOrder,      // sequence not above the last accepted one of that agent (409)
  kUnknownCluster,  // the report names a cluster this scheduler does not manage (422)
};
inline constexpr int kRejectReasonCount = 5;
const char* to_string(RejectReason reason);

struct IngestVerdict {
  unsigned status = 200;
  std::optional<RejectReason> rejected;
  bool duplicate = false;  // the last accepted report again (a retry): 200, not applied
  std::string message;     // the answer's body on rejection
  std::optional<reporter::NodeReport> report;
};

class ReportValidator {
 public:
  // token_file empty: no authentication (loopback demos, tests).
  ReportValidator(const std::string& token_file, std::size_t max_body_bytes);

  [[nodiscard]] std::size_t max_body_bytes() const { return max_body_bytes_; }
  // `authorization` is the Authorization header value ("" when absent).
  IngestVerdict check(std::string_view authorization, std::string_view body);
  // Checked first, before the body is read: the server answers 401 without reading it.
  bool authorized(std::string_view authorization);

 private:
  struct Last {
    std::string epoch;
    uint64_t sequence = 0;
    int64_t timestamp_ms = 0;
    std::chrono::steady_clock::time_point received;
  };
  // Entries of nodes silent this long are dropped (a node gone from the cluster, or a
  // name someone made up): the table stays as large as the nodes that report.
  static constexpr std::chrono::hours kForgetAfter{1};
  void forget_silent(std::chrono::steady_clock::time_point now);

  kube::TokenSource token_;
  bool auth_required_;
  std::size_t max_body_bytes_;
  std::mutex mu_;
  std::map<std::string, Last> last_;  // "cluster/node"
  std::chrono::steady_clock::time_point last_sweep_;
};

}  // namespace gleaner::scheduler::server
