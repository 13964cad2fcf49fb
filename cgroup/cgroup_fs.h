#pragma once
// Reads of the cgroup filesystem under a configurable root, resolved through the
// resource table for the detected version. Statistic files are kept open and re-read
// with pread, so a sampling pass costs one syscall per file.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cgroup/parsers.h"
#include "cgroup/resource.h"
#include "cgroup/version.h"
#include "common/file_io.h"

namespace gleaner::cgroup {

struct CpuThrottle {
  int64_t nr_periods = 0;
  int64_t nr_throttled = 0;
  int64_t throttled_ns = 0;
};

class CgroupFs {
 public:
  CgroupFs(std::string root, CgroupVersion version);

  [[nodiscard]] const std::string& root() const { return root_; }
  [[nodiscard]] CgroupVersion version() const { return version_; }

  // Directory of `cgroup` (relative, e.g. "kubepods/besteffort") in the hierarchy that
  // holds `resource`: <root>/<controller>/<cgroup> on v1, <root>/<cgroup> on v2, and for
  // PSI on hybrid <root>/unified/<cgroup>.
  [[nodiscard]] std::string dir_of(Resource resource, const std::string& cgroup) const;
  // Absolute file path; kUnsupported when this version has no such file.
  [[nodiscard]] Result<std::string> path_of(Resource resource, const std::string& cgroup) const;
  // Whether the file exists for this cgroup (kernels differ: cpu.idle, memory.high on v1).
  // A file with a kept descriptor counts as present without a lookup: a removed cgroup
  // shows on the next read of it, which drops the descriptor.
  // What the kernel does not offer is judged once, in the reference cgroup, and answered
  // from then on without a lookup: a v1 node lacks memory.min/low/high and the memcg
  // extensions, and asking every pass for every pod cost thousands of failed stat() a second.
  [[nodiscard]] bool has(Resource resource, const std::string& cgroup) const;
  // The cgroup where has() judges what the kernel offers: one made before any pod and kept
  // while kubelet runs (kubepods). Unset, nothing is judged and every miss is a lookup.
  void judge_offers_in(std::string reference) { reference_ = std::move(reference); }
  // Filesystem lookups has() made so far (tests count them).
  [[nodiscard]] uint64_t lookups() const { return lookups_; }
  [[nodiscard]] bool exists(const std::string& cgroup) const;

  // Raw content of the resource's file (through the open-file cache).
  Result<std::string> read_raw(Resource resource, const std::string& cgroup);
  // The resource as a logical value (see resource.h), e.g. quota "-1" for unlimited.
  Result<std::string> read_logical(Resource resource, const std::string& cgroup);
  // A numeric resource: quota, period, shares, idle, memory usage and limits.
  Result<int64_t> read_int(Resource resource, const std::string& cgroup);

  Result<int64_t> read_cpu_usage_ns(const std::string& cgroup);
  Result<CpuThrottle> read_cpu_throttle(const std::string& cgroup);
  Result<std::vector<int>> read_cpuset(const std::string& cgroup);
  // inactive_anon + active_anon + unevictable (hierarchical on v1).
  Result<int64_t> read_memory_working_set(const std::string& cgroup);
  Result<Psi> read_pressure(Resource resource, const std::string& cgroup);
  // Task or process ids, or CPU lists for the cpuset resources.
  Result<std::vector<int>> read_ids(Resource resource, const std::string& cgroup);

  // Whole content of a file under this root through the open-file cache: a kept
  // descriptor is read again from offset 0 (kernfs regenerates the text), which spares
  // the path walk an open costs on every pass.
  Result<std::string> read_cached(const std::string& path);

  // Closes cached descriptors of cgroups that are gone (call after a pod is deleted).
  void forget(const std::string& cgroup);
  [[nodiscard]] size_t cached_descriptors() const { return open_files_.size(); }
  static constexpr size_t kDefaultDescriptorCap = 16384;
  // Beyond this many kept descriptors reads open and close (a node with more cgroups
  // than the descriptor limit allows keeps working, just slower).
  void set_descriptor_cap(size_t cap) { descriptor_cap_ = cap; }

 private:
  enum class Offer : uint8_t { kUnknown, kOffered, kAbsent };
  // Whether the kernel offers `resource`, from the reference cgroup; kUnknown when it
  // cannot tell (no reference, or on v2 the file's controller not enabled there).
  [[nodiscard]] Offer judge_offer(Resource resource) const;

  std::string root_;
  CgroupVersion version_;
  std::string reference_;
  mutable std::array<Offer, static_cast<size_t>(kLastResource) + 1> offers_{};
  mutable uint64_t lookups_ = 0;
  std::unordered_map<std::string, OpenFile> open_files_;
  size_t descriptor_cap_ = kDefaultDescriptorCap;
};

}  // namespace gleaner::cgroup
