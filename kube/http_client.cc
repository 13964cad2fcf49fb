#include "kube/http_client.h"

#include <atomic>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>

#include "net/beast_names.h"

namespace gleaner::kube {
namespace {

using namespace net::beast_names;
namespace ssl = asio::ssl;
using SteadyClock = std::chrono::steady_clock;
using Parser = http::response_parser<http::string_body>;

bool is_ip_literal(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// An API server behind a path (a kubeconfig's `server: https://proxy/k8s/clusters/c1`, as
// Rancher and other proxies hand out): every request goes below that path, as client-go
// does. "" for a URL with no path.
std::string path_prefix_of(const net::HttpUrl& endpoint) {
  std::string path = endpoint.target.substr(0, endpoint.target.find('?'));
  while (!path.empty() && path.back() == '/')
    path.pop_back();
  return path;
}

}  // namespace

struct HttpConnection::Impl {
  net::HttpUrl ep;
  TlsOptions tls;
  std::string path_prefix;
  asio::io_context ioc{1};
  std::unique_ptr<ssl::context> ssl_ctx;
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> secure;
  beast::flat_buffer buffer;
  std::unique_ptr<Parser> stream_parser;  // set while this connection carries a stream
  std::atomic<bool> interrupted{false};

  Impl(net::HttpUrl e, TlsOptions t)
      : ep(std::move(e)), tls(std::move(t)), path_prefix(path_prefix_of(ep)) {}

  [[nodiscard]] bool connected() const { return plain || secure; }
  // The request line's target: the endpoint's path, then the request's own.
  [[nodiscard]] std::string target_of(const std::string& target) const {
    return path_prefix + target;
  }
  std::string where(const std::string& target) const { return ep.origin() + target_of(target); }
  tcp::socket& socket() {
    return secure ? beast::get_lowest_layer(*secure).socket() : plain->socket();
  }
  void close() {
    boost::system::error_code ignored;
    if (connected()) socket().close(ignored);
    plain.reset();
    secure.reset();
    buffer.clear();
  }

  // Drives one asynchronous operation to completion on this connection's own io_context,
  // giving up (and closing the socket) at `deadline`: synchronous calls with real timeouts.
  enum class Outcome { kDone, kTimeout, kInterrupted };
  template <typename Start>
  Outcome run(Start&& start, SteadyClock::time_point deadline, boost::system::error_code& ec) {
    bool done = false;
    ioc.restart();
    start([&](boost::system::error_code e) {
      ec = e;
      done = true;
    });
    while (!done && !interrupted && SteadyClock::now() < deadline) {
      ioc.run_one_until(deadline);
    }
    if (done) return Outcome::kDone;
    close();  // completes the pending operation with operation_aborted
    ioc.restart();
    // The handler run_one() runs sets `done`.
    while (!done)  // NOLINT(bugprone-infinite-loop)
      ioc.run_one();
    return interrupted ? Outcome::kInterrupted : Outcome::kTimeout;
  }

  template <typename F>
  void with_stream(F&& f) {
    if (secure) {
      f(*secure);
    } else {
      f(*plain);
    }
  }

  Status make_ssl_context() {
    if (ssl_ctx) return ok_status();
    auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
    boost::system::error_code ec;
    auto fail = [&](const std::string& what) {
      return make_error(ErrorCode::kInvalidArgument, "TLS: " + what + ": " + ec.message());
    };
    if (tls.verify) {
      ctx->set_verify_mode(ssl::verify_peer);
      if (!tls.ca_file.empty()) {
        if (ctx->load_verify_file(tls.ca_file, ec); ec) return fail("CA file " + tls.ca_file);
      } else if (!tls.ca_pem.empty()) {
        if (ctx->add_certificate_authority(asio::buffer(tls.ca_pem), ec); ec) {
          return fail("inline CA certificate");
        }
      } else if (ctx->set_default_verify_paths(ec); ec) {
        return fail("system CA store");
      }
    } else {
      ctx->set_verify_mode(ssl::verify_none);
    }
    if (!tls.client_cert_file.empty()) {
      if (ctx->use_certificate_chain_file(tls.client_cert_file, ec); ec) {
        return fail("client certificate " + tls.client_cert_file);
      }
    } else if (!tls.client_cert_pem.empty()) {
      if (ctx->use_certificate_chain(asio::buffer(tls.client_cert_pem), ec); ec) {
        return fail("inline client certificate");
      }
    }
    if (!tls.client_key_file.empty()) {
      if (ctx->use_private_key_file(tls.client_key_file, ssl::context::pem, ec); ec) {
        return fail("client key " + tls.client_key_file);
      }
    } else if (!tls.client_key_pem.empty()) {
      if (ctx->use_private_key(asio::buffer(tls.client_key_pem), ssl::context::pem, ec); ec) {
        return fail("inline client key");
      }
    }
    ssl_ctx = std::move(ctx);
    return ok_status();
  }

