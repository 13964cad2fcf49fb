// The sched probe sees every LS and BE cgroup of the real kernel's tree (issue #61): an LS
// pod's cgroup made anew at its path is counted again once named again, under its new id
// alone; and tasks in cgroups a container makes, however deep, count as their pod's and
// as BE's as tasks in the container's own cgroup do.
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "agent/bpf/cgroup_level.h"
#include "agent/bpf/sched_probe.h"
#include "cgroup/cgroup_fs.h"
#include "cgroup/layout.h"
#include "common/file_io.h"
#include "test/support/scratch_cgroup.h"

namespace gleaner {
namespace {
using namespace std::chrono_literals;
using agent::bpf::CgroupSchedSample;
using agent::bpf::SchedInterval;
using agent::bpf::SchedProbe;
using cgroup::KubeQos;
using cgroup::Resource;
using testing::ScratchCgroups;

class BpfCgroupTree : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto reason = testing::real_cgroup_skip_reason(); !reason.empty()) GTEST_SKIP() << reason;
    if (!agent::bpf::sched_probe_built()) GTEST_SKIP() << agent::bpf::sched_probe_build_reason();
    fs_ = std::make_unique<cgroup::CgroupFs>(scratch_.root(), scratch_.version());
    const bool v2 = scratch_.version() == cgroup::CgroupVersion::kV2;
    // The scratch hierarchy outweighs the machine's other load on the CPU used, so the
    // waits measured are the ones the test makes.
    ASSERT_TRUE(
        write_file(fs_->dir_of(Resource::kCpuShares, "") + (v2 ? "/cpu.weight" : "/cpu.shares"),
                   v2 ? "10000" : "262144")
            .ok());
    auto opened = SchedProbe::open();
    ASSERT_TRUE(opened.ok()) << opened.error().describe();
    probe_ = std::move(*opened);
  }

  [[nodiscard]] std::string dir(const std::string& relative) const {
    return fs_->dir_of(Resource::kCpuShares, relative);
  }
  // A busy loop in `relative` on the CPU the test contends.
  pid_t spin(const std::string& relative) {
    const pid_t pid = scratch_.spawn_busy(relative);
    EXPECT_TRUE(testing::pin_to_cpu(pid, cpu_)) << "pin " << pid;
    return pid;
  }
  // One window's interval.
  SchedInterval measure() {
    EXPECT_TRUE(probe_->sample().ok());
    testing::measurement_window(1000ms);
    auto interval = probe_->sample();
    EXPECT_TRUE(interval.ok());
    return interval.ok() ? *interval : SchedInterval{};
  }
  static const CgroupSchedSample* find(const SchedInterval& interval, uint64_t id) {
    for (const auto& c : interval.cgroups)
      if (c.cgroup_id == id) return &c;
    return nullptr;
  }
  static std::string describe(const CgroupSchedSample* s) {
    if (s == nullptr) return "not sampled";
    return std::to_string(s->cpu_ns) + " ns on CPU, " + std::to_string(s->runq.count) + " waits, " +
           std::to_string(s->be_runq.count) + " BE-caused";
  }

  ScratchCgroups scratch_;
  cgroup::KubeletLayout layout_{cgroup::CgroupDriver::kCgroupfs};
  std::unique_ptr<cgroup::CgroupFs> fs_;
  std::unique_ptr<SchedProbe> probe_;
  const int cpu_ = static_cast<int>(std::thread::hardware_concurrency()) - 1;
};

