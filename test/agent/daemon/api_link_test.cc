// The agent's API link against the test API server: its own Node through a watch, and
// evictions through the Eviction API with an Event, including a budget's 429.
#include "agent/daemon/api_link.h"

#include <thread>

#include <gtest/gtest.h>

#include "test/kube/test_apiserver.h"
#include "test/support/eventually.h"

namespace gleaner::agent {
namespace {
using gleaner::testing::eventually;
using kube::testing::TestApiServer;
using namespace std::chrono_literals;

class ApiLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = TestApiServer::start();
    if (!server_) GTEST_SKIP() << "/usr/bin/python3 is needed for the test API server";
    post("/api/v1/nodes", R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"node-a",
      "labels":{"pool":"online"}},"status":{"capacity":{"cpu":"8","memory":"32Gi"},
      "allocatable":{"cpu":"8","memory":"32Gi"}}})");
    post("/api/v1/namespaces/spark/pods", R"({"apiVersion":"v1","kind":"Pod","metadata":{
      "name":"exec-1","namespace":"spark"},"spec":{"nodeName":"node-a","containers":[
      {"name":"c","image":"x"}]}})");
  }
  void post(const std::string& path, const std::string& body) {
    auto resp = server_->raw("POST", path, body);
    ASSERT_EQ(resp.status / 100, 2) << resp.body;
  }
  std::unique_ptr<TestApiServer> server_;
};

TEST_F(ApiLinkTest, WatchesItsNodeAndFollowsLabelChanges) {
  ApiLink link(server_->config(), "node-a");
  ASSERT_TRUE(link.wait_for_node(5s));
  EXPECT_EQ(link.node()->metadata.labels.at("pool"), "online");
  EXPECT_EQ(link.node()->capacity.at("cpu").milli_value(), 8000);
  auto resp =
      server_->raw("PATCH", "/api/v1/nodes/node-a", R"({"metadata":{"labels":{"pool":"batch"}}})",
                   "application/merge-patch+json");
  ASSERT_EQ(resp.status, 200) << resp.body;
  EXPECT_TRUE(eventually([&] { return link.node()->metadata.labels.at("pool") == "batch"; }, 5s));
}

TEST_F(ApiLinkTest, EvictsThroughTheEvictionApiAndRecordsAnEvent) {
  ApiLink link(server_->config(), "node-a");
  server_->admin("eviction-429", "count=1");
  link.evict("spark/exec-1", "memory-evict", /*dry_run=*/false);
  EXPECT_TRUE(eventually([&] { return link.outcome().refused == 1; }, 5s));
  // The decisions learn the answer: refused (asked again later), then accepted.
  auto refused = link.take_answers();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].pod, "spark/exec-1");
  EXPECT_FALSE(refused[0].accepted);
  link.evict("spark/exec-1", "memory-evict", false);
  EXPECT_TRUE(eventually([&] { return link.outcome().evicted == 1; }, 5s));
  auto accepted = link.take_answers();
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_TRUE(accepted[0].accepted);
  auto pod = server_->raw("GET", "/api/v1/namespaces/spark/pods/exec-1");
  EXPECT_EQ(pod.status, 404);
  auto events = Json::parse(server_->raw("GET", "/api/v1/namespaces/spark/events").body);
  ASSERT_EQ(events["items"].size(), 1u);
  EXPECT_EQ(events["items"][0]["reason"], "GleanerEvicted");
  EXPECT_EQ(events["items"][0]["involvedObject"]["name"], "exec-1");
}

TEST_F(ApiLinkTest, APodAlreadyWaitingForEvictionIsNotAskedForTwice) {
  post("/api/v1/namespaces/spark/pods", R"({"apiVersion":"v1","kind":"Pod","metadata":{
    "name":"exec-2","namespace":"spark"},"spec":{"nodeName":"node-a","containers":[
    {"name":"c","image":"x"}]}})");
  const std::string first = "/api/v1/namespaces/spark/pods/exec-1/eviction";
  const std::string second = "/api/v1/namespaces/spark/pods/exec-2/eviction";
  // The first eviction is held by the server, so the next ones wait behind it.
  server_->admin("stall", "count=1&seconds=60&prefix=" + first);
  ApiLink link(server_->config(), "node-a");
  link.evict("spark/exec-1", "memory-evict", false);
  ASSERT_TRUE(eventually([&] { return server_->count_requests("POST", first, false) == 1; }, 30s));
  link.evict("spark/exec-2", "memory-evict", false);
  link.evict("spark/exec-2", "cpu-evict", false);     // waiting already: dropped
  link.evict("spark/exec-1", "memory-evict", false);  // under way, not waiting: asked again
  server_->admin("release");
  ASSERT_TRUE(eventually([&] { return link.outcome().evicted == 3; }, 30s));
  std::vector<std::string> answered;
  for (const auto& a : link.take_answers())
    answered.push_back(a.pod + (a.accepted ? " accepted" : " refused"));
  EXPECT_EQ(answered, (std::vector<std::string>{"spark/exec-1 accepted", "spark/exec-2 accepted",
                                                "spark/exec-1 accepted"}));
  EXPECT_EQ(server_->count_requests("POST", second, false), 1);
  auto events = Json::parse(server_->raw("GET", "/api/v1/namespaces/spark/events").body);
  ASSERT_EQ(events["items"].size(), 2u);
  EXPECT_NE(events["items"][1]["message"].get<std::string>().find("memory-evict"),
            std::string::npos)
      << "the waiting eviction keeps its first reason";
}

TEST_F(ApiLinkTest, DryRunEvictsNothing) {
  ApiLink link(server_->config(), "node-a");
  link.evict("spark/exec-1", "cpu-evict", /*dry_run=*/true);
  EXPECT_EQ(server_->raw("GET", "/api/v1/namespaces/spark/pods/exec-1").status, 200);
  EXPECT_EQ(link.outcome().evicted, 0u);
}

}  // namespace
}  // namespace gleaner::agent
