#include "net/http_server.h"

#include <mutex>
#include <type_traits>

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>

#include "common/json_util.h"
#include "net/beast_names.h"
#include "net/http_listener.h"

namespace gleaner::net {

using namespace net::beast_names;
namespace ssl = asio::ssl;

namespace {

// Having refused a request whose body is still coming, the rest is read and dropped for this
// long and this much at most (closing with unread input makes the kernel send a reset, which
// can destroy the answer before the client reads it). Also the bound of a TLS close_notify.
constexpr auto kDrainTimeout = std::chrono::seconds(2);
constexpr std::size_t kDrainLimit = 8 << 20;

Result<std::shared_ptr<ssl::context>> tls_context(ServingCertificate pair) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  error_code ec;
  ctx->use_certificate_chain(asio::buffer(pair.cert_pem), ec);
  if (ec) return make_error(ErrorCode::kInvalidArgument, "TLS certificate: " + ec.message());
  ctx->use_private_key(asio::buffer(pair.key_pem), ssl::context::pem, ec);
  if (ec) return make_error(ErrorCode::kInvalidArgument, "TLS key: " + ec.message());
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1)
    return make_error(ErrorCode::kInvalidArgument, "TLS key does not match its certificate");
  return ctx;
}

}  // namespace

HttpReply refusal_reply(RequestRefusal why, const std::string& message) {
  const auto [status, error] = [why]() -> std::pair<unsigned, const char*> {
    switch (why) {
      case RequestRefusal::kHeaderTooLarge:
        return {431, "header_too_large"};
      case RequestRefusal::kBodyTooLarge:
        return {413, "too_large"};
      case RequestRefusal::kMalformed:
        break;
    }
    return {400, "malformed"};
  }();
  return HttpReply{status, "application/json",
                   Json{{"error", error}, {"message", message}}.dump() + "\n"};
}

struct HttpServer::Impl {
  Impl(HttpServerOptions o, HttpHandler h) : options(std::move(o)), handler(std::move(h)) {}

  const HttpServerOptions options;
  const HttpHandler handler;
  std::shared_ptr<HttpListener> listener;
  std::mutex tls_mu;
  std::shared_ptr<ssl::context> tls;  // guarded by tls_mu; nullptr: plain HTTP

  std::shared_ptr<ssl::context> current_tls() {
    std::lock_guard lock(tls_mu);
    return tls;
  }

  HttpReply refused(RequestRefusal why, const std::string& message) const {
    return handler.refused ? handler.refused(why, message) : refusal_reply(why, message);
  }

  static asio::awaitable<void> session(std::shared_ptr<Impl> self,
                                       std::shared_ptr<Connection> tcp) {
    error_code ec;
    if (auto ctx = self->current_tls()) {
      beast::ssl_stream<beast::tcp_stream&> secure(*tcp, *ctx);
      tcp->expires_after(self->options.handshake_timeout);
      co_await secure.async_handshake(ssl::stream_base::server,
                                      asio::redirect_error(asio::use_awaitable, ec));
      if (!ec) {
        co_await serve(*self, *tcp, secure);
        tcp->waiting();
        tcp->expires_after(kDrainTimeout);
        co_await secure.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
      }
    } else {
      co_await serve(*self, *tcp, *tcp);
      tcp->socket().shutdown(tcp::socket::shutdown_both, ec);
    }
    tcp->close();
  }

