// The running agent enforcing CPU suppression on real cgroups: BE is throttled when an LS
// pod gets busy, a value reset by hand is re-asserted, and stopping restores every value.
#include <chrono>
#include <functional>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include "agent/daemon/daemon.h"
#include "cgroup/cgroup_fs.h"
#include "cgroup/layout.h"
#include "common/file_io.h"
#include "test/support/eventually.h"
#include "test/support/scratch_cgroup.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent {
namespace {
using gleaner::testing::eventually;
using namespace std::chrono_literals;
using cgroup::Resource;

TEST(AgentEnforceReal, SuppressesBeReassertsDriftAndRestoresOnStop) {
  auto reason = gleaner::testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  gleaner::testing::ScratchCgroups scratch;
  cgroup::KubeletLayout layout(cgroup::CgroupDriver::kCgroupfs);
  const std::string be_qos = layout.qos_dir(cgroup::KubeQos::kBestEffort);
  const std::string ls_pod = layout.pod_dir(cgroup::KubeQos::kBurstable, "ls-uid");
  const std::string be_pod = layout.pod_dir(cgroup::KubeQos::kBestEffort, "be-uid");
  scratch.mkdir(ls_pod);
  scratch.mkdir(be_pod);
  scratch.spawn_busy(be_pod);
  scratch.spawn_busy(ls_pod);  // the LS surge: one core of 2 busy outside BE

  gleaner::testing::TempDir files;
  files.write("pods.json", R"({"items":[
    {"metadata":{"name":"api-0","namespace":"web","uid":"ls-uid"},
     "spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]},
     "status":{"phase":"Running","qosClass":"Burstable"}},
    {"metadata":{"name":"exec-1","namespace":"spark","uid":"be-uid",
                 "labels":{"koordinator.sh/qosClass":"BE"}},
     "spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running","qosClass":"BestEffort"}}]})");
  files.write("config/resource-threshold-config", R"({"clusterStrategy":{"enable":true,
    "cpuSuppressThresholdPercent":65,"cpuSuppressPolicy":"cfsQuota"}})");
  DaemonOptions opt;
  opt.cgroup_root = scratch.root();
  opt.pods_file = files / "pods.json";
  opt.config_dir = files / "config";
  opt.metrics_addr = "";
  opt.interval = 200ms;
  opt.fast_interval = 50ms;
  opt.node_name = "node-a";

  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  const auto original_quota = *fs.read_int(Resource::kCpuQuota, be_qos);
  ASSERT_EQ(original_quota, cgroup::kUnlimited);

  boost::asio::io_context io;
  auto daemon = Daemon::create(io, opt);
  ASSERT_TRUE(daemon.ok()) << daemon.error().describe();
  (*daemon)->start();
  std::thread loop([&] { io.run(); });

  auto be_quota = [&] { return fs.read_int(Resource::kCpuQuota, be_qos).value_or(-2); };
  // 2 CPUs x 65% - ~1 core of LS - system: well under one core, so BE gets a finite quota.
  EXPECT_TRUE(eventually([&] { return be_quota() > 0 && be_quota() < 100000; }, 5s))
      << "BE quota " << be_quota();

  // Someone (kubelet) resets the value: the agent puts it back within a second.
  ASSERT_TRUE(write_file(*fs.path_of(Resource::kCpuQuota, be_qos), "-1").ok());
  EXPECT_TRUE(eventually([&] { return be_quota() > 0; }, 1s)) << "not re-asserted";

  boost::asio::post(io, [&] { (*daemon)->stop(); });
  loop.join();
  EXPECT_EQ(be_quota(), original_quota);
}

}  // namespace
}  // namespace gleaner::agent
