#include "reporter/metrics/metrics_server.h"

#include <chrono>

#include "net/beast_names.h"
#include "net/http_listener.h"

namespace gleaner::reporter {

using namespace net::beast_names;

namespace {

// A scraper that opens a connection and goes quiet must not hold it long: the first request
// is due within a few seconds of connecting, the next one of a keep-alive scraper within
// the usual scrape interval. (At the cap the oldest idle connection is closed anyway.)
constexpr auto kFirstRequestTimeout = std::chrono::seconds(5);
constexpr auto kIdleTimeout = std::chrono::seconds(30);

}  // namespace

struct MetricsServer::Impl {
  explicit Impl(Handler h) : handler(std::move(h)) {}

  Handler handler;
  std::shared_ptr<net::HttpListener> listener;

  static asio::awaitable<void> session(std::shared_ptr<Impl> self,
                                       std::shared_ptr<net::Connection> stream) {
    beast::flat_buffer buffer;
    error_code ec;
    for (bool first = true;; first = false) {
      http::request<http::empty_body> req;
      stream->idle();
      stream->expires_after(first ? kFirstRequestTimeout : kIdleTimeout);
      co_await http::async_read(*stream, buffer, req,
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;  // closed, timed out or malformed: nothing useful to answer
      stream->busy();
      net::HttpReply reply =
          self->handler(std::string_view(req.method_string().data(), req.method_string().size()),
                        std::string_view(req.target().data(), req.target().size()));
      http::response<http::string_body> res{static_cast<http::status>(reply.status), req.version()};
      res.set(http::field::server, "gleaner-agent");
      res.set(http::field::content_type, reply.content_type);
      res.keep_alive(req.keep_alive());
      res.body() = std::move(reply.body);
      res.prepare_payload();
      if (req.method() == http::verb::head) res.body().clear();
      co_await http::async_write(*stream, res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !res.keep_alive()) break;
    }
    stream->socket().shutdown(tcp::socket::shutdown_both, ec);
    stream->close();
  }
};

Result<std::unique_ptr<MetricsServer>> MetricsServer::create(asio::io_context& io,
                                                             std::string_view address,
                                                             Handler handler) {
  auto impl = std::make_shared<Impl>(std::move(handler));
  auto listener = net::HttpListener::listen(
      io, address, "metrics address", net::HttpListener::spawn_sessions(impl, &Impl::session));
  if (!listener) return listener.error();
  impl->listener = std::move(*listener);
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::~MetricsServer() {
  stop();
}

uint16_t MetricsServer::port() const {
  return impl_->listener->port();
}

net::ListenerStats MetricsServer::listener_stats() const {
  return impl_->listener->stats();
}

void MetricsServer::stop() {
  impl_->listener->stop();
}

}  // namespace gleaner::reporter
