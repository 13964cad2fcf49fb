#include "net/client_connection.h"

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>

#include "net/beast_names.h"

namespace gleaner::net {
namespace {

using namespace beast_names;
namespace ssl = asio::ssl;
using Parser = http::response_parser<http::string_body>;

bool is_ip_literal(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// An API server behind a path (a kubeconfig's `server: https://proxy/k8s/clusters/c1`, as
// Rancher and other proxies hand out): every request goes below that path, as client-go
// does. "" for a URL with no path.
std::string path_prefix_of(const HttpUrl& endpoint) {
  std::string path = endpoint.target.substr(0, endpoint.target.find('?'));
  while (!path.empty() && path.back() == '/')
    path.pop_back();
  return path;
}

Error transport_error(const error_code& ec, const std::string& what, ErrorCode code) {
  if (ec == beast::error::timeout) return make_error(ErrorCode::kTimeout, what + ": timeout");
  if (ec == http::error::body_limit) {
    return make_error(ErrorCode::kIo, what + ": response body exceeds the size cap");
  }
  return make_error(code, what + ": " + ec.message());
}

ClientResponse to_response(Parser& parser) {
  auto& msg = parser.get();
  ClientResponse resp;
  resp.status = static_cast<int>(msg.result_int());
  resp.content_type = std::string(msg[http::field::content_type]);
  resp.retry_after = std::string(msg[http::field::retry_after]);
  resp.body = std::move(msg.body());
  return resp;
}

void limit(Parser& parser, const HttpLimits& limits) {
  parser.body_limit(limits.max_body_bytes);
  parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
}

}  // namespace

Result<std::shared_ptr<ssl::context>> client_tls_context(const TlsOptions& tls) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  error_code ec;
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
  return ctx;
}

ClientConnection::ClientConnection(asio::any_io_executor executor, HttpUrl endpoint)
    : executor_(std::move(executor)),
      endpoint_(std::move(endpoint)),
      path_prefix_(path_prefix_of(endpoint_)),
      resolver_(executor_) {}

ClientConnection::~ClientConnection() {
  close();
}

void ClientConnection::set_tls(std::shared_ptr<ssl::context> context, bool verify_host) {
  tls_ = std::move(context);
  verify_host_ = verify_host;
}

std::string ClientConnection::where(const std::string& target) const {
  return endpoint_.origin() + path_prefix_ + target;
}

beast::tcp_stream& ClientConnection::lowest() {
  return secure_ ? beast::get_lowest_layer(*secure_) : *plain_;
}

void ClientConnection::abort() {
  error_code ignored;
  resolver_.cancel();
  if (connected()) lowest().socket().close(ignored);
}

void ClientConnection::close() {
  abort();
  plain_.reset();
  secure_.reset();
  buffer_.clear();
}

asio::awaitable<Status> ClientConnection::connect(Deadline deadline) {
  const std::string what = "connect to " + where("");
  if (endpoint_.tls() && !tls_) {
    co_return make_error(ErrorCode::kInvalidArgument, what + ": no TLS context");
  }
  error_code ec;
  auto endpoints = co_await resolver_.async_resolve(endpoint_.host, std::to_string(endpoint_.port),
                                                    asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return transport_error(ec, what, ErrorCode::kUnavailable);
  if (endpoint_.tls()) {
    secure_ = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(executor_, *tls_);
    // SNI carries host names only (RFC 6066 section 3).
    if (!is_ip_literal(endpoint_.host))
      SSL_set_tlsext_host_name(secure_->native_handle(), endpoint_.host.c_str());
    if (verify_host_) secure_->set_verify_callback(ssl::host_name_verification(endpoint_.host));
  } else {
    plain_ = std::make_unique<beast::tcp_stream>(executor_);
  }
  lowest().expires_at(deadline);
  co_await lowest().async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    close();
    co_return transport_error(ec, what, ErrorCode::kUnavailable);
  }
  if (secure_) {
    co_await secure_->async_handshake(ssl::stream_base::client,
                                      asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      close();
      co_return transport_error(ec, "TLS handshake with " + where(""), ErrorCode::kUnavailable);
    }
  }
  ++connections_;
  co_return ok_status();
}

asio::awaitable<Status> ClientConnection::send(const ClientRequest& req, Deadline deadline) {
  http::request<http::string_body> msg{http::string_to_verb(req.method), path_prefix_ + req.target,
                                       11};
  msg.set(http::field::host, endpoint_.host_header());
  msg.set(http::field::user_agent, "gleaner");
  for (const auto& [name, value] : req.headers)
    msg.set(name, value);
  msg.body() = req.body;
  msg.prepare_payload();
  error_code ec;
  lowest().expires_at(deadline);
  // Not a conditional expression: g++ 12 mis-destroys temporaries of co_await in ?:.
  if (secure_) {
    co_await http::async_write(*secure_, msg, asio::redirect_error(asio::use_awaitable, ec));
  } else {
    co_await http::async_write(*plain_, msg, asio::redirect_error(asio::use_awaitable, ec));
  }
  if (ec) {
    close();
    co_return transport_error(ec, req.method + " " + where(req.target), ErrorCode::kIo);
  }
  co_return ok_status();
}

asio::awaitable<Status> ClientConnection::read(Parser& parser, Read how, const std::string& what,
                                               Deadline deadline) {
  error_code ec;
  lowest().expires_at(deadline);
  auto token = asio::redirect_error(asio::use_awaitable, ec);
  // Not a conditional expression: g++ 12 mis-destroys temporaries of co_await in ?:.
  if (secure_ && how == Read::kAll) {
    co_await http::async_read(*secure_, buffer_, parser, token);
  } else if (secure_ && how == Read::kHeader) {
    co_await http::async_read_header(*secure_, buffer_, parser, token);
  } else if (secure_) {
    co_await http::async_read_some(*secure_, buffer_, parser, token);
  } else if (how == Read::kAll) {
    co_await http::async_read(*plain_, buffer_, parser, token);
  } else if (how == Read::kHeader) {
    co_await http::async_read_header(*plain_, buffer_, parser, token);
  } else {
    co_await http::async_read_some(*plain_, buffer_, parser, token);
  }
  if (ec) {
    close();
    co_return transport_error(ec, what, ErrorCode::kIo);
  }
  co_return ok_status();
}

asio::awaitable<Result<ClientResponse>> ClientConnection::request(const ClientRequest& req,
                                                                  const HttpLimits& limits,
                                                                  Deadline deadline) {
  const std::string what = req.method + " " + where(req.target);
  for (int attempt = 0;; ++attempt) {
    // A kept-alive connection may have been closed by the server while idle; one fresh
    // connection is tried before calling the request failed.
    const bool reused = connected();
    if (!reused) {
      Status connected_now = co_await connect(deadline);
      if (!connected_now) co_return connected_now.error();
    }
    Status sent = co_await send(req, deadline);
    if (!sent) {
      if (reused && attempt == 0 && sent.error().code != ErrorCode::kTimeout) continue;
      co_return sent.error();
    }
    Parser parser;
    limit(parser, limits);
    Status header = co_await read(parser, Read::kHeader, what, deadline);
    if (!header) {
      if (reused && attempt == 0 && !parser.got_some() &&
          header.error().code != ErrorCode::kTimeout) {
        continue;
      }
      co_return header.error();
    }
    // Checked here as well as by the parser's body limit, which does not reliably reject a
    // Content-Length that arrives in the same read as the body.
    if (auto length = parser.content_length(); length && *length > limits.max_body_bytes) {
      close();
      co_return make_error(ErrorCode::kIo, what + ": response body of " + std::to_string(*length) +
                                               " bytes exceeds the size cap of " +
                                               std::to_string(limits.max_body_bytes));
    }
    if (!parser.is_done()) {
      Status body = co_await read(parser, Read::kAll, what, deadline);
      if (!body) co_return body.error();
    }
    if (parser.get().body().size() > limits.max_body_bytes) {
      close();
      co_return make_error(ErrorCode::kIo, what + ": response body exceeds the size cap of " +
                                               std::to_string(limits.max_body_bytes));
    }
    if (!parser.get().keep_alive()) {
      close();
    } else {
      lowest().expires_never();  // idle between requests
    }
    co_return to_response(parser);
  }
}

asio::awaitable<Result<ClientResponse>> ClientConnection::open_stream(const ClientRequest& req,
                                                                      const HttpLimits& limits,
                                                                      Deadline deadline) {
  const std::string what = req.method + " " + where(req.target);
  close();  // a stream has its connection to itself
  Status connected_now = co_await connect(deadline);
  if (!connected_now) co_return connected_now.error();
  Status sent = co_await send(req, deadline);
  if (!sent) co_return sent.error();
  stream_parser_ = std::make_unique<Parser>();
  Parser& parser = *stream_parser_;
  // Beast compares a Content-Length against the limit even when the limit is "none" (and
  // then rejects it), so the unlimited body is only switched on for a 2xx stream below.
  limit(parser, limits);
  Status header = co_await read(parser, Read::kHeader, what, deadline);
  if (!header) co_return header.error();
  const int status = static_cast<int>(parser.get().result_int());
  if (status < 200 || status > 299) {
    Status body = co_await read(parser, Read::kAll, what, deadline);
    if (!body) co_return body.error();
    co_return to_response(parser);
  }
  parser.body_limit(boost::none);  // a watch body never ends; events are capped one by one
  lowest().expires_never();
  ClientResponse head;
  head.status = status;
  head.content_type = std::string(parser.get()[http::field::content_type]);
  co_return head;
}

asio::awaitable<Result<std::string>> ClientConnection::next_body(Deadline deadline) {
  const std::string what = "stream from " + where("");
  if (!stream_parser_) co_return make_error(ErrorCode::kInternal, what + ": no stream open");
  while (true) {
    std::string& body = stream_parser_->get().body();
    if (!body.empty()) co_return std::exchange(body, std::string());
    if (stream_parser_->is_done()) co_return std::string();
    if (!connected()) co_return make_error(ErrorCode::kIo, what + ": connection closed");
    Status more = co_await read(*stream_parser_, Read::kSome, what, deadline);
    if (!more) {
      if (more.error().code == ErrorCode::kIo) {
        co_return make_error(ErrorCode::kIo, more.error().message + " (stream broken mid-body)");
      }
      co_return more.error();
    }
  }
}

}  // namespace gleaner::net
