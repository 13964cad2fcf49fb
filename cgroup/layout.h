#pragma once
// Where kubelet puts QoS, pod and container cgroups, for both cgroup drivers and the
// docker, containerd and cri-o runtimes. All paths are relative to a controller root
// (v1: <root>/<controller>; v2: <root>) so one path names the cgroup in every controller.

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gleaner::cgroup {

enum class CgroupDriver { kSystemd, kCgroupfs };
enum class KubeQos { kGuaranteed, kBurstable, kBestEffort };

const char* to_string(CgroupDriver driver);
const char* to_string(KubeQos qos);
Result<CgroupDriver> parse_driver(std::string_view text);  // "systemd" | "cgroupfs"
Result<KubeQos> parse_kube_qos(std::string_view text);     // "Guaranteed" | "Burstable" | ...

// A container id as kubelet reports it in containerStatuses: "containerd://<hex>".
struct ContainerId {
  std::string runtime;  // docker, containerd or cri-o
  std::string id;
};
Result<ContainerId> parse_container_id(std::string_view text);

class KubeletLayout {
 public:
  // `parent`: kubelet's --cgroup-root, "" for the controller root itself.
  explicit KubeletLayout(CgroupDriver driver, std::string parent = "")
      : driver_(driver), parent_(std::move(parent)) {}

  [[nodiscard]] CgroupDriver driver() const { return driver_; }
  // kubepods (cgroupfs) or kubepods.slice (systemd).
  [[nodiscard]] std::string kubepods_dir() const;
  // Guaranteed pods live directly under kubepods; the other classes have a directory.
  [[nodiscard]] std::string qos_dir(KubeQos qos) const;
  [[nodiscard]] std::string pod_dir(KubeQos qos, std::string_view pod_uid) const;
  [[nodiscard]] Result<std::string> container_dir(KubeQos qos, std::string_view pod_uid,
                                                  std::string_view container_id) const;

  // The pod UID named by a pod directory ("pod1234-..." or
  // "kubepods-besteffort-pod1234_....slice"), if `dirname` is one.
  [[nodiscard]] std::optional<std::string> pod_uid_from_dir(std::string_view dirname) const;

 private:
  CgroupDriver driver_;
  std::string parent_;
};

// Looks for kubepods.slice or kubepods under `controller_root` (joined with `parent`).
Result<CgroupDriver> detect_driver(const std::string& controller_root,
                                   const std::string& parent = "");

}  // namespace gleaner::cgroup
