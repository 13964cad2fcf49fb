#include "agent/daemon/pod_source.h"

#include <algorithm>
#include <utility>

#include <sys/stat.h>

#include "common/file_io.h"
#include "common/json_util.h"

namespace gleaner::agent {

Result<PodsFileSource::Stamp> PodsFileSource::stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno_error(errno, "stat " + path);
  return Stamp{static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
               static_cast<int64_t>(st.st_size)};
}

bool PodsFileSource::unchanged() {
  auto stamp = stamp_of(path_);
  if (!stamp) return false;  // fetch() says why
  peeked_ = *stamp;
  return *peeked_ == parsed_ || *peeked_ == refused_;
}

Result<std::vector<kube::Pod>> PodsFileSource::fetch() {
  // The stamp unchanged() just read, when it did: one stat per pass.
  std::optional<Stamp> stamp = std::exchange(peeked_, std::nullopt);
  if (!stamp) {
    auto now = stamp_of(path_);
    if (!now) return now.error();
    stamp = *now;
  }
  if (*stamp == parsed_) return cached_;
  if (*stamp == refused_) return refused_error_;
  auto pods = [&]() -> Result<std::vector<kube::Pod>> {
    auto text = read_file(path_);
    if (!text) return text.error();
    auto json = parse_json(*text, path_);
    if (!json) return json.error();
    auto parsed = kube::parse_pod_list(*json);
    if (!parsed) return make_error(parsed.error().code, path_ + ": " + parsed.error().message);
    return parsed;
  }();
  if (!pods) {
    refused_ = *stamp;
    refused_error_ = pods.error();
    return pods.error();
  }
  parsed_ = *stamp;
  cached_ = std::move(*pods);
  return cached_;
}

KubeletPodSource::KubeletPodSource(kube::KubeletOptions options, const Clock& clock)
    : host_(options.host),
      client_(std::make_unique<kube::KubeletClient>(std::move(options), clock)) {}

Result<std::vector<kube::Pod>> KubeletPodSource::fetch() {
  auto listed = client_->pods();
  if (!listed) return listed.error();
  if (listed->stale) return make_error(ErrorCode::kUnavailable, listed->last_error);
  std::vector<kube::Pod> pods;
  for (const auto& raw : listed->pods) {
    auto pod = kube::parse_pod(raw);
    if (!pod) return make_error(pod.error().code, "kubelet /pods: " + pod.error().message);
    pods.push_back(std::move(*pod));
  }
  return pods;
}

bool containers_pending(const std::vector<kube::Pod>& pods) {
  auto started = [](const kube::Pod& pod, const std::string& name) {
    return std::any_of(
        pod.container_statuses.begin(), pod.container_statuses.end(),
        [&](const kube::ContainerStatus& s) { return s.name == name && !s.container_id.empty(); });
  };
  return std::any_of(pods.begin(), pods.end(), [&](const kube::Pod& pod) {
    if (pod.phase != "Pending" && pod.phase != "Running") return false;
    return std::any_of(pod.containers.begin(), pod.containers.end(),
                       [&](const kube::Container& c) { return !started(pod, c.name); });
  });
}

Result<std::vector<kube::Pod>> CgroupTreePodSource::fetch() {
  std::vector<kube::Pod> pods;
  for (auto qos :
       {cgroup::KubeQos::kGuaranteed, cgroup::KubeQos::kBurstable, cgroup::KubeQos::kBestEffort}) {
    auto dirs = list_directories(join_path(root_, layout_.qos_dir(qos)));
    if (!dirs) continue;
    for (const auto& dir : *dirs) {
      auto uid = layout_.pod_uid_from_dir(dir);
      if (!uid) continue;
      Json raw = {{"metadata", {{"name", *uid}, {"namespace", "cgroup"}, {"uid", *uid}}},
                  {"spec", {{"containers", Json::array()}}},
                  {"status", {{"phase", "Running"}, {"qosClass", cgroup::to_string(qos)}}}};
      auto pod = kube::parse_pod(raw);
      if (pod) pods.push_back(std::move(*pod));
    }
  }
  return pods;
}

}  // namespace gleaner::agent
