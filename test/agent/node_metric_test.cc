// The node's NodeMetric as koordlet keeps it: the status built from a snapshot, and the
// publisher against the test API server (created when absent, status written, an API
// server that does not serve the CRD said once and not asked again at once).
#include "agent/daemon/node_metric.h"

#include <gtest/gtest.h>

#include "test/kube/test_apiserver.h"
#include "test/support/eventually.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent {
namespace {

using kube::testing::TestApiServer;
using testing::eventually;

snapshot::NodeSnapshot worked_example() {
  auto snap =
      snapshot::load_snapshot_file(testing::fixture_path("agent/snapshots/worked-example.json"));
  EXPECT_TRUE(snap.ok()) << (snap.ok() ? "" : snap.error().message);
  return snap.ok() ? *snap : snapshot::NodeSnapshot{};
}

TEST(NodeMetric, DurationsAreWrittenAsGoWritesThem) {
  EXPECT_EQ(go_duration(std::chrono::seconds(300)), "5m0s");
  EXPECT_EQ(go_duration(std::chrono::seconds(1800)), "30m0s");
  EXPECT_EQ(go_duration(std::chrono::seconds(3661)), "1h1m1s");
  EXPECT_EQ(go_duration(std::chrono::seconds(42)), "42s");
}

TEST(NodeMetric, TheStatusHoldsNodeSystemAndPodUsageWithClasses) {
  const auto snap = worked_example();
  Aggregate cpu;
  cpu.p50 = 1000;
  cpu.p99 = 2500.7;
  Aggregate memory;
  memory.p99 = 4096;
  const WallTime at{std::chrono::seconds(1'800'000'000)};
  Json status = node_metric_status(snap, {{std::chrono::seconds(300), cpu, memory}}, at);
  EXPECT_EQ(status["updateTime"], "2027-01-15T08:00:00Z");
  EXPECT_EQ(status["nodeMetric"]["nodeUsage"]["resources"]["cpu"],
            std::to_string(snap.metrics.node.cpu_milli) + "m");
  EXPECT_EQ(status["nodeMetric"]["nodeUsage"]["resources"]["memory"],
            std::to_string(snap.metrics.node.memory_bytes));
  EXPECT_EQ(status["nodeMetric"]["systemUsage"]["resources"]["cpu"],
            std::to_string(snap.system_usage().cpu_milli) + "m");
  const Json& window = status["nodeMetric"]["aggregatedNodeUsages"][0];
  EXPECT_EQ(window["duration"], "5m0s");
  EXPECT_EQ(window["usage"]["p99"]["resources"]["cpu"], "2500m");
  EXPECT_EQ(window["usage"]["p99"]["resources"]["memory"], "4096");
  // One entry per sampled pod, with Koordinator's priority and QoS names.
  size_t sampled = 0;
  for (const auto& p : snap.pods) {
    if (snap.pod_usage(p.pod.metadata.namespace_name + "/" + p.pod.metadata.name)) ++sampled;
  }
  ASSERT_GT(sampled, 0u);
  ASSERT_EQ(status["podsMetric"].size(), sampled);
  std::set<std::string> priorities;
  for (const auto& p : status["podsMetric"]) {
    priorities.insert(p["priority"].get<std::string>());
    EXPECT_TRUE(p["qos"] == "LS" || p["qos"] == "BE" || p["qos"] == "LSR" || p["qos"] == "LSE")
        << p.dump();
    EXPECT_TRUE(p["podUsage"]["resources"]["cpu"].get<std::string>().ends_with("m"));
  }
  EXPECT_TRUE(priorities.contains("koord-prod") || priorities.contains("koord-batch"));
}

class NodeMetricPublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = TestApiServer::start();
    if (!server_) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py with /usr/bin/python3";
    api_ = std::make_unique<kube::KubeClient>(server_->config(), clock_);
  }
  std::optional<Json> node_metric() {
    auto found = api_->find("/apis/slo.koordinator.sh/v1alpha1/nodemetrics/node-a");
    return found && *found ? **found : std::optional<Json>();
  }

  SystemClock clock_;
  std::unique_ptr<TestApiServer> server_;
  std::unique_ptr<kube::KubeClient> api_;
};

TEST_F(NodeMetricPublisherTest, CreatesTheNodeMetricAndWritesItsStatus) {
  NodeMetricPublisher publisher(server_->config(), "node-a");
  publisher.submit(node_metric_status(worked_example(), {}, clock_.wall_now()),
                   std::chrono::seconds(60), 300);
  ASSERT_TRUE(eventually([&] { return publisher.stats().updates == 1; }));
  auto written = node_metric();
  ASSERT_TRUE(written.has_value());
  EXPECT_EQ((*written)["spec"]["metricCollectPolicy"]["reportIntervalSeconds"], 60);
  EXPECT_EQ((*written)["spec"]["metricCollectPolicy"]["aggregateDurationSeconds"], 300);
  EXPECT_TRUE((*written)["status"]["nodeMetric"]["nodeUsage"]["resources"].contains("cpu"));
  EXPECT_FALSE((*written)["status"]["podsMetric"].empty());
}

TEST_F(NodeMetricPublisherTest, AnApiServerWithoutTheCrdIsSaidOnceAndNotAskedAgainAtOnce) {
  // Every NodeMetric path answers 404 naming no object: the resource is not served.
  server_->admin("fail", "method=*&code=404&count=1000&prefix=/apis/slo.koordinator.sh");
  NodeMetricPublisher publisher(server_->config(), "node-a");
  publisher.submit(Json::object(), std::chrono::seconds(1), 300);
  ASSERT_TRUE(eventually([&] { return publisher.stats().failures == 1; }));
  EXPECT_FALSE(publisher.stats().crd_served);
  // Newer statuses wait for the recheck (minutes), not the report interval (a second).
  for (int i = 0; i < 3; ++i)
    publisher.submit(Json::object(), std::chrono::seconds(1), 300);
  EXPECT_FALSE(
      eventually([&] { return publisher.stats().failures > 1; }, std::chrono::milliseconds(1500)));
}

// The pace is the injected clock's: a newer status waits for the report interval, and
// after a 404 for the resource, for the ten-minute recheck, however much real time passes.
TEST_F(NodeMetricPublisherTest, WritesArePacedByTheInjectedClock) {
  FakeClock clock;
  NodeMetricPublisher publisher(server_->config(), "node-a", &clock);
  const auto status = [&] { return node_metric_status(worked_example(), {}, clock.wall_now()); };
  publisher.submit(status(), std::chrono::seconds(60), 300);
  ASSERT_TRUE(eventually([&] { return publisher.stats().updates == 1; }));
  publisher.submit(status(), std::chrono::seconds(60), 300);
  EXPECT_FALSE(
      eventually([&] { return publisher.stats().updates > 1; }, std::chrono::milliseconds(500)));
  clock.advance(std::chrono::seconds(60));
  publisher.submit(status(), std::chrono::seconds(60), 300);  // the newest replaces the waiting
  ASSERT_TRUE(eventually([&] { return publisher.stats().updates == 2; }));

  server_->admin("fail", "method=*&code=404&count=1000&prefix=/apis/slo.koordinator.sh");
  clock.advance(std::chrono::seconds(60));
  publisher.submit(status(), std::chrono::seconds(60), 300);
  ASSERT_TRUE(eventually([&] { return publisher.stats().failures == 1; }));
  EXPECT_FALSE(publisher.stats().crd_served);
  clock.advance(std::chrono::minutes(9));
  publisher.submit(status(), std::chrono::seconds(60), 300);
  EXPECT_FALSE(
      eventually([&] { return publisher.stats().failures > 1; }, std::chrono::milliseconds(500)));
  server_->admin("reset");
  clock.advance(std::chrono::minutes(1));
  publisher.submit(status(), std::chrono::seconds(60), 300);
  ASSERT_TRUE(eventually([&] { return publisher.stats().updates == 3; }));
  EXPECT_TRUE(publisher.stats().crd_served);
  EXPECT_EQ(publisher.stats().failures, 1u);
}

}  // namespace
}  // namespace gleaner::agent
