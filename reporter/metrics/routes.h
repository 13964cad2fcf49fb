#pragma once
// What the metrics port answers, as a pure function of the request line, so routing is
// tested without sockets. The server (metrics_server.cc) only moves bytes.

#include <string>
#include <string_view>

namespace gleaner::reporter {

class MetricsRegistry;
class HealthMonitor;

struct HttpReply {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

inline constexpr const char* kPrometheusTextType = "text/plain; version=0.0.4; charset=utf-8";

// GET (or HEAD) /metrics, /healthz, /readyz; 404 for other paths, 405 for other methods.
HttpReply route_request(std::string_view method, std::string_view target,
                        const MetricsRegistry& metrics, const HealthMonitor& health);

}  // namespace gleaner::reporter
