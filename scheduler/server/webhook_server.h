#pragma once
// The colocation webhook's HTTPS port: POST /mutate-pod or /mutate-pod/<cluster> (an
// AdmissionReview in, one out; a fleet's member names itself in its configuration's path)
// and GET /healthz, on the composition root's io_context, served by the one HTTP(S) server
// of every port (net/http_server.h). The serving certificate can be replaced while running
// (renewal): new connections take the new one, open ones finish on theirs. Per connection: a
// handshake and an idle timeout, a header cap and a body limit (kube-apiserver sends at most the
// object, bounded by etcd's 1.5 MiB request limit, plus the review around it).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "net/http_reply.h"
#include "scheduler/admission/certificates.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace gleaner::scheduler::server {

class WebhookServer {
 public:
  // Answers a POST to /mutate-pod/<cluster> (cluster "" for /mutate-pod) with the body.
  using Handler = std::function<net::HttpReply(std::string_view cluster, std::string_view body)>;
  static constexpr std::size_t kMaxBody = 4 << 20;

  static Result<std::unique_ptr<WebhookServer>> create(boost::asio::io_context& io,
                                                       std::string_view address, Handler handler,
                                                       const admission::KeyPair& serving);
  ~WebhookServer();
  WebhookServer(const WebhookServer&) = delete;
  WebhookServer& operator=(const WebhookServer&) = delete;

  // Thread-safe; an unusable pair is refused and the current one kept.
  Status set_certificate(const admission::KeyPair& serving);
  [[nodiscard]] uint16_t port() const;
  void stop();

  struct Impl;

 private:
  explicit WebhookServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace gleaner::scheduler::server
