#pragma once
// The one HTTP(S) server of both binaries: the agent's /metrics port, the scheduler's report
// and API port and its admission webhook all run on it, each giving its limits and a handler.
// Per connection it runs one session: an optional TLS handshake (with the certificate current
// when the connection was accepted), then requests read under a header cap, a body limit and
// a deadline, answered, and kept alive while the client asks. A request refused before its
// body is read is answered and the rest of its upload discarded (bounded in time and bytes)
// before the connection closes, so the client reads the answer instead of a reset.
//
// Only .cc files include this header (it names Beast's request type).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>  // before Boost.Asio's awaitable.hpp, which uses std::exchange

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "common/result.h"
#include "net/http_reply.h"
#include "net/listener_stats.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace gleaner::net {

using ServerRequest = boost::beast::http::request<boost::beast::http::string_body>;

// Why a request is answered by the server itself rather than by the handler.
enum class RequestRefusal {
  kHeaderTooLarge,  // 431, the connection then closes
  kBodyTooLarge,    // 413, the connection then closes
  kMalformed,       // 400: the body could not be read
};

struct HttpHandler {
  // Called once the header is read, before the body: a reply here is the answer (a path that
  // takes no body, a refused token), and a body left unread ends the connection after it.
  // Unset: every request is read whole.
  std::function<std::optional<HttpReply>(const ServerRequest&)> before_body;
  // Called with the whole request, on the I/O thread: `reply`, or, when the answer waits on
  // other threads, `reply_async` (a coroutine on the I/O thread; it is used when set).
  std::function<HttpReply(const ServerRequest&)> reply;
  std::function<boost::asio::awaitable<HttpReply>(const ServerRequest&)> reply_async;
  // The answer to a request the limits refuse (unset: refusal_reply below). `message` says
  // what was refused.
  std::function<HttpReply(RequestRefusal, const std::string& message)> refused;
};

// The server's own answer to a refused request: JSON {"error": ..., "message": ...}.
HttpReply refusal_reply(RequestRefusal why, const std::string& message);

struct HttpServerOptions {
  std::string what = "listen address";  // names the port in errors and logs
  std::string server_header;            // the Server header of every response
  size_t max_connections = kDefaultMaxHttpConnections;
  uint32_t header_limit = 16 * 1024;
  uint64_t body_limit = 64 * 1024;
  // From accepting (or the handshake) to the first request read whole, and from one answer
  // to the next request read whole: a client that goes quiet or trickles holds its slot for
  // no longer (and at the listener's cap the oldest idle connection is closed anyway).
  std::chrono::seconds first_request_timeout{60};
  std::chrono::seconds idle_timeout{60};
  // HTTPS only: a handshake that never comes holds a slot for this long at most.
  std::chrono::seconds handshake_timeout{5};
};

// A PEM certificate chain and its private key.
struct ServingCertificate {
  std::string_view cert_pem;
  std::string_view key_pem;
};

class HttpServer {
 public:
  // Binds and listens now (a taken port fails at start-up); serves once `io` runs. `tls`:
  // serve HTTPS with this certificate (TLS 1.2 and 1.3 only); nullopt: plain HTTP.
  static Result<std::unique_ptr<HttpServer>> create(
      boost::asio::io_context& io, std::string_view address, HttpServerOptions options,
      HttpHandler handler, std::optional<ServingCertificate> tls = std::nullopt);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // HTTPS only, thread-safe: new connections use this certificate from now on (a renewal);
  // open ones finish on theirs. An unusable pair (or a key that does not match) is refused
  // and the current one kept.
  Status set_certificate(ServingCertificate serving);
  [[nodiscard]] uint16_t port() const;
  [[nodiscard]] ListenerStats listener_stats() const;
  // Thread-safe: stops accepting and closes open connections (on the io_context).
  void stop();

  struct Impl;

 private:
  explicit HttpServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace gleaner::net
