// Reports under token review, over loopback HTTP: a token admits reports for its own node
// only, reviews run off the I/O thread, refusals are answered with the right status, and a
// flood of reviews is bounded.
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>

#include <gtest/gtest.h>

#include "kube/http_client.h"
#include "test/scheduler/live/report_endpoint.h"

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
  void SetUp() override { api_.start(std::make_unique<ReportValidator>(reviewer_, 1 << 20)); }
  void TearDown() override {
    reviewer_.hold(false);
    if (api_.server() != nullptr) api_.server()->stop();
  }

  kube::HttpResponse post(const std::string& node, const std::string& token) {
    return api_.send("POST", "/api/v1/reports",
                     reporter::to_json_text(node_report(node, ++sequence_, 4000, 1 << 30)), token,
                     std::chrono::seconds(30));
  }

  FakeReviewer reviewer_;
  live_testing::ReportEndpoint api_;
  LiveMetrics& metrics_ = api_.metrics();
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
  kube::HttpConnection conn(net::HttpUrl{"http", "127.0.0.1", api_.server()->port()}, {});
  auto health = conn.request(net::ClientRequest{"GET", "/healthz", {}, ""}, {});
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
