#pragma once
// Listen addresses of the HTTP servers both binaries run, apart from net/http_listener.h so
// that command-line checks parse them without compiling Boost.Beast.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gleaner::net {

struct ListenAddress {
  std::string host;  // "0.0.0.0" when the address names none
  uint16_t port = 0;
};
// ":9316", "127.0.0.1:9316", "[::1]:0" (0 = any free port). `what` names the address in
// errors ("metrics address ':x': bad port 'x'").
Result<ListenAddress> parse_listen_address(std::string_view text,
                                           std::string_view what = "listen address");
// An error about the address `text` named `what`: "<what> '<text>': <why>".
Error listen_address_error(std::string_view what, std::string_view text, const std::string& why);

}  // namespace gleaner::net
