// The colocation webhook under a flood of idle connections (any pod can open them): with
// more silent connections than the cap, an API server's review must still be answered well
// within the webhook configuration's timeoutSeconds, or pod creation fails under
// failurePolicy Fail.
#include <chrono>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>
#include <unistd.h>

#include "kube/http_client.h"
#include "net/http_listener.h"
#include "net/url.h"
#include "scheduler/admission/certificates.h"
#include "scheduler/server/webhook_server.h"
#include "test/support/io_thread.h"
#include "test/support/net.h"

namespace gleaner::scheduler::server {
namespace {
using namespace std::chrono_literals;

TEST(WebhookFlood, AReviewIsAnsweredPastTheCapOfIdleConnections) {
  const auto now = std::chrono::system_clock::now();
  auto ca = admission::make_ca("gleaner-test-ca", now, std::chrono::hours(24));
  ASSERT_TRUE(ca) << ca.error().message;
  auto serving = admission::make_serving_cert(*ca, {"localhost"}, now, std::chrono::hours(24));
  ASSERT_TRUE(serving) << serving.error().message;
  gleaner::testing::IoThread io;
  auto server = WebhookServer::create(
      io.io(), "127.0.0.1:0",
      [](std::string_view cluster, std::string_view body) {
        return net::HttpReply{200, "application/json",
                              std::string(cluster) + ":" + std::string(body)};
      },
      *serving);
  ASSERT_TRUE(server) << server.error().message;
  const uint16_t port = (*server)->port();
  // Every slot taken by a connection that never starts its TLS handshake, and more
  // waiting in the kernel's backlog.
  std::vector<int> idle;
  for (size_t i = 0; i < net::HttpListener::kDefaultMaxConnections + 10; ++i) {
    const int fd = gleaner::testing::connect_loopback(port);
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  auto url = net::parse_http_url("https://127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(url) << url.error().message;
  kube::TlsOptions tls;
  tls.ca_pem = ca->cert_pem;
  tls.verify = false;  // the serving certificate names localhost; the test dials the address
  kube::HttpConnection client(*url, tls);
  kube::HttpRequest review;
  review.method = "POST";
  review.target = "/mutate-pod/c2";
  review.headers.emplace_back("Content-Type", "application/json");
  review.body = R"({"kind":"AdmissionReview"})";
  // Within the API server's usual webhook timeout (the silent connections used to hold
  // their slots for the whole handshake timeout, and reviews waited behind them).
  kube::HttpLimits limits;
  limits.timeout = 4s;
  auto answer = client.request(review, limits);
  ASSERT_TRUE(answer) << "no answer to a review with " << idle.size()
                      << " idle connections open: " << answer.error().message;
  EXPECT_EQ(answer->status, 200);
  EXPECT_EQ(answer->body, R"(c2:{"kind":"AdmissionReview"})");
  for (int fd : idle)
    ::close(fd);
  (*server)->stop();
  io.drain();
}

}  // namespace
}  // namespace gleaner::scheduler::server
