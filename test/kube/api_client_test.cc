// KubeClient against the test API server (loopback HTTP): the verbs, the error mapping,
// and bad input from the server (stalls, malformed or truncated streams, huge answers).
#include "kube/api_client.h"

#include <gtest/gtest.h>

#include "common/clock.h"
#include "test/kube/test_apiserver.h"
#include "test/support/temp_tree.h"

namespace gleaner::kube {
namespace {

using testing::TestApiServer;

Json pod(const std::string& name, const std::string& node = "",
         const std::string& scheduler = "gleaner") {
  Json p = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"labels", {{"app", name.substr(0, 1)}}}}},
      {"spec", {{"schedulerName", scheduler}, {"containers", {{{"name", "c"}, {"image", "x"}}}}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  return p;
}

// "p3": built with append, which GCC 12 does not misreport under -Wrestrict.
std::string numbered(const char* prefix, int i) {
  return std::string(prefix).append(std::to_string(i));
}

class ApiClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = TestApiServer::start();
    if (!server_) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py with /usr/bin/python3";
    client_ = std::make_unique<KubeClient>(server_->config(), clock_);
  }
  Json create_pod(const Json& p, const std::string& ns = "default") {
    auto r = client_->create(pods_path(ns), p);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : Json();
  }

  SystemClock clock_;
  std::unique_ptr<TestApiServer> server_;
  std::unique_ptr<KubeClient> client_;
};

TEST_F(ApiClientTest, GetAndNotFound) {
  create_pod(pod("a1"));
  auto got = client_->get(pod_path("default", "a1"));
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ((*got)["metadata"]["name"], "a1");
  auto missing = client_->get(pod_path("default", "zz"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("pods \"zz\" not found"), std::string::npos);
}

TEST_F(ApiClientTest, FindTellsADeletedObjectFromAResourceNotServed) {
  create_pod(pod("a1"));
  auto found = client_->find(pod_path("default", "a1"));
  ASSERT_TRUE(found.ok()) << found.error().message;
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((**found)["metadata"]["name"], "a1");
  auto gone = client_->find(pod_path("default", "zz"));
  ASSERT_TRUE(gone.ok()) << gone.error().message;
  EXPECT_FALSE(gone->has_value());
  // A group the server does not serve (a CRD not installed) answers 404 too, naming no
  // object: that is an error, not "deleted".
  auto unserved = client_->find("/apis/example.com/v1/namespaces/default/widgets/zz");
  ASSERT_FALSE(unserved.ok());
  EXPECT_EQ(unserved.error().code, ErrorCode::kNotFound);
  EXPECT_NE(unserved.error().message.find("could not find the requested resource"),
            std::string::npos);
}

TEST_F(ApiClientTest, ListsWithSelectorsAndPages) {
  for (int i = 0; i < 7; ++i)
    create_pod(pod(numbered("p", i), i < 3 ? "node-1" : ""));
  create_pod(pod("q0", "", "default-scheduler"));
  auto page = client_->list(pods_path(""), {"", "", 3, "", ""});
  ASSERT_TRUE(page.ok()) << page.error().message;
  EXPECT_EQ(page->items.size(), 3u);
  EXPECT_FALSE(page->continue_token.empty());
  auto all = client_->list_all(pods_path(""), {"", "", 3, "", ""});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->items.size(), 8u);
  EXPECT_EQ(server_->count_requests("GET", "/api/v1/pods", false), 4);  // 1 + 3 pages
  auto pending = client_->list_all(
      pods_path(""), {"app=p", "spec.schedulerName=gleaner,spec.nodeName=", 0, "", ""});
  ASSERT_TRUE(pending.ok());
  EXPECT_EQ(pending->items.size(), 4u);
  auto bad = client_->list(pods_path(""), {"", "spec.bogus=1", 0, "", ""});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(ApiClientTest, ExpiredContinueTokenRestartsTheList) {
  for (int i = 0; i < 4; ++i)
    create_pod(pod(numbered("p", i)));
  auto first = client_->list(pods_path(""), {"", "", 2, "", ""});
  ASSERT_TRUE(first.ok());
  server_->admin("compact");
  auto stale = client_->list(pods_path(""), {"", "", 2, first->continue_token, ""});
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.error().message.find("410 Expired"), std::string::npos);
  auto all = client_->list_all(pods_path(""), {"", "", 2, first->continue_token, ""});
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_EQ(all->items.size(), 4u);
}

