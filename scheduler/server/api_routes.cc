#include "scheduler/server/api_routes.h"

#include <algorithm>

#include "common/json_util.h"

namespace gleaner::scheduler::server {

namespace {

net::HttpReply json_reply(unsigned status, const Json& doc) {
  return net::HttpReply{status, "application/json", dump_json(doc) + "\n"};
}

net::HttpReply error_reply(unsigned status, const std::string& reason, const std::string& message) {
  return json_reply(status, Json{{"error", reason}, {"message", message}});
}

// /api/v1/nodes, or with ?health=fresh|stale|degraded only the nodes in that health: the
// names behind gleaner_scheduler_nodes{health}, which stays one series per health.
net::HttpReply nodes_reply(std::string_view target, Json nodes) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return json_reply(200, nodes);
  std::string_view health;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const std::string_view pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    if (pair.substr(0, 7) == "health=") health = pair.substr(7);
  }
  if (health.empty()) return json_reply(200, nodes);
  if (!node_health_from_string(health)) {
    return error_reply(400, "bad_request",
                       "health=" + std::string(health) + ": expected fresh, stale or degraded");
  }
  Json kept = Json::array();
  for (Json& n : nodes["nodes"])
    if (n.value("health", "") == health) kept.push_back(std::move(n));
  nodes["nodes"] = std::move(kept);
  return json_reply(200, nodes);
}

}  // namespace

bool ApiRoutes::is_report_path(std::string_view target) {
  const auto q = target.find('?');
  const std::string_view path = target.substr(0, q);
  return path == "/api/v1/reports" || path == "/v1/reports";
}

net::HttpReply ApiRoutes::rejected(RejectReason reason, const std::string& message) {
  metrics_.report_rejected(reason);
  unsigned status = 400;
  if (reason == RejectReason::kUnauthorized) status = 401;
  if (reason == RejectReason::kTooLarge) status = 413;
  if (reason == RejectReason::kAuthUnavailable) status = 503;
  return error_reply(status, to_string(reason), message);
}

net::HttpReply ApiRoutes::refusal(const IngestVerdict& v) {
  metrics_.report_rejected(*v.rejected);
  return error_reply(v.status, to_string(*v.rejected), v.message);
}

net::HttpReply ApiRoutes::post_report(std::string_view authorization, std::string_view body) {
  ReportAttempt attempt = begin_report(authorization, body);
  return attempt.reply ? std::move(*attempt.reply) : finish_report(attempt);
}

ReportAttempt ApiRoutes::begin_report(std::string_view authorization, std::string_view body) {
  ReportAttempt attempt;
  if (!active()) {
    attempt.reply =
        error_reply(503, "not_leader", "this replica is a standby; reports go to the leader");
    return attempt;
  }
  if (!validator_.authorized(authorization)) {
    attempt.reply = rejected(RejectReason::kUnauthorized, "missing or invalid bearer token");
    return attempt;
  }
  IngestVerdict parsed = validator_.parse(body);
  if (parsed.rejected) {
    attempt.reply = refusal(parsed);
    return attempt;
  }
  // From here on the report names its cluster as the scheduler does: the token review, the
  // sequence tracking and the gang layer see one name for one cluster.
  auto cluster = live_.cluster_of(parsed.report->cluster);
  if (!cluster) {
    attempt.reply = unknown_cluster(parsed.report->cluster);
    return attempt;
  }
  parsed.report->cluster = std::move(*cluster);
  IdentityVerdict identity = validator_.check_identity(authorization, *parsed.report, false);
  if (identity.refusal) {
    attempt.reply = refusal(*identity.refusal);
  } else if (identity.pending) {
    attempt.authorization = std::string(authorization);
    attempt.report = std::move(parsed.report);
  } else {
    attempt.reply = apply(*parsed.report);
  }
  return attempt;
}

net::HttpReply ApiRoutes::finish_report(ReportAttempt& attempt) {
  if (attempt.reply) return std::move(*attempt.reply);
  IdentityVerdict identity =
      validator_.check_identity(attempt.authorization, *attempt.report, true);
  if (identity.refusal) return refusal(*identity.refusal);
  return apply(*attempt.report);
}

net::HttpReply ApiRoutes::apply(reporter::NodeReport& report) {
  IngestVerdict v = validator_.admit(std::move(report));
  if (v.rejected) return refusal(v);
  if (v.duplicate) {
    metrics_.report_duplicate();
    return json_reply(200, Json{{"accepted", false}, {"duplicate", true}});
  }
  if (live_.apply_report(*v.report)) return unknown_cluster(v.report->cluster);
  return json_reply(200, Json{{"accepted", true}});
}

net::HttpReply ApiRoutes::unknown_cluster(const std::string& cluster) {
  metrics_.report_rejected(RejectReason::kUnknownCluster);
  return error_reply(422, to_string(RejectReason::kUnknownCluster),
                     "cluster '" + cluster + "' is not managed by this scheduler");
}

net::HttpReply ApiRoutes::get(std::string_view method, std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  if (method != "GET" && method != "HEAD") {
    return error_reply(405, "method_not_allowed", "only GET here (reports: POST /api/v1/reports)");
  }
  if (path == "/healthz") return net::HttpReply{200, "text/plain; charset=utf-8", "ok\n"};
  if (path == "/readyz") {
    return active() ? net::HttpReply{200, "text/plain; charset=utf-8", "ok\n"}
                    : net::HttpReply{503, "text/plain; charset=utf-8", "standby: not the leader\n"};
  }
  if (path == "/metrics") {
    return net::HttpReply{200, "text/plain; version=0.0.4; charset=utf-8",
                          metrics_.render(live_.gauges())};
  }
  if (path == "/api/v1/queues") return json_reply(200, live_.queues_json());
  if (path == "/api/v1/jobs") return json_reply(200, live_.jobs_json());
  if (path == "/api/v1/nodes") return nodes_reply(target, live_.nodes_json());
  return error_reply(404, "not_found", "no such path: " + std::string(path));
}

}  // namespace gleaner::scheduler::server