  Status transport_error(Outcome outcome, const boost::system::error_code& ec,
                         const std::string& what, ErrorCode code) {
    if (outcome == Outcome::kTimeout) return make_error(ErrorCode::kTimeout, what + ": timed out");
    if (outcome == Outcome::kInterrupted) {
      return make_error(ErrorCode::kUnavailable, what + ": interrupted");
    }
    if (ec == http::error::body_limit) {
      return make_error(ErrorCode::kIo, what + ": response body exceeds the size cap");
    }
    return make_error(code, what + ": " + ec.message());
  }

  Status connect(SteadyClock::time_point deadline) {
    if (ep.tls()) {
      if (auto st = make_ssl_context(); !st) return st;
    }
    const std::string what = "connect to " + where("");
    tcp::resolver resolver(ioc);
    tcp::resolver::results_type endpoints;
    boost::system::error_code ec;
    auto outcome = run(
        [&](auto done) {
          resolver.async_resolve(ep.host, std::to_string(ep.port),
                                 [&, done](boost::system::error_code e, auto results) {
                                   endpoints = results;
                                   done(e);
                                 });
        },
        deadline, ec);
    if (outcome != Outcome::kDone || ec) {
      return transport_error(outcome, ec, what, ErrorCode::kUnavailable);
    }
    if (ep.tls()) {
      secure = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ioc, *ssl_ctx);
      if (!is_ip_literal(ep.host))
        SSL_set_tlsext_host_name(secure->native_handle(), ep.host.c_str());
      if (tls.verify) secure->set_verify_callback(ssl::host_name_verification(ep.host));
    } else {
      plain = std::make_unique<beast::tcp_stream>(ioc);
    }
    outcome = run(
        [&](auto done) {
          beast::tcp_stream& lowest = secure ? beast::get_lowest_layer(*secure) : *plain;
          lowest.async_connect(endpoints, [done](boost::system::error_code e, auto) { done(e); });
        },
        deadline, ec);
    if (outcome != Outcome::kDone || ec) {
      close();
      return transport_error(outcome, ec, what, ErrorCode::kUnavailable);
    }
    if (secure) {
      outcome = run([&](auto done) { secure->async_handshake(ssl::stream_base::client, done); },
                    deadline, ec);
      if (outcome != Outcome::kDone || ec) {
        close();
        return transport_error(outcome, ec, "TLS handshake with " + where(""),
                               ErrorCode::kUnavailable);
      }
    }
    return ok_status();
  }

  Status send(const HttpRequest& req, SteadyClock::time_point deadline) {
    http::request<http::string_body> msg{http::string_to_verb(req.method), target_of(req.target),
                                         11};
    msg.set(http::field::host, ep.host_header());
    msg.set(http::field::user_agent, "gleaner");
    for (const auto& [name, value] : req.headers)
      msg.set(name, value);
    msg.body() = req.body;
    msg.prepare_payload();
    boost::system::error_code ec;
    auto outcome = run(
        [&](auto done) {
          with_stream([&](auto& s) {
            http::async_write(s, msg, [done](boost::system::error_code e, size_t) { done(e); });
          });
        },
        deadline, ec);
    if (outcome != Outcome::kDone || ec) {
      close();
      return transport_error(outcome, ec, req.method + " " + where(req.target), ErrorCode::kIo);
    }
    return ok_status();
  }

