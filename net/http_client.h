#pragma once
// The HTTP/1.1 client of both programs (plain TCP or TLS): one keep-alive connection with a
// deadline on every request and a cap on every response body. HttpConnection is the
// synchronous face (the Kubernetes API client, kubelet); a coroutine on an io_context uses
// net::ClientConnection (net/client_connection.h), which this wraps. Boost types stay in
// the .cc so that including this header costs nothing.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "net/url.h"

namespace gleaner::net {

struct TlsOptions {
  bool verify = true;   // false: accept any server certificate (insecure-skip-tls-verify)
  std::string ca_file;  // PEM bundle; empty with verify=true: the system store
  std::string ca_pem;   // inline PEM (kubeconfig certificate-authority-data)
  std::string client_cert_file, client_cert_pem;  // client certificate authentication
  std::string client_key_file, client_key_pem;
};

struct ClientRequest {
  std::string method = "GET";
  std::string target;  // path and query: "/api/v1/pods?limit=500"
  // Sent after Host and "User-Agent: gleaner"; a header named here replaces those.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct ClientResponse {
  int status = 0;
  std::string content_type;
  std::string retry_after;  // the Retry-After header, when present
  std::string body;
};

struct HttpLimits {
  std::chrono::milliseconds timeout{10000};  // whole request: connect, send, receive
  std::size_t max_body_bytes = 64u << 20;
  std::size_t max_header_bytes = 64u << 10;
};

class HttpStream;

// One keep-alive connection on a private io_context; reconnects when the peer closed it.
// Not thread-safe: use one per thread (KubeClient keeps a pool).
class HttpConnection {
 public:
  // `endpoint`: where to connect ("http" is for loopback tests and kubelet's read-only
  // port). Its path, if any, prefixes every request's target (an API server behind a
  // proxy path); its query is ignored.
  HttpConnection(HttpUrl endpoint, TlsOptions tls);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Transport failures are errors (kTimeout, kUnavailable, kIo); any HTTP status is a response.
  Result<ClientResponse> request(const ClientRequest& req, const HttpLimits& limits);

  // Sends `req` on a new connection and reads the response header only. A 2xx answer gives a
  // stream of body bytes; any other status gives the (capped) body in `error`.
  struct StreamOpen {
    std::unique_ptr<HttpStream> stream;
    ClientResponse error;
  };
  Result<StreamOpen> open_stream(const ClientRequest& req, const HttpLimits& limits);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The body of a long-running response (a watch), read piece by piece.
class HttpStream {
 public:
  explicit HttpStream(std::unique_ptr<HttpConnection::Impl> conn);
  ~HttpStream();
  HttpStream(const HttpStream&) = delete;
  HttpStream& operator=(const HttpStream&) = delete;

  // The next body bytes; an empty string once the body ended cleanly. kTimeout when nothing
  // arrived within `idle`, kIo when the connection broke (a truncated chunked body).
  Result<std::string> read_some(std::chrono::milliseconds idle);
  // Makes a blocked or later read_some return kUnavailable; safe from any thread.
  void interrupt();

 private:
  std::unique_ptr<HttpConnection::Impl> conn_;
};

}  // namespace gleaner::net
