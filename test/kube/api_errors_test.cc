// KubeClient against the failures kube-apiserver answers with, as the test API server words
// them (/_admin/fail, test/apiserver/statuses.py): each code's error code whatever its reason
// (an Unknown reason included), and the waits a Status asks for in Retry-After (503 while the
// server installs its paths, 500 ServerTimeout) kept, while a 504 Timeout that names no wait
// comes back to the caller at once.
#include <gtest/gtest.h>

#include "common/clock.h"
#include "kube/api_client.h"
#include "test/kube/test_apiserver.h"

namespace gleaner::kube {
namespace {

using testing::TestApiServer;

class ApiErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = TestApiServer::start();
    if (!server_) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py with /usr/bin/python3";
    client_ = std::make_unique<KubeClient>(server_->config(), clock_);
  }
  // The next GET of the nodes answers `code` (with the query's reason or wait).
  void fail_next_get(int code, const std::string& extra = "") {
    server_->admin("fail", "method=GET&count=1&prefix=" + nodes_path() +
                               "&code=" + std::to_string(code) + extra);
  }

  SystemClock clock_;
  std::unique_ptr<TestApiServer> server_;
  std::unique_ptr<KubeClient> client_;
};

TEST_F(ApiErrorsTest, EachCodeMapsToItsErrorWhateverItsReason) {
  struct Case {
    int code;
    std::string extra;
    ErrorCode want;
    std::string says;  // the status and reason as the message carries them
  };
  const std::vector<Case> cases = {
      {400, "", ErrorCode::kInvalidArgument, "400 BadRequest: "},
      {403, "", ErrorCode::kPermission, "403 Forbidden: nodes is forbidden: User "},
      {404, "", ErrorCode::kNotFound, "404 NotFound: "},
      {405, "", ErrorCode::kInternal, "405 MethodNotAllowed: "},
      {409, "", ErrorCode::kConflict, "409 Conflict: "},
      {410, "", ErrorCode::kUnavailable, "410 Expired: "},
      {410, "&reason=Gone", ErrorCode::kUnavailable, "410 Gone: "},
      {422, "", ErrorCode::kInvalidArgument, "422 Invalid: "},
      {429, "", ErrorCode::kRetryLater, "429 TooManyRequests: "},
      {500, "", ErrorCode::kUnavailable, "500 InternalError: Internal error occurred: "},
      {503, "", ErrorCode::kUnavailable, "503 ServiceUnavailable: "},
      {504, "", ErrorCode::kTimeout, "504 Timeout: Timeout: "},
      // Reason Unknown (no reason at all): the code alone decides.
      {418, "", ErrorCode::kInternal, "418 : injected failure"},
      {502, "", ErrorCode::kUnavailable, "502 : injected failure"},
  };
  for (const auto& c : cases) {
    fail_next_get(c.code, c.extra);
    auto r = client_->get(nodes_path());
    ASSERT_FALSE(r.ok()) << c.code;
    EXPECT_EQ(r.error().code, c.want) << c.code << ": " << r.error().describe();
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
    EXPECT_FALSE(retry_after_of(r.error()).has_value()) << "no wait asked for: " << c.code;
  }
  EXPECT_EQ(client_->server_retries(), 0u);
  EXPECT_TRUE(client_->get(nodes_path()).ok());
}

TEST_F(ApiErrorsTest, AServerStillInstallingItsPathsIsAskedAgainAfterItsWait) {
  // 503 ServiceUnavailable with details.retryAfterSeconds and Retry-After (kube-apiserver's
  // not-found handler before its paths are installed): waited out, then answered.
  fail_next_get(503, "&retry-after=1");
  const auto start = std::chrono::steady_clock::now();
  auto r = client_->get(nodes_path());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::seconds(1)) << "not waited";
  EXPECT_EQ(client_->server_retries(), 1u);
  EXPECT_EQ(server_->count_answers("GET", nodes_path(), 503), 1);
}

TEST_F(ApiErrorsTest, AServerTimeoutIsA500ThatAsksForAWait) {
  fail_next_get(500, "&reason=ServerTimeout&retry-after=1");
  auto r = client_->get(nodes_path());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(client_->server_retries(), 1u);
  EXPECT_EQ(server_->count_answers("GET", nodes_path(), 500), 1);
}

TEST_F(ApiErrorsTest, AWaitBeyondTheCallsBudgetComesBackWithTheAnswersCodeAndTheWait) {
  // The 503's five seconds do not fit a 1.5 s budget: the caller gets the 503 (as client-go
  // returns the last answer once it stops retrying) and hears when to come back.
  fail_next_get(503, "&retry-after=5");
  KubeConfig config = server_->config();
  config.timeout = std::chrono::milliseconds(1500);
  KubeClient client(config, clock_);
  auto r = client.get(nodes_path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable) << r.error().describe();
  EXPECT_EQ(retry_after_of(r.error()), std::chrono::seconds(5)) << r.error().message;
  EXPECT_EQ(client.server_retries(), 0u);
}

TEST_F(ApiErrorsTest, ATimeoutThatNamesNoWaitIsNotSentAgain) {
  // A request the server timed out may still complete (NewTimeoutError): the client does not
  // repeat it behind the caller's back.
  server_->admin("fail", "method=POST&count=1&code=504&prefix=" + pods_path("default"));
  const Json pod = {{"metadata", {{"name", "t1"}}}, {"spec", {{"schedulerName", "gleaner"}}}};
  auto r = client_->create(pods_path("default"), pod);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTimeout);
  EXPECT_EQ(server_->count_requests("POST", pods_path("default"), false), 1);
  EXPECT_EQ(client_->server_retries(), 0u);
}

}  // namespace
}  // namespace gleaner::kube
