#include "scheduler/server/http_server.h"

#include <charconv>
#include <chrono>
#include <list>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

namespace gleaner::scheduler::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr auto kIdleTimeout = std::chrono::seconds(60);
constexpr uint32_t kHeaderLimit = 16 * 1024;
constexpr auto kDrainTimeout = std::chrono::seconds(2);
constexpr std::size_t kDrainLimit = 8 << 20;

Error addr_error(std::string_view text, const std::string& why) {
  return make_error(ErrorCode::kInvalidArgument,
                    "listen address '" + std::string(text) + "': " + why);
}

std::string_view view(beast::string_view s) {
  return {s.data(), s.size()};
}

}  // namespace

Result<ListenAddress> parse_listen_address(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return addr_error(text, "expected [host]:port");
  ListenAddress out;
  std::string_view host = text.substr(0, colon);
  if (host.starts_with("[") && host.ends_with("]")) host = host.substr(1, host.size() - 2);
  out.host = host.empty() ? "0.0.0.0" : std::string(host);
  const std::string_view port = text.substr(colon + 1);
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || value > 65535) {
    return addr_error(text, "bad port '" + std::string(port) + "'");
  }
  out.port = static_cast<uint16_t>(value);
  return out;
}

struct HttpServer::Impl {
  Impl(asio::io_context& io, ApiRoutes& r)
      : strand(asio::make_strand(io)), acceptor(strand), routes(r) {}

  asio::strand<asio::io_context::executor_type> strand;
  tcp::acceptor acceptor;
  ApiRoutes& routes;
  std::list<std::weak_ptr<beast::tcp_stream>> sessions;  // on the strand only
  uint16_t bound_port = 0;

  // Answers one request; `close` when the rest of the request was left unread.
  static asio::awaitable<HttpReply> answer(Impl& self, beast::tcp_stream& stream,
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
      co_return HttpReply{405, "application/json",
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
    co_return self.routes.post_report(auth, req.body());
  }

  // Closing a socket with unread input makes the kernel send a reset, which can destroy
  // the answer before the client reads it. So, having answered, stop sending and discard
  // what the client still sends, for a bounded time and amount.
  static asio::awaitable<void> drain(beast::tcp_stream& stream, beast::flat_buffer& buffer) {
    error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream.expires_after(kDrainTimeout);
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
    beast::flat_buffer buffer;
    error_code ec;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(kHeaderLimit);
      parser.body_limit(self->routes.max_report_bytes());
      stream->expires_after(kIdleTimeout);
      co_await http::async_read_header(*stream, buffer, parser,
                                       asio::redirect_error(asio::use_awaitable, ec));
      // A Content-Length above the limit fails here, with the header already parsed.
      const bool too_large = ec == http::error::body_limit;
      if (ec && !too_large) break;  // closed, timed out or not HTTP: nothing to answer
      bool close = false;
      HttpReply reply = co_await answer(*self, *stream, buffer, parser, too_large, close);
      const auto& req = parser.get();
      http::response<http::string_body> res{static_cast<http::status>(reply.status), req.version()};
      res.set(http::field::server, "gleaner-scheduler");
      res.set(http::field::content_type, reply.content_type);
      res.keep_alive(req.keep_alive() && !close);
      res.body() = std::move(reply.body);
      res.prepare_payload();
      if (req.method() == http::verb::head) res.body().clear();
      co_await http::async_write(*stream, res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      if (!res.keep_alive()) {
        if (close) co_await drain(*stream, buffer);
        break;
      }
    }
    stream->socket().shutdown(tcp::socket::shutdown_both, ec);
    stream->close();
  }

  static asio::awaitable<void> accept_loop(std::shared_ptr<Impl> self) {
    for (;;) {
      error_code ec;
      tcp::socket socket(self->strand);
      co_await self->acceptor.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
      if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) co_return;
      if (ec) {
        spdlog::warn("scheduler http: accept failed: {}", ec.message());
        continue;
      }
      socket.set_option(tcp::no_delay(true), ec);
      auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
      self->sessions.remove_if([](const auto& w) { return w.expired(); });
      self->sessions.push_back(stream);
      asio::co_spawn(self->strand, session(self, stream), asio::detached);
    }
  }
};

Result<std::unique_ptr<HttpServer>> HttpServer::create(asio::io_context& io,
                                                       std::string_view address,
                                                       ApiRoutes& routes) {
  auto addr = parse_listen_address(address);
  if (!addr) return addr.error();
  error_code ec;
  auto ip = asio::ip::make_address(addr->host, ec);
  if (ec) return addr_error(address, "host must be an IP address: " + ec.message());
  auto impl = std::make_shared<Impl>(io, routes);
  tcp::endpoint endpoint(ip, addr->port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return addr_error(address, "cannot listen: " + ec.message());
  impl->bound_port = impl->acceptor.local_endpoint().port();
  asio::co_spawn(impl->strand, Impl::accept_loop(impl), asio::detached);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::~HttpServer() {
  stop();
}

uint16_t HttpServer::port() const {
  return impl_->bound_port;
}

void HttpServer::stop() {
  asio::post(impl_->strand, [impl = impl_] {
    error_code ignored;
    impl->acceptor.close(ignored);
    for (auto& w : impl->sessions)
      if (auto s = w.lock()) s->socket().close(ignored);
    impl->sessions.clear();
  });
}

}  // namespace gleaner::scheduler::server
