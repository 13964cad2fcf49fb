// The running agent enforcing CPU suppression on real cgroups: BE is throttled when an LS
// pod gets busy, a value reset by hand is re-asserted, and stopping restores every value.
#include <chrono>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "agent/daemon/daemon.h"
#include "cgroup/cgroup_fs.h"
#include "common/file_io.h"
#include "test/support/colocated_node.h"
#include "test/support/eventually.h"
#include "test/support/in_process_agent.h"

namespace gleaner::agent {
namespace {
using gleaner::testing::eventually;
using namespace std::chrono_literals;
using cgroup::Resource;

TEST(AgentEnforceReal, SuppressesBeReassertsDriftAndRestoresOnStop) {
  auto reason = gleaner::testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  gleaner::testing::ColocatedNode node({.threshold_config = R"({"clusterStrategy":{"enable":true,
    "cpuSuppressThresholdPercent":65,"cpuSuppressPolicy":"cfsQuota"}})"});
  node.scratch().spawn_busy(node.be_pod());
  node.scratch().spawn_busy(node.ls_pod());  // the LS surge: one core of 2 busy outside BE
  const std::string& be_qos = node.be_qos();
  DaemonOptions opt = gleaner::testing::agent_options(node);
  opt.interval = 200ms;
  opt.fast_interval = 50ms;

  cgroup::CgroupFs fs(node.root(), node.scratch().version());
  const auto original_quota = *fs.read_int(Resource::kCpuQuota, be_qos);
  ASSERT_EQ(original_quota, cgroup::kUnlimited);

  auto agent = std::make_unique<gleaner::testing::InProcessAgent>(opt);

  auto be_quota = [&] { return fs.read_int(Resource::kCpuQuota, be_qos).value_or(-2); };
  // 2 CPUs x 65% - ~1 core of LS - system: well under one core, so BE gets a finite quota.
  EXPECT_TRUE(eventually([&] { return be_quota() > 0 && be_quota() < 100000; }, 5s))
      << "BE quota " << be_quota();

  // Someone (kubelet) resets the value: the agent puts it back within a second.
  const auto reset = cgroup::file_from_logical(Resource::kCpuQuota, fs.version(), "-1",
                                               *fs.read_raw(Resource::kCpuQuota, be_qos));
  ASSERT_TRUE(write_file(*fs.path_of(Resource::kCpuQuota, be_qos), *reset).ok());
  EXPECT_TRUE(eventually([&] { return be_quota() > 0; }, 1s)) << "not re-asserted";

  agent->stop();
  EXPECT_EQ(be_quota(), original_quota);
}

}  // namespace
}  // namespace gleaner::agent
