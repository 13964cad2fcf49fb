// The agent's pod sampling and daemon loop on the real cgroup filesystem.
#include <chrono>
#include <cstdio>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "agent/daemon/daemon.h"
#include "agent/metrics/pod_sampler.h"
#include "cgroup/layout.h"
#include "common/file_io.h"
#include "common/json_util.h"
#include "test/support/scratch_cgroup.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent {
namespace {
using namespace std::chrono_literals;

class AgentReal : public ::testing::Test {
 protected:
  void SetUp() override {
    auto reason = gleaner::testing::real_cgroup_skip_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

int64_t waiting_ns(pid_t pid) {
  auto text = read_file("/proc/" + std::to_string(pid) + "/schedstat");
  long on_cpu = 0;  // NOLINT(google-runtime-int)
  long waited = 0;  // NOLINT(google-runtime-int)
  if (text.ok()) std::sscanf(text->c_str(), "%ld %ld", &on_cpu, &waited);
  return waited;
}

TEST_F(AgentReal, MeasuresABusyPodAndDropsAVanishedOne) {
  gleaner::testing::ScratchCgroups scratch;
  cgroup::KubeletLayout layout(cgroup::CgroupDriver::kCgroupfs);
  const std::string busy = layout.pod_dir(cgroup::KubeQos::kBestEffort, "busy");
  const std::string doomed = layout.pod_dir(cgroup::KubeQos::kBurstable, "doomed");
  scratch.mkdir(busy);
  scratch.mkdir(doomed);
  pid_t child = scratch.spawn_busy(busy);
  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  PodSampler sampler(fs);
  std::vector<PodCgroup> pods = {{"spark/exec-1", busy}, {"web/api-0", doomed}};

  auto t0 = std::chrono::steady_clock::now();
  int64_t wait0 = waiting_ns(child);
  auto first = sampler.sample(pods, t0);
  ASSERT_EQ(first.pods.size(), 2u);
  EXPECT_FALSE(first.pods[0].cpu_valid);  // no delta yet

  gleaner::testing::measurement_window(1000ms);
  scratch.rmdir(doomed);  // the pod is deleted between two passes
  auto t1 = std::chrono::steady_clock::now();
  double waited = static_cast<double>(waiting_ns(child) - wait0) /
                  std::chrono::duration<double, std::nano>(t1 - t0).count();
  auto second = sampler.sample(pods, t1);
  ASSERT_EQ(second.pods.size(), 1u);
  EXPECT_EQ(second.vanished, std::vector<std::string>{"web/api-0"});
  ASSERT_TRUE(second.pods[0].cpu_valid);
  // A spinner uses one core, less the time other load on this machine made it wait.
  EXPECT_NEAR(static_cast<double>(second.pods[0].cpu_milli) / 1000.0, 1.0 - waited, 0.1)
      << "waited " << waited;
}

TEST_F(AgentReal, DaemonComputesBatchFromMeasuredPods) {
  gleaner::testing::ScratchCgroups scratch;
  cgroup::KubeletLayout layout(cgroup::CgroupDriver::kCgroupfs);
  scratch.mkdir(layout.pod_dir(cgroup::KubeQos::kBurstable, "ls-uid"));
  scratch.spawn_busy(layout.pod_dir(cgroup::KubeQos::kBurstable, "ls-uid"));
  gleaner::testing::TempDir files;
  files.write("pods.json", R"({"kind":"PodList","items":[{"metadata":{"name":"api-0",
    "namespace":"web","uid":"ls-uid"},"spec":{"containers":[{"name":"c","resources":{
    "requests":{"cpu":"500m","memory":"64Mi"},"limits":{"cpu":"2","memory":"1Gi"}}}]},
    "status":{"phase":"Running","qosClass":"Burstable"}}]})");
  files.write("node.json", R"({"metadata":{"name":"node-a"},"status":{
    "capacity":{"cpu":"8","memory":"32Gi"},"allocatable":{"cpu":"8","memory":"32Gi"}}})");
  files.write("config/colocation-config", R"({"enable": true})");
  DaemonOptions opt;
  opt.cgroup_root = scratch.root();
  opt.pods_file = files / "pods.json";
  opt.node_file = files / "node.json";
  opt.config_dir = files / "config";
  opt.metrics_addr = "127.0.0.1:0";
  opt.interval = 100ms;
  opt.max_ticks = 5;
  boost::asio::io_context io;
  auto daemon = Daemon::create(io, opt);
  ASSERT_TRUE(daemon.ok()) << daemon.error().describe();
  (*daemon)->start();
  io.run();  // returns when max_ticks passes have run and the daemon stopped
  auto calc = parse_json((*daemon)->last_calc_json(), "calc");
  ASSERT_TRUE(calc.ok());
  // One high-priority pod measured; the batch capacity takes its usage out of 8 CPUs.
  EXPECT_EQ((*calc)["hpPods"], 1);
  int64_t hp_used = (*calc)["cpu"]["hpUsed"];
  EXPECT_GT(hp_used, 300);
  EXPECT_LT(hp_used, 1200);
  EXPECT_EQ((*calc)["cpu"]["batch"].get<int64_t>(),
            8000 - 3200 - (*calc)["cpu"]["systemUsed"].get<int64_t>() - hp_used);
}

}  // namespace
}  // namespace gleaner::agent
