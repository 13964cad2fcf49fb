#include "scheduler/server/http_server.h"

#include <chrono>
#include <mutex>
#include <type_traits>

#include <boost/asio/thread_pool.hpp>
#include <boost/beast/ssl.hpp>

#include "net/beast_names.h"
#include "net/http_listener.h"
#include "scheduler/server/connection_limits.h"
#include "scheduler/server/tls_context.h"

namespace gleaner::scheduler::server {

using namespace net::beast_names;
namespace ssl = asio::ssl;

namespace {

constexpr auto kDrainTimeout = std::chrono::seconds(2);
constexpr std::size_t kDrainLimit = 8 << 20;
// Token reviews (API server round trips) run on a few worker threads so the I/O thread
// never waits on them; beyond this many at once (a flood of made-up tokens), a report is
// answered 503 and its agent retries on its next pass.
constexpr int kReviewThreads = 4;
constexpr int kMaxReviewsInFlight = 64;

}  // namespace

struct HttpServer::Impl {
  explicit Impl(ApiRoutes& r) : routes(r) {}

  ApiRoutes& routes;
  std::shared_ptr<net::HttpListener> listener;

  // Answers one request; `close` when the rest of the request was left unread.
  template <class Stream>
  static asio::awaitable<net::HttpReply> answer(Impl& self, Stream& stream,
                                                beast::flat_buffer& buffer,
                                                http::request_parser<http::string_body>& parser,
                                                bool too_large, bool& close) {
    auto& req = parser.get();
    const std::string_view target = view(req.target());
    if (!ApiRoutes::is_report_path(target)) {
      // No other path takes a body: leave any unread and end the connection after this.
      close = !parser.is_done();
      co_return self.routes.get(view(req.method_string()), target);
    }
    if (req.method() != http::verb::post) {
      close = !parser.is_done();
      co_return net::HttpReply{405, "application/json",
                               R"({"error":"method_not_allowed","message":"POST a NodeReport"})"
                               "\n"};
    }
    const std::string_view auth = view(req[http::field::authorization]);
    if (!self.routes.authorized(auth)) {
      close = !parser.is_done();
      co_return self.routes.rejected(RejectReason::kUnauthorized,
                                     "missing or invalid bearer token");
    }
    error_code ec;
    if (too_large) {
      ec = http::error::body_limit;
    } else {
      co_await http::async_read(stream, buffer, parser,
                                asio::redirect_error(asio::use_awaitable, ec));
    }
    if (ec == http::error::body_limit) {
      close = true;
      co_return self.routes.rejected(RejectReason::kTooLarge,
                                     "report is above the limit of " +
                                         std::to_string(self.routes.max_report_bytes()) + " bytes");
    }
    if (ec) {
      close = true;
      co_return self.routes.rejected(RejectReason::kMalformed, "request: " + ec.message());
    }
    ReportAttempt attempt = self.routes.begin_report(auth, req.body());
    if (attempt.reply) co_return std::move(*attempt.reply);
    if (!self.review_pool) co_return self.routes.finish_report(attempt);
    if (self.reviews_in_flight >= kMaxReviewsInFlight) {
      co_return self.routes.rejected(RejectReason::kAuthUnavailable,
                                     "too many token reviews at once; retry later");
    }
    ++self.reviews_in_flight;  // only the I/O thread touches the count
    net::HttpReply reply = co_await asio::co_spawn(
        self.review_pool->get_executor(),
        [&]() -> asio::awaitable<net::HttpReply> { co_return self.routes.finish_report(attempt); },
        asio::use_awaitable);
    --self.reviews_in_flight;
    co_return reply;
  }

  // Closing a socket with unread input makes the kernel send a reset, which can destroy
  // the answer before the client reads it. So, having answered, stop sending and discard
  // what the client still sends, for a bounded time and amount.
  template <class Stream>
  static asio::awaitable<void> drain(beast::tcp_stream& tcp, Stream& stream,
                                     beast::flat_buffer& buffer) {
    error_code ec;
    // Plain TCP can stop sending at once; under TLS the close_notify comes with the end.
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>)
      tcp.socket().shutdown(tcp::socket::shutdown_send, ec);
    tcp.expires_after(kDrainTimeout);
    std::size_t total = 0;
    char scratch[16 * 1024];
    buffer.clear();
    while (!ec && total < kDrainLimit) {
      total += co_await stream.async_read_some(asio::buffer(scratch),
                                               asio::redirect_error(asio::use_awaitable, ec));
    }
  }

