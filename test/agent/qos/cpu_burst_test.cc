// The CPU burst plan over a reader of made-up values: LS pods with CPU limits get
// cpuBurstPercent of their limit, capped at their quota; other pods and cgroups without the
// file get nothing; the policy none puts 0 back.
#include "agent/qos/cpu_burst.h"

#include <gtest/gtest.h>

#include "agent/qos/pod_dirs.h"
#include "test/agent/qos/qos_test_util.h"

namespace gleaner::agent::qos {
namespace {

using namespace test;

using BurstReader = test::MapReader;

std::map<std::string, std::string> burst_writes(const Plan& plan) {
  std::map<std::string, std::string> out;
  for (const auto& w : plan.writes) {
    EXPECT_EQ(w.resource, Resource::kCpuBurst);
    out[w.cgroup] = w.value;
  }
  return out;
}

TEST(CpuBurst, LsPodsBurstByTheirLimitCappedAtTheQuota) {
  FakePod web{.name = "web",
              .uid = "ls1",
              .kube_qos = "Burstable",
              .containers = Json::array(
                  {container("a", {}, {{"cpu", "2"}}), container("b", {}, {{"cpu", "500m"}})})};
  FakePod spark{.name = "spark",
                .uid = "be1",
                .qos_label = "BE",
                .containers = Json::array({container("x", {}, {{"cpu", "1"}})})};
  auto snap = make_snapshot(FakeNode{}, {web, spark});
  cgroup::KubeletLayout layout(cgroup::CgroupDriver::kCgroupfs);
  const auto dirs = container_cgroups(layout, snap.pods[0]);
  const std::string pod = pod_cgroup(layout, snap.pods[0]);
  BurstReader reader;
  for (const auto& [dir, quota] :
       {std::pair{dirs[0].second, int64_t{200000}}, std::pair{dirs[1].second, int64_t{50000}},
        std::pair{pod, int64_t{250000}}}) {
    reader.values[{Resource::kCpuBurst, dir}] = 0;
    reader.values[{Resource::kCpuQuota, dir}] = quota;
  }
  const std::string be_dir = container_cgroups(layout, snap.pods[1]).at(0).second;
  reader.values[{Resource::kCpuBurst, be_dir}] = 0;
  reader.values[{Resource::kCpuQuota, be_dir}] = 100000;

  config::CpuBurstStrategy s;
  s.policy = config::CpuBurstPolicy::kCpuBurstOnly;
  s.cpu_burst_percent = 50;
  auto w = burst_writes(plan_cpu_burst(snap, layout, s, reader));
  EXPECT_EQ(w[dirs[0].second], "100000");  // 2 CPUs x 100 ms x 50%
  EXPECT_EQ(w[dirs[1].second], "25000");
  EXPECT_EQ(w[pod], "125000");
  EXPECT_FALSE(w.contains(be_dir)) << "BE pods do not burst";
  // 1000%: one quota each, which the kernel allows.
  s.cpu_burst_percent = 1000;
  w = burst_writes(plan_cpu_burst(snap, layout, s, reader));
  EXPECT_EQ(w[dirs[0].second], "200000");
  EXPECT_EQ(w[pod], "250000");
  // Off: back to 0 (kubelet's value).
  s.policy = config::CpuBurstPolicy::kNone;
  w = burst_writes(plan_cpu_burst(snap, layout, s, reader));
  EXPECT_EQ(w[dirs[0].second], "0");
  EXPECT_EQ(w[pod], "0");
}

TEST(CpuBurst, NothingWithoutTheFileOrALimit) {
  FakePod open{.name = "open",
               .uid = "ls2",
               .kube_qos = "Burstable",
               .containers = Json::array({container("a", {{"cpu", "1"}})})};
  auto snap = make_snapshot(FakeNode{}, {open});
  cgroup::KubeletLayout layout(cgroup::CgroupDriver::kCgroupfs);
  const std::string dir = container_cgroups(layout, snap.pods[0]).at(0).second;
  BurstReader reader;
  config::CpuBurstStrategy s;
  s.policy = config::CpuBurstPolicy::kAuto;
  EXPECT_TRUE(plan_cpu_burst(snap, layout, s, reader).writes.empty()) << "no burst file";
  reader.values[{Resource::kCpuBurst, dir}] = 0;
  reader.values[{Resource::kCpuQuota, dir}] = cgroup::kUnlimited;
  EXPECT_EQ(burst_writes(plan_cpu_burst(snap, layout, s, reader))[dir], "0")
      << "no limit: nothing to carry over";
}

}  // namespace
}  // namespace gleaner::agent::qos
