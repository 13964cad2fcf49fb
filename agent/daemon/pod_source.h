#pragma once
// Where the agent learns which pods run on its node: kubelet's /pods (default), a PodList
// file (nodes without kubelet, tests, the demo), or the cgroup tree alone as a last
// resort. The caller keeps the last good list: a failed or unexpectedly empty fetch never
// drops known pods.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cgroup/layout.h"
#include "common/clock.h"
#include "common/result.h"
#include "kube/kubelet_client.h"
#include "kube/objects.h"

namespace gleaner::agent {

class PodSource {
 public:
  virtual ~PodSource() = default;
  virtual Result<std::vector<kube::Pod>> fetch() = 0;
  [[nodiscard]] virtual std::string name() const = 0;
  // True when a fetch now would return what the last one did, known without fetching.
  virtual bool unchanged() { return false; }
};

// A v1 PodList (or pod array) file, re-parsed only when its mtime or size changes; content
// that failed to parse is not read again until the file changes (one stat per pass).
class PodsFileSource final : public PodSource {
 public:
  explicit PodsFileSource(std::string path) : path_(std::move(path)) {}
  Result<std::vector<kube::Pod>> fetch() override;
  [[nodiscard]] std::string name() const override { return "pods-file " + path_; }
  bool unchanged() override;

 private:
  struct Stamp {
    int64_t mtime_ns = -1;
    int64_t size = -1;
    bool operator==(const Stamp&) const = default;
  };
  static Result<Stamp> stamp_of(const std::string& path);
  std::string path_;
  Stamp parsed_;   // of the content in cached_
  Stamp refused_;  // of content that failed to parse (not read again)
  Error refused_error_;
  std::optional<Stamp> peeked_;  // read by unchanged(), for the fetch() that follows
  std::vector<kube::Pod> cached_;
};

class KubeletPodSource final : public PodSource {
 public:
  // `clock` (the client's request timing) must outlive the source.
  KubeletPodSource(kube::KubeletOptions options, const Clock& clock);
  Result<std::vector<kube::Pod>> fetch() override;
  [[nodiscard]] std::string name() const override { return "kubelet " + host_; }

 private:
  std::string host_;
  std::unique_ptr<kube::KubeletClient> client_;
};

// Whether the next pass must list the pods again instead of waiting for the periodic
// re-list: a pod that is not over (Pending or Running) has a container
// without a container ID. kubelet lists a pod once it admits it and creates its pod cgroup
// (which is what wakes the agent's watch), but names a container only after the runtime
// created it; until then the agent cannot find that container's cgroup, and a BE
// container would run with kubelet's values, not the agent's, for up to a whole re-list
// period. A pod that never starts (an image that cannot be pulled) keeps the list
// refreshed every pass.
bool containers_pending(const std::vector<kube::Pod>& pods);

// Pods reconstructed from kubelet's pod directories: UID and kube QoS only. Enough to
// measure them and to keep BE work in check when kubelet cannot be reached.
class CgroupTreePodSource final : public PodSource {
 public:
  CgroupTreePodSource(std::string controller_root, cgroup::KubeletLayout layout)
      : root_(std::move(controller_root)), layout_(std::move(layout)) {}
  Result<std::vector<kube::Pod>> fetch() override;
  [[nodiscard]] std::string name() const override { return "cgroup tree " + root_; }

 private:
  std::string root_;
  cgroup::KubeletLayout layout_;
};

}  // namespace gleaner::agent
