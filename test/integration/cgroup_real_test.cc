// The cgroup layer against the real cgroup filesystem of this machine: a busy process in
// a scratch pod cgroup is measured, throttled by a written quota, restored, and removed.
#include <chrono>
#include <cstdio>

#include <gtest/gtest.h>
#include <unistd.h>

#include "cgroup/cgroup_fs.h"
#include "cgroup/executor.h"
#include "cgroup/layout.h"
#include "common/file_io.h"
#include "test/support/scratch_cgroup.h"

namespace gleaner {
namespace {
using namespace std::chrono_literals;
using cgroup::Resource;
using testing::ScratchCgroups;

class RealCgroup : public ::testing::Test {
 protected:
  void SetUp() override {
    auto reason = testing::real_cgroup_skip_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

// /proc/<pid>/schedstat: ns on CPU and ns spent runnable but waiting, the kernel's own
// per-task figures.
struct TaskTimes {
  int64_t on_cpu_ns = 0;
  int64_t waiting_ns = 0;
};
TaskTimes task_times(pid_t pid) {
  auto text = read_file("/proc/" + std::to_string(pid) + "/schedstat");
  TaskTimes t;
  if (text.ok()) std::sscanf(text->c_str(), "%ld %ld", &t.on_cpu_ns, &t.waiting_ns);
  return t;
}

TEST_F(RealCgroup, DetectsThisMachinesHierarchy) {
  auto version = cgroup::detect_version("/sys/fs/cgroup");
  ASSERT_TRUE(version.ok()) << version.error().message;
  ScratchCgroups scratch;
  // The symlink root is a plain directory: detected by layout, and it must agree.
  auto scratch_version = cgroup::detect_version(scratch.root());
  ASSERT_TRUE(scratch_version.ok()) << scratch_version.error().message;
  EXPECT_EQ(*scratch_version == cgroup::CgroupVersion::kV2, *version == cgroup::CgroupVersion::kV2);
}

TEST_F(RealCgroup, MeasuresThrottlesAndRestoresABusyPod) {
  ScratchCgroups scratch;
  cgroup::KubeletLayout layout(cgroup::CgroupDriver::kCgroupfs);
  const std::string pod = layout.pod_dir(cgroup::KubeQos::kBestEffort, "busy-1");
  scratch.mkdir(pod);
  constexpr size_t kTouched = 64u << 20;
  pid_t child = scratch.spawn_busy(pod, kTouched);

  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  ASSERT_EQ(*cgroup::detect_driver(fs.dir_of(Resource::kCpuShares, "")),
            cgroup::CgroupDriver::kCgroupfs);

  // Usage over a window: the cgroup's accounting agrees with the task's own CPU time,
  // and an unthrottled spinner gets most of a core.
  // A spinner is always runnable, so it uses one core less only the time the kernel kept
  // it waiting for a CPU (other load on this machine): on a quiet machine, 1.0 cores.
  int64_t cg0 = *fs.read_cpu_usage_ns(pod);
  TaskTimes task0 = task_times(child);
  auto t0 = std::chrono::steady_clock::now();
  testing::measurement_window(1000ms);
  int64_t cg1 = *fs.read_cpu_usage_ns(pod);
  TaskTimes task1 = task_times(child);
  double wall_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  double cores = static_cast<double>(cg1 - cg0) / wall_ns;
  double waited = static_cast<double>(task1.waiting_ns - task0.waiting_ns) / wall_ns;
  EXPECT_NEAR(static_cast<double>(cg1 - cg0),
              static_cast<double>(task1.on_cpu_ns - task0.on_cpu_ns),
              0.05 * static_cast<double>(task1.on_cpu_ns - task0.on_cpu_ns));
  EXPECT_NEAR(cores, 1.0 - waited, 0.1) << "waited " << waited << " of the window for a CPU";

  auto working_set = fs.read_memory_working_set(pod);
  ASSERT_TRUE(working_set.ok()) << working_set.error().message;
  // memcg statistics are flushed from per-CPU batches, so allow a few pages of lag.
  EXPECT_GE(*working_set, static_cast<int64_t>(kTouched) * 95 / 100);
  EXPECT_LT(*working_set, static_cast<int64_t>(kTouched) + (32 << 20));

  // 20% of a core through the executor: the task is throttled and slows to ~0.2 cores.
  cgroup::WriteExecutor exec(fs);
  auto report = exec.apply({{Resource::kCpuQuota, pod, "20000", "test-throttle"}});
  ASSERT_EQ(report.written.size(), 1u);
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, pod), 20000);
  auto th0 = *fs.read_cpu_throttle(pod);
  int64_t a = *fs.read_cpu_usage_ns(pod);
  t0 = std::chrono::steady_clock::now();
  testing::measurement_window(1000ms);
  int64_t b = *fs.read_cpu_usage_ns(pod);
  auto th1 = *fs.read_cpu_throttle(pod);
  wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  double throttled_cores = static_cast<double>(b - a) / wall_ns;
  EXPECT_GT(th1.nr_throttled, th0.nr_throttled);
  EXPECT_LT(throttled_cores, 0.25);
  EXPECT_GT(throttled_cores, 0.1);

