#include "net/http_client.h"

#include <atomic>
#include <optional>

#include <boost/asio/post.hpp>

#include "net/client_connection.h"

namespace gleaner::net {
namespace {

using namespace beast_names;
using SteadyClock = std::chrono::steady_clock;

template <typename T>
asio::awaitable<void> store(asio::awaitable<Result<T>> op, std::optional<Result<T>>& out) {
  out.emplace(co_await std::move(op));
}

}  // namespace

struct HttpConnection::Impl {
  HttpUrl endpoint;
  TlsOptions tls;
  asio::io_context ioc{1};
  ClientConnection conn;
  std::atomic<bool> interrupted{false};

  Impl(HttpUrl e, TlsOptions t)
      : endpoint(std::move(e)), tls(std::move(t)), conn(ioc.get_executor(), endpoint) {}

  // The TLS context is made on first use, so that a bad CA file fails the request (with the
  // file named) rather than the constructor.
  Status ensure_tls() {
    if (!endpoint.tls() || conn.has_tls()) return ok_status();
    auto context = client_tls_context(tls);
    if (!context) return context.error();
    conn.set_tls(std::move(*context), tls.verify);
    return ok_status();
  }

  // Runs one operation of `conn` to completion on this connection's own io_context, giving
  // up (and aborting the socket) at `deadline` or on interrupt(): synchronous calls with real
  // timeouts, including name resolution, which has none of its own.
  template <typename T, typename Start>
  Result<T> run(Start&& start, SteadyClock::time_point deadline, const std::string& what) {
    std::optional<Result<T>> out;
    ioc.restart();
    asio::co_spawn(ioc, store<T>(start(), out), [&out, &what](const std::exception_ptr& e) {
      if (e && !out) out.emplace(make_error(ErrorCode::kInternal, what + ": exception"));
    });
    while (!out && !interrupted && SteadyClock::now() < deadline)
      ioc.run_one_until(deadline);
    const bool cut_short = !out;
    if (cut_short) {
      conn.abort();  // completes the pending operation with an error
      ioc.restart();
      while (!out && ioc.run_one() > 0) {
      }
    }
    if (out && out->ok()) return std::move(*out);
    if (interrupted) return make_error(ErrorCode::kUnavailable, what + ": interrupted");
    if (out && !cut_short) return std::move(*out);
    return make_error(ErrorCode::kTimeout, what + ": timeout");
  }
};

HttpConnection::HttpConnection(HttpUrl endpoint, TlsOptions tls)
    : impl_(std::make_unique<Impl>(std::move(endpoint), std::move(tls))) {}
HttpConnection::~HttpConnection() = default;

Result<ClientResponse> HttpConnection::request(const ClientRequest& req, const HttpLimits& limits) {
  const auto deadline = SteadyClock::now() + limits.timeout;
  if (Status tls = impl_->ensure_tls(); !tls) return tls.error();
  return impl_->run<ClientResponse>([&] { return impl_->conn.request(req, limits, deadline); },
                                    deadline, req.method + " " + impl_->conn.where(req.target));
}

Result<HttpConnection::StreamOpen> HttpConnection::open_stream(const ClientRequest& req,
                                                               const HttpLimits& limits) {
  auto fresh = std::make_unique<Impl>(impl_->endpoint, impl_->tls);
  const auto deadline = SteadyClock::now() + limits.timeout;
  if (Status tls = fresh->ensure_tls(); !tls) return tls.error();
  auto head =
      fresh->run<ClientResponse>([&] { return fresh->conn.open_stream(req, limits, deadline); },
                                 deadline, req.method + " " + fresh->conn.where(req.target));
  if (!head) return head.error();
  StreamOpen open;
  if (head->status < 200 || head->status > 299) {
    open.error = std::move(*head);
    return open;
  }
  open.error.status = head->status;
  open.stream = std::make_unique<HttpStream>(std::move(fresh));
  return open;
}

HttpStream::HttpStream(std::unique_ptr<HttpConnection::Impl> conn) : conn_(std::move(conn)) {}
HttpStream::~HttpStream() = default;

Result<std::string> HttpStream::read_some(std::chrono::milliseconds idle) {
  const auto deadline = SteadyClock::now() + idle;
  return conn_->run<std::string>([&] { return conn_->conn.next_body(deadline); }, deadline,
                                 "stream from " + conn_->conn.where(""));
}

void HttpStream::interrupt() {
  auto* conn = conn_.get();
  conn->interrupted = true;
  asio::post(conn->ioc, [conn] { conn->conn.abort(); });
}

}  // namespace gleaner::net
