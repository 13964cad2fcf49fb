#include "reporter/client/report_client.h"

#include <thread>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "test/reporter/loopback_http_server.h"
#include "test/reporter/report_fixtures.h"
#include "test/support/eventually.h"
#include "test/support/io_thread.h"
#include "test/support/temp_tree.h"

namespace gleaner::reporter {
namespace {

using namespace std::chrono_literals;
using testing::LoopbackHttpServer;
using testing::sample_report;
using Requests = std::vector<LoopbackHttpServer::Request>;

using gleaner::testing::eventually;

uint64_t sequence_of(const LoopbackHttpServer::Request& r) {
  auto parsed = parse_node_report(r.body);
  return parsed ? parsed->sequence : 0;
}

// The composition root's role in these tests: an io_context run on one thread.
class ReportClientTest : public ::testing::Test {
 protected:
  void TearDown() override {
    client_.reset();  // stops the loop; it finishes on the io thread
    io_.drain();
  }

  ReportClient& start(ReportClientOptions opts) {
    opts.scheduler_url = opts.scheduler_url.empty() ? server_.url() : opts.scheduler_url;
    auto c = ReportClient::create(io_.io(), clock_, std::move(opts));
    EXPECT_TRUE(c) << c.error().message;
    client_ = std::move(*c);
    client_->start();
    return *client_;
  }

  static ReportClientOptions fast_options() {
    ReportClientOptions o;
    o.thresholds.heartbeat = 1h;
    o.backoff = {.initial = 10ms, .max = 50ms, .multiplier = 2.0, .jitter = 0.2};
    o.request_timeout = 2s;
    return o;
  }

  LoopbackHttpServer server_;
  gleaner::testing::TempDir dir_;
  SystemClock clock_;
  gleaner::testing::IoThread io_;
  std::unique_ptr<ReportClient> client_;
};

TEST_F(ReportClientTest, PostsTheReportAsJsonWithTheBearerTokenAndRereadsARotatedToken) {
  dir_.write("token", "s3cret\n");
  auto opts = fast_options();
  opts.token_file = dir_ / "token";
  auto& client = start(opts);
  client.submit(sample_report(1));
  ASSERT_TRUE(server_.wait_for([](const Requests& r) { return r.size() == 1; }));
  auto first = server_.requests()[0];
  EXPECT_EQ(first.request_line, "POST /v1/reports HTTP/1.1");
  EXPECT_EQ(first.authorization, "Bearer s3cret");
  auto parsed = parse_node_report(first.body);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, sample_report(1));

