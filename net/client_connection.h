#pragma once
// One keep-alive HTTP/1.1 client connection (plain TCP or TLS) as coroutines on an executor:
// the request/response exchange of every client of the project. HttpConnection
// (net/http_client.h) runs it on a private io_context for synchronous callers; the report
// client awaits it on its strand. Every operation is bounded by a deadline; response bodies
// and headers are capped. Includes Boost: for .cc files only.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <utility>  // Asio's awaitable.hpp uses std::exchange without it

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "common/result.h"
#include "net/http_client.h"
#include "net/url.h"

namespace gleaner::net {

// The client TLS context `tls` describes: trusted CAs (file, inline PEM or the system
// store), peer verification, client certificate and key. Errors name the file at fault.
Result<std::shared_ptr<boost::asio::ssl::context>> client_tls_context(const TlsOptions& tls);

class ClientConnection {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  ClientConnection(boost::asio::any_io_executor executor, HttpUrl endpoint);
  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // The TLS context for https connections opened from now on (one already open keeps its
  // own); `verify_host`: check the certificate names the endpoint's host.
  void set_tls(std::shared_ptr<boost::asio::ssl::context> context, bool verify_host);
  [[nodiscard]] bool has_tls() const { return tls_ != nullptr; }

  // Sends `req` and reads the whole response. A kept-alive connection the peer closed while
  // idle is replaced once, transparently. Transport failures are errors (kTimeout,
  // kUnavailable for connecting, kIo after); any HTTP status is a response.
  boost::asio::awaitable<Result<ClientResponse>> request(const ClientRequest& req,
                                                         const HttpLimits& limits,
                                                         Deadline deadline);
  // Sends `req` on a new connection and reads the response header. A 2xx answer returns its
  // status with an empty body, and next_body() then reads the body; any other status is read
  // whole (capped) and returned.
  boost::asio::awaitable<Result<ClientResponse>> open_stream(const ClientRequest& req,
                                                             const HttpLimits& limits,
                                                             Deadline deadline);
  // The next bytes of a stream's body; "" once it ended cleanly.
  boost::asio::awaitable<Result<std::string>> next_body(Deadline deadline);

  // Closes the socket and cancels name resolution: a pending operation completes with an
  // error. The stream objects stay (a suspended operation still refers to them). Call on
  // the executor's thread.
  void abort();
  // Closes the connection; only while no operation is pending.
  void close();
  [[nodiscard]] bool connected() const { return plain_ || secure_; }
  // Connections opened so far (keep-alive keeps this low); readable from any thread.
  [[nodiscard]] uint64_t connections_opened() const { return connections_; }
  // The endpoint URL's path without trailing slashes: it prefixes every request's target.
  [[nodiscard]] const std::string& path_prefix() const { return path_prefix_; }
  // "scheme://host:port/prefix/target", for messages.
  [[nodiscard]] std::string where(const std::string& target) const;

 private:
  using Parser = boost::beast::http::response_parser<boost::beast::http::string_body>;

  boost::asio::awaitable<Status> connect(Deadline deadline);
  boost::asio::awaitable<Status> send(const ClientRequest& req, Deadline deadline);
  enum class Read { kAll, kHeader, kSome };
  boost::asio::awaitable<Status> read(Parser& parser, Read how, const std::string& what,
                                      Deadline deadline);
  boost::beast::tcp_stream& lowest();

  boost::asio::any_io_executor executor_;
  HttpUrl endpoint_;
  std::string path_prefix_;
  boost::asio::ip::tcp::resolver resolver_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  bool verify_host_ = true;
  std::unique_ptr<boost::beast::tcp_stream> plain_;
  std::unique_ptr<boost::beast::ssl_stream<boost::beast::tcp_stream>> secure_;
  boost::beast::flat_buffer buffer_;
  std::unique_ptr<Parser> stream_parser_;  // set while this connection carries a stream
  std::atomic<uint64_t> connections_{0};
};

}  // namespace gleaner::net
