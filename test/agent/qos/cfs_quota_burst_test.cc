// The CFS quota burst over made-up counters: a throttled LS container's quota grows by 20%
// a pass up to cfsQuotaBurstPercent while the share pool is idle, holds in the cooling
// band, shrinks under overload, never leaves [limit, ceiling]; the pod's quota moves with
// its containers; the token bucket ends a long burst; policy off puts a raised quota back.
#include "agent/qos/cfs_quota_burst.h"

#include <gtest/gtest.h>

#include "agent/qos/cpu_burst.h"
#include "agent/qos/pod_dirs.h"
#include "test/agent/qos/qos_test_util.h"

namespace gleaner::agent::qos {
namespace {

using namespace test;

class CfsQuotaBurst : public ::testing::Test {
 protected:
  // One LS pod, one container limited to 1 CPU (quota 100000 of 100000), on an 8-CPU node
  // using `node_cpu` in total.
  void build(const std::string& node_cpu, std::vector<FakePod> more = {}) {
    FakePod web{.name = "web",
                .uid = "ls1",
                .kube_qos = "Burstable",
                .containers = Json::array({container("a", {}, {{"cpu", "1"}})})};
    more.insert(more.begin(), web);
    snap_ = make_snapshot(FakeNode{.node_cpu_usage = node_cpu}, more);
    dir_ = container_cgroups(layout_, snap_.pods[0]).at(0).second;
    pod_dir_ = pod_cgroup(layout_, snap_.pods[0]);
    reader_.values[{Resource::kCpuQuota, dir_}] = 100000;
    reader_.values[{Resource::kCpuPeriod, dir_}] = 100000;
    reader_.values[{Resource::kCpuQuota, pod_dir_}] = 100000;
    reader_.counters[dir_] = {0, 0};
  }
  // One pass at `now_s` with the container at `usage_s` CPU seconds and `throttled`
  // periods so far; returns the container's and pod's new quotas (absent: unchanged), and
  // takes them as the values in force.
  std::pair<std::optional<int64_t>, std::optional<int64_t>> pass(double now_s, double usage_s,
                                                                 int64_t throttled) {
    reader_.counters[dir_] = {static_cast<int64_t>(usage_s * 1e9), throttled};
    // The quotas, and what the strategy declares it reads beyond them (the counters).
    KnobReads reads;
    reads.add(dir_, {Resource::kCpuQuota, Resource::kCpuPeriod});
    reads.add(pod_dir_, {Resource::kCpuQuota, Resource::kCpuPeriod});
    declare_quota_burst_reads(snap_, layout_, strategy_, reads);
    Plan plan =
        plan_cfs_quota_burst(snap_, layout_, strategy_, reader_.read(reads), now_s, false, memory_);
    std::optional<int64_t> c;
    std::optional<int64_t> p;
    for (const auto& w : plan.writes) {
      EXPECT_EQ(w.resource, Resource::kCpuQuota);
      EXPECT_EQ(w.reason, kReasonCfsQuotaBurst);
      (w.cgroup == dir_ ? c : p) = std::stoll(w.value);
      reader_.values[{Resource::kCpuQuota, w.cgroup}] = std::stoll(w.value);
    }
    return {c, p};
  }
  [[nodiscard]] int64_t quota() const { return reader_.values.at({Resource::kCpuQuota, dir_}); }

