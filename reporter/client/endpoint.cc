#include "reporter/client/endpoint.h"

#include <charconv>

namespace gleaner::reporter {
namespace {

Error url_error(std::string_view url, const std::string& why) {
  return make_error(ErrorCode::kInvalidArgument,
                    "scheduler URL '" + std::string(url) + "': " + why);
}

}  // namespace

std::string HttpEndpoint::host_header() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if ((tls && port == "443") || (!tls && port == "80")) return h;
  return h + ":" + port;
}

Result<HttpEndpoint> parse_http_url(std::string_view url) {
  HttpEndpoint ep;
  std::string_view rest;
  if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else if (url.starts_with("https://")) {
    ep.tls = true;
    rest = url.substr(8);
  } else {
    return url_error(url, "scheme must be http or https");
  }
  size_t slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  ep.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (ep.target.front() == '?') ep.target.insert(ep.target.begin(), '/');
  if (authority.find('@') != std::string_view::npos) {
    return url_error(url, "user-info is not supported; use --token-file");
  }
  std::string_view port;
  if (authority.starts_with("[")) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return url_error(url, "unterminated IPv6 literal");
    ep.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return url_error(url, "junk after IPv6 literal");
      port = after.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    ep.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (ep.host.empty()) return url_error(url, "empty host");
  if (port.empty()) {
    ep.port = ep.tls ? "443" : "80";
  } else {
    int value = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || ptr != port.data() + port.size() || value < 1 || value > 65535) {
      return url_error(url, "bad port '" + std::string(port) + "'");
    }
    ep.port = std::string(port);
  }
  return ep;
}

}  // namespace gleaner::reporter
