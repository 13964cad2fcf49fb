#pragma once
// What an HTTP handler answers, as plain data: routing is a pure function of the request
// and is tested without sockets; the servers only move bytes.

#include <string>

namespace gleaner::net {

struct HttpReply {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Prometheus's text exposition format, as /metrics answers it.
inline constexpr const char* kPrometheusTextType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace gleaner::net