  cgroup::KubeletLayout layout_{cgroup::CgroupDriver::kCgroupfs};
  snapshot::NodeSnapshot snap_;
  std::string dir_;
  std::string pod_dir_;
  MapReader reader_;
  std::map<std::string, QuotaBurstMemory> memory_;
  config::CpuBurstStrategy strategy_{.policy = config::CpuBurstPolicy::kCfsQuotaBurstOnly,
                                     .cfs_quota_burst_percent = 150};
};

TEST_F(CfsQuotaBurst, AThrottledContainerGrowsToTheCeilingWhileThePoolIsIdle) {
  build("2");  // 2 of 8 CPUs: 25% < 0.9 * 50%
  EXPECT_EQ(pass(0, 0, 0).first, std::nullopt) << "the first pass only reads the counters";
  auto [c, p] = pass(1, 1, 5);
  EXPECT_EQ(c, 120000);
  EXPECT_EQ(p, 120000) << "the pod's quota moves with its container";
  EXPECT_EQ(pass(2, 2, 9).first, 144000);
  EXPECT_EQ(pass(3, 3, 12).first, 150000) << "capped at 150% of the limit";
  EXPECT_EQ(pass(4, 4, 15).first, std::nullopt);
  EXPECT_EQ(pass(5, 5, 15).first, std::nullopt) << "not throttled: kept";
  EXPECT_EQ(quota(), 150000);
}

TEST_F(CfsQuotaBurst, TheShareGoesDownUnderOverloadAndHoldsWhileCooling) {
  build("4700m");  // 4.7 of 8 = 58.75% busy, above the 50% threshold
  reader_.values[{Resource::kCpuQuota, dir_}] = 150000;
  reader_.values[{Resource::kCpuQuota, pod_dir_}] = 150000;
  pass(0, 0, 0);  // overload lowers even on the first pass
  EXPECT_EQ(quota(), 120000);
  EXPECT_EQ(pass(1, 1, 9).first, 100000) << "throttled, but the node is overloaded; floor";
  EXPECT_EQ(pass(2, 2, 20).first, std::nullopt) << "never below the limit";
  build("3800m");  // 47.5%: in the cooling band (45%..50%)
  pass(0, 0, 0);
  EXPECT_EQ(pass(1, 1, 5).first, std::nullopt) << "throttled while cooling: kept";
}

TEST_F(CfsQuotaBurst, ExclusiveAndBePodsDoNotCountInTheSharePool) {
  FakePod lsr{.name = "db",
              .uid = "lsr",
              .qos_label = "LSR",
              .kube_qos = "Guaranteed",
              .containers = Json::array({container("d", {{"cpu", "4"}}, {{"cpu", "4"}})}),
              .cpu_usage = "3"};
  FakePod be{.name = "spark", .uid = "be", .qos_label = "BE", .cpu_usage = "1"};
  // 5.5 CPUs used; less LSR's 3 and BE's 1 = 1.5 of (8 - 4) = 37.5%: idle for 50%.
  build("5500m", {lsr, be});
  EXPECT_EQ(share_pool_state(snap_, 50), SharePool::kIdle);
  EXPECT_EQ(share_pool_state(snap_, 40), SharePool::kCooling);
  EXPECT_EQ(share_pool_state(snap_, 30), SharePool::kOverload);
}

TEST_F(CfsQuotaBurst, TheBucketEndsALongBurst) {
  build("1");
  strategy_.cfs_quota_burst_period_seconds = 10;  // holds 10 s * 50 = 500 percent-seconds
  pass(0, 0, 0);                                  // starts a quarter full: 125
  pass(1, 1.5, 5);  // 150% for a second: 125 - 50 = 75 left; throttled: up
  EXPECT_EQ(quota(), 120000);
  pass(2, 3.0, 10);  // 25 left: up again
  EXPECT_EQ(quota(), 144000);
  auto [c, p] = pass(3, 4.5, 15);  // -25: empty, down despite the throttling
  EXPECT_EQ(c, 115200);
  pass(5, 5.0, 15);  // 25% for 2 s saves 150: 125 again; not throttled: kept
  EXPECT_EQ(quota(), 115200);
  EXPECT_GT(memory_.at(dir_).tokens, 0);
}

TEST_F(CfsQuotaBurst, PolicyOffPutsARaisedQuotaBackAndLeavesTheRest) {
  build("1");
  strategy_.policy = config::CpuBurstPolicy::kCpuBurstOnly;
  reader_.values[{Resource::kCpuQuota, dir_}] = 144000;
  reader_.values[{Resource::kCpuQuota, pod_dir_}] = 144000;
  auto [c, p] = pass(0, 0, 0);
  EXPECT_EQ(c, 100000);
  EXPECT_EQ(p, 100000);
  EXPECT_EQ(pass(1, 1, 9).first, std::nullopt) << "at the limit's quota: nothing to do";
  EXPECT_TRUE(memory_.empty()) << "nothing kept while the policy is off";
  EXPECT_EQ(reader_.counter_reads, 0) << "no cpu.stat read while the policy is off";
}

TEST_F(CfsQuotaBurst, StaleMetricsGrowNothing) {
  build("1");
  pass(0, 0, 0);
  reader_.counters[dir_] = {1000000000, 5};
  Plan plan = plan_cfs_quota_burst(snap_, layout_, strategy_, reader_, 1, true, memory_);
  EXPECT_TRUE(plan.writes.empty());
}

TEST_F(CfsQuotaBurst, TheStaticBurstStaysAtKubeletsQuotaSoARaisedQuotaCanComeDown) {
  build("1");
  reader_.values[{Resource::kCpuQuota, dir_}] = 144000;
  reader_.values[{Resource::kCpuBurst, dir_}] = 0;
  config::CpuBurstStrategy s{.policy = config::CpuBurstPolicy::kAuto, .cpu_burst_percent = 1000};
  Plan plan = plan_cpu_burst(snap_, layout_, s, reader_);
  ASSERT_FALSE(plan.writes.empty());
  EXPECT_EQ(plan.writes[0].cgroup, dir_);
  EXPECT_EQ(plan.writes[0].value, "100000") << "not the raised 144000";
}

}  // namespace
}  // namespace gleaner::agent::qos
