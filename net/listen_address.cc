#include "net/listen_address.h"

#include <charconv>

namespace gleaner::net {

Error listen_address_error(std::string_view what, std::string_view text, const std::string& why) {
  return make_error(ErrorCode::kInvalidArgument,
                    std::string(what) + " '" + std::string(text) + "': " + why);
}

Result<ListenAddress> parse_listen_address(std::string_view text, std::string_view what) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos)
    return listen_address_error(what, text, "expected [host]:port");
  ListenAddress out;
  std::string_view host = text.substr(0, colon);
  if (host.starts_with("[") && host.ends_with("]")) host = host.substr(1, host.size() - 2);
  out.host = host.empty() ? "0.0.0.0" : std::string(host);
  std::string_view port = text.substr(colon + 1);
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || value > 65535) {
    return listen_address_error(what, text, "bad port '" + std::string(port) + "'");
  }
  out.port = static_cast<uint16_t>(value);
  return out;
}

}  // namespace gleaner::net
