#include "cgroup/layout.h"

#include <gtest/gtest.h>

#include "cgroup/version.h"
#include "test/support/temp_tree.h"

namespace gleaner::cgroup {
namespace {
using gleaner::testing::TempDir;

constexpr const char* kUid = "0f2e7a61-9d4c-4b1e-8f35-2a6c1d9e7b40";
constexpr const char* kId = "containerd://5f1d2c3b4a";

TEST(Layout, CgroupfsPaths) {
  KubeletLayout layout(CgroupDriver::kCgroupfs);
  EXPECT_EQ(layout.qos_dir(KubeQos::kGuaranteed), "kubepods");
  EXPECT_EQ(layout.qos_dir(KubeQos::kBestEffort), "kubepods/besteffort");
  EXPECT_EQ(layout.pod_dir(KubeQos::kBurstable, kUid),
            "kubepods/burstable/pod0f2e7a61-9d4c-4b1e-8f35-2a6c1d9e7b40");
  EXPECT_EQ(*layout.container_dir(KubeQos::kGuaranteed, kUid, kId),
            "kubepods/pod0f2e7a61-9d4c-4b1e-8f35-2a6c1d9e7b40/5f1d2c3b4a");
  EXPECT_EQ(*layout.container_dir(KubeQos::kGuaranteed, kUid, "docker://abc"),
            "kubepods/pod0f2e7a61-9d4c-4b1e-8f35-2a6c1d9e7b40/abc");
  EXPECT_EQ(*layout.container_dir(KubeQos::kGuaranteed, kUid, "cri-o://abc"),
            "kubepods/pod0f2e7a61-9d4c-4b1e-8f35-2a6c1d9e7b40/crio-abc");
}

TEST(Layout, SystemdPathsEscapeUid) {
  KubeletLayout layout(CgroupDriver::kSystemd);
  EXPECT_EQ(layout.qos_dir(KubeQos::kGuaranteed), "kubepods.slice");
  EXPECT_EQ(layout.qos_dir(KubeQos::kBestEffort), "kubepods.slice/kubepods-besteffort.slice");
  const std::string pod = layout.pod_dir(KubeQos::kBestEffort, kUid);
  EXPECT_EQ(pod,
            "kubepods.slice/kubepods-besteffort.slice/"
            "kubepods-besteffort-pod0f2e7a61_9d4c_4b1e_8f35_2a6c1d9e7b40.slice");
  EXPECT_EQ(layout.pod_dir(KubeQos::kGuaranteed, kUid),
            "kubepods.slice/kubepods-pod0f2e7a61_9d4c_4b1e_8f35_2a6c1d9e7b40.slice");
  EXPECT_EQ(*layout.container_dir(KubeQos::kBestEffort, kUid, kId),
            pod + "/cri-containerd-5f1d2c3b4a.scope");
  EXPECT_EQ(*layout.container_dir(KubeQos::kBestEffort, kUid, "docker://ab"),
            pod + "/docker-ab.scope");
  EXPECT_EQ(*layout.container_dir(KubeQos::kBestEffort, kUid, "cri-o://ab"),
            pod + "/crio-ab.scope");
}

TEST(Layout, CgroupRootParent) {
  KubeletLayout layout(CgroupDriver::kCgroupfs, "custom");
  EXPECT_EQ(layout.qos_dir(KubeQos::kBurstable), "custom/kubepods/burstable");
}

TEST(Layout, PodUidFromDirectoryNames) {
  KubeletLayout systemd(CgroupDriver::kSystemd);
  EXPECT_EQ(*systemd.pod_uid_from_dir(
                "kubepods-besteffort-pod0f2e7a61_9d4c_4b1e_8f35_2a6c1d9e7b40.slice"),
            kUid);
  EXPECT_FALSE(systemd.pod_uid_from_dir("kubepods-besteffort.slice").has_value());
  KubeletLayout cgroupfs(CgroupDriver::kCgroupfs);
  EXPECT_EQ(*cgroupfs.pod_uid_from_dir(std::string("pod") + kUid), kUid);
  EXPECT_FALSE(cgroupfs.pod_uid_from_dir("besteffort").has_value());
}

TEST(Layout, BadContainerIds) {
  EXPECT_FALSE(parse_container_id("5f1d2c").ok());
  EXPECT_EQ(parse_container_id("rkt://ab").error().code, ErrorCode::kUnsupported);
  EXPECT_FALSE(parse_container_id("docker://").ok());
  EXPECT_FALSE(parse_container_id("docker://../../etc").ok());
}

TEST(Layout, DetectsDriverFromTree) {
  TempDir systemd;
  systemd.mkdir("cpu/kubepods.slice");
  EXPECT_EQ(*detect_driver(systemd / "cpu"), CgroupDriver::kSystemd);
  TempDir cgroupfs;
  cgroupfs.mkdir("kubepods/besteffort");
  EXPECT_EQ(*detect_driver(cgroupfs.path()), CgroupDriver::kCgroupfs);
  TempDir empty;
  EXPECT_EQ(detect_driver(empty.path()).error().code, ErrorCode::kNotFound);
}

TEST(Version, DetectsLayoutOfPlainDirectories) {
  TempDir v2;
  v2.write("cgroup.controllers", "cpuset cpu io memory pids\n");
  EXPECT_EQ(*detect_version(v2.path()), CgroupVersion::kV2);
  TempDir v1;
  v1.mkdir("cpu");
  v1.mkdir("memory");
  EXPECT_EQ(*detect_version(v1.path()), CgroupVersion::kV1);
  TempDir hybrid;
  hybrid.mkdir("cpu,cpuacct");
  hybrid.write("unified/cgroup.controllers", "\n");
  EXPECT_EQ(*detect_version(hybrid.path()), CgroupVersion::kHybrid);
  TempDir empty;
  EXPECT_EQ(detect_version(empty.path()).error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(*detect_version(empty.path(), CgroupVersion::kV2), CgroupVersion::kV2);
  EXPECT_EQ(detect_version(empty / "missing").error().code, ErrorCode::kNotFound);
}

TEST(Version, ParsesFlagValues) {
  EXPECT_EQ(*parse_version("hybrid"), CgroupVersion::kHybrid);
  EXPECT_EQ(*parse_version("v1"), CgroupVersion::kV1);
  EXPECT_FALSE(parse_version("v3").ok());
}

}  // namespace
}  // namespace gleaner::cgroup
