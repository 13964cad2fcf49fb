// Reports under token review, over loopback HTTP: a token admits reports for its own node
// only, reviews run off the I/O thread, refusals are answered with the right status, and a
// flood of reviews is bounded.
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>

#include <gtest/gtest.h>

#include "kube/http_client.h"
#include "scheduler/server/api_routes.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler::server {
namespace {

using live_testing::node_report;

// Tokens "tok-<node>" belong to the agent on <node>; "tok-error" cannot be reviewed now;
// "tok-elsewhere" names a cluster this scheduler does not manage. With `hold`, reviews
// wait until released.
class FakeReviewer : public AgentTokenReviewer {
 public:
  Status plausible(std::string_view token) override {
    if (token.starts_with("tok-")) return ok_status();
    return make_error(ErrorCode::kInvalidArgument, "not a token");
  }
  std::optional<Result<AgentIdentity>> cached(const std::string&, std::string_view) override {
    return std::nullopt;
  }
  Result<AgentIdentity> review(const std::string&, std::string_view token) override {
    std::unique_lock lock(mu_);
    ++reviews_;
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return !hold_; });
    --waiting_;
    if (token == "tok-error") return make_error(ErrorCode::kUnavailable, "API server down");
    if (token == "tok-elsewhere") return make_error(ErrorCode::kNotFound, "no such cluster");
    if (token == "tok-stranger") return make_error(ErrorCode::kPermission, "not an agent");
    if (token == "tok-revoked") return make_error(ErrorCode::kInvalidArgument, "pod deleted");
    const std::string node(token.substr(4));
    return AgentIdentity{node, "gleaner-system/agent-on-" + node};
  }
  void hold(bool on) {
    std::lock_guard lock(mu_);
    hold_ = on;
    changed_.notify_all();
  }
  bool wait_for_waiting(int n) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(20), [&] { return waiting_ >= n; });
  }
  int reviews() {
    std::lock_guard lock(mu_);
    return reviews_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  bool hold_ = false;
  int waiting_ = 0;
  int reviews_ = 0;
};

class ReportIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto live = gang::GangScheduler::create({}, {}, clock_, metrics_);
    ASSERT_TRUE(live.ok()) << live.error().message;
    live_ = std::move(*live);
    validator_ = std::make_unique<ReportValidator>(reviewer_, 1 << 20);
    routes_ = std::make_unique<ApiRoutes>(*validator_, *live_, metrics_);
    auto server = HttpServer::create(io_.io(), "127.0.0.1:0", *routes_);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(*server);
  }
  void TearDown() override {
    reviewer_.hold(false);
    if (server_) server_->stop();
  }

  kube::HttpResponse post(const std::string& node, const std::string& token) {
    kube::HttpConnection conn(net::HttpUrl{"http", "127.0.0.1", server_->port()}, {});
    kube::HttpRequest req{"POST",
                          "/api/v1/reports",
                          {{"Content-Type", "application/json"}},
                          reporter::to_json_text(node_report(node, ++sequence_, 4000, 1 << 30))};
    if (!token.empty()) req.headers.emplace_back("Authorization", "Bearer " + token);
    auto resp = conn.request(req, {std::chrono::seconds(30)});
    EXPECT_TRUE(resp.ok()) << (resp.ok() ? "" : resp.error().message);
    return resp.ok() ? *resp : kube::HttpResponse{};
  }

  SystemClock clock_;
  LiveMetrics metrics_;
  FakeReviewer reviewer_;
  std::unique_ptr<gang::GangScheduler> live_;
  std::unique_ptr<ReportValidator> validator_;
  std::unique_ptr<ApiRoutes> routes_;
  live_testing::IoThread io_;
  std::unique_ptr<HttpServer> server_;
  std::atomic<uint64_t> sequence_{100};
};

TEST_F(ReportIdentityTest, ATokenReportsForItsOwnNodeOnly) {
  EXPECT_EQ(post("node-a", "tok-node-a").status, 200);
  auto other = post("node-b", "tok-node-a");
  EXPECT_EQ(other.status, 403);
  EXPECT_NE(other.body.find("may not report for node node-b"), std::string::npos) << other.body;
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kForbidden), 1u);
  EXPECT_EQ(metrics_.reports_accepted(), 1u);
  // The refused report left no trace: node-b's own agent is accepted from sequence 1.
  sequence_ = 0;
  EXPECT_EQ(post("node-b", "tok-node-b").status, 200);
  EXPECT_EQ(metrics_.reports_accepted(), 2u);
}

TEST_F(ReportIdentityTest, ImplausibleTokensAreRefusedWithoutAReview) {
  EXPECT_EQ(post("node-a", "").status, 401);
  EXPECT_EQ(post("node-a", "s3cret").status, 401);
  EXPECT_EQ(reviewer_.reviews(), 0);
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kUnauthorized), 2u);
}

TEST_F(ReportIdentityTest, EachRefusalOfAReviewHasItsOwnAnswer) {
  EXPECT_EQ(post("node-a", "tok-revoked").status, 401);
  EXPECT_EQ(post("node-a", "tok-stranger").status, 403);
  EXPECT_EQ(post("node-a", "tok-elsewhere").status, 422);
  auto down = post("node-a", "tok-error");
  EXPECT_EQ(down.status, 503);
  EXPECT_NE(down.body.find("auth_unavailable"), std::string::npos) << down.body;
  EXPECT_EQ(metrics_.reports_accepted(), 0u);
}

TEST_F(ReportIdentityTest, ReviewsRunOffTheIoThreadAndAFloodIsBounded) {
  reviewer_.hold(true);
  // 70 reports whose reviews cannot finish: 64 wait for them, the other 6 are told at
  // once to come back later (503), and the server keeps answering meanwhile.
  constexpr int kSent = 70, kCap = 64;
  std::vector<std::future<int>> sent;
  for (int i = 0; i < kSent; ++i) {
    sent.push_back(std::async(std::launch::async, [this, i] {
      return post("node-" + std::to_string(i), "tok-node-" + std::to_string(i)).status;
    }));
  }
  ASSERT_TRUE(reviewer_.wait_for_waiting(4)) << "reviews did not start";
  kube::HttpConnection conn(net::HttpUrl{"http", "127.0.0.1", server_->port()}, {});
  auto health = conn.request(kube::HttpRequest{"GET", "/healthz", {}, ""}, {});
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);
  std::vector<bool> answered(kSent, false);
  int early = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (early < kSent - kCap && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < kSent; ++i) {
      if (answered[i] ||
          sent[i].wait_for(std::chrono::milliseconds(5)) != std::future_status::ready)
        continue;
      answered[i] = true;
      ++early;
      EXPECT_EQ(sent[i].get(), 503) << "a held review was answered";
    }
  }
  EXPECT_EQ(early, kSent - kCap);
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kAuthUnavailable),
            static_cast<uint64_t>(kSent - kCap));
  reviewer_.hold(false);
  for (int i = 0; i < kSent; ++i) {
    if (!answered[i]) {
      EXPECT_EQ(sent[i].get(), 200);
    }
  }
  EXPECT_EQ(metrics_.reports_accepted(), static_cast<uint64_t>(kCap));
}

}  // namespace
}  // namespace gleaner::scheduler::server
