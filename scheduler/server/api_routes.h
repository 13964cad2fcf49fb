#pragma once
// What the scheduler's HTTP port answers, as plain functions of the request, so the
// rules are tested without sockets; http_server.cc only moves bytes.
//   POST /api/v1/reports (alias /v1/reports)  a NodeReport v1 (docs/wire-format.md)
//   GET  /api/v1/queues | /api/v1/jobs | /api/v1/nodes   JSON views of the scheduler
//   GET  /metrics   Prometheus text      GET /healthz   "ok"

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "net/http_reply.h"
#include "scheduler/gang/gang_scheduler.h"
#include "scheduler/server/live_metrics.h"
#include "scheduler/server/report_ingest.h"

namespace gleaner::scheduler::server {

// A report on its way in: answered already, or waiting for its token to be reviewed.
struct ReportAttempt {
  std::optional<net::HttpReply> reply;
  std::string authorization;
  std::optional<reporter::NodeReport> report;  // parsed, awaiting review (reply empty)
};

class ApiRoutes {
 public:
  ApiRoutes(ReportValidator& validator, gang::GangScheduler& live, LiveMetrics& metrics)
      : validator_(validator), live_(live), metrics_(metrics) {}

  [[nodiscard]] static bool is_report_path(std::string_view target);
  [[nodiscard]] std::size_t max_report_bytes() const { return validator_.max_body_bytes(); }
  [[nodiscard]] bool reviews_tokens() const { return validator_.reviews_tokens(); }
  // Before the body is read: a request without the token is refused unread.
  bool authorized(std::string_view authorization) { return validator_.authorized(authorization); }
  // All of a report, blocking on a token review when one is due.
  net::HttpReply post_report(std::string_view authorization, std::string_view body);
  // The same in two steps, so a review (an API server round trip) runs off the I/O
  // thread: begin never blocks; an attempt it leaves unanswered goes to finish, which may.
  ReportAttempt begin_report(std::string_view authorization, std::string_view body);
  net::HttpReply finish_report(ReportAttempt& attempt);
  // The server refused the request before it reached post_report.
  net::HttpReply rejected(RejectReason reason, const std::string& message);
  net::HttpReply get(std::string_view method, std::string_view target);
  // Whether this replica schedules (always, without leader election). A standby answers
  // /readyz with 503, so Services route reports and webhook calls to the leader, and
  // refuses reports (503) sent to it directly.
  void set_active(std::function<bool()> active) { active_ = std::move(active); }

 private:
  [[nodiscard]] bool active() const { return !active_ || active_(); }
  net::HttpReply refusal(const IngestVerdict& v);
  net::HttpReply apply(reporter::NodeReport& report);
  net::HttpReply unknown_cluster(const std::string& cluster);
  std::function<bool()> active_;
  ReportValidator& validator_;
  gang::GangScheduler& live_;
  LiveMetrics& metrics_;
};

}  // namespace gleaner::scheduler::server