  // The request loop over plain TCP or TLS; `tcp` carries the deadlines and tells the
  // listener what it is doing: reading its first request (at the cap it may be closed once
  // past kFirstRequestGrace), waiting for the next (it may be closed), or answering one
  // read whole (never closed).
  template <class Stream>
  static asio::awaitable<void> serve(Impl& self, Connection& tcp, Stream& stream) {
    const HttpServerOptions& o = self.options;
    beast::flat_buffer buffer;
    error_code ec;
    for (bool first = true;; first = false) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(o.header_limit);
      parser.body_limit(o.body_limit);
      if (!first) tcp.waiting();
      // One deadline for the header and the body: a client trickling either holds its slot
      // no longer than one that sends nothing.
      tcp.expires_after(first ? o.first_request_timeout : o.idle_timeout);
      co_await http::async_read_header(stream, buffer, parser,
                                       asio::redirect_error(asio::use_awaitable, ec));
      if (ec == http::error::header_limit) {
        tcp.serving();
        // Answered, not dropped: the client learns why, then the connection ends.
        auto reply =
            self.refused(RequestRefusal::kHeaderTooLarge,
                         "request headers above " + std::to_string(o.header_limit) + " bytes");
        co_await write(self, stream, std::move(reply), 11, false, false);
        co_await drain(tcp, stream, buffer);
        co_return;
      }
      // A Content-Length above the limit fails here, with the header already parsed.
      const bool too_large = ec == http::error::body_limit;
      if (ec && !too_large) co_return;  // closed, timed out or not HTTP: nothing to answer
      bool close = false;
      HttpReply reply = co_await answer(self, tcp, stream, buffer, parser, too_large, close);
      const auto& req = parser.get();
      const bool keep_alive = req.keep_alive() && !close;
      if (!co_await write(self, stream, std::move(reply), req.version(), keep_alive,
                          req.method() == http::verb::head))
        co_return;
      if (!keep_alive) {
        if (close) co_await drain(tcp, stream, buffer);
        co_return;
      }
    }
  }

  // Answers one request whose header is read; `close` when the rest of it was left unread.
  template <class Stream>
  static asio::awaitable<HttpReply> answer(Impl& self, Connection& tcp, Stream& stream,
                                           beast::flat_buffer& buffer,
                                           http::request_parser<http::string_body>& parser,
                                           bool too_large, bool& close) {
    const ServerRequest& req = parser.get();
    if (self.handler.before_body) {
      if (auto early = self.handler.before_body(req)) {
        tcp.serving();
        close = !parser.is_done();
        co_return std::move(*early);
      }
    }
    error_code ec = too_large ? error_code(http::error::body_limit) : error_code();
    if (!ec && !parser.is_done())
      co_await http::async_read(stream, buffer, parser,
                                asio::redirect_error(asio::use_awaitable, ec));
    tcp.serving();  // read whole (or refused): the answer is under way
    if (ec == http::error::body_limit) {
      close = true;
      co_return self.refused(
          RequestRefusal::kBodyTooLarge,
          "request body above the limit of " + std::to_string(self.options.body_limit) + " bytes");
    }
    if (ec) {
      close = true;
      co_return self.refused(RequestRefusal::kMalformed, "request: " + ec.message());
    }
    if (self.handler.reply_async) co_return co_await self.handler.reply_async(req);
    co_return self.handler.reply(req);
  }

  // False when the client is gone.
  template <class Stream>
  static asio::awaitable<bool> write(Impl& self, Stream& stream, HttpReply reply, unsigned version,
                                     bool keep_alive, bool head) {
    http::response<http::string_body> res{static_cast<http::status>(reply.status), version};
    if (!self.options.server_header.empty())
      res.set(http::field::server, self.options.server_header);
    res.set(http::field::content_type, reply.content_type);
    res.keep_alive(keep_alive);
    res.body() = std::move(reply.body);
    res.prepare_payload();
    if (head) res.body().clear();
    error_code ec;
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
    co_return !ec;
  }

  // Having answered a request whose input is left unread: stop sending and discard what the
  // client still sends, for a bounded time and amount, so that closing sends no reset.
  template <class Stream>
  static asio::awaitable<void> drain(Connection& tcp, Stream& stream, beast::flat_buffer& buffer) {
    error_code ec;
    // Plain TCP can stop sending at once; under TLS the close_notify comes with the end.
    if constexpr (std::is_same_v<Stream, Connection>)
      tcp.socket().shutdown(tcp::socket::shutdown_send, ec);
    tcp.waiting();
    tcp.expires_after(kDrainTimeout);
    std::size_t total = 0;
    char scratch[16 * 1024];
    buffer.clear();
    while (!ec && total < kDrainLimit) {
      total += co_await stream.async_read_some(asio::buffer(scratch),
                                               asio::redirect_error(asio::use_awaitable, ec));
    }
  }
};

Result<std::unique_ptr<HttpServer>> HttpServer::create(asio::io_context& io,
                                                       std::string_view address,
                                                       HttpServerOptions options,
                                                       HttpHandler handler,
                                                       std::optional<ServingCertificate> tls) {
  const size_t max_connections = options.max_connections;
  const std::string what = options.what;
  auto impl = std::make_shared<Impl>(std::move(options), std::move(handler));
  if (tls) {
    auto ctx = tls_context(*tls);
    if (!ctx) return ctx.error();
    impl->tls = std::move(*ctx);
  }
  auto listener = HttpListener::listen(
      io, address, what, HttpListener::spawn_sessions(impl, &Impl::session), max_connections);
  if (!listener) return listener.error();
  impl->listener = std::move(*listener);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::~HttpServer() {
  stop();
}

Status HttpServer::set_certificate(ServingCertificate serving) {
  auto ctx = tls_context(serving);
  if (!ctx) return ctx.error();
  std::lock_guard lock(impl_->tls_mu);
  if (!impl_->tls) return make_error(ErrorCode::kInvalidArgument, "this port serves plain HTTP");
  impl_->tls = std::move(*ctx);
  return ok_status();
}

uint16_t HttpServer::port() const {
  return impl_->listener->port();
}

ListenerStats HttpServer::listener_stats() const {
  return impl_->listener->stats();
}

void HttpServer::stop() {
  impl_->listener->stop();
}

}  // namespace gleaner::net
