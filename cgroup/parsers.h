#pragma once
// Pure parsers for the kernel's cgroup and procfs formats. Every function takes the file
// content as a string, so each one is tested on real captured contents (test/fixtures).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/strings.h"  // trim: kernel files end in '\n'

namespace gleaner::cgroup {

// "unlimited" in cgroup files: v1 prints -1 (quota) or a huge page-aligned number
// (memory.limit_in_bytes), v2 prints "max".
constexpr int64_t kUnlimited = -1;

// A single integer, or "max" / "-1" for unlimited (returned as kUnlimited).
Result<int64_t> parse_int_value(std::string_view text);
// Formats an integer value for a v2 file: kUnlimited becomes "max".
std::string format_v2_value(int64_t value);

// "key value" lines (cpu.stat, memory.stat). Unknown keys are kept; bad lines rejected.
Result<std::map<std::string, int64_t>> parse_flat_keyed(std::string_view text);

// cpu.max: "<quota|max> <period>".
struct CpuMax {
  int64_t quota_us = kUnlimited;
  int64_t period_us = 100000;
};
Result<CpuMax> parse_cpu_max(std::string_view text);
std::string format_cpu_max(const CpuMax& value);

// A PSI file (/proc/pressure/cpu, cpu.pressure): "some avg10=.. avg60=.. avg300=.. total=..".
struct PsiLine {
  double avg10 = 0;
  double avg60 = 0;
  double avg300 = 0;
  uint64_t total_us = 0;
};
struct Psi {
  PsiLine some;
  std::optional<PsiLine> full;  // absent in the cpu file of older kernels
};
Result<Psi> parse_psi(std::string_view text);

// CPU lists as in cpuset.cpus: "0-3,8,10-11". Empty text is an empty set.
Result<std::vector<int>> parse_cpu_list(std::string_view text);
std::string format_cpu_list(const std::vector<int>& cpus);

// Node-level CPU time from the first line of /proc/stat, in USER_HZ ticks.
struct ProcStatCpu {
  uint64_t busy_ticks = 0;   // user+nice+system+irq+softirq+steal
  uint64_t total_ticks = 0;  // busy + idle + iowait
};
Result<ProcStatCpu> parse_proc_stat_cpu(std::string_view text);

// /proc/meminfo in bytes: MemTotal and MemAvailable.
struct MemInfo {
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;
  [[nodiscard]] uint64_t used_bytes() const {
    return total_bytes > available_bytes ? total_bytes - available_bytes : 0;
  }
};
Result<MemInfo> parse_meminfo(std::string_view text);

// Working set without page cache from a memory.stat map: inactive_anon + active_anon +
// unevictable. On v1 the hierarchical "total_" keys are used, because a pod's pages are
// charged to its container children and the plain v1 keys count only the cgroup itself.
Result<int64_t> memory_working_set(const std::map<std::string, int64_t>& stat, bool v1);

// The same sum straight from memory.stat text, without building a map: this runs for every
// pod on every sampling pass.
Result<int64_t> memory_working_set_from_text(std::string_view memory_stat, bool v1);

// A list of task ids (tasks, cgroup.procs, cgroup.threads).
Result<std::vector<int>> parse_id_list(std::string_view text);

}  // namespace gleaner::cgroup