TEST_F(ApiClientTest, PatchesStatusWithMerge) {
  create_pod(pod("s1"));
  auto merged = client_->patch(
      pod_path("default", "s1") + "/status",
      {{"status",
        {{"phase", "Running"}, {"conditions", {{{"type", "Ready"}, {"status", "False"}}}}}}},
      PatchType::kMerge);
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  EXPECT_EQ((*merged)["status"]["phase"], "Running");

  ASSERT_TRUE(client_->create(nodes_path(), {{"metadata", {{"name", "n1"}}}}).ok());
  auto node = client_->patch(node_status_path("n1"),
                             {{"status", {{"allocatable", {{"kubernetes.io/batch-cpu", "3500"}}}}}},
                             PatchType::kMerge);
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ((*node)["status"]["allocatable"]["kubernetes.io/batch-cpu"], "3500");
  auto missing =
      client_->patch(node_status_path("nx"), {{"status", Json::object()}}, PatchType::kMerge);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST_F(ApiClientTest, StaleResourceVersionIsAConflict) {
  Json created = create_pod(pod("c1"));
  ASSERT_TRUE(client_
                  ->patch(pod_path("default", "c1"), {{"metadata", {{"labels", {{"x", "1"}}}}}},
                          PatchType::kMerge)
                  .ok());
  auto stale = client_->replace(pod_path("default", "c1"), created);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, ErrorCode::kConflict);
  auto dup = client_->create(pods_path("default"), pod("c1"));
  EXPECT_EQ(dup.error().code, ErrorCode::kConflict);
}

TEST_F(ApiClientTest, BindsWithTheUidAndRefusesASecondBind) {
  Json created = create_pod(pod("b1"));
  const std::string uid = created["metadata"]["uid"];
  auto wrong_uid = client_->bind_pod("default", "b1", "not-the-uid", "node-2");
  ASSERT_FALSE(wrong_uid.ok());
  EXPECT_EQ(wrong_uid.error().code, ErrorCode::kConflict);
  ASSERT_TRUE(client_->bind_pod("default", "b1", uid, "node-2").ok());
  auto bound = client_->get(pod_path("default", "b1"));
  EXPECT_EQ((*bound)["spec"]["nodeName"], "node-2");
  auto again = client_->bind_pod("default", "b1", uid, "node-3");
  EXPECT_EQ(again.error().code, ErrorCode::kConflict);
  EXPECT_EQ(client_->bind_pod("default", "gone", "", "node-2").error().code, ErrorCode::kNotFound);
}

TEST_F(ApiClientTest, EvictionBlockedByABudgetIsRetryLater) {
  create_pod(pod("e1", "node-1"));
  server_->admin("eviction-429", "count=1");
  auto blocked = client_->evict_pod("default", "e1");
  ASSERT_FALSE(blocked.ok());
  EXPECT_EQ(blocked.error().code, ErrorCode::kRetryLater);
  EXPECT_NE(blocked.error().message.find("disruption budget"), std::string::npos);
  ASSERT_TRUE(client_->evict_pod("default", "e1", 30).ok());
  EXPECT_EQ(client_->get(pod_path("default", "e1")).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(client_->evict_pod("default", "e1").error().code, ErrorCode::kNotFound);
}

TEST_F(ApiClientTest, CreatesEvents) {
  Json created = create_pod(pod("v1"));
  EventRecord e;
  e.namespace_ = "default";
  e.involved_object = {{"kind", "Pod"},
                       {"namespace", "default"},
                       {"name", "v1"},
                       {"uid", created["metadata"]["uid"]}};
  e.reason = "Scheduled";
  e.message = "placed on node-1";
  e.host = "scheduler-0";
  ASSERT_TRUE(client_->create_event(e).ok());
  auto events = client_->list(events_path("default"), {"", "involvedObject.name=v1", 0, "", ""});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->items.size(), 1u);
  EXPECT_EQ(events->items[0]["reason"], "Scheduled");
  EXPECT_EQ(events->items[0]["source"]["component"], "gleaner");
}

