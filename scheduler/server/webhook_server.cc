#include "scheduler/server/webhook_server.h"

#include <chrono>

#include "net/beast_names.h"
#include "net/http_server.h"

namespace gleaner::scheduler::server {

using namespace net::beast_names;

namespace {

constexpr const char* kNotFound = "{\"error\":\"not_found\"}\n";
constexpr const char* kMethodNotAllowed = "{\"error\":\"method_not_allowed\"}\n";

// /healthz, and POST /mutate-pod[/<cluster>] handed to `handler`.
net::HttpReply route(const WebhookServer::Handler& handler, const net::ServerRequest& req) {
  const std::string_view target = view(req.target());
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/healthz" && req.method() == http::verb::get) {
    return net::HttpReply{200, "text/plain", "ok\n"};
  }
  constexpr std::string_view kMutate = "/mutate-pod";
  const std::string_view rest =
      path.starts_with(kMutate) ? path.substr(kMutate.size()) : std::string_view("x");
  if (!rest.empty() && (rest.size() < 2 || rest[0] != '/'))
    return net::HttpReply{404, "application/json", kNotFound};
  if (req.method() != http::verb::post) {
    return net::HttpReply{405, "application/json", kMethodNotAllowed};
  }
  return handler(rest.empty() ? rest : rest.substr(1), req.body());
}

}  // namespace

struct WebhookServer::Impl {
  std::unique_ptr<net::HttpServer> server;
};

Result<std::unique_ptr<WebhookServer>> WebhookServer::create(asio::io_context& io,
                                                             std::string_view address,
                                                             Handler handler,
                                                             const admission::KeyPair& serving) {
  net::HttpServerOptions options;
  options.what = "webhook address";
  options.server_header = "gleaner-scheduler";
  options.body_limit = kMaxBody;
  net::HttpHandler routes;
  routes.reply = [handler = std::move(handler)](const net::ServerRequest& req) {
    return route(handler, req);
  };
  auto server = net::HttpServer::create(io, address, std::move(options), std::move(routes),
                                        net::ServingCertificate{serving.cert_pem, serving.key_pem});
  if (!server) return server.error();
  auto impl = std::make_shared<Impl>();
  impl->server = std::move(*server);
  return std::unique_ptr<WebhookServer>(new WebhookServer(std::move(impl)));
}

WebhookServer::~WebhookServer() {
  stop();
}

Status WebhookServer::set_certificate(const admission::KeyPair& serving) {
  return impl_->server->set_certificate({serving.cert_pem, serving.key_pem});
}

uint16_t WebhookServer::port() const {
  return impl_->server->port();
}

void WebhookServer::stop() {
  impl_->server->stop();
}

}  // namespace gleaner::scheduler::server