  static asio::awaitable<void> session(std::shared_ptr<Impl> self,
                                       std::shared_ptr<beast::tcp_stream> stream) {
    error_code ec;
    if (auto ctx = self->current_tls()) {
      beast::ssl_stream<beast::tcp_stream&> secure(*stream, *ctx);
      stream->expires_after(kHandshakeTimeout);
      co_await secure.async_handshake(ssl::stream_base::server,
                                      asio::redirect_error(asio::use_awaitable, ec));
      if (!ec) {
        co_await serve(*self, *stream, secure);
        stream->expires_after(kDrainTimeout);
        co_await secure.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
      }
    } else {
      co_await serve(*self, *stream, *stream);
      stream->socket().shutdown(tcp::socket::shutdown_both, ec);
    }
    stream->close();
  }

  // The request loop over plain TCP or TLS; `tcp` carries the timeouts.
  template <class Stream>
  static asio::awaitable<void> serve(Impl& self, beast::tcp_stream& tcp, Stream& stream) {
    beast::flat_buffer buffer;
    error_code ec;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(kHeaderLimit);
      parser.body_limit(self.routes.max_report_bytes());
      tcp.expires_after(kIdleTimeout);
      co_await http::async_read_header(stream, buffer, parser,
                                       asio::redirect_error(asio::use_awaitable, ec));
      // A Content-Length above the limit fails here, with the header already parsed.
      const bool too_large = ec == http::error::body_limit;
      if (ec == http::error::header_limit) {
        // Answered, not dropped: the client learns why (431), then the connection ends.
        http::response<http::string_body> res{http::status::request_header_fields_too_large, 11};
        res.set(http::field::server, "gleaner-scheduler");
        res.set(http::field::content_type, "application/json");
        res.keep_alive(false);
        res.body() = R"({"error":"header_too_large","message":"request headers above )" +
                     std::to_string(kHeaderLimit) + " bytes\"}\n";
        res.prepare_payload();
        co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
        co_await drain(tcp, stream, buffer);
        co_return;
      }
      if (ec && !too_large) co_return;  // closed, timed out or not HTTP: nothing to answer
      bool close = false;
      net::HttpReply reply = co_await answer(self, stream, buffer, parser, too_large, close);
      const auto& req = parser.get();
      http::response<http::string_body> res{static_cast<http::status>(reply.status), req.version()};
      res.set(http::field::server, "gleaner-scheduler");
      res.set(http::field::content_type, reply.content_type);
      res.keep_alive(req.keep_alive() && !close);
      res.body() = std::move(reply.body);
      res.prepare_payload();
      if (req.method() == http::verb::head) res.body().clear();
      co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      if (!res.keep_alive()) {
        if (close) co_await drain(tcp, stream, buffer);
        co_return;
      }
    }
  }

  std::shared_ptr<ssl::context> current_tls() {
    std::lock_guard lock(tls_mu);
    return tls;
  }
  std::mutex tls_mu;
  std::shared_ptr<ssl::context> tls;               // nullptr: plain HTTP
  std::unique_ptr<asio::thread_pool> review_pool;  // only when tokens are reviewed
  int reviews_in_flight = 0;
};

Result<std::unique_ptr<HttpServer>> HttpServer::create(asio::io_context& io,
                                                       std::string_view address, ApiRoutes& routes,
                                                       const admission::KeyPair* tls) {
  auto impl = std::make_shared<Impl>(routes);
  if (routes.reviews_tokens())
    impl->review_pool = std::make_unique<asio::thread_pool>(kReviewThreads);
  if (tls != nullptr) {
    auto ctx = server_tls_context(*tls);
    if (!ctx) return ctx.error();
    impl->tls = std::move(*ctx);
  }
  // Agents keep their report connection open: room for a large cluster's nodes, capped by
  // the descriptor limit (half of it) so a flood cannot take them all.
  constexpr size_t kMaxConnections = 16384;
  auto listener = net::HttpListener::listen(io, address, "listen address",
                                            net::HttpListener::spawn_sessions(impl, &Impl::session),
                                            kMaxConnections);
  if (!listener) return listener.error();
  impl->listener = std::move(*listener);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::~HttpServer() {
  stop();
}

Status HttpServer::set_certificate(const admission::KeyPair& pair) {
  auto ctx = server_tls_context(pair);
  if (!ctx) return ctx.error();
  std::lock_guard lock(impl_->tls_mu);
  if (!impl_->tls) return make_error(ErrorCode::kInvalidArgument, "this port serves plain HTTP");
  impl_->tls = std::move(*ctx);
  return ok_status();
}

uint16_t HttpServer::port() const {
  return impl_->listener->port();
}

net::ListenerStats HttpServer::listener_stats() const {
  return impl_->listener->stats();
}

void HttpServer::stop() {
  impl_->listener->stop();
  // Reviews under way finish (each is bounded by the API client's timeout) before the
  // sessions waiting on them can be torn down.
  if (impl_->review_pool) {
    impl_->review_pool->stop();
    impl_->review_pool->join();
  }
}

}  // namespace gleaner::scheduler::server
