#pragma once
// What each of the scheduler's HTTPS servers (reports and API, admission webhook) allows a
// connection: a client that stalls its TLS handshake or goes quiet is dropped, and a header
// block above the limit is refused before it is read whole.

#include <chrono>
#include <cstdint>

namespace gleaner::scheduler::server {

// A TLS handshake that never comes holds a slot for this long at most (and at the cap the
// oldest idle connection is closed to admit a new one).
inline constexpr auto kHandshakeTimeout = std::chrono::seconds(5);
inline constexpr auto kIdleTimeout = std::chrono::seconds(60);
inline constexpr uint32_t kHeaderLimit = 16 * 1024;

}  // namespace gleaner::scheduler::server
