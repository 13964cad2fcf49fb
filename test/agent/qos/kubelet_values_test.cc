#include "agent/qos/kubelet_values.h"

#include <gtest/gtest.h>

namespace gleaner::agent::qos {
namespace {
using cgroup::CgroupDriver;
using cgroup::KubeletLayout;
using cgroup::KubeQos;
using cgroup::Resource;

constexpr const char* kId =
    "containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

kube::Container container(const char* cpu_request, const char* cpu_limit,
                          const char* memory_limit = nullptr) {
  kube::Container c;
  c.name = "c";
  if (cpu_request != nullptr) c.resources.requests["cpu"] = *Quantity::parse(cpu_request);
  if (cpu_limit != nullptr) c.resources.limits["cpu"] = *Quantity::parse(cpu_limit);
  if (memory_limit != nullptr) c.resources.limits["memory"] = *Quantity::parse(memory_limit);
  return c;
}

kube::Pod pod(const char* uid, std::vector<kube::Container> containers, const char* qos) {
  kube::Pod p;
  p.metadata.uid = uid;
  p.metadata.name = uid;
  p.containers = std::move(containers);
  p.qos_class = qos;
  p.container_statuses.push_back({"c", kId});
  return p;
}

class KubeletValues : public ::testing::Test {
 protected:
  KubeletLayout layout_{CgroupDriver::kCgroupfs};
  std::vector<kube::Pod> pods_ = {
      pod("be", {container(nullptr, nullptr)}, "BestEffort"),
      pod("bu", {container("500m", nullptr)}, "Burstable"),
      pod("bl", {container("250m", "1500m", "1Gi")}, "Burstable"),
      pod("gu", {container("2", "2", "2Gi")}, "Guaranteed"),
  };
  KubeletScene scene_{layout_, pods_, "0-7"};

  std::optional<std::string> at(Resource r, const std::string& cgroup) const {
    return kubelet_value(r, cgroup, scene_);
  }
  std::string pod_dir(KubeQos qos, const char* uid) const { return layout_.pod_dir(qos, uid); }
};

// qos_container_manager_linux.go: besteffort 2 shares, no quota; burstable the sum of its
// pods' requests as shares (500m + 250m -> 768).
TEST_F(KubeletValues, QosLevelCgroups) {
  const auto be = layout_.qos_dir(KubeQos::kBestEffort);
  EXPECT_EQ(at(Resource::kCpuQuota, be), "-1");
  EXPECT_EQ(at(Resource::kCpuShares, be), "2");
  EXPECT_EQ(at(Resource::kMemoryLimit, be), "-1");
  const auto burstable = layout_.qos_dir(KubeQos::kBurstable);
  EXPECT_EQ(at(Resource::kCpuShares, burstable), "768");
  EXPECT_EQ(at(Resource::kCpuQuota, burstable), "-1");
  EXPECT_EQ(at(Resource::kCpuQuota, layout_.kubepods_dir()), std::nullopt);
}

// helpers_linux.go ResourceConfigForPod.
TEST_F(KubeletValues, PodLevelFollowsTheSpec) {
  EXPECT_EQ(at(Resource::kCpuShares, pod_dir(KubeQos::kBestEffort, "be")), "2");
  EXPECT_EQ(at(Resource::kCpuQuota, pod_dir(KubeQos::kBestEffort, "be")), "-1");
  EXPECT_EQ(at(Resource::kCpuShares, pod_dir(KubeQos::kBurstable, "bu")), "512");
  EXPECT_EQ(at(Resource::kCpuQuota, pod_dir(KubeQos::kBurstable, "bu")), "-1");
  EXPECT_EQ(at(Resource::kCpuQuota, pod_dir(KubeQos::kBurstable, "bl")), "150000");
  EXPECT_EQ(at(Resource::kMemoryLimit, pod_dir(KubeQos::kBurstable, "bl")), "1073741824");
  EXPECT_EQ(at(Resource::kCpuShares, pod_dir(KubeQos::kGuaranteed, "gu")), "2048");
  EXPECT_EQ(at(Resource::kCpuQuota, pod_dir(KubeQos::kGuaranteed, "gu")), "200000");
  EXPECT_EQ(at(Resource::kCpuQuota, pod_dir(KubeQos::kBurstable, "unknown")), std::nullopt);
}

TEST_F(KubeletValues, ContainerLevelFollowsItsOwnResources) {
  auto be = layout_.container_dir(KubeQos::kBestEffort, "be", kId);
  ASSERT_TRUE(be.ok());
  EXPECT_EQ(at(Resource::kCpuShares, *be), "2");
  EXPECT_EQ(at(Resource::kCpuQuota, *be), "-1");
  auto gu = layout_.container_dir(KubeQos::kGuaranteed, "gu", kId);
  ASSERT_TRUE(gu.ok());
  EXPECT_EQ(at(Resource::kCpuQuota, *gu), "200000");
  EXPECT_EQ(at(Resource::kMemoryLimit, *gu), "2147483648");
}

// Knobs kubelet never sets get the kernel's default; a cpuset every CPU kubepods has.
TEST_F(KubeletValues, UnderivableKnobsGetTheLoosestValue) {
  const auto be = layout_.qos_dir(KubeQos::kBestEffort);
  EXPECT_EQ(at(Resource::kCpuIdle, be), "0");
  EXPECT_EQ(at(Resource::kCpuBurst, be), "0");
  EXPECT_EQ(at(Resource::kCpuPeriod, be), "100000");
  EXPECT_EQ(at(Resource::kMemoryHigh, be), "-1");
  EXPECT_EQ(at(Resource::kMemoryMin, be), "0");
  EXPECT_EQ(at(Resource::kMemoryWmarkScaleFactor, be), "50");
  EXPECT_EQ(at(Resource::kCpusetCpus, be), "0-7");
  KubeletScene unknown{layout_, pods_, ""};
  EXPECT_EQ(kubelet_value(Resource::kCpusetCpus, be, unknown), std::nullopt);
}

}  // namespace
}  // namespace gleaner::agent::qos
