#include "reporter/metrics/metrics_server.h"

#include <chrono>

#include "net/beast_names.h"
#include "net/http_server.h"

namespace gleaner::reporter {

using net::beast_names::view;

namespace {

// A scraper that opens a connection and goes quiet must not hold it long: the first request
// is due within a few seconds of connecting, the next one of a keep-alive scraper within
// the usual scrape interval. (At the cap the oldest idle connection is closed anyway.)
constexpr auto kFirstRequestTimeout = std::chrono::seconds(5);
constexpr auto kIdleTimeout = std::chrono::seconds(30);
// No path takes a body; a probe's or a scraper's request has none.
constexpr uint64_t kMaxBody = 16 * 1024;

}  // namespace

struct MetricsServer::Impl {
  std::unique_ptr<net::HttpServer> server;
};

Result<std::unique_ptr<MetricsServer>> MetricsServer::create(boost::asio::io_context& io,
                                                             std::string_view address,
                                                             Handler handler) {
  net::HttpServerOptions options;
  options.what = "metrics address";
  options.server_header = "gleaner-agent";
  options.body_limit = kMaxBody;
  options.first_request_timeout = kFirstRequestTimeout;
  options.idle_timeout = kIdleTimeout;
  net::HttpHandler routes;
  routes.reply = [handler = std::move(handler)](const net::ServerRequest& req) {
    return handler(view(req.method_string()), view(req.target()));
  };
  auto server = net::HttpServer::create(io, address, std::move(options), std::move(routes));
  if (!server) return server.error();
  auto impl = std::make_shared<Impl>();
  impl->server = std::move(*server);
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::~MetricsServer() {
  stop();
}

uint16_t MetricsServer::port() const {
  return impl_->server->port();
}

net::ListenerStats MetricsServer::listener_stats() const {
  return impl_->server->listener_stats();
}

void MetricsServer::stop() {
  impl_->server->stop();
}

}  // namespace gleaner::reporter
