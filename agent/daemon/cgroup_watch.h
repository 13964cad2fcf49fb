#pragma once
// Watches kubelet's QoS directories with inotify so a new pod cgroup triggers an
// immediate pod-list resync instead of waiting for the next kubelet poll: a new BE pod is
// brought under control within one sampling interval of its cgroup appearing.

#include <string>
#include <vector>

#include "common/result.h"

namespace gleaner::agent {

class CgroupWatch {
 public:
  // Watches each existing directory for sub-directories being created or removed.
  static Result<CgroupWatch> open(const std::vector<std::string>& dirs);
  CgroupWatch(CgroupWatch&& other) noexcept;
  CgroupWatch& operator=(CgroupWatch&& other) noexcept;
  CgroupWatch(const CgroupWatch&) = delete;
  CgroupWatch& operator=(const CgroupWatch&) = delete;
  ~CgroupWatch();

  // The non-blocking inotify descriptor, for the event loop to wait on.
  [[nodiscard]] int fd() const { return fd_; }
  // Drains pending events; true when a directory was created or removed.
  bool drain();
  [[nodiscard]] size_t watched() const { return watched_; }

 private:
  CgroupWatch() = default;
  int fd_ = -1;
  size_t watched_ = 0;
};

}  // namespace gleaner::agent
