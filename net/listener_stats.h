#pragma once
// How full an HTTP listener is, for /metrics. Apart from net/http_listener.h so that the
// metrics code reads it without compiling Boost.Beast.

#include <cstddef>
#include <cstdint>

namespace gleaner::net {

// Open connections a listener takes at most, unless its server asks for another cap
// (HttpListener::kDefaultMaxConnections says why).
inline constexpr size_t kDefaultMaxHttpConnections = 128;

struct ListenerStats {
  size_t open_connections = 0;
  size_t max_connections = 0;
  uint64_t accept_errors = 0;
  uint64_t capacity_reached = 0;  // times the cap was reached
  uint64_t idle_closed = 0;       // idle connections closed at the cap to admit a new one
};

}  // namespace gleaner::net
