#pragma once
// An http:// or https:// URL, parsed once where it is configured: the API server's
// (kubeconfig, in-cluster), the scheduler's (--scheduler-url), the kubelet's.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gleaner::net {

struct HttpUrl {
  std::string scheme = "https";  // "http" or "https"
  std::string host;              // without brackets for IPv6 literals
  uint16_t port = 443;           // 80 / 443 when the URL names none
  std::string target = "/";      // path and query, "/" when empty

  [[nodiscard]] bool tls() const { return scheme == "https"; }
  // Value for the Host header: host plus a port other than the scheme's default.
  [[nodiscard]] std::string host_header() const;
  // scheme://host:port, for messages and request URLs.
  [[nodiscard]] std::string origin() const;
};

// Accepts http://host[:port][/path][?query] and https://...; anything else (another
// scheme, user-info, an empty host, a port outside 1..65535) is an error naming the URL
// as `what` ("scheduler URL 'ftp://x': scheme must be http or https").
Result<HttpUrl> parse_http_url(std::string_view url, std::string_view what = "URL");

}  // namespace gleaner::net
