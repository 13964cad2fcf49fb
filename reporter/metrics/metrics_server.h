#pragma once
// The HTTP server of --metrics-addr: /metrics, /healthz and /readyz on one port.
//
// Why not prometheus-cpp's pull Exposer: it serves only registered collectables (its
// public API has no way to add /healthz or /readyz handlers), it brings its own embedded
// web server and threads, and it would need a second port for the probes. The project's one
// HTTP server (net/http_server.h) on the composition root's io_context serves all three
// paths on one port, and /metrics is still rendered by prometheus-cpp's TextSerializer.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "common/result.h"
#include "net/http_reply.h"
#include "net/listener_stats.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace gleaner::reporter {

inline constexpr const char* kDefaultMetricsAddr = ":9316";

class MetricsServer {
 public:
  using Handler = std::function<net::HttpReply(std::string_view method, std::string_view target)>;

  // Binds and listens now (so a taken port fails at start-up); accepts once the root
  // runs `io`. The handler is called on the io_context's thread.
  static Result<std::unique_ptr<MetricsServer>> create(boost::asio::io_context& io,
                                                       std::string_view address, Handler handler);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The bound port (useful with port 0).
  [[nodiscard]] uint16_t port() const;
  [[nodiscard]] net::ListenerStats listener_stats() const;
  // Thread-safe: stops accepting and closes open connections.
  void stop();

  struct Impl;

 private:
  explicit MetricsServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace gleaner::reporter
