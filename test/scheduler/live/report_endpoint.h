#pragma once
// The scheduler's report API on loopback HTTP, wired as `gleaner-scheduler run` wires it: a
// gang layer, a report validator, the API routes and the HTTP server on an io thread. For
// the tests of report ingestion and of the agents' identities.

#include <chrono>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "kube/http_client.h"
#include "scheduler/server/api_routes.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler::live_testing {

class ReportEndpoint {
 public:
  // Serves with `validator` (a token file's or a token reviewer's); `options.clusters`:
  // the managed clusters (none: any). ASSERTs on failure.
  void start(std::unique_ptr<server::ReportValidator> validator, gang::GangOptions options = {}) {
    auto live = gang::GangScheduler::create(std::move(options), {}, clock_, metrics_);
    ASSERT_TRUE(live.ok()) << live.error().message;
    live_ = std::move(*live);
    validator_ = std::move(validator);
    routes_ = std::make_unique<server::ApiRoutes>(*validator_, *live_, metrics_);
    auto server = server::SchedulerPort::create(io_.io(), "127.0.0.1:0", *routes_);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(*server);
  }

  // One request on a new connection, with the bearer `token` unless empty.
  kube::HttpResponse send(const std::string& method, const std::string& target,
                          const std::string& body, const std::string& token,
                          std::chrono::seconds timeout = std::chrono::seconds(10)) {
    kube::HttpConnection conn(net::HttpUrl{"http", "127.0.0.1", server_->port()}, {});
    net::ClientRequest req{method, target, {{"Content-Type", "application/json"}}, body};
    if (!token.empty()) req.headers.emplace_back("Authorization", "Bearer " + token);
    auto resp = conn.request(req, {timeout});
    EXPECT_TRUE(resp.ok()) << (resp.ok() ? "" : resp.error().message);
    return resp.ok() ? *resp : kube::HttpResponse{};
  }

  server::LiveMetrics& metrics() { return metrics_; }
  server::ApiRoutes& routes() { return *routes_; }
  boost::asio::io_context& io() { return io_.io(); }
  server::SchedulerPort* server() { return server_.get(); }

 private:
  SystemClock clock_;
  server::LiveMetrics metrics_;
  std::unique_ptr<gang::GangScheduler> live_;
  std::unique_ptr<server::ReportValidator> validator_;
  std::unique_ptr<server::ApiRoutes> routes_;
  IoThread io_;
  std::unique_ptr<server::SchedulerPort> server_;
};

}  // namespace gleaner::scheduler::live_testing
