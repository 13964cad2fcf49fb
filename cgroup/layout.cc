#include "cgroup/layout.h"

#include <algorithm>

#include "common/file_io.h"

namespace gleaner::cgroup {
namespace {

const char* qos_word(KubeQos qos) {
  switch (qos) {
    case KubeQos::kGuaranteed:
      return "guaranteed";
    case KubeQos::kBurstable:
      return "burstable";
    case KubeQos::kBestEffort:
      return "besteffort";
  }
  return "";
}

// systemd escapes '-' in unit names, so kubelet writes pod UIDs with '_' there.
std::string systemd_uid(std::string_view uid) {
  std::string out(uid);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

bool is_hex_id(std::string_view id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

}  // namespace

const char* to_string(CgroupDriver driver) {
  return driver == CgroupDriver::kSystemd ? "systemd" : "cgroupfs";
}

const char* to_string(KubeQos qos) {
  switch (qos) {
    case KubeQos::kGuaranteed:
      return "Guaranteed";
    case KubeQos::kBurstable:
      return "Burstable";
    case KubeQos::kBestEffort:
      return "BestEffort";
  }
  return "";
}

Result<CgroupDriver> parse_driver(std::string_view text) {
  if (text == "systemd") return CgroupDriver::kSystemd;
  if (text == "cgroupfs") return CgroupDriver::kCgroupfs;
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown cgroup driver \"" + std::string(text) + "\" (systemd or cgroupfs)");
}

Result<KubeQos> parse_kube_qos(std::string_view text) {
  if (text == "Guaranteed") return KubeQos::kGuaranteed;
  if (text == "Burstable") return KubeQos::kBurstable;
  if (text == "BestEffort") return KubeQos::kBestEffort;
  return make_error(ErrorCode::kInvalidArgument, "unknown kube QoS class \"" + std::string(text) +
                                                     "\" (Guaranteed, Burstable, BestEffort)");
}

Result<ContainerId> parse_container_id(std::string_view text) {
  auto sep = text.find("://");
  if (sep == std::string_view::npos) {
    return make_error(ErrorCode::kParse,
                      "container id \"" + std::string(text) + "\" lacks a runtime:// prefix");
  }
  ContainerId out{std::string(text.substr(0, sep)), std::string(text.substr(sep + 3))};
  if (out.runtime != "docker" && out.runtime != "containerd" && out.runtime != "cri-o") {
    return make_error(ErrorCode::kUnsupported, "unsupported container runtime \"" + out.runtime +
                                                   "\" (docker, containerd, cri-o)");
  }
  if (!is_hex_id(out.id)) {
    return make_error(ErrorCode::kParse, "container id \"" + out.id + "\" is not a hex id");
  }
  return out;
}

std::string KubeletLayout::kubepods_dir() const {
  return join_path(parent_, driver_ == CgroupDriver::kSystemd ? "kubepods.slice" : "kubepods");
}

std::string KubeletLayout::qos_dir(KubeQos qos) const {
  if (qos == KubeQos::kGuaranteed) return kubepods_dir();
  if (driver_ == CgroupDriver::kSystemd) {
    return join_path(kubepods_dir(), std::string("kubepods-") + qos_word(qos) + ".slice");
  }
  return join_path(kubepods_dir(), qos_word(qos));
}

std::string KubeletLayout::pod_dir(KubeQos qos, std::string_view pod_uid) const {
  if (driver_ == CgroupDriver::kCgroupfs) {
    return join_path(qos_dir(qos), "pod" + std::string(pod_uid));
  }
  std::string prefix = "kubepods-";
  if (qos != KubeQos::kGuaranteed) prefix += std::string(qos_word(qos)) + "-";
  return join_path(qos_dir(qos), prefix + "pod" + systemd_uid(pod_uid) + ".slice");
}

Result<std::string> KubeletLayout::container_dir(KubeQos qos, std::string_view pod_uid,
                                                 std::string_view container_id) const {
  auto id = parse_container_id(container_id);
  if (!id) return id.error();
  std::string leaf;
  if (driver_ == CgroupDriver::kSystemd) {
    if (id->runtime == "docker") leaf = "docker-" + id->id + ".scope";
    if (id->runtime == "containerd") leaf = "cri-containerd-" + id->id + ".scope";
    if (id->runtime == "cri-o") leaf = "crio-" + id->id + ".scope";
  } else {
    leaf = id->runtime == "cri-o" ? "crio-" + id->id : id->id;
  }
  return join_path(pod_dir(qos, pod_uid), leaf);
}

std::optional<std::string> KubeletLayout::pod_uid_from_dir(std::string_view dirname) const {
  if (driver_ == CgroupDriver::kCgroupfs) {
    if (dirname.size() > 3 && dirname.substr(0, 3) == "pod") return std::string(dirname.substr(3));
    return std::nullopt;
  }
  constexpr std::string_view kSuffix = ".slice";
  auto pos = dirname.find("-pod");
  if (pos == std::string_view::npos || dirname.size() <= kSuffix.size() ||
      dirname.substr(dirname.size() - kSuffix.size()) != kSuffix) {
    return std::nullopt;
  }
  std::string uid(dirname.substr(pos + 4, dirname.size() - kSuffix.size() - pos - 4));
  std::replace(uid.begin(), uid.end(), '_', '-');
  if (uid.empty()) return std::nullopt;
  return uid;
}

Result<CgroupDriver> detect_driver(const std::string& controller_root, const std::string& parent) {
  const std::string base = join_path(controller_root, parent);
  if (is_directory(join_path(base, "kubepods.slice"))) return CgroupDriver::kSystemd;
  if (is_directory(join_path(base, "kubepods"))) return CgroupDriver::kCgroupfs;
  return make_error(ErrorCode::kNotFound,
                    "no kubepods.slice or kubepods under " + base + " (use --cgroup-driver)");
}

}  // namespace gleaner::cgroup