  dir_.write("token", "rotated-token\n");
  NodeReport moved = sample_report(2);
  moved.usage.be.cpu_millicores += 5000;
  client.submit(moved);
  ASSERT_TRUE(server_.wait_for([](const Requests& r) { return r.size() == 2; }));
  EXPECT_EQ(server_.requests()[1].authorization, "Bearer rotated-token");
  EXPECT_EQ(server_.connections(), 1) << "keep-alive should reuse the connection";
}

TEST_F(ReportClientTest, HeartbeatResendsTheLatestStateWhenNothingMoves) {
  auto opts = fast_options();
  opts.thresholds.heartbeat = 100ms;
  auto& client = start(opts);
  client.submit(sample_report(5));
  ASSERT_TRUE(server_.wait_for([](const Requests& r) { return r.size() >= 3; }));
  for (const auto& r : server_.requests())
    EXPECT_EQ(sequence_of(r), 5u);
  // The server sees a request before the client has read the answer and counted it.
  EXPECT_TRUE(eventually([&] { return client.stats().heartbeats >= 2; }));
}

TEST_F(ReportClientTest, SmallMovesAreHeldBackAndBigMovesSentAtOnce) {
  auto& client = start(fast_options());  // heartbeat 1 h: only changes trigger sends
  client.submit(sample_report(1));
  ASSERT_TRUE(server_.wait_for([](const Requests& r) { return r.size() == 1; }));
  NodeReport small = sample_report(2);
  small.usage.node.cpu_millicores += 50;
  client.submit(small);
  NodeReport big = sample_report(3);
  big.usage.node.cpu_millicores += 1000;
  client.submit(big);
  ASSERT_TRUE(server_.wait_for([](const Requests& r) { return r.size() == 2; }));
  EXPECT_EQ(sequence_of(server_.requests()[1]), 3u);
  // A lone small move afterwards is not sent either.
  NodeReport small_again = big;
  small_again.sequence = 4;
  small_again.usage.ls.memory_bytes += 1024;
  client.submit(small_again);
  EXPECT_TRUE(eventually([&] { return client.stats().submitted == 4; }));
  EXPECT_FALSE(server_.wait_for([](const Requests& r) { return r.size() > 2; }, 300ms));
}

TEST_F(ReportClientTest, BoundedWhileTheSchedulerIsDownAndRecoversWithTheLatestState) {
  server_.go_down();
  auto& client = start(fast_options());
  client.submit(sample_report(1));
  ASSERT_TRUE(eventually([&] { return client.stats().sends_failed >= 3; }));
  // Hours of ticks while the scheduler is away: only the newest report is kept. The last
  // one moved far: were a retry to deliver an earlier one just as the scheduler came back
  // (a slow machine), the last would still be worth sending after it.
  for (uint64_t seq = 2; seq <= 20000; ++seq) {
    NodeReport r = sample_report(seq);
    r.usage.node.cpu_millicores = seq == 20000 ? 1'000'000 : static_cast<int64_t>(seq);
    client.submit(std::move(r));
    ASSERT_LE(client.stats().pending_reports, 1u);
  }
  auto down = client.stats();
  EXPECT_EQ(down.sends_ok, 0u);
  EXPECT_GE(down.superseded, 19998u);
  EXPECT_GT(down.consecutive_failures, 0);
  EXPECT_FALSE(down.last_error.empty());

  server_.go_up();
  ASSERT_TRUE(server_.wait_for(
      [](const Requests& r) { return !r.empty() && sequence_of(r.back()) == 20000; }));
  EXPECT_LE(server_.requests().size(), 2u) << "only the latest state should be delivered";
  EXPECT_TRUE(eventually([&] { return client.stats().consecutive_failures == 0; }));
  // The server has it before the client has recorded its answer.
  EXPECT_TRUE(eventually([&] { return client.stats().last_sent_sequence == 20000u; }))
      << client.stats().last_sent_sequence;
}

TEST_F(ReportClientTest, GarbageResponsesCountAsFailuresAndAreRetried) {
  server_.set_mode(LoopbackHttpServer::Mode::kGarbage);
  auto& client = start(fast_options());
  client.submit(sample_report(1));
  ASSERT_TRUE(eventually([&] { return client.stats().sends_failed >= 2; }));
  EXPECT_EQ(client.stats().sends_ok, 0u);
  server_.set_mode(LoopbackHttpServer::Mode::kOk);
  ASSERT_TRUE(eventually([&] { return client.stats().sends_ok >= 1; }));
  EXPECT_EQ(client.stats().consecutive_failures, 0);
}

TEST_F(ReportClientTest, AStalledSchedulerTimesOutWithoutBlockingSubmit) {
  server_.set_mode(LoopbackHttpServer::Mode::kStall);
  auto opts = fast_options();
  opts.request_timeout = 200ms;
  auto& client = start(opts);
  client.submit(sample_report(1));
  ASSERT_TRUE(server_.wait_for([](const Requests& r) { return r.size() == 1; }));
  // The request is now hanging inside the server; submitting must still be immediate.
  auto before = std::chrono::steady_clock::now();
  for (uint64_t seq = 2; seq <= 100; ++seq)
    client.submit(sample_report(seq));
  EXPECT_LT(std::chrono::steady_clock::now() - before, 100ms);
  ASSERT_TRUE(eventually([&] { return client.stats().sends_failed >= 1; }));
  EXPECT_NE(client.stats().last_error.find("timeout"), std::string::npos)
      << client.stats().last_error;
  server_.set_mode(LoopbackHttpServer::Mode::kOk);
  ASSERT_TRUE(eventually([&] { return client.stats().last_sent_sequence == 100; }));
}

TEST_F(ReportClientTest, RejectedTokenIsAFailureWithThePermissionCode) {
  server_.set_mode(LoopbackHttpServer::Mode::kUnauthorized);
  auto& client = start(fast_options());
  client.submit(sample_report(1));
  ASSERT_TRUE(eventually([&] { return client.stats().sends_failed >= 1; }));
  EXPECT_NE(client.stats().last_error.find("HTTP 401"), std::string::npos)
      << client.stats().last_error;
}

TEST(ReportClientCreate, RejectsABadUrlAndAnUnusableCaFileButWaitsForAMissingOne) {
  boost::asio::io_context io;
  SystemClock clock;
  ReportClientOptions bad;
  bad.scheduler_url = "ftp://sched";
  EXPECT_FALSE(ReportClient::create(io, clock, bad));
  gleaner::testing::TempDir dir;
  dir.write("ca.pem", "not a certificate\n");
  ReportClientOptions tls;
  tls.scheduler_url = "https://sched:8443/";
  tls.ca_file = dir / "ca.pem";
  auto r = ReportClient::create(io, clock, tls);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(dir / "ca.pem"), std::string::npos) << r.error().message;
  // Not there yet (a ConfigMap published later): the client starts and waits for it.
  tls.ca_file = dir / "later.pem";
  EXPECT_TRUE(ReportClient::create(io, clock, tls));
}

}  // namespace
}  // namespace gleaner::reporter
