#pragma once
// The scheduler's one HTTP port (on the composition root's io_context, served by the one
// HTTP(S) server of every port, net/http_server.h): report ingestion and the read-only API
// of api_routes.h. Per connection: keep-alive, an
// idle timeout, a header size cap and the report body limit enforced while reading, so a
// client can neither hold memory nor a connection indefinitely. A report without the
// token is refused before its body is read.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "net/listener_stats.h"
#include "scheduler/admission/certificates.h"
#include "scheduler/server/api_routes.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace gleaner::scheduler::server {

class SchedulerPort {
 public:
  // Binds and listens now (a taken port fails at start-up); serves once `io` runs.
  // `tls`: serve HTTPS with this certificate (nullptr: plain HTTP).
  static Result<std::unique_ptr<SchedulerPort>> create(boost::asio::io_context& io,
                                                       std::string_view address, ApiRoutes& routes,
                                                       const admission::KeyPair* tls = nullptr);
  // HTTPS only: new connections use this pair from now on (a renewed certificate).
  Status set_certificate(const admission::KeyPair& pair);
  ~SchedulerPort();
  SchedulerPort(const SchedulerPort&) = delete;
  SchedulerPort& operator=(const SchedulerPort&) = delete;

  [[nodiscard]] uint16_t port() const;
  [[nodiscard]] net::ListenerStats listener_stats() const;
  // Thread-safe: stops accepting and closes open connections (on the io_context).
  void stop();

  struct Impl;

 private:
  explicit SchedulerPort(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace gleaner::scheduler::server