// Kubelet makes a pod's cgroup anew at its path: the kernel counts its tasks under the new
// id, which the probe takes when the path is named again, dropping the old one.
TEST_F(BpfCgroupTree, AnLsCgroupMadeAnewIsCountedAgainUnderItsNewIdAlone) {
  const std::string ls = layout_.pod_dir(KubeQos::kBurstable, "anew-ls");
  const std::string other = layout_.pod_dir(KubeQos::kBurstable, "anew-other");
  scratch_.mkdir(ls);
  scratch_.mkdir(other);
  auto first = probe_->track(dir(ls));
  ASSERT_TRUE(first.ok()) << first.error().describe();
  EXPECT_EQ(*probe_->track(dir(ls)), *first);  // named again, unchanged
  spin(other);                                 // untracked: the LS task waits behind it
  pid_t ls_pid = spin(ls);
  {
    const auto interval = measure();
    const auto* s = find(interval, *first);
    ASSERT_NE(s, nullptr);
    EXPECT_GT(s->runq.count, 0U) << describe(s);
  }

  scratch_.kill_child(ls_pid);
  scratch_.rmdir(ls);
  scratch_.mkdir(ls);
  ls_pid = spin(ls);
  auto second = probe_->track(dir(ls));
  ASSERT_TRUE(second.ok()) << second.error().describe();
  ASSERT_NE(*second, *first) << "the kernel gave the new cgroup the old id";
  {
    const auto interval = measure();
    const auto* s = find(interval, *second);
    ASSERT_NE(s, nullptr);
    EXPECT_GT(s->runq.count, 0U) << describe(s);
    EXPECT_GT(s->cpu_ns, 100'000'000) << describe(s);
    EXPECT_EQ(find(interval, *first), nullptr) << "the stale id is still registered";
  }
  EXPECT_TRUE(probe_->untrack(dir(ls)).ok());
  const auto after = measure();
  EXPECT_EQ(find(after, *second), nullptr);
  EXPECT_EQ(find(after, *first), nullptr);

  // Gone with its pod still listed: naming it fails and leaves nothing registered.
  ASSERT_TRUE(probe_->track(dir(ls)).ok());
  scratch_.kill_child(ls_pid);
  scratch_.rmdir(ls);
  EXPECT_FALSE(probe_->track(dir(ls)).ok());
  EXPECT_FALSE(probe_->untrack(dir(ls)).ok());
}

// `levels` cgroups below `relative`, one inside the other, as a container that makes its
// own tree (a CI job running kind, say) has them.
std::string nested(std::string relative, int levels) {
  for (int level = 1; level <= levels; ++level)
    relative += "/n" + std::to_string(level);
  return relative;
}

// A BE busy loop 6 levels below its container takes the CPU from an LS task: each of the
// LS task's wake-ups ends by taking the CPU from BE, first with the LS task in its own
// container's cgroup, then 6 levels below it, where its time and waits are still its
// pod's. Tasks sit in leaves only (cgroup v2 lets no task into a cgroup with children). A
// Guaranteed pod, one level above the Burstable one, is registered too, so the probe reads
// ancestors at two levels.
TEST_F(BpfCgroupTree, TasksFarBelowTheirContainerCountAsTheirPodsAndAsBe) {
  const std::string ls = layout_.pod_dir(KubeQos::kBurstable, "deep-ls");
  const std::string guaranteed = layout_.pod_dir(KubeQos::kGuaranteed, "deep-guaranteed");
  const std::string be = layout_.pod_dir(KubeQos::kBestEffort, "deep-be");
  const std::string ls_shallow = ls + "/shallow";
  const std::string ls_leaf = nested(ls + "/ctr", 6);
  const std::string be_leaf = nested(be + "/ctr", 6);
  scratch_.mkdir(ls_shallow);
  scratch_.mkdir(ls_leaf);
  scratch_.mkdir(be_leaf);
  scratch_.mkdir(guaranteed);
  const auto pod_level = agent::bpf::cgroup_level(dir(ls));
  const auto leaf_level = agent::bpf::cgroup_level(dir(ls_leaf));
  ASSERT_TRUE(pod_level.ok() && leaf_level.ok());
  EXPECT_EQ(*leaf_level, *pod_level + 7);  // through the scratch root's symlinks
  EXPECT_EQ(*agent::bpf::cgroup_level(dir(guaranteed)), *pod_level - 1);
  const auto ls_id = probe_->track(dir(ls));
  ASSERT_TRUE(ls_id.ok()) << ls_id.error().describe();
  ASSERT_TRUE(probe_->track(dir(guaranteed)).ok());
  ASSERT_TRUE(probe_->set_be_cgroup(dir(layout_.qos_dir(KubeQos::kBestEffort))).ok());

  spin(be_leaf);
  const pid_t ls_pid = scratch_.spawn_periodic(ls_shallow, 300us, 2ms);
  for (const std::string& at : {ls_shallow, ls_leaf}) {
    scratch_.move(ls_pid, at);
    // Pinned again: on 6.1 a task moved into a cgroup takes the cpuset's CPUs.
    ASSERT_TRUE(testing::pin_to_cpu(ls_pid, cpu_));
    const auto interval = measure();
    const auto* s = find(interval, *ls_id);
    ASSERT_NE(s, nullptr) << at;
    EXPECT_GT(s->cpu_ns, 10'000'000) << at << ": " << describe(s);
    EXPECT_GT(s->runq.count, 0U) << at << ": " << describe(s);
    EXPECT_GT(s->be_runq.count, s->runq.count / 2) << at << ": " << describe(s);
  }
}

}  // namespace
}  // namespace gleaner
