#pragma once
// The fast path's sampler: the two figures CPU suppression needs, read cheaply enough to
// run every 50 ms. Node CPU comes from /proc/stat; CPU used by non-BE pods is the kubepods
// cgroup's usage minus the besteffort cgroup's (two nanosecond counters), which avoids a
// per-pod walk. Pods labelled BE in a burstable cgroup count as non-BE here; the 1 s full
// pass, which classifies every pod, corrects for them.
//
// Asymmetric on purpose: non-BE usage is the maximum of the 50 ms figures over the last
// window (default 1 s), so a surge tightens BE at once while a dip relaxes it only after
// the window; node CPU is measured over the whole window, because /proc/stat counts in
// USER_HZ ticks (10 ms) and a 50 ms delta on a small node is too coarse to act on.

#include <chrono>
#include <deque>
#include <optional>
#include <string>

#include "cgroup/cgroup_fs.h"
#include "cgroup/layout.h"
#include "common/file_io.h"

namespace gleaner::agent {

struct FastSample {
  int64_t node_cpu_milli = 0;
  int64_t non_be_cpu_milli = 0;      // the counters' figure, or a noted one when higher
  int64_t non_be_counted_milli = 0;  // the counters' figure alone
};

class FastSampler {
 public:
  FastSampler(cgroup::CgroupFs& fs, const cgroup::KubeletLayout& layout,
              const std::string& proc_root, int cpus,
              std::chrono::milliseconds window = std::chrono::seconds(1));
  // nullopt on the first call (no delta yet) or when a counter cannot be read.
  std::optional<FastSample> sample(std::chrono::steady_clock::time_point now);
  // A non-BE figure measured elsewhere (the eBPF probe's demand over ~10 ms): it counts in
  // the maximum for `hold` only. A surge that lasts shows in the next sampled figures, which
  // then hold it for the whole window; a burst of a few milliseconds does not keep BE down
  // for a second.
  void note_non_be(std::chrono::steady_clock::time_point now, int64_t millicores,
                   std::chrono::milliseconds hold = std::chrono::milliseconds(200));

  // The shortest span a sampled non-BE figure is taken over.
  static constexpr std::chrono::milliseconds kMinNonBeSpan{20};

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
  std::chrono::milliseconds window_;
  OpenFile proc_stat_;
  std::optional<Counters> last_;
  // Counters and instantaneous non-BE figures within the window, oldest first.
  std::deque<Counters> history_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, int64_t>> non_be_;
  // Noted figures and when each stops counting.
  std::deque<std::pair<std::chrono::steady_clock::time_point, int64_t>> noted_;
};

}  // namespace gleaner::agent
