// The one HTTP server of every port, over real loopback sockets: what it answers itself (limits),
// what it leaves to the handler, and how it treats connections at its cap.
#include "net/http_server.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "test/support/eventually.h"
#include "test/support/io_thread.h"
#include "test/support/net.h"

namespace gleaner::net {
namespace {
using namespace std::chrono_literals;
namespace asio = boost::asio;

// Sends `request` on `fd` and reads until the server closes (or 10 s pass): the raw answer.
std::string round_trip(int fd, const std::string& request) {
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) return "";
  std::string raw;
  char buf[16384];
  ssize_t n = 0;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0)
    raw.append(buf, static_cast<size_t>(n));
  return raw;
}

std::string status_line(const std::string& raw) {
  return raw.substr(0, raw.find("\r\n"));
}

std::string body_of(const std::string& raw) {
  const auto end = raw.find("\r\n\r\n");
  return end == std::string::npos ? "" : raw.substr(end + 4);
}

HttpServerOptions test_options() {
  HttpServerOptions o;
  o.what = "test address";
  o.server_header = "gleaner-test";
  o.header_limit = 1024;
  o.body_limit = 4096;
  return o;
}

HttpHandler echo() {
  HttpHandler h;
  h.reply = [](const ServerRequest& req) {
    return HttpReply{200, "text/plain", std::string(req.target()) + ":" + req.body()};
  };
  return h;
}

