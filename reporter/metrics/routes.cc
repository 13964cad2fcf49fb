#include "reporter/metrics/routes.h"

#include "reporter/metrics/health.h"
#include "reporter/metrics/metrics_registry.h"

namespace gleaner::reporter {

net::HttpReply route_request(std::string_view method, std::string_view target,
                             const MetricsRegistry& metrics, const HealthMonitor& health) {
  if (method != "GET" && method != "HEAD") return {405, "text/plain; charset=utf-8", "GET only\n"};
  std::string_view path = target.substr(0, target.find('?'));
  if (path == "/metrics") return {200, net::kPrometheusTextType, metrics.serialize()};
  if (path == "/healthz" || path == "/readyz") {
    HealthVerdict v = path == "/healthz" ? health.liveness() : health.readiness();
    return {v.ok ? 200u : 503u, "text/plain; charset=utf-8", v.detail};
  }
  return {404, "text/plain; charset=utf-8", "not found; try /metrics, /healthz or /readyz\n"};
}

}  // namespace gleaner::reporter
