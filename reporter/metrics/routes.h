#pragma once
// What the metrics port answers, as a pure function of the request line, so routing is
// tested without sockets. The server (metrics_server.cc) only moves bytes.

#include <string_view>

#include "net/http_reply.h"

namespace gleaner::reporter {

class MetricsRegistry;
class HealthMonitor;

// GET (or HEAD) /metrics, /healthz, /readyz; 404 for other paths, 405 for other methods.
net::HttpReply route_request(std::string_view method, std::string_view target,
                             const MetricsRegistry& metrics, const HealthMonitor& health);

}  // namespace gleaner::reporter
