#include "scheduler/server/webhook_server.h"

#include <chrono>
#include <mutex>

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>

#include "net/beast_names.h"
#include "net/http_listener.h"
#include "scheduler/server/connection_limits.h"
#include "scheduler/server/tls_context.h"

namespace gleaner::scheduler::server {

using namespace net::beast_names;
namespace ssl = asio::ssl;

namespace {

constexpr const char* kNotFound = "{\"error\":\"not_found\"}\n";
constexpr const char* kMethodNotAllowed = "{\"error\":\"method_not_allowed\"}\n";

}  // namespace

struct WebhookServer::Impl {
  explicit Impl(Handler h) : handler(std::move(h)) {}

  Handler handler;
  std::shared_ptr<net::HttpListener> listener;
  std::mutex mu;
  std::shared_ptr<ssl::context> context;  // guarded by mu

  std::shared_ptr<ssl::context> current() {
    std::lock_guard lock(mu);
    return context;
  }

  net::HttpReply answer(const http::request<http::string_body>& req) const {
    const std::string_view target = view(req.target());
    const std::string_view path = target.substr(0, target.find('?'));
    if (path == "/healthz" && req.method() == http::verb::get) {
      return net::HttpReply{200, "text/plain", "ok\n"};
    }
    constexpr std::string_view kMutate = "/mutate-pod";
    const std::string_view rest =
        path.starts_with(kMutate) ? path.substr(kMutate.size()) : std::string_view("x");
    if (!rest.empty() && (rest.size() < 2 || rest[0] != '/'))
      return net::HttpReply{404, "application/json", kNotFound};
    if (req.method() != http::verb::post) {
      return net::HttpReply{405, "application/json", kMethodNotAllowed};
    }
    return handler(rest.empty() ? rest : rest.substr(1), req.body());
  }

  static asio::awaitable<void> session(std::shared_ptr<Impl> self,
                                       std::shared_ptr<net::Connection> tcp) {
    auto ctx = self->current();
    beast::ssl_stream<beast::tcp_stream&> stream(*tcp, *ctx);
    error_code ec;
    tcp->expires_after(kHandshakeTimeout);
    co_await stream.async_handshake(ssl::stream_base::server,
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      tcp->close();
      co_return;
    }
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(kHeaderLimit);
      parser.body_limit(kMaxBody);
      // Waiting for a review is idle (a flood of such connections gives way at the cap);
      // answering one is not, so an API server's review in flight is never the one closed.
      tcp->idle();
      tcp->expires_after(kIdleTimeout);
      co_await http::async_read(stream, buffer, parser,
                                asio::redirect_error(asio::use_awaitable, ec));
      tcp->busy();
      net::HttpReply reply;
      bool keep_alive = false;
      if (ec == http::error::body_limit) {
        reply = net::HttpReply{413, "application/json",
                               R"({"error":"too_large"})"
                               "\n"};
      } else if (ec) {
        break;
      } else {
        reply = self->answer(parser.get());
        keep_alive = parser.get().keep_alive();
      }
      http::response<http::string_body> res{static_cast<http::status>(reply.status), 11};
      res.set(http::field::server, "gleaner-scheduler");
      res.set(http::field::content_type, reply.content_type);
      res.keep_alive(keep_alive);
      res.body() = std::move(reply.body);
      res.prepare_payload();
      co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !keep_alive) break;
    }
    tcp->idle();
    tcp->expires_after(std::chrono::seconds(2));
    co_await stream.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
    tcp->close();
  }
};

Result<std::unique_ptr<WebhookServer>> WebhookServer::create(asio::io_context& io,
                                                             std::string_view address,
                                                             Handler handler,
                                                             const admission::KeyPair& serving) {
  auto impl = std::make_shared<Impl>(std::move(handler));
  auto ctx = server_tls_context(serving);
  if (!ctx) return ctx.error();
  impl->context = std::move(*ctx);
  auto listener = net::HttpListener::listen(
      io, address, "webhook address", net::HttpListener::spawn_sessions(impl, &Impl::session));
  if (!listener) return listener.error();
  impl->listener = std::move(*listener);
  return std::unique_ptr<WebhookServer>(new WebhookServer(std::move(impl)));
}

WebhookServer::~WebhookServer() {
  stop();
}

Status WebhookServer::set_certificate(const admission::KeyPair& serving) {
  auto ctx = server_tls_context(serving);
  if (!ctx) return ctx.error();
  std::lock_guard lock(impl_->mu);
  impl_->context = std::move(*ctx);
  return ok_status();
}

uint16_t WebhookServer::port() const {
  return impl_->listener->port();
}

void WebhookServer::stop() {
  impl_->listener->stop();
}

}  // namespace gleaner::scheduler::server
