#pragma once
// Per-pod usage from the pod-level cgroup: CPU (delta of cumulative CPU time), throttling,
// memory working set without page cache, and PSI where the kernel offers it. A pod whose
// cgroup vanished between listing and reading is dropped from the pass, not an error.
//
// The working set comes from memory.stat, whose text the kernel builds by walking the
// pod's hierarchy: the costliest file the agent reads (a sixth of its CPU at 200 pods).
// Each pod's memory.stat is read every kMemoryStatEvery passes, pods staggered across
// passes; in between, the change of the pod's memory usage counter (one cheap read) is
// added to the last working set, bounded by the usage. Growth of page cache between two
// reads therefore counts as working set for at most that many passes: an overestimate,
// which only ever makes batch capacity smaller and eviction candidates larger. The
// throttling counters and PSI, which feed metrics only, are read on the same passes.

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
  static constexpr int kMemoryStatEvery = 5;

  explicit PodSampler(cgroup::CgroupFs& fs) : fs_(fs) {}
  PodSamplingPass sample(const std::vector<PodCgroup>& pods,
                         std::chrono::steady_clock::time_point now);

 private:
  struct Last {
    std::string cgroup;
    int64_t cpu_ns = 0;
    std::chrono::steady_clock::time_point at;
    // Whether the pod's cgroup has PSI files, looked up once: on a hybrid hierarchy the
    // unified pod directory usually never exists, and a failed lookup per pod per pass
    // was a tenth of the agent's CPU at 200 pods.
    bool has_pressure = false;
    // The working set from the last memory.stat, the usage counter then, and how many
    // passes ago that was.
    int64_t working_set = 0;
    int64_t usage_at_stat = 0;
    int passes_since_stat = 0;
    cgroup::CpuThrottle throttle;
    std::optional<cgroup::Psi> cpu_pressure;
    std::optional<cgroup::Psi> memory_pressure;
  };
  struct Memory {
    int64_t working_set = 0;
    int64_t usage = 0;
    bool from_stat = false;
  };
  Result<Memory> read_memory(const PodCgroup& pod, const Last* last);
  cgroup::CgroupFs& fs_;
  std::map<std::string, Last> last_;
};

}  // namespace gleaner::agent
