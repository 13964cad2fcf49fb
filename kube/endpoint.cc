#include <charconv>
#include <string>

#include "kube/http_client.h"

namespace gleaner::kube {

Result<Endpoint> parse_endpoint(std::string_view url) {
  Endpoint ep;
  auto bad = [&](const char* why) {
    return make_error(ErrorCode::kInvalidArgument,
                      "server URL \"" + std::string(url) + "\": " + why);
  };
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) return bad("expected scheme://host[:port]");
  ep.scheme = std::string(url.substr(0, sep));
  if (ep.scheme != "https" && ep.scheme != "http") return bad("scheme must be https or http");
  std::string_view rest = url.substr(sep + 3);
  rest = rest.substr(0, rest.find('/'));
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return bad("unterminated IPv6 address");
    ep.host = std::string(rest.substr(1, close - 1));
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return bad("junk after IPv6 address");
    if (!rest.empty()) port = rest.substr(1);
  } else {
    size_t colon = rest.rfind(':');
    ep.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
  }
  if (ep.host.empty()) return bad("missing host");
  ep.port = ep.scheme == "https" ? 443 : 80;
  if (!port.empty()) {
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || ptr != port.data() + port.size() || value == 0 || value > 65535) {
      return bad("invalid port");
    }
    ep.port = static_cast<uint16_t>(value);
  }
  return ep;
}

}  // namespace gleaner::kube
