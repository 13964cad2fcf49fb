// The colocation webhook under a flood of idle connections (any pod can open them): with
// more silent connections than the cap, an API server's review must still be answered well
// within the webhook configuration's timeoutSeconds, or pod creation fails under
// failurePolicy Fail.
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
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

// A webhook server on loopback answering each review with "<cluster>:<body>", and what a
// client of it needs.
class WebhookFlood : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto now = std::chrono::system_clock::now();
    auto ca = admission::make_ca("gleaner-test-ca", now, std::chrono::hours(24));
    ASSERT_TRUE(ca) << ca.error().message;
    ca_pem_ = ca->cert_pem;
    auto serving = admission::make_serving_cert(*ca, {"localhost"}, now, std::chrono::hours(24));
    ASSERT_TRUE(serving) << serving.error().message;
    auto server = WebhookServer::create(
        io_.io(), "127.0.0.1:0",
        [](std::string_view cluster, std::string_view body) {
          return net::HttpReply{200, "application/json",
                                std::string(cluster) + ":" + std::string(body)};
        },
        *serving);
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
    auto url = net::parse_http_url("https://127.0.0.1:" + std::to_string(port()));
    ASSERT_TRUE(url) << url.error().message;
    url_ = *url;
  }
  void TearDown() override {
    if (server_) server_->stop();
    io_.drain();
  }
  uint16_t port() const { return server_->port(); }

  // One review on a connection of its own, within the API server's default webhook
  // timeoutSeconds (10 s): the answer's body, or what went wrong.
  Result<std::string> review(const std::string& body) const {
    kube::TlsOptions tls;
    tls.ca_pem = ca_pem_;
    tls.verify = false;  // the serving certificate names localhost; the test dials the address
    kube::HttpConnection client(url_, tls);
    net::ClientRequest request;
    request.method = "POST";
    request.target = "/mutate-pod/c1";
    request.headers.emplace_back("Content-Type", "application/json");
    request.body = body;
    kube::HttpLimits limits;
    limits.timeout = 10s;
    auto answer = client.request(request, limits);
    if (!answer) return answer.error();
    if (answer->status != 200)
      return make_error(ErrorCode::kIo, "status " + std::to_string(answer->status));
    return answer->body;
  }

  gleaner::testing::IoThread io_;
  std::unique_ptr<WebhookServer> server_;
  std::string ca_pem_;
  net::HttpUrl url_;
};

TEST_F(WebhookFlood, AReviewIsAnsweredPastTheCapOfIdleConnections) {
  // Every slot taken by a connection that never starts its TLS handshake, and more
  // waiting in the kernel's backlog.
  std::vector<int> idle;
  for (size_t i = 0; i < net::HttpListener::kDefaultMaxConnections + 10; ++i) {
    const int fd = gleaner::testing::connect_loopback(port());
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  // Within the API server's webhook timeout (the silent connections used to hold their slots
  // for the whole handshake timeout, and reviews waited behind them; now they go once past
  // net::kFirstRequestGrace).
  auto answer = review(R"({"kind":"AdmissionReview"})");
  ASSERT_TRUE(answer) << "no answer to a review with " << idle.size()
                      << " idle connections open: " << answer.error().message;
  EXPECT_EQ(*answer, R"(c1:{"kind":"AdmissionReview"})");
  for (int fd : idle)
    ::close(fd);
}

// Issue #61: 300 reviews at once (an API server creating pods in a burst) against the cap of
// 128 connections: those past the cap wait in the backlog for a slot instead of having the
// ones still in their TLS handshake closed for them. Every review is answered.
TEST_F(WebhookFlood, ABurstOfThreeHundredConcurrentReviewsIsAnsweredWhole) {
  constexpr int kReviews = 300;
  std::atomic<int> answered{0};
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> clients;
  std::atomic<bool> go{false};
  for (int i = 0; i < kReviews; ++i) {
    clients.emplace_back([&, i] {
      const std::string body = R"({"uid":")" + std::to_string(i) + R"("})";
      while (!go.load())
        std::this_thread::yield();
      auto answer = review(body);
      if (answer && *answer == "c1:" + body) {
        ++answered;
        return;
      }
      std::lock_guard lock(mu);
      failures.push_back(answer ? *answer : answer.error().message);
    });
  }
  go = true;
  for (auto& t : clients)
    t.join();
  EXPECT_EQ(answered.load(), kReviews)
      << failures.size() << " failed, first: " << (failures.empty() ? "" : failures.front());
}

// Issue #61: 130 TLS connections that send a review's header and trickle its body (any pod
// can reach the webhook Service) held their slots until the 60 s deadline, and 14 of 15
// reviews failed. A connection still reading its first request goes at the cap once past
// net::kFirstRequestGrace: every review beside them is answered within the API server's
// timeout.
TEST_F(WebhookFlood, ReviewsAreAnsweredBesideClientsTricklingABody) {
  namespace asio = boost::asio;
  asio::io_context client_io;
  asio::ssl::context client_tls(asio::ssl::context::tls_client);
  client_tls.set_verify_mode(asio::ssl::verify_none);
  const asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port());
  const std::string head =
      "POST /mutate-pod/c1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 100000\r\n\r\n{\"kind\":";
  std::vector<std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket>>> slow;
  for (int i = 0; i < 130; ++i) {
    auto s = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket>>(client_io, client_tls);
    boost::system::error_code ec;
    s->next_layer().connect(endpoint, ec);
    if (ec) continue;
    const timeval tv{10, 0};  // a handshake the server never takes fails, not hangs
    ::setsockopt(s->next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    s->handshake(asio::ssl::stream_base::client, ec);
    if (!ec) asio::write(*s, asio::buffer(head), ec);
    if (!ec) slow.push_back(std::move(s));
  }
  EXPECT_GE(slow.size(), 128u) << "the trickling clients did not get their slots";
  int answered = 0;
  std::string first_failure;
  for (int i = 0; i < 15; ++i) {
    const std::string body = R"({"uid":")" + std::to_string(i) + R"("})";
    auto answer = review(body);
    if (answer && *answer == "c1:" + body) {
      ++answered;
    } else if (first_failure.empty()) {
      first_failure = answer ? *answer : answer.error().message;
    }
  }
  EXPECT_EQ(answered, 15) << "first failure: " << first_failure;
}

}  // namespace
}  // namespace gleaner::scheduler::server
