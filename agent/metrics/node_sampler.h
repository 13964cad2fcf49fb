#pragma once
// Node-level usage from procfs: CPU from /proc/stat deltas, memory from /proc/meminfo
// (MemTotal - MemAvailable), and the node's PSI. The proc root is configurable so tests
// and `plan` runs read captured trees.

#include <cstdint>
#include <optional>
#include <string>

#include "cgroup/parsers.h"
#include "common/file_io.h"
#include "common/result.h"

namespace gleaner::agent {

struct NodeUsage {
  int64_t cpu_milli = 0;   // average over the interval since the previous sample
  bool cpu_valid = false;  // false on the first sample (no delta yet): cpu_milli means nothing
  int64_t memory_bytes = 0;
  int64_t memory_total_bytes = 0;
  std::optional<cgroup::Psi> cpu_pressure;
};

class NodeSampler {
 public:
  explicit NodeSampler(std::string proc_root = "/proc", int cpus = 0);

  // The first call primes the CPU counters and reports cpu_valid = false.
  Result<NodeUsage> sample();
  [[nodiscard]] int cpus() const { return cpus_; }
  [[nodiscard]] bool has_psi() const;

 private:
  std::string proc_root_;
  int cpus_;
  OpenFile stat_;
  OpenFile meminfo_;
  std::optional<cgroup::ProcStatCpu> last_;
};

// Online CPUs counted from /proc/stat's per-CPU lines.
Result<int> count_cpus(const std::string& proc_root);

}  // namespace gleaner::agent
