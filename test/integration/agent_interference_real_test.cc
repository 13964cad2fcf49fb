// The interference rule end to end: an LS pod that has to wait for a CPU held by BE work
// shows a high run-queue latency p99 in the eBPF probe, and the running agent tightens the
// BE quota below what usage-based suppression alone would allow.
#include <functional>
#include <thread>

#include <gtest/gtest.h>
#include <sched.h>

#include "agent/bpf/sched_probe.h"
#include "cgroup/cgroup_fs.h"
#include "test/support/colocated_node.h"
#include "test/support/eventually.h"
#include "test/support/in_process_agent.h"

namespace gleaner::agent {
namespace {
using namespace std::chrono_literals;
using cgroup::Resource;

void pin_to_cpu0(pid_t pid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  ASSERT_EQ(::sched_setaffinity(pid, sizeof(set), &set), 0);
}

// Runs the agent for `run_for` and returns the lowest BE quota it set (-1: never limited).
int64_t lowest_be_quota(bool ebpf, std::chrono::milliseconds run_for) {
  // Threshold 100%: usage-based suppression leaves BE about a core on this 2-CPU node.
  gleaner::testing::ColocatedNode node({.ls_containers = "[]",
                                        .be_containers = "[]",
                                        .threshold_config = R"({"clusterStrategy":{"enable":true,
    "cpuSuppressThresholdPercent":100,"cpuSuppressPolicy":"cfsQuota"}})"});
  pin_to_cpu0(node.scratch().spawn_busy(node.be_pod()));
  // The LS pod needs little CPU (2 ms every 10 ms) but needs it at once: sharing CPU 0 with a
  // BE spinner makes each wake-up wait, which usage alone does not show.
  pin_to_cpu0(node.scratch().spawn_periodic(node.ls_pod(), std::chrono::milliseconds(2),
                                            std::chrono::milliseconds(10)));
  const std::string& be_qos = node.be_qos();
  DaemonOptions opt = gleaner::testing::agent_options(node);
  opt.interval = 200ms;
  opt.ebpf = ebpf;
  opt.interference_runq_p99_bound = "2ms";
  cgroup::CgroupFs fs(node.root(), node.scratch().version());
  auto agent = std::make_unique<gleaner::testing::InProcessAgent>(opt);
  int64_t lowest = -1;
  auto end = std::chrono::steady_clock::now() + run_for;
  // Sample the quota until the end (polling lightly: this process counts as system usage).
  gleaner::testing::eventually(
      [&] {
        auto q = fs.read_int(Resource::kCpuQuota, be_qos);
        if (q.ok() && *q > 0 && (lowest < 0 || *q < lowest)) lowest = *q;
        return std::chrono::steady_clock::now() >= end;
      },
      run_for + std::chrono::seconds(1), std::chrono::milliseconds(20));
  agent->stop();
  return lowest;
}

TEST(AgentInterferenceReal, LsRunQueueLatencyTightensBeBeyondUsageRules) {
  auto reason = gleaner::testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  if (!bpf::sched_probe_built())
    GTEST_SKIP() << "built without eBPF: " << bpf::sched_probe_build_reason();
  if (auto probe = bpf::SchedProbe::open(); !probe) {
    GTEST_SKIP() << "eBPF probe unavailable: " << probe.error().message;
  }
  const int64_t usage_only = lowest_be_quota(/*ebpf=*/false, 3s);
  const int64_t with_signal = lowest_be_quota(/*ebpf=*/true, 3s);
  // Usage rules alone leave BE most of the node (LS uses a fifth of a core). With the
  // signal, every pass takes one more step (20000 us on 2 CPUs) off the ceiling while LS
  // keeps waiting, down towards the 2000 us floor.
  EXPECT_TRUE(usage_only < 0 || usage_only >= 60000) << "usage-only lowest " << usage_only;
  ASSERT_GT(with_signal, 0) << "the agent never limited BE";
  EXPECT_LE(with_signal, 20000) << "usage-only lowest " << usage_only;
  if (usage_only > 0) {
    EXPECT_LT(with_signal, usage_only);
  }
}

}  // namespace
}  // namespace gleaner::agent