TEST(HttpServer, KeepsAConnectionAliveAcrossRequests) {
  gleaner::testing::IoThread io;
  auto server = HttpServer::create(io.io(), "127.0.0.1:0", test_options(), echo());
  ASSERT_TRUE(server) << server.error().message;
  const int fd = gleaner::testing::connect_loopback((*server)->port());
  ASSERT_GE(fd, 0);
  const std::string raw = round_trip(fd,
                                     "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"
                                     "GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  ::close(fd);
  // Both answered on the one connection, in order.
  const auto second = raw.find("HTTP/1.1 200", 1);
  ASSERT_NE(second, std::string::npos) << raw;
  EXPECT_EQ(status_line(raw), "HTTP/1.1 200 OK");
  EXPECT_NE(raw.find("Server: gleaner-test"), std::string::npos) << raw;
  EXPECT_NE(raw.substr(0, second).find("/a:hi"), std::string::npos) << raw;
  EXPECT_EQ(body_of(raw.substr(second)), "/b:");
  (*server)->stop();
  io.drain();
}

TEST(HttpServer, AnswersRequestsAboveItsLimitsAndEndsTheConnection) {
  gleaner::testing::IoThread io;
  auto handler = echo();
  std::atomic<int> refusals{0};
  handler.refused = [&](RequestRefusal why, const std::string& message) {
    ++refusals;
    return why == RequestRefusal::kBodyTooLarge ? HttpReply{413, "text/plain", "mine"}
                                                : refusal_reply(why, message);
  };
  auto server = HttpServer::create(io.io(), "127.0.0.1:0", test_options(), std::move(handler));
  ASSERT_TRUE(server) << server.error().message;
  const uint16_t port = (*server)->port();

  int fd = gleaner::testing::connect_loopback(port);
  ASSERT_GE(fd, 0);
  std::string raw =
      round_trip(fd, "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(2000, 'p') + "\r\n\r\n");
  ::close(fd);
  EXPECT_EQ(status_line(raw), "HTTP/1.1 431 Request Header Fields Too Large") << raw;
  EXPECT_EQ(body_of(raw),
            R"({"error":"header_too_large","message":"request headers above 1024 bytes"})"
            "\n");

  // Announced above the limit: refused by its header, the body never read.
  fd = gleaner::testing::connect_loopback(port);
  ASSERT_GE(fd, 0);
  raw = round_trip(fd, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n");
  ::close(fd);
  EXPECT_EQ(status_line(raw), "HTTP/1.1 413 Payload Too Large") << raw;
  EXPECT_EQ(body_of(raw), "mine");
  EXPECT_NE(raw.find("Connection: close"), std::string::npos) << raw;

  // Chunked, so found too large only while reading it.
  fd = gleaner::testing::connect_loopback(port);
  ASSERT_GE(fd, 0);
  raw = round_trip(fd, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1388\r\n" +
                           std::string(5000, 'b') + "\r\n0\r\n\r\n");
  ::close(fd);
  EXPECT_EQ(status_line(raw), "HTTP/1.1 413 Payload Too Large") << raw;
  EXPECT_EQ(refusals.load(), 3);
  (*server)->stop();
  io.drain();
}

TEST(HttpServer, ARequestRefusedByItsHeaderIsAnsweredWhileTheClientStillUploads) {
  gleaner::testing::IoThread io;
  auto handler = echo();
  handler.before_body = [](const ServerRequest& req) -> std::optional<HttpReply> {
    if (req[boost::beast::http::field::authorization] != "Bearer ok")
      return HttpReply{401, "text/plain", "who are you\n"};
    return std::nullopt;
  };
  auto options = test_options();
  options.body_limit = 8 << 20;
  auto server = HttpServer::create(io.io(), "127.0.0.1:0", options, std::move(handler));
  ASSERT_TRUE(server) << server.error().message;
  const int fd = gleaner::testing::connect_loopback((*server)->port());
  ASSERT_GE(fd, 0);
  // 4 MiB that the server does not want: more than the socket buffers hold, so the server
  // closes with input still arriving unless it discards it first (a reset would destroy
  // the answer before the client reads it).
  const std::string body(4 << 20, 'u');
  std::thread uploader([&] {
    const std::string head =
        "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\n\r\n";
    if (::send(fd, head.data(), head.size(), MSG_NOSIGNAL) < 0) return;
    for (size_t sent = 0; sent < body.size();) {
      const ssize_t n = ::send(fd, body.data() + sent, body.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  });
  const std::string raw = round_trip(fd, "");
  uploader.join();
  ::close(fd);
  EXPECT_EQ(status_line(raw), "HTTP/1.1 401 Unauthorized") << raw.substr(0, 200);
  EXPECT_EQ(body_of(raw), "who are you\n");
  (*server)->stop();
  io.drain();
}

// A handler that answers only once the test lets it: a request in flight for as long as the
// test needs.
struct Gate {
  std::atomic<bool> entered{false};
  std::atomic<bool> open{false};
};

asio::awaitable<HttpReply> wait_for(std::shared_ptr<Gate> gate) {
  gate->entered = true;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!gate->open) {
    timer.expires_after(5ms);  // a poll interval: the gate is opened from the test's thread
    co_await timer.async_wait(asio::use_awaitable);
  }
  co_return HttpReply{200, "text/plain", "answered\n"};
}

TEST(HttpServer, ARequestInFlightIsNeverTheConnectionClosedAtTheCap) {
  gleaner::testing::IoThread io;
  auto gate = std::make_shared<Gate>();
  HttpHandler handler;
  handler.reply_async = [gate](const ServerRequest&) { return wait_for(gate); };
  auto options = test_options();
  options.max_connections = 2;
  auto server = HttpServer::create(io.io(), "127.0.0.1:0", options, std::move(handler));
  ASSERT_TRUE(server) << server.error().message;
  const uint16_t port = (*server)->port();
  // The oldest connection carries a request that is being answered...
  const int busy = gleaner::testing::connect_loopback(port);
  ASSERT_GE(busy, 0);
  const std::string request = "GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_GT(::send(busy, request.data(), request.size(), MSG_NOSIGNAL), 0);
  ASSERT_TRUE(gleaner::testing::eventually([&] { return gate->entered.load(); }, 10s));
  // ...and silent ones keep arriving past the cap: room is made by closing idle ones.
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) {
    const int fd = gleaner::testing::connect_loopback(port);
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  ASSERT_TRUE(gleaner::testing::eventually(
      [&] { return (*server)->listener_stats().idle_closed >= 2; }, 10s))
      << (*server)->listener_stats().idle_closed;
  gate->open = true;
  const std::string raw = round_trip(busy, "");
  ::close(busy);
  EXPECT_EQ(status_line(raw), "HTTP/1.1 200 OK") << raw;
  EXPECT_EQ(body_of(raw), "answered\n");
  for (int fd : idle)
    ::close(fd);
  (*server)->stop();
  io.drain();
}

// Issue #61: clients that send a header and trickle a body held their slots as busy until
// the 60 s deadline, and at the cap requests waited behind them. A connection still reading
// its first request is closed for a new one once past kFirstRequestGrace.
TEST(HttpServer, ClientsTricklingABodyAtTheCapDoNotStarveRequests) {
  gleaner::testing::IoThread io;
  auto options = test_options();
  options.max_connections = 8;
  auto headers_read = std::make_shared<std::atomic<int>>(0);
  HttpHandler handler = echo();
  handler.before_body = [headers_read](const ServerRequest& req) -> std::optional<HttpReply> {
    if (req.target() == "/slow") ++*headers_read;
    return std::nullopt;
  };
  auto server = HttpServer::create(io.io(), "127.0.0.1:0", options, std::move(handler));
  ASSERT_TRUE(server) << server.error().message;
  const uint16_t port = (*server)->port();
  std::vector<int> slow;
  const std::string head = "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 4000\r\n\r\nab";
  for (int i = 0; i < 8; ++i) {
    const int fd = gleaner::testing::connect_loopback(port);
    ASSERT_GE(fd, 0);
    ASSERT_GT(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), 0);
    slow.push_back(fd);
  }
  // Every slot holds a request whose header is read and whose body trickles.
  ASSERT_TRUE(gleaner::testing::eventually([&] { return headers_read->load() == 8; }, 10s));
  for (int i = 0; i < 5; ++i) {
    const int fd = gleaner::testing::connect_loopback(port);
    ASSERT_GE(fd, 0);
    const std::string raw = round_trip(
        fd, "POST /review HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    ::close(fd);
    EXPECT_EQ(status_line(raw), "HTTP/1.1 200 OK") << "request " << i << ": " << raw;
    EXPECT_EQ(body_of(raw), "/review:ok");
  }
  for (int fd : slow)
    ::close(fd);
  (*server)->stop();
  io.drain();
}

// Issue #61: in a burst, connections accepted an instant ago (still in their TLS handshake or
// before their header) were closed at the cap to admit the next, and 129 of 300 reviews
// failed. One just accepted is not closed for a new one: the newcomer waits.
TEST(HttpServer, AtTheCapAConnectionJustAcceptedIsNotClosedForTheNext) {
  gleaner::testing::IoThread io;
  auto options = test_options();
  options.max_connections = 2;
  auto server = HttpServer::create(io.io(), "127.0.0.1:0", options, echo());
  ASSERT_TRUE(server) << server.error().message;
  const uint16_t port = (*server)->port();
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) {
    const int fd = gleaner::testing::connect_loopback(port);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
  }
  ASSERT_TRUE(gleaner::testing::eventually(
      [&] { return (*server)->listener_stats().capacity_reached >= 1; }, 10s));
  // The first two hold the slots; the third is in the backlog. Each is answered in turn.
  for (int i = 0; i < 3; ++i) {
    const std::string raw =
        round_trip(fds[i], "GET /burst HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_line(raw), "HTTP/1.1 200 OK") << "connection " << i << ": " << raw;
    ::close(fds[i]);
  }
  EXPECT_EQ((*server)->listener_stats().idle_closed, 0u);
  (*server)->stop();
  io.drain();
}

TEST(HttpServer, APlainPortRefusesACertificate) {
  gleaner::testing::IoThread io;
  auto server = HttpServer::create(io.io(), "127.0.0.1:0", test_options(), echo());
  ASSERT_TRUE(server) << server.error().message;
  EXPECT_FALSE((*server)->set_certificate({"not a certificate", "not a key"}).ok());
  auto https = HttpServer::create(io.io(), "127.0.0.1:0", test_options(), echo(),
                                  ServingCertificate{"not a certificate", "not a key"});
  ASSERT_FALSE(https);
  EXPECT_NE(https.error().message.find("TLS certificate"), std::string::npos)
      << https.error().message;
  (*server)->stop();
  io.drain();
}

}  // namespace
}  // namespace gleaner::net