TEST_F(ApiClientTest, WatchStreamsEventsAndBookmarks) {
  auto list = client_->list(pods_path("default"), {});
  ASSERT_TRUE(list.ok());
  auto w = client_->watch(pods_path("default"),
                          {"", "", list->resource_version, true, std::chrono::seconds(30)});
  ASSERT_TRUE(w.ok()) << w.error().message;
  create_pod(pod("w1"));
  ASSERT_TRUE(client_->remove(pod_path("default", "w1")).ok());
  std::vector<WatchEventType> types;
  std::vector<Json> objects;
  while (types.size() < 4) {
    auto ev = (*w)->next();
    ASSERT_TRUE(ev.ok()) << ev.error().message;
    ASSERT_TRUE(ev->has_value());
    types.push_back((*ev)->type);
    objects.push_back((*ev)->object);
  }
  EXPECT_EQ(types[0], WatchEventType::kAdded);
  // A pod's delete is written marked (grace 0: it is bound to no node) before it is removed,
  // as kube-apiserver's store does it.
  EXPECT_EQ(types[1], WatchEventType::kModified);
  EXPECT_TRUE(objects[1]["metadata"].contains("deletionTimestamp")) << objects[1].dump();
  EXPECT_EQ(types[2], WatchEventType::kDeleted);
  EXPECT_EQ(types[3], WatchEventType::kBookmark);  // every 0.2 s on the test server
}

TEST_F(ApiClientTest, MalformedWatchEventIsAParseError) {
  auto w = client_->watch(pods_path("default"), {"", "", "", true, std::chrono::seconds(30)});
  ASSERT_TRUE(w.ok());
  server_->admin("watch-fault", "kind=garbage");
  create_pod(pod("g1"));
  Result<std::optional<WatchEvent>> ev = std::optional<WatchEvent>();
  do {
    ev = (*w)->next();
  } while (ev.ok() && ev->has_value() && (*ev)->type == WatchEventType::kBookmark);
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.error().code, ErrorCode::kParse);
  EXPECT_NE(ev.error().message.find("watch"), std::string::npos);
}

TEST_F(ApiClientTest, TruncatedStreamIsAnIoError) {
  create_pod(pod("g1"));
  auto w2 = client_->watch(pods_path("default"), {"", "", "", false, std::chrono::seconds(30)});
  ASSERT_TRUE(w2.ok());
  ASSERT_TRUE((*w2)->next().ok());  // the existing pod, replayed as ADDED
  server_->admin("watch-fault", "kind=truncate");
  create_pod(pod("g2"));
  auto cut = (*w2)->next();
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code, ErrorCode::kIo);
}

