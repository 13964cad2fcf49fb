#pragma once
// What the scheduler's HTTP port answers, as plain functions of the request, so the
// rules are tested without sockets; http_server.cc only moves bytes.
//   POST /api/v1/reports (alias /v1/reports)  a NodeReport v1 (docs/wire-format.md)
//   GET  /api/v1/queues | /api/v1/jobs | /api/v1/nodes   JSON views of the scheduler
//   GET  /metrics   Prometheus text      GET /healthz   "ok"

#include <functional>
#include <string>
#include <string_view>

#include "scheduler/server/live_metrics.h"
#include "scheduler/server/live_scheduler.h"
#include "scheduler/server/report_ingest.h"

namespace gleaner::scheduler::server {

struct HttpReply {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
};

class ApiRoutes {
 public:
  ApiRoutes(ReportValidator& validator, LiveScheduler& live, LiveMetrics& metrics)
      : validator_(validator), live_(live), metrics_(metrics) {}

  [[nodiscard]] static bool is_report_path(std::string_view target);
  [[nodiscard]] std::size_t max_report_bytes() const { return validator_.max_body_bytes(); }
  // Before the body is read: a request without the token is refused unread.
  bool authorized(std::string_view authorization) { return validator_.authorized(authorization); }
  HttpReply post_report(std::string_view authorization, std::string_view body);
  // The server refused the request before it reached post_report.
  HttpReply rejected(RejectReason reason, const std::string& message);
  HttpReply get(std::string_view method, std::string_view target);
  // Whether this replica schedules (always, without leader election). A standby answers
  // /readyz with 503, so Services route reports and webhook calls to the leader, and
  // refuses reports (503) sent to it directly.
  void set_active(std::function<bool()> active) { active_ = std::move(active); }

 private:
  [[nodiscard]] bool active() const { return !active_ || active_(); }
  std::function<bool()> active_;
  ReportValidator& validator_;
  LiveScheduler& live_;
  LiveMetrics& metrics_;
};

}  // namespace gleaner::scheduler::server
