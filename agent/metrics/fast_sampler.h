#pragma once
// The fast path's sampler: the two figures CPU suppression needs, read cheaply enough to
// run every 50 ms. Node CPU comes from /proc/stat; CPU used by non-BE pods is the kubepods
// cgroup's usage minus the besteffort cgroup's (two nanosecond counters), which avoids a
// per-pod walk. Pods labelled BE in a burstable cgroup count as non-BE here; the 1 s full
// pass, which classifies every pod, corrects for them.

#include <chrono>
#include <optional>
#include <string>

#include "cgroup/cgroup_fs.h"
#include "cgroup/layout.h"
#include "common/file_io.h"

namespace gleaner::agent {

struct FastSample {
  int64_t node_cpu_milli = 0;
  int64_t non_be_cpu_milli = 0;
};

class FastSampler {
 public:
  FastSampler(cgroup::CgroupFs& fs, const cgroup::KubeletLayout& layout, std::string proc_root,
              int cpus);
  // nullopt on the first call (no delta yet) or when a counter cannot be read.
  std::optional<FastSample> sample(std::chrono::steady_clock::time_point now);

 private:
  struct Counters {
    uint64_t busy_ticks = 0;
    uint64_t total_ticks = 0;
    int64_t kubepods_ns = 0;
    int64_t besteffort_ns = 0;
    std::chrono::steady_clock::time_point at;
  };
  std::optional<Counters> read(std::chrono::steady_clock::time_point now);

  cgroup::CgroupFs& fs_;
  std::string kubepods_;
  std::string besteffort_;
  std::string proc_stat_path_;
  int cpus_;
  OpenFile proc_stat_;
  std::optional<Counters> last_;
};

}  // namespace gleaner::agent
