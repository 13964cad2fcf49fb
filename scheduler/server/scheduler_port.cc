#include "scheduler/server/scheduler_port.h"

#include <chrono>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>

#include "net/beast_names.h"
#include "net/http_server.h"

namespace gleaner::scheduler::server {

using namespace net::beast_names;

namespace {

// Token reviews (API server round trips) run on a few worker threads so the I/O thread
// never waits on them; beyond this many at once (a flood of made-up tokens), a report is
// answered 503 and its agent retries on its next pass.
constexpr int kReviewThreads = 4;
constexpr int kMaxReviewsInFlight = 64;
// Agents keep their report connection open: room for a large cluster's nodes, capped by
// the descriptor limit (half of it) so a flood cannot take them all.
constexpr size_t kMaxConnections = 16384;

// The answer to a request that outlives its server (in the moments after stop()).
net::HttpReply shutting_down() {
  return net::HttpReply{503, "application/json", "{\"error\":\"shutting_down\"}\n"};
}

}  // namespace

struct SchedulerPort::Impl {
  explicit Impl(ApiRoutes& r) : routes(r) {}

  ApiRoutes& routes;
  std::unique_ptr<net::HttpServer> server;
  std::unique_ptr<asio::thread_pool> review_pool;  // only when tokens are reviewed
  int reviews_in_flight = 0;                       // only the I/O thread touches it

  // Before a body is read: every path but the report's takes none, and a report without the
  // token is refused unread.
  std::optional<net::HttpReply> before_body(const net::ServerRequest& req) {
    const std::string_view target = view(req.target());
    if (!ApiRoutes::is_report_path(target)) return routes.get(view(req.method_string()), target);
    if (req.method() != http::verb::post) {
      return net::HttpReply{405, "application/json",
                            R"({"error":"method_not_allowed","message":"POST a NodeReport"})"
                            "\n"};
    }
    if (!routes.authorized(view(req[http::field::authorization])))
      return routes.rejected(RejectReason::kUnauthorized, "missing or invalid bearer token");
    return std::nullopt;
  }

  // A report read whole (its token already accepted or under review).
  static asio::awaitable<net::HttpReply> report(std::shared_ptr<Impl> self,
                                                const net::ServerRequest& req) {
    if (!self) co_return shutting_down();
    ReportAttempt attempt =
        self->routes.begin_report(view(req[http::field::authorization]), req.body());
    if (attempt.reply) co_return std::move(*attempt.reply);
    if (!self->review_pool) co_return self->routes.finish_report(attempt);
    if (self->reviews_in_flight >= kMaxReviewsInFlight) {
      co_return self->routes.rejected(RejectReason::kAuthUnavailable,
                                      "too many token reviews at once; retry later");
    }
    ++self->reviews_in_flight;
    net::HttpReply reply = co_await asio::co_spawn(
        self->review_pool->get_executor(),
        [&]() -> asio::awaitable<net::HttpReply> { co_return self->routes.finish_report(attempt); },
        asio::use_awaitable);
    --self->reviews_in_flight;
    co_return reply;
  }

  net::HttpReply refused(net::RequestRefusal why, const std::string& message) {
    switch (why) {
      case net::RequestRefusal::kHeaderTooLarge:
        break;
      case net::RequestRefusal::kBodyTooLarge:
        return routes.rejected(
            RejectReason::kTooLarge,
            "report is above the limit of " + std::to_string(routes.max_report_bytes()) + " bytes");
      case net::RequestRefusal::kMalformed:
        return routes.rejected(RejectReason::kMalformed, message);
    }
    return net::refusal_reply(why, message);
  }
};

Result<std::unique_ptr<SchedulerPort>> SchedulerPort::create(asio::io_context& io,
                                                             std::string_view address,
                                                             ApiRoutes& routes,
                                                             const admission::KeyPair* tls) {
  auto impl = std::make_shared<Impl>(routes);
  if (routes.reviews_tokens())
    impl->review_pool = std::make_unique<asio::thread_pool>(kReviewThreads);
  net::HttpServerOptions options;
  options.what = "listen address";
  options.server_header = "gleaner-scheduler";
  options.max_connections = kMaxConnections;
  options.body_limit = routes.max_report_bytes();
  // The sessions hold the one server, which holds these: weak, so that this Impl does not
  // keep itself alive through them; a request that outlives it is answered 503.
  const std::weak_ptr<Impl> weak = impl;
  net::HttpHandler handler;
  handler.before_body = [weak](const net::ServerRequest& req) -> std::optional<net::HttpReply> {
    if (auto self = weak.lock()) return self->before_body(req);
    return shutting_down();
  };
  handler.reply_async = [weak](const net::ServerRequest& req) {
    return Impl::report(weak.lock(), req);
  };
  handler.refused = [weak](net::RequestRefusal why, const std::string& message) {
    if (auto self = weak.lock()) return self->refused(why, message);
    return shutting_down();
  };
  std::optional<net::ServingCertificate> serving;
  if (tls != nullptr) serving = net::ServingCertificate{tls->cert_pem, tls->key_pem};
  auto server =
      net::HttpServer::create(io, address, std::move(options), std::move(handler), serving);
  if (!server) return server.error();
  impl->server = std::move(*server);
  return std::unique_ptr<SchedulerPort>(new SchedulerPort(std::move(impl)));
}

SchedulerPort::~SchedulerPort() {
  stop();
}

Status SchedulerPort::set_certificate(const admission::KeyPair& pair) {
  return impl_->server->set_certificate({pair.cert_pem, pair.key_pem});
}

uint16_t SchedulerPort::port() const {
  return impl_->server->port();
}

net::ListenerStats SchedulerPort::listener_stats() const {
  return impl_->server->listener_stats();
}

void SchedulerPort::stop() {
  impl_->server->stop();
  // Reviews under way finish (each is bounded by the API client's timeout) before the
  // sessions waiting on them can be torn down.
  if (impl_->review_pool) {
    impl_->review_pool->stop();
    impl_->review_pool->join();
  }
}

}  // namespace gleaner::scheduler::server
