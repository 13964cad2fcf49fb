#pragma once
// The scheduler endpoint, parsed once from --scheduler-url.

#include <string>
#include <string_view>

#include "common/result.h"

namespace gleaner::reporter {

struct HttpEndpoint {
  bool tls = false;
  std::string host;    // without brackets for IPv6 literals
  std::string port;    // "80" / "443" when the URL names none
  std::string target;  // path and query, "/" when empty
  // Value for the Host header: host plus a non-default port.
  [[nodiscard]] std::string host_header() const;
};

// Accepts http://host[:port][/path] and https://...; anything else (other schemes,
// user-info, empty host, bad port) is an error naming the URL.
Result<HttpEndpoint> parse_http_url(std::string_view url);

}  // namespace gleaner::reporter
