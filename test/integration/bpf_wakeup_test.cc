// The sched probe's wake-up signals against the real kernel: an LS task's wait beyond the
// bound and LS demand beyond the bound each reach user space through the ring buffer's
// file descriptor, nothing is sent while the bounds are off, and signals keep their
// minimum gap.
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>

#include "agent/bpf/sched_probe.h"
#include "cgroup/cgroup_fs.h"
#include "cgroup/layout.h"
#include "common/file_io.h"
#include "test/support/scratch_cgroup.h"

namespace gleaner {
namespace {
using namespace std::chrono_literals;
using agent::bpf::SchedProbe;
using agent::bpf::WakeKind;
using agent::bpf::Wakeup;
using cgroup::Resource;
using testing::ScratchCgroups;

class BpfWakeup : public ::testing::Test {
 protected:
  void SetUp() override {
    auto reason = testing::real_cgroup_skip_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
    if (!agent::bpf::sched_probe_built()) GTEST_SKIP() << agent::bpf::sched_probe_build_reason();
    auto probe = SchedProbe::open();
    ASSERT_TRUE(probe.ok()) << probe.error().describe();
    probe_ = std::move(*probe);
    ASSERT_GE(probe_->wake_fd(), 0) << "no wake-up ring buffer";
    fs_.emplace(scratch_.root(), scratch_.version());
  }

  // Registers a pod directory with the probe; returns its directory as registered.
  std::string track_pod(const std::string& pod) {
    scratch_.mkdir(pod);
    std::string dir = fs_->dir_of(Resource::kCpuShares, pod);
    auto id = probe_->track(dir);
    EXPECT_TRUE(id.ok()) << id.error().describe();
    return dir;
  }

  // Wake-ups of `kind` that arrive within `deadline`, waiting on the descriptor as the
  // agent does; returns as soon as one has come.
  std::vector<Wakeup> wait_for(WakeKind kind, std::chrono::milliseconds deadline) {
    const auto until = std::chrono::steady_clock::now() + deadline;
    std::vector<Wakeup> seen;
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{probe_->wake_fd(), POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left.count()))) <= 0) continue;
      for (auto& w : probe_->drain_wakeups())
        if (w.kind == kind) seen.push_back(std::move(w));
      if (!seen.empty()) break;
    }
    return seen;
  }

  ScratchCgroups scratch_;
  std::optional<cgroup::CgroupFs> fs_;
  std::unique_ptr<SchedProbe> probe_;
  cgroup::KubeletLayout layout_{cgroup::CgroupDriver::kCgroupfs};
};

TEST_F(BpfWakeup, AnLsWaitBeyondTheBoundWakesTheReaderAndNothingIsSentWhileOff) {
  const std::string ls = track_pod(layout_.pod_dir(cgroup::KubeQos::kBurstable, "wake-ls"));
  const std::string be = layout_.pod_dir(cgroup::KubeQos::kBestEffort, "wake-be");
  scratch_.mkdir(be);
  const int cpu = static_cast<int>(std::thread::hardware_concurrency()) - 1;
  // Two spinners on one CPU: each waits about a scheduler slice (milliseconds) each time.
  ASSERT_TRUE(testing::pin_to_cpu(scratch_.spawn_busy(ls), cpu));
  ASSERT_TRUE(testing::pin_to_cpu(scratch_.spawn_busy(be), cpu));

  // Bounds off (as opened): the waits happen, no wake-up is sent.
  testing::measurement_window(300ms);
  EXPECT_TRUE(probe_->drain_wakeups().empty());

  probe_->set_wake({.runq_wait_bound = 500us});
  auto seen = wait_for(WakeKind::kRunqWait, 5s);
  ASSERT_FALSE(seen.empty()) << "no wake-up within 5 s";
  EXPECT_EQ(seen.front().dir, ls);
  EXPECT_GE(seen.front().value, 500us);

  // Off again: whatever was queued meanwhile is taken, then nothing more comes.
  probe_->set_wake({});
  (void)probe_->drain_wakeups();
  testing::measurement_window(300ms);
  EXPECT_TRUE(probe_->drain_wakeups().empty());
  EXPECT_EQ(probe_->wakeups_lost(), 0u);
}

