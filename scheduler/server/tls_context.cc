#include "scheduler/server/tls_context.h"

#include <openssl/ssl.h>

namespace gleaner::scheduler::server {

namespace ssl = boost::asio::ssl;

Result<std::shared_ptr<ssl::context>> server_tls_context(const admission::KeyPair& pair) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  ctx->use_certificate_chain(boost::asio::buffer(pair.cert_pem), ec);
  if (ec) return make_error(ErrorCode::kInvalidArgument, "TLS certificate: " + ec.message());
  ctx->use_private_key(boost::asio::buffer(pair.key_pem), ssl::context::pem, ec);
  if (ec) return make_error(ErrorCode::kInvalidArgument, "TLS key: " + ec.message());
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1)
    return make_error(ErrorCode::kInvalidArgument, "TLS key does not match its certificate");
  return ctx;
}

}  // namespace gleaner::scheduler::server