  template <typename ReadOp>
  Status read(Parser& parser, ReadOp op, const std::string& what,
              SteadyClock::time_point deadline) {
    boost::system::error_code ec;
    auto outcome = run(
        [&](auto done) {
          with_stream([&](auto& s) {
            op(s, buffer, parser, [done](boost::system::error_code e, size_t) { done(e); });
          });
        },
        deadline, ec);
    if (outcome != Outcome::kDone || ec) {
      close();
      return transport_error(outcome, ec, what, ErrorCode::kIo);
    }
    return ok_status();
  }
};

namespace {

HttpResponse to_response(Parser& parser) {
  auto& msg = parser.get();
  HttpResponse resp;
  resp.status = static_cast<int>(msg.result_int());
  resp.content_type = std::string(msg[http::field::content_type]);
  resp.retry_after = std::string(msg[http::field::retry_after]);
  resp.body = std::move(msg.body());
  return resp;
}

constexpr auto kReadAll = [](auto& s, auto& buf, auto& p, auto h) {
  http::async_read(s, buf, p, h);
};
constexpr auto kReadHeader = [](auto& s, auto& buf, auto& p, auto h) {
  http::async_read_header(s, buf, p, h);
};
constexpr auto kReadSome = [](auto& s, auto& buf, auto& p, auto h) {
  http::async_read_some(s, buf, p, h);
};

}  // namespace

HttpConnection::HttpConnection(net::HttpUrl endpoint, TlsOptions tls)
    : impl_(std::make_unique<Impl>(std::move(endpoint), std::move(tls))) {}
HttpConnection::~HttpConnection() = default;

Result<HttpResponse> HttpConnection::request(const HttpRequest& req, const HttpLimits& limits) {
  const auto deadline = SteadyClock::now() + limits.timeout;
  const std::string what = req.method + " " + impl_->where(req.target);
  for (int attempt = 0;; ++attempt) {
    // A kept-alive connection may have been closed by the server while idle; one fresh
    // connection is tried before calling the request failed.
    const bool reused = impl_->connected();
    if (!reused) {
      if (auto st = impl_->connect(deadline); !st) return st.error();
    }
    if (auto st = impl_->send(req, deadline); !st) {
      if (reused && attempt == 0 && st.error().code != ErrorCode::kTimeout) continue;
      return st.error();
    }
    Parser parser;
    parser.body_limit(limits.max_body_bytes);
    parser.header_limit(64 * 1024);
    if (auto st = impl_->read(parser, kReadHeader, what, deadline); !st) {
      if (reused && attempt == 0 && !parser.got_some() && st.error().code != ErrorCode::kTimeout) {
        continue;
      }
      return st.error();
    }
    // Checked here as well as by the parser's body limit, which does not reliably reject a
    // Content-Length that arrives in the same read as the body.
    if (auto length = parser.content_length(); length && *length > limits.max_body_bytes) {
      impl_->close();
      return make_error(ErrorCode::kIo, what + ": response body of " + std::to_string(*length) +
                                            " bytes exceeds the size cap of " +
                                            std::to_string(limits.max_body_bytes));
    }
    if (!parser.is_done()) {
      if (auto st = impl_->read(parser, kReadAll, what, deadline); !st) return st.error();
    }
    if (parser.get().body().size() > limits.max_body_bytes) {
      impl_->close();
      return make_error(ErrorCode::kIo, what + ": response body exceeds the size cap of " +
                                            std::to_string(limits.max_body_bytes));
    }
    if (!parser.get().keep_alive()) impl_->close();
    return to_response(parser);
  }
}

Result<HttpConnection::StreamOpen> HttpConnection::open_stream(const HttpRequest& req,
                                                               const HttpLimits& limits) {
  auto conn = std::make_unique<Impl>(impl_->ep, impl_->tls);
  const auto deadline = SteadyClock::now() + limits.timeout;
  const std::string what = req.method + " " + conn->where(req.target);
  if (auto st = conn->connect(deadline); !st) return st.error();
  if (auto st = conn->send(req, deadline); !st) return st.error();
  conn->stream_parser = std::make_unique<Parser>();
  Parser& parser = *conn->stream_parser;
  // Beast compares a Content-Length against the limit even when the limit is "none" (and
  // then rejects it), so the unlimited body is only switched on for a 2xx stream below.
  parser.body_limit(limits.max_body_bytes);
  parser.header_limit(64 * 1024);
  if (auto st = conn->read(parser, kReadHeader, what, deadline); !st) return st.error();
  const int status = static_cast<int>(parser.get().result_int());
  StreamOpen open;
  if (status < 200 || status > 299) {
    if (auto st = conn->read(parser, kReadAll, what, deadline); !st) return st.error();
    open.error = to_response(parser);
    return open;
  }
  open.error.status = status;
  parser.body_limit(boost::none);  // a watch body never ends; events are capped one by one
  open.stream = std::make_unique<HttpStream>(std::move(conn));
  return open;
}

struct HttpStream::State {
  std::unique_ptr<HttpConnection::Impl> conn;
};

HttpStream::HttpStream(std::unique_ptr<HttpConnection::Impl> conn)
    : state_(std::make_unique<State>()) {
  state_->conn = std::move(conn);
}
HttpStream::~HttpStream() = default;

Result<std::string> HttpStream::read_some(std::chrono::milliseconds idle) {
  auto& conn = *state_->conn;
  Parser& parser = *conn.stream_parser;
  const auto deadline = SteadyClock::now() + idle;
  const std::string what = "stream from " + conn.where("");
  while (true) {
    std::string& body = parser.get().body();
    if (!body.empty()) return std::exchange(body, std::string());
    if (parser.is_done()) return std::string();
    if (conn.interrupted) return make_error(ErrorCode::kUnavailable, what + ": interrupted");
    if (!conn.connected()) return make_error(ErrorCode::kIo, what + ": connection closed");
    if (auto st = conn.read(parser, kReadSome, what, deadline); !st) {
      if (st.error().code == ErrorCode::kIo) {
        return make_error(ErrorCode::kIo, st.error().message + " (stream broken mid-body)");
      }
      return st.error();
    }
  }
}

void HttpStream::interrupt() {
  auto* conn = state_->conn.get();
  conn->interrupted = true;
  asio::post(conn->ioc, [conn] { conn->close(); });
}

}  // namespace gleaner::kube