TEST_F(BpfWakeup, LsDemandBeyondTheBoundWakesTheReaderOnceItIsReached) {
  const std::string ls = track_pod(layout_.pod_dir(cgroup::KubeQos::kBurstable, "demand-ls"));
  scratch_.spawn_busy(ls);  // one CPU's worth: 1000 millicores

  // A bound one spinner cannot reach: no signal.
  probe_->set_wake({.demand_millicores = 2500});
  testing::measurement_window(300ms);
  EXPECT_TRUE(probe_->drain_wakeups().empty());

  probe_->set_wake({.demand_millicores = 400});
  auto seen = wait_for(WakeKind::kDemand, 5s);
  ASSERT_FALSE(seen.empty()) << "no wake-up within 5 s";
  // Sent with the figure: at least the bound, and about the one CPU the spinner uses
  // (each CPU adds its time in whole scheduler ticks, so a window of 7.5 to 10 ms may hold
  // a tick more or less than the spinner ran in it).
  EXPECT_GE(seen.front().demand_millicores(), 400);
  EXPECT_LE(seen.front().demand_millicores(), 2000);
  EXPECT_GE(seen.front().span, 7500us);
  EXPECT_LE(seen.front().span, 10ms);
  EXPECT_TRUE(seen.front().dir.empty());
}

// Demand is what LS wants, not what it got: an LS spinner that BE keeps off its CPU most of
// the time runs about a fifth of a core, but it is runnable all the time, and its waits
// count. Without them no window reaches the bound (run time alone stays near 200 m).
TEST_F(BpfWakeup, LsDemandCountsTheTimeLsWaitedForACpu) {
  const std::string ls = track_pod(layout_.pod_dir(cgroup::KubeQos::kBurstable, "wait-ls"));
  const std::string be = layout_.pod_dir(cgroup::KubeQos::kBestEffort, "wait-be");
  scratch_.mkdir(be);
  // BE's QoS group outweighs LS's four to one on their shared CPU.
  scratch_.set_cpu_shares(layout_.qos_dir(cgroup::KubeQos::kBurstable), 256);
  scratch_.set_cpu_shares(layout_.qos_dir(cgroup::KubeQos::kBestEffort), 1024);
  const int cpu = static_cast<int>(std::thread::hardware_concurrency()) - 1;
  ASSERT_TRUE(testing::pin_to_cpu(scratch_.spawn_busy(ls), cpu));
  ASSERT_TRUE(testing::pin_to_cpu(scratch_.spawn_busy(be), cpu));

  probe_->set_wake({.demand_millicores = 850});
  auto seen = wait_for(WakeKind::kDemand, 5s);
  ASSERT_FALSE(seen.empty())
      << "no demand wake-up within 5 s: the LS task's waits were not counted";
  EXPECT_GE(seen.front().demand_millicores(), 850);
}

TEST_F(BpfWakeup, WakeUpsKeepTheirMinimumGap) {
  const std::string ls = track_pod(layout_.pod_dir(cgroup::KubeQos::kBurstable, "gap-ls"));
  scratch_.spawn_busy(ls);
  // Every flush (each scheduler tick of the spinner) would signal; the gap allows one per
  // 50 ms.
  probe_->set_wake({.demand_millicores = 10, .min_gap = 50ms});
  (void)probe_->drain_wakeups();
  const auto start = std::chrono::steady_clock::now();
  testing::measurement_window(1000ms);
  auto got = probe_->drain_wakeups();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const auto most = elapsed / 50ms + 2;
  EXPECT_LE(static_cast<int64_t>(got.size()), static_cast<int64_t>(most));
  EXPECT_GE(got.size(), 5u) << "a spinner over a 10 millicore bound signals every gap";
  // Two CPUs racing on the same moment may both send (harmless); the gap holds otherwise.
  int closer = 0;
  for (size_t i = 1; i < got.size(); ++i) {
    EXPECT_EQ(got[i].kind, WakeKind::kDemand);
    if (got[i].at - got[i - 1].at < 50ms) ++closer;
  }
  EXPECT_LE(closer, 1);
}

}  // namespace
}  // namespace gleaner