  // Restore puts back what was found: unlimited.
  exec.restore_all();
  EXPECT_EQ(*fs.read_int(Resource::kCpuQuota, pod), cgroup::kUnlimited);

  // The pod goes away: reads and writes report it as routine, nothing throws.
  scratch.kill_child(child);
  scratch.rmdir(pod);
  EXPECT_EQ(fs.read_cpu_usage_ns(pod).error().code, ErrorCode::kNotFound);
  auto gone = exec.apply({{Resource::kCpuQuota, pod, "20000", "test"}});
  EXPECT_TRUE(gone.written.empty());
  EXPECT_EQ(exec.counters().at("cpu_quota").vanished, 1);
}

TEST_F(RealCgroup, CpusetNarrowAndWidenKeepsChildrenInsideParents) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs 2 CPUs";
  ScratchCgroups scratch;
  scratch.mkdir("kubepods/besteffort/podx");
  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  cgroup::WriteExecutor exec(fs);
  // v1 copies the parent's CPUs into a new cpuset; v2 leaves it empty (inherit).
  const auto found = *fs.read_cpuset("kubepods/besteffort/podx");
  auto narrow = exec.apply({{Resource::kCpusetCpus, "kubepods/besteffort", "1", "t"},
                            {Resource::kCpusetCpus, "kubepods/besteffort/podx", "1", "t"}});
  EXPECT_TRUE(narrow.failed.empty()) << narrow.failed[0].second.message;
  // Disjoint move 1 -> 0 goes through the union, which the kernel accepts.
  auto move = exec.apply({{Resource::kCpusetCpus, "kubepods/besteffort", "0", "t"},
                          {Resource::kCpusetCpus, "kubepods/besteffort/podx", "0", "t"}});
  EXPECT_TRUE(move.failed.empty()) << move.failed[0].second.message;
  EXPECT_EQ(*fs.read_cpuset("kubepods/besteffort/podx"), std::vector<int>{0});
  auto restored = exec.restore_all();
  EXPECT_TRUE(restored.failed.empty());
  EXPECT_EQ(*fs.read_cpuset("kubepods/besteffort/podx"), found);
}

TEST_F(RealCgroup, RestoringCpuIdlePutsBackTheWeightKubeletSet) {
  ScratchCgroups scratch;
  const std::string pod = "kubepods/besteffort/pod-idle";
  scratch.mkdir(pod);
  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  if (!fs.path_of(Resource::kCpuIdle, pod).ok()) GTEST_SKIP() << "kernel has no cpu.idle";
  // kubelet's BestEffort pod weight (cpu.shares 2; on v2 the converted cpu.weight 1).
  cgroup::WriteExecutor kubelet(fs);
  ASSERT_TRUE(kubelet.apply({{Resource::kCpuShares, pod, "2", "kubelet"}}).failed.empty());
  const std::string kubelet_weight = *read_file(*fs.path_of(Resource::kCpuShares, pod));

  cgroup::WriteExecutor exec(fs);
  auto idle = exec.apply({{Resource::kCpuIdle, pod, "1", "test"}});
  ASSERT_TRUE(idle.failed.empty()) << idle.failed[0].second.message;
  // The kernel now refuses weight writes to the group.
  EXPECT_FALSE(write_file(*fs.path_of(Resource::kCpuShares, pod), "2").ok());

  auto restored = exec.restore_all();
  EXPECT_TRUE(restored.failed.empty()) << restored.failed[0].second.message;
  EXPECT_EQ(*fs.read_int(Resource::kCpuIdle, pod), 0);
  // Leaving idle alone would reset the weight to the kernel's default.
  EXPECT_EQ(*read_file(*fs.path_of(Resource::kCpuShares, pod)), kubelet_weight);
}

TEST_F(RealCgroup, RestoringAGroupToIdleWritesNoWeight) {
  ScratchCgroups scratch;
  const std::string pod = "kubepods/besteffort/pod-was-idle";
  scratch.mkdir(pod);
  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  if (!fs.path_of(Resource::kCpuIdle, pod).ok()) GTEST_SKIP() << "kernel has no cpu.idle";
  // Found idle (left so by an earlier agent); this one turns it off and sets a weight.
  ASSERT_TRUE(write_file(*fs.path_of(Resource::kCpuIdle, pod), "1").ok());
  cgroup::WriteExecutor exec(fs);
  auto off = exec.apply({{Resource::kCpuIdle, pod, "0", "test"}});
  ASSERT_TRUE(off.failed.empty()) << off.failed[0].second.message;
  auto weight = exec.apply({{Resource::kCpuShares, pod, "2", "test"}});
  ASSERT_TRUE(weight.failed.empty()) << weight.failed[0].second.message;

  // Back to idle, where the kernel fixes the weight: no weight write is attempted.
  auto restored = exec.restore_all();
  EXPECT_TRUE(restored.failed.empty()) << restored.failed[0].second.message;
  EXPECT_EQ(restored.written.size(), 1u);
  EXPECT_EQ(*fs.read_int(Resource::kCpuIdle, pod), 1);
}

}  // namespace
}  // namespace gleaner
