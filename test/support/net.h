#pragma once
// Loopback ports for tests and benchmarks that start a server process of their own.

#include <cstdint>

namespace gleaner::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released).
uint16_t free_loopback_port();

}  // namespace gleaner::testing
