#pragma once
// Loopback ports for tests and benchmarks that start a server process of their own.

#include <cstdint>
#include <optional>
#include <string>

namespace gleaner::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released).
uint16_t free_loopback_port();

// The body of GET http://127.0.0.1:<port><path> (HTTP/1.0, read to the end); empty when the
// server cannot be reached or answers other than 200.
std::string http_get_loopback(uint16_t port, const std::string& path);

// The value of one series in Prometheus text, e.g. `gleaner_x_total{signal="a"}`; nullopt
// when the series is absent.
std::optional<double> metric_value(const std::string& text, const std::string& series);

// A TCP connection to 127.0.0.1:<port>: its descriptor, or -1 when the connect failed. The
// caller closes it (left silent, it is what a scanner or a leaked client holds open).
int connect_loopback(uint16_t port);

}  // namespace gleaner::testing
