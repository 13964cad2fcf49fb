#include "agent/metrics/fast_sampler.h"

#include <gtest/gtest.h>

#include "test/support/temp_tree.h"

namespace gleaner::agent {
namespace {
using gleaner::testing::TempDir;
using namespace std::chrono_literals;

const auto kStart = std::chrono::steady_clock::time_point{} + 1h;

// A cgroup v1 node in a scratch folder: /proc/stat and the kubepods counters the sampler reads.
struct FakeNode {
  TempDir t;
  cgroup::CgroupFs fs{t / "cg", cgroup::CgroupVersion::kV1};
  cgroup::KubeletLayout layout{cgroup::CgroupDriver::kCgroupfs};

  FastSampler sampler(std::chrono::milliseconds window) {
    return FastSampler(fs, layout, t / "proc", 4, window);
  }
  void write_counters(uint64_t busy, uint64_t idle, int64_t kubepods_ns,
                      int64_t besteffort_ns) const {
    t.write("proc/stat",
            "cpu  " + std::to_string(busy) + " 0 0 " + std::to_string(idle) + " 0 0 0 0 0 0\n");
    t.write("cg/cpuacct/kubepods/cpuacct.usage", std::to_string(kubepods_ns) + "\n");
    t.write("cg/cpuacct/kubepods/besteffort/cpuacct.usage", std::to_string(besteffort_ns) + "\n");
  }
};

TEST(FastSampler, NonBeUsageIsKubepodsMinusBesteffort) {
  FakeNode n;
  n.write_counters(100, 100, 0, 0);
  FastSampler sampler(n.fs, n.layout, n.t / "proc", 4);
  const auto t0 = kStart;
  EXPECT_FALSE(sampler.sample(t0).has_value());
  // 50 ms later: kubepods used 120 ms of CPU, of which besteffort 20 ms -> 2 cores non-BE.
  n.write_counters(130, 110, 120'000'000, 20'000'000);
  auto s = sampler.sample(t0 + 50ms);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->non_be_cpu_milli, 2000);
  EXPECT_EQ(s->node_cpu_milli, 3000);  // 30 busy of 40 ticks on 4 CPUs
}

TEST(FastSampler, SurgesCountAtOnceDipsOnlyAfterTheWindow) {
  FakeNode n;
  FastSampler sampler = n.sampler(200ms);
  const auto t0 = kStart;
  int64_t kubepods = 0;
  uint64_t ticks = 0;
  auto step = [&](int ms, int64_t non_be_cores_milli) {
    kubepods += non_be_cores_milli * 1000 * 50;  // ns of non-BE CPU over 50 ms
    ticks += 20;
    n.write_counters(ticks / 2, ticks / 2, kubepods, 0);
    return sampler.sample(t0 + std::chrono::milliseconds(ms));
  };
  step(0, 0);
  EXPECT_EQ(step(50, 500)->non_be_cpu_milli, 500);
  EXPECT_EQ(step(100, 3000)->non_be_cpu_milli, 3000);  // surge: at once
  EXPECT_EQ(step(150, 500)->non_be_cpu_milli, 3000);   // dip: held within the window
  EXPECT_EQ(step(250, 500)->non_be_cpu_milli, 3000);
  EXPECT_EQ(step(350, 500)->non_be_cpu_milli, 500);  // the surge left the window
}

TEST(FastSampler, AnEarlySampleTakesItsFigureOverTheMinimumSpanAndNotedFiguresCount) {
  FakeNode n;
  FastSampler sampler = n.sampler(200ms);
  const auto t0 = kStart;
  n.write_counters(10, 10, 0, 0);
  sampler.sample(t0);
  // 50 ms at 1 core, then a counter that moved by a whole 4 ms tick within 2 ms: over those
  // 2 ms alone that would read as 2 cores.
  n.write_counters(20, 20, 50'000'000, 0);
  EXPECT_EQ(sampler.sample(t0 + 50ms)->non_be_cpu_milli, 1000);
  n.write_counters(21, 21, 54'000'000, 0);
  auto early = sampler.sample(t0 + 52ms);
  ASSERT_TRUE(early.has_value());
  // Over the 52 ms since t0: 54 ms of CPU.
  EXPECT_EQ(early->non_be_cpu_milli, 1038);
  // A figure the probe measured counts in the maximum for its hold (200 ms), not for the
  // whole window as sampled figures do.
  sampler.note_non_be(t0 + 53ms, 1800);
  n.write_counters(30, 30, 100'000'000, 0);
  auto held = sampler.sample(t0 + 100ms);
  EXPECT_EQ(held->non_be_cpu_milli, 1800);
  // The counters' own figure stays apart: the wake-up bound is re-armed from it.
  EXPECT_EQ(held->non_be_counted_milli, 1038);
  n.write_counters(40, 40, 150'000'000, 0);
  EXPECT_EQ(sampler.sample(t0 + 150ms)->non_be_cpu_milli, 1800);
  n.write_counters(50, 50, 200'000'000, 0);
  // The noted figure has gone; the largest sampled one within the window stands.
  EXPECT_EQ(sampler.sample(t0 + 260ms)->non_be_cpu_milli, 1000);
}

TEST(FastSampler, MissingCgroupGivesNoSample) {
  TempDir t;
  t.write("proc/stat", "cpu  1 0 0 1 0 0 0 0 0 0\n");
  cgroup::CgroupFs fs(t / "cg", cgroup::CgroupVersion::kV1);
  FastSampler sampler(fs, cgroup::KubeletLayout(cgroup::CgroupDriver::kCgroupfs), t / "proc", 2);
  auto now = std::chrono::steady_clock::time_point{} + 1h;
  EXPECT_FALSE(sampler.sample(now).has_value());
  EXPECT_FALSE(sampler.sample(now + 50ms).has_value());
}

}  // namespace
}  // namespace gleaner::agent
