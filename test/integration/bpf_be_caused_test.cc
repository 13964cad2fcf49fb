// BE-caused waits against the real kernel: an LS task that shares its CPU with another LS
// task waits as long as one that shares it with a BE task, but only the second wait is
// counted as BE's (it ends by taking the CPU from the BE task), and only it signals when
// the probe is told to wake on BE-caused waits alone. A BE cgroup made anew is taken when its
// path is named again.
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <sched.h>

#include "agent/bpf/sched_probe.h"
#include "cgroup/cgroup_fs.h"
#include "cgroup/layout.h"
#include "common/file_io.h"
#include "test/support/scratch_cgroup.h"

namespace gleaner {
namespace {
using namespace std::chrono_literals;
using agent::bpf::CgroupSchedSample;
using agent::bpf::SchedProbe;
using cgroup::KubeQos;
using cgroup::Resource;
using testing::ScratchCgroups;

// One window's sample of cgroup `id`.
CgroupSchedSample measure(SchedProbe& probe, uint64_t id) {
  EXPECT_TRUE(probe.sample().ok());
  testing::measurement_window(1000ms);
  auto interval = probe.sample();
  EXPECT_TRUE(interval.ok());
  if (interval.ok()) {
    for (const auto& c : interval->cgroups)
      if (c.cgroup_id == id) return c;
  }
  ADD_FAILURE() << "cgroup " << id << " not sampled";
  return {};
}

std::string describe(const CgroupSchedSample& s) {
  return std::to_string(s.runq.count) + " waits (p99 " +
         std::to_string(s.runq_p99_ns.value_or(-1)) + " ns), " + std::to_string(s.be_runq.count) +
         " BE-caused (p99 over all " + std::to_string(s.be_runq_p99_ns.value_or(-1)) + " ns)";
}

TEST(BpfBeCausedWaits, OnlyWaitsThatEndByTakingTheCpuFromBeAreBes) {
  if (auto reason = testing::real_cgroup_skip_reason(); !reason.empty()) GTEST_SKIP() << reason;
  if (!agent::bpf::sched_probe_built()) GTEST_SKIP() << agent::bpf::sched_probe_build_reason();
  ScratchCgroups scratch;
  cgroup::KubeletLayout layout(cgroup::CgroupDriver::kCgroupfs);
  const std::string ls = layout.pod_dir(KubeQos::kBurstable, "caused-ls");
  const std::string peer = layout.pod_dir(KubeQos::kBurstable, "caused-peer");
  const std::string be = layout.pod_dir(KubeQos::kBestEffort, "caused-be");
  for (const auto& dir : {ls, peer, be})
    scratch.mkdir(dir);
  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  const bool v2 = scratch.version() == cgroup::CgroupVersion::kV2;
  // The scratch hierarchy outweighs the machine's other load on the CPU used.
  ASSERT_TRUE(write_file(fs.dir_of(Resource::kCpuShares, "") + (v2 ? "/cpu.weight" : "/cpu.shares"),
                         v2 ? "10000" : "262144")
                  .ok());
  auto opened = SchedProbe::open();
  ASSERT_TRUE(opened.ok()) << opened.error().describe();
  auto& probe = **opened;
  const uint64_t ls_id = *probe.track(fs.dir_of(Resource::kCpuShares, ls));
  ASSERT_TRUE(
      probe.set_be_cgroup(fs.dir_of(Resource::kCpuShares, layout.qos_dir(KubeQos::kBestEffort)))
          .ok());
  EXPECT_FALSE(probe.set_be_cgroup("/nonexistent/besteffort").ok());
  ASSERT_TRUE(
      probe.set_be_cgroup(fs.dir_of(Resource::kCpuShares, layout.qos_dir(KubeQos::kBestEffort)))
          .ok());
  probe.set_wake({.runq_wait_bound = 1ms, .min_gap = 1ms, .be_caused_only = true});
  const int cpu = static_cast<int>(std::thread::hardware_concurrency()) - 1;

  // An LS spinner beside another LS spinner on one CPU: slice-long waits, none BE's.
  const pid_t ls_pid = scratch.spawn_busy(ls);
  ASSERT_TRUE(testing::pin_to_cpu(ls_pid, cpu)) << "pin " << ls_pid;
  const pid_t peer_pid = scratch.spawn_busy(peer);
  ASSERT_TRUE(testing::pin_to_cpu(peer_pid, cpu)) << "pin " << peer_pid;
  (void)probe.drain_wakeups();
  const auto behind_ls = measure(probe, ls_id);
  const auto ls_wakes = probe.drain_wakeups();
  EXPECT_GT(behind_ls.runq_p99_ns.value_or(0), 500'000.0) << describe(behind_ls);
  EXPECT_EQ(behind_ls.be_runq.count, 0U) << describe(behind_ls);
  ASSERT_TRUE(behind_ls.be_runq_p99_ns.has_value()) << describe(behind_ls);
  EXPECT_LT(*behind_ls.be_runq_p99_ns, 2.0) << describe(behind_ls);  // counted as no wait
  EXPECT_TRUE(ls_wakes.empty()) << ls_wakes.size() << " wake-ups for waits BE did not cause";

  // The same spinner beside a BE spinner of equal weight: the waits are BE's.
  scratch.kill_child(peer_pid);
  const pid_t be_pid = scratch.spawn_busy(be);
  ASSERT_TRUE(testing::pin_to_cpu(be_pid, cpu)) << "pin " << be_pid;
  (void)probe.drain_wakeups();
  const auto behind_be = measure(probe, ls_id);
  const auto be_wakes = probe.drain_wakeups();
  EXPECT_GT(behind_be.be_runq.count, behind_be.runq.count / 2) << describe(behind_be);
  EXPECT_GT(behind_be.be_runq_p99_ns.value_or(0), 500'000.0) << describe(behind_be);
  ASSERT_FALSE(be_wakes.empty()) << "no wake-up for BE-caused waits: " << describe(behind_be);
  for (const auto& w : be_wakes) {
    EXPECT_TRUE(w.be_caused);
    EXPECT_GE(w.value, 1ms);
  }

  // The BE cgroup made anew (kubelet recreating it) has another id: until it is named again
  // no wait is BE's, and naming the same path again takes the new one.
  scratch.kill_child(be_pid);
  scratch.rmdir(be);
  scratch.rmdir(layout.qos_dir(KubeQos::kBestEffort));
  scratch.mkdir(be);
  ASSERT_TRUE(testing::pin_to_cpu(scratch.spawn_busy(be), cpu));
  const auto stale = measure(probe, ls_id);
  EXPECT_EQ(stale.be_runq.count, 0U) << describe(stale);
  ASSERT_TRUE(
      probe.set_be_cgroup(fs.dir_of(Resource::kCpuShares, layout.qos_dir(KubeQos::kBestEffort)))
          .ok());
  const auto renamed = measure(probe, ls_id);
  EXPECT_GT(renamed.be_runq.count, renamed.runq.count / 2) << describe(renamed);
}

}  // namespace
}  // namespace gleaner
