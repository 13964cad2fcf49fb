// The informer against the test API server: initial sync, live events, relist after a
// forced 410 (Expired or Gone), re-watch after a dropped stream, resync, and recovery from a server
// outage.
#include "kube/informer.h"

#include <set>

#include <gtest/gtest.h>

#include "test/kube/test_apiserver.h"

namespace gleaner::kube {
namespace {

using testing::eventually;
using testing::TestApiServer;

// What the callbacks saw, for assertions from the test thread.
struct Recorder {
  std::mutex mu;
  std::vector<std::string> log;  // "add p1", "update p1", "delete p1"
  void note(const char* what, const Json& obj) {
    std::lock_guard lock(mu);
    log.push_back(std::string(what) + " " + obj["metadata"]["name"].get<std::string>());
  }
  bool saw(const std::string& entry) {
    std::lock_guard lock(mu);
    return std::find(log.begin(), log.end(), entry) != log.end();
  }
  int count(const std::string& entry) {
    std::lock_guard lock(mu);
    return static_cast<int>(std::count(log.begin(), log.end(), entry));
  }
  InformerHandlers handlers() {
    return {[this](const Json& o) { note("add", o); },
            [this](const Json&, const Json& o) { note("update", o); },
            [this](const Json& o) { note("delete", o); }};
  }
};

class InformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = TestApiServer::start();
    if (!server_) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py with /usr/bin/python3";
    client_ = std::make_unique<KubeClient>(server_->config(), clock_);
  }
  void create(const std::string& name, const std::string& ns = "default") {
    auto r = client_->create(
        pods_path(ns), {{"metadata", {{"name", name}}}, {"spec", {{"schedulerName", "gleaner"}}}});
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  void label(const std::string& name, const std::string& value) {
    auto r = client_->patch(pod_path("default", name), {{"metadata", {{"labels", {{"v", value}}}}}},
                            PatchType::kMerge);
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  std::unique_ptr<Informer> informer(Recorder& rec, InformerOptions opts = {}) {
    if (opts.path.empty()) opts.path = pods_path("");
    opts.page_size = 2;
    opts.backoff = {std::chrono::milliseconds(20), std::chrono::milliseconds(200), 2.0, 0.2};
    auto inf = std::make_unique<Informer>(*client_, opts, rec.handlers());
    inf->start();
    EXPECT_TRUE(inf->wait_for_sync(std::chrono::seconds(10)));
    return inf;
  }
  bool watching() {
    return eventually([&] { return server_->admin_get("watchers")["watchers"].get<int>() > 0; });
  }

  SystemClock clock_;
  std::unique_ptr<TestApiServer> server_;
  std::unique_ptr<KubeClient> client_;
};

TEST_F(InformerTest, SyncsPagedListThenFollowsTheWatch) {
  for (const char* n : {"a", "b", "c"})
    create(n);
  Recorder rec;
  auto inf = informer(rec);
  EXPECT_EQ(inf->list().size(), 3u);
  EXPECT_TRUE(rec.saw("add a") && rec.saw("add c"));
  EXPECT_EQ(server_->count_requests("GET", "/api/v1/pods", false), 2);  // two pages of 2
  create("d");
  label("a", "1");
  ASSERT_TRUE(client_->remove(pod_path("default", "b")).ok());
  ASSERT_TRUE(
      eventually([&] { return rec.saw("add d") && rec.saw("update a") && rec.saw("delete b"); }));
  EXPECT_FALSE(inf->get("default/b").has_value());
  EXPECT_EQ((*inf->get("default/a"))["metadata"]["labels"]["v"], "1");
  inf->stop();
}

TEST_F(InformerTest, ForcedGoneRelistsAndReconciles) {
  create("a");
  create("b");
  Recorder rec;
  auto inf = informer(rec);
  ASSERT_TRUE(watching());
  const int lists_before = inf->stats().lists;
  // Changes the watch will not deliver: the history is compacted and the stream broken, so
  // the next watch from the old resourceVersion gets 410 and the informer must relist.
  server_->admin("silence-watches", "on=true");
  create("c");
  ASSERT_TRUE(client_->remove(pod_path("default", "a")).ok());
  server_->admin("compact");
  server_->admin("silence-watches", "on=false");
  server_->admin("drop-watches");
  ASSERT_TRUE(eventually([&] { return inf->stats().lists > lists_before; }));
  ASSERT_TRUE(eventually([&] { return rec.saw("add c") && rec.saw("delete a"); }));
  EXPECT_GE(inf->stats().expired, 1);
  EXPECT_EQ(inf->list().size(), 2u);
  // And it keeps watching after the relist.
  create("e");
  EXPECT_TRUE(eventually([&] { return rec.saw("add e"); }));
}

TEST_F(InformerTest, ExpiredWatchAnsweredWithHttp410AlsoRelists) {
  Recorder rec;
  auto inf = informer(rec);
  ASSERT_TRUE(watching());
  server_->admin("expire-next-watch", "mode=http");
  server_->admin("drop-watches");
  ASSERT_TRUE(eventually([&] { return inf->stats().lists >= 2; }));
  create("x");
  EXPECT_TRUE(eventually([&] { return rec.saw("add x"); }));
}

TEST_F(InformerTest, AWatchEndedAsGoneByAnOlderServerAlsoRelists) {
  // kube-apiserver 1.17 and earlier said Gone, not Expired, for a too-old resourceVersion,
  // as an ERROR event and as the watch's own answer: either is a relist.
  Recorder rec;
  auto inf = informer(rec);
  for (const char* mode : {"event", "http"}) {
    ASSERT_TRUE(watching());
    const int lists = inf->stats().lists;
    const int expired = inf->stats().expired;
    server_->admin("expire-next-watch", std::string("reason=Gone&mode=") + mode);
    server_->admin("drop-watches");
    ASSERT_TRUE(eventually([&] { return inf->stats().lists > lists; })) << mode;
    EXPECT_GT(inf->stats().expired, expired) << mode;
  }
  create("y");
  EXPECT_TRUE(eventually([&] { return rec.saw("add y"); }));
}

TEST_F(InformerTest, DroppedStreamRewatchesWithoutRelisting) {
  create("a");
  Recorder rec;
  auto inf = informer(rec);
  ASSERT_TRUE(watching());
  server_->admin("drop-watches");
  ASSERT_TRUE(eventually([&] { return inf->stats().broken_streams >= 1; }));
  create("b");
  ASSERT_TRUE(eventually([&] { return rec.saw("add b"); }));
  EXPECT_EQ(inf->stats().lists, 1);
  EXPECT_GE(inf->stats().watches, 2);
  EXPECT_EQ(rec.count("add a"), 1);  // no replay of what it already had
}

TEST_F(InformerTest, MalformedEventRewatchesFromLastVersion) {
  Recorder rec;
  auto inf = informer(rec);
  ASSERT_TRUE(watching());
  server_->admin("watch-fault", "kind=garbage");
  create("g");
  ASSERT_TRUE(eventually([&] { return inf->stats().broken_streams >= 1; }));
  // The event lost to garbage comes back on the re-watch from the last good version.
  EXPECT_TRUE(eventually([&] { return rec.saw("add g"); }));
  EXPECT_EQ(inf->stats().lists, 1);
}

TEST_F(InformerTest, ResyncRedeliversCachedObjects) {
  create("r");
  Recorder rec;
  InformerOptions opts;
  opts.resync = std::chrono::milliseconds(100);
  auto inf = informer(rec, opts);
  // Bookmarks (every 0.2 s) wake the informer between events, so resync happens even on
  // a quiet cluster.
  EXPECT_TRUE(eventually([&] { return rec.count("update r") >= 2; }));
}

TEST_F(InformerTest, BacksOffWhileTheServerFailsThenRecovers) {
  create("a");
  server_->admin("fail", "count=3&method=GET&prefix=/api/v1/pods&code=500");
  Recorder rec;
  InformerOptions opts;
  opts.path = pods_path("");
  opts.backoff = {std::chrono::milliseconds(20), std::chrono::milliseconds(200), 2.0, 0.2};
  Informer inf(*client_, opts, rec.handlers());
  inf.start();
  ASSERT_TRUE(inf.wait_for_sync(std::chrono::seconds(10)));
  EXPECT_EQ(inf.stats().errors, 3);
  EXPECT_EQ(inf.stats().warnings, 1) << "the same refusal three times";
  EXPECT_TRUE(rec.saw("add a"));
}

TEST_F(InformerTest, AThrottledListIsTriedAgainAfterTheServersWaitNotTheBackOff) {
  // A storm of 429s (priority and fairness, "Retry-After: 1") must not push the informer
  // into a back-off that outlasts it: each refusal is tried again after the server's wait,
  // so the informer syncs within seconds of the storm's end, not after its 30 s back-off.
  create("a");
  server_->admin("throttle", "count=-1");
  KubeConfig config = server_->config();
  config.timeout = std::chrono::milliseconds(1500);
  KubeClient client(config, clock_);
  Recorder rec;
  InformerOptions opts;
  opts.path = pods_path("");
  opts.backoff = {std::chrono::seconds(30), std::chrono::seconds(30), 2.0, 0.2};
  Informer inf(client, opts, rec.handlers());
  inf.start();
  ASSERT_TRUE(eventually([&] { return inf.stats().errors >= 3; }, std::chrono::seconds(15)))
      << "a throttled list waited out the back-off";
  EXPECT_EQ(inf.stats().throttled, inf.stats().errors);
  EXPECT_EQ(inf.stats().warnings, 1);
  server_->admin("throttle", "count=0");
  EXPECT_TRUE(inf.wait_for_sync(std::chrono::seconds(10)));
  EXPECT_TRUE(rec.saw("add a"));
}

TEST_F(InformerTest, AResourceTheServerDoesNotServeIsWarnedAboutOnce) {
  // A CRD not installed (Karmada's Cluster objects on a hub without Karmada): every list
  // fails the same way, backing off; one warning, not one per attempt.
  Recorder rec;
  InformerOptions opts;
  opts.path = "/apis/example.com/v1/widgets";
  opts.backoff = {std::chrono::milliseconds(5), std::chrono::milliseconds(10), 2.0, 0.2};
  Informer inf(*client_, opts, rec.handlers());
  inf.start();
  ASSERT_TRUE(eventually([&] { return inf.stats().errors >= 5; }));
  EXPECT_EQ(inf.stats().warnings, 1);
  EXPECT_FALSE(inf.has_synced());
}

TEST_F(InformerTest, StopInterruptsABlockedWatch) {
  Recorder rec;
  auto inf = informer(rec);
  ASSERT_TRUE(watching());
  const auto start = std::chrono::steady_clock::now();
  inf->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(InformerTest, SelectorsLimitTheCache) {
  create("mine");
  ASSERT_TRUE(
      client_
          ->create(pods_path("default"), {{"metadata", {{"name", "other"}}},
                                          {"spec", {{"schedulerName", "default-scheduler"}}}})
          .ok());
  Recorder rec;
  InformerOptions opts;
  opts.field_selector = "spec.schedulerName=gleaner";
  auto inf = informer(rec, opts);
  EXPECT_EQ(inf->list().size(), 1u);
  EXPECT_TRUE(inf->get("default/mine").has_value());
}

}  // namespace
}  // namespace gleaner::kube
