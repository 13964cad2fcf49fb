#include "net/url.h"

#include <charconv>

namespace gleaner::net {
namespace {

Error url_error(std::string_view what, std::string_view url, const std::string& why) {
  return make_error(ErrorCode::kInvalidArgument,
                    std::string(what).append(" '").append(url).append("': ").append(why));
}

bool is_default_port(const HttpUrl& url) {
  return url.port == (url.tls() ? 443 : 80);
}

std::string bracketed(const std::string& host) {
  return host.find(':') != std::string::npos ? std::string("[").append(host).append("]") : host;
}

}  // namespace

std::string HttpUrl::host_header() const {
  std::string out = bracketed(host);
  if (!is_default_port(*this)) out.append(":").append(std::to_string(port));
  return out;
}

std::string HttpUrl::origin() const {
  return std::string(scheme)
      .append("://")
      .append(bracketed(host))
      .append(":")
      .append(std::to_string(port));
}

Result<HttpUrl> parse_http_url(std::string_view url, std::string_view what) {
  HttpUrl out;
  std::string_view rest;
  if (url.starts_with("http://")) {
    out.scheme = "http";
    rest = url.substr(7);
  } else if (url.starts_with("https://")) {
    out.scheme = "https";
    rest = url.substr(8);
  } else {
    return url_error(what, url, "scheme must be http or https");
  }
  const size_t slash = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, slash);
  out.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (out.target.front() == '?') out.target.insert(out.target.begin(), '/');
  if (authority.find('@') != std::string_view::npos)
    return url_error(what, url, "user-info is not supported; use a token file");
  std::string_view port;
  if (authority.starts_with("[")) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return url_error(what, url, "unterminated IPv6 literal");
    out.host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return url_error(what, url, "junk after IPv6 literal");
      port = after.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty()) return url_error(what, url, "empty host");
  out.port = out.tls() ? 443 : 80;
  if (!port.empty()) {
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || ptr != port.data() + port.size() || value < 1 || value > 65535)
      return url_error(what, url, std::string("bad port '").append(port).append("'"));
    out.port = static_cast<uint16_t>(value);
  }
  return out;
}

}  // namespace gleaner::net
