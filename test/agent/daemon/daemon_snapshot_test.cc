// GET /debug/snapshot on a live agent (hermetic_daemon.h): what it serves is a snapshot file
// `gleaner-agent calc` reads, and calc on it gives the daemon's own batch answer for that
// pass; literal env values and the last-applied manifest are not served.
#include <string>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include "agent/cli/commands.h"
#include "agent/snapshot/node_snapshot.h"
#include "test/agent/daemon/hermetic_daemon.h"
#include "test/support/cli_capture.h"
#include "test/support/net.h"

namespace gleaner::agent::test {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace daemon_snapshot_test {
namespace {

// The hermetic node with colocation on, so that calc has batch figures to agree on.
class DaemonSnapshot : public DaemonHermetic {
 protected:
  void adjust(DaemonOptions& options) override {
    config_.write("colocation-config", R"({"enable": true, "cpuReclaimThresholdPercent": 60,
        "memoryReclaimThresholdPercent": 65})");
    options.config_dir = config_.path();
  }
  [[nodiscard]] std::string snapshot() const {
    return gleaner::testing::http_get_loopback(daemon_->metrics_port(), "/debug/snapshot");
  }
  TempDir config_;
};

TEST_F(DaemonSnapshot, DebugSnapshotIsWhatCalcReadsAndGivesTheDaemonsAnswer) {
  on_loop([this] { daemon_->start(); });
  node_.run_for_a_second(clock_, 1000, 600, 300);
  on_loop([this] { daemon_->tick(); });
  const std::string served = snapshot();
  ASSERT_FALSE(served.empty()) << "GET /debug/snapshot answered other than 200";

  TempDir dir;
  dir.write("snapshot.json", served);
  CLI::App app;
  register_calc_command(app);
  const auto run = gleaner::testing::run_subcommand(
      app, {"calc", "--snapshot", dir / "snapshot.json", "--config-dir", config_.path()});
  ASSERT_EQ(run.code, 0) << run.err;
  const Json calc = Json::parse(run.out);
  EXPECT_EQ(calc["node"], "node-h");
  EXPECT_EQ(calc["colocation"], "enabled");
  EXPECT_TRUE(calc["batch"].is_object()) << run.out;
  // The very terms the daemon's own calculation had on that pass.
  EXPECT_EQ(calc["explain"], Json::parse(daemon_->last_calc_json()));
}

// Served over an unauthenticated port: of a container only its name and resources (what the
// snapshot's readers read) are kept, so env values, args and commands, which may hold
// credentials, are not served; the last-applied manifest neither; what is left still parses
// as a snapshot.
TEST(ShareableSnapshot, KeepsOfAContainerOnlyWhatIsReadAndLeavesOutTheLastAppliedManifest) {
  const Json file = Json::parse(R"({
    "node": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
             "status": {"allocatable": {"cpu": "2", "memory": "4Gi"}}},
    "pods": [{"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "a", "namespace": "ns", "uid": "u",
                           "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{secret}",
                                           "keep": "me"}},
              "spec": {"initContainers": [{"name": "i", "env": [{"name": "T", "value": "s3cret"}]}],
                       "containers": [{"name": "c", "env": [
                           {"name": "PASSWORD", "value": "hunter2"},
                           {"name": "FROM", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
                         "args": ["--token=t0ps3cret"], "command": ["run", "--pw=swordfish"],
                         "resources": {"requests": {"cpu": "500m"}}}]},
              "status": {"phase": "Running", "qosClass": "Burstable"}}],
    "metrics": {"ageSeconds": 1, "node": {"cpu": "1", "memory": "1Gi"}, "pods": {}}})");
  auto snap = snapshot::parse_snapshot(file, "file");
  ASSERT_TRUE(snap.ok()) << snap.error().message;
  const Json shared = snapshot::shareable_snapshot_json(*snap);
  const std::string text = shared.dump();
  for (const char* secret : {"hunter2", "s3cret", "{secret}", "t0ps3cret", "swordfish"})
    EXPECT_EQ(text.find(secret), std::string::npos) << secret;
  const Json& c = shared["pods"][0]["spec"]["containers"][0];
  EXPECT_EQ(c, Json::parse(R"({"name": "c", "resources": {"requests": {"cpu": "500m"}}})"));
  EXPECT_EQ(shared["pods"][0]["metadata"]["annotations"]["keep"], "me");
  auto again = snapshot::parse_snapshot(shared, "served");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->pods.at(0).request.cpu_milli, 500);
}

}  // namespace
}  // namespace daemon_snapshot_test
}  // namespace gleaner::agent::test