TEST_F(ApiClientTest, StalledServerTimesOut) {
  KubeConfig config = server_->config();
  config.timeout = std::chrono::milliseconds(300);
  KubeClient impatient(config, clock_);
  server_->admin("stall", "seconds=5&count=1&prefix=/api/v1/nodes");
  const auto start = std::chrono::steady_clock::now();
  auto r = impatient.get(nodes_path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  server_->admin("reset");
  EXPECT_TRUE(impatient.get(nodes_path()).ok());  // a fresh connection works again
}

// A kubeconfig whose server URL has a path (an API server behind a proxy, as Rancher hands
// out): every verb, the watch included, goes below it.
TEST(ApiClientBehindAPath, EveryRequestGoesBelowTheServerUrlsPath) {
  auto server = TestApiServer::start({"--path-prefix", "/k8s/clusters/c-1"});
  if (!server) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py with /usr/bin/python3";
  SystemClock clock;
  KubeConfig config = server->config();
  KubeClient outside(config, clock);
  auto refused = outside.get(pod_path("default", "p1"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kNotFound) << "the server serves only below the path";

  config.endpoint.target = "/k8s/clusters/c-1/";
  KubeClient client(config, clock);
  auto list = client.list(pods_path("default"), {});
  ASSERT_TRUE(list.ok()) << list.error().message;
  auto w = client.watch(pods_path("default"),
                        {"", "", list->resource_version, true, std::chrono::seconds(30)});
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_TRUE(client.create(pods_path("default"), pod("p1")).ok());
  auto got = client.get(pod_path("default", "p1"));
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ((*got)["metadata"]["name"], "p1");
  for (int events = 0; events < 100; ++events) {  // bookmarks come every 0.2 s meanwhile
    auto ev = (*w)->next();
    ASSERT_TRUE(ev.ok()) << ev.error().message;
    ASSERT_TRUE(ev->has_value());
    if ((*ev)->type == WatchEventType::kBookmark) continue;
    EXPECT_EQ((*ev)->type, WatchEventType::kAdded);
    return;
  }
  FAIL() << "no ADDED event among 100";
}

TEST_F(ApiClientTest, HugeAnswersAreCapped) {
  for (int i = 0; i < 20; ++i)
    create_pod(pod(numbered("h", i)));
  KubeConfig config = server_->config();
  config.max_response_bytes = 2000;
  KubeClient capped(config, clock_);
  auto r = capped.list(pods_path(""), {});
  ASSERT_FALSE(r.ok()) << r->items.size();
  EXPECT_EQ(r.error().code, ErrorCode::kIo);
  EXPECT_NE(r.error().message.find("size cap"), std::string::npos);
}

TEST_F(ApiClientTest, RotatedTokenIsRereadAfter401) {
  gleaner::testing::TempDir dir;
  dir.write("token", "old-token");
  server_->admin("token", "value=new-token");
  KubeConfig config = server_->config();
  config.token_file = dir / "token";
  KubeClient client(config, clock_);
  auto denied = client.get(nodes_path());
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().code, ErrorCode::kPermission);
  dir.write("token", "new-token");
  EXPECT_TRUE(client.get(nodes_path()).ok());
  server_->admin("token", "value=");
}

TEST_F(ApiClientTest, ThrottledRequestsAreRetriedAfterTheServersWait) {
  // Priority and fairness refusing twice (429, "Retry-After: 1", a plain-text body): the
  // client waits as asked and the call succeeds, as client-go's does.
  server_->admin("throttle", "count=2");
  const auto start = std::chrono::steady_clock::now();
  auto r = client_->get(nodes_path());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(client_->server_retries(), 2u);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << "not waited";
  EXPECT_EQ(server_->count_answers("GET", nodes_path(), 429), 2);
  // A write too: a refused request was not processed, so it is sent again.
  server_->admin("throttle", "count=1");
  EXPECT_TRUE(client_->create(pods_path("default"), pod("after-429")).ok());
}

TEST_F(ApiClientTest, ThrottlingBeyondTheCallsBudgetIsRetryLaterWithTheServersWait) {
  server_->admin("throttle", "count=-1");
  KubeConfig config = server_->config();
  config.timeout = std::chrono::milliseconds(1500);  // room for one wait of 1 s, not two
  KubeClient client(config, clock_);
  auto r = client.get(nodes_path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kRetryLater);
  EXPECT_EQ(retry_after_of(r.error()), std::chrono::seconds(1)) << r.error().message;
  EXPECT_EQ(client.server_retries(), 1u);
  // A caller's own budget (a Lease renewal's time left) bounds the waits the same way.
  auto quick = client_->find(node_path("n1"), std::chrono::milliseconds(500));
  ASSERT_FALSE(quick.ok());
  EXPECT_EQ(quick.error().code, ErrorCode::kRetryLater);
  EXPECT_EQ(client_->server_retries(), 0u);
  server_->admin("reset");
}

TEST_F(ApiClientTest, ConnectionRefusedIsUnavailable) {
  KubeConfig config = server_->config();
  config.endpoint.port = 1;  // nothing listens on port 1
  KubeClient nowhere(config, clock_);
  auto r = nowhere.get(nodes_path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace gleaner::kube
