#pragma once
// Per-pod usage from the pod-level cgroup: CPU (delta of cumulative CPU time), throttling,
// memory working set without page cache, and PSI where the kernel offers it. A pod whose
// cgroup vanished between listing and reading is dropped from the pass, not an error.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cgroup/cgroup_fs.h"

namespace gleaner::agent {

struct PodCgroup {
  std::string key;     // "namespace/name"
  std::string cgroup;  // relative pod-level directory
};

struct PodSample {
  std::string key;
  int64_t cpu_milli = 0;   // over the interval since this pod's previous sample
  bool cpu_valid = false;  // false on a pod's first sample (no delta yet)
  int64_t memory_bytes = 0;
  cgroup::CpuThrottle throttle;
  std::optional<cgroup::Psi> cpu_pressure;
  std::optional<cgroup::Psi> memory_pressure;
};

struct PodSamplingPass {
  std::vector<PodSample> pods;
  std::vector<std::string> vanished;  // keys whose cgroup disappeared
};

class PodSampler {
 public:
  explicit PodSampler(cgroup::CgroupFs& fs) : fs_(fs) {}
  PodSamplingPass sample(const std::vector<PodCgroup>& pods,
                         std::chrono::steady_clock::time_point now);

 private:
  struct Last {
    int64_t cpu_ns = 0;
    std::chrono::steady_clock::time_point at;
  };
  cgroup::CgroupFs& fs_;
  std::map<std::string, Last> last_;
};

}  // namespace gleaner::agent
