#pragma once
// A TLS server context from a PEM certificate chain and key, shared by the scheduler's
// HTTPS ports (reports and API with --tls-cert-dir, the colocation webhook): TLS 1.2 and
// 1.3 only; a key that does not match its certificate is an error.

#include <memory>

#include <boost/asio/ssl/context.hpp>

#include "common/result.h"
#include "scheduler/admission/certificates.h"

namespace gleaner::scheduler::server {

Result<std::shared_ptr<boost::asio::ssl::context>> server_tls_context(
    const admission::KeyPair& pair);

}  // namespace gleaner::scheduler::server
