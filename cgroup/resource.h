#pragma once
// One kernel knob, one row: every cgroup resource the agent reads or writes is described
// once here (logical name, v1 controller and file, v2 file and field, how values are
// validated and converted). Call sites name a Resource and never spell a file name.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cgroup/version.h"
#include "common/result.h"

namespace gleaner::cgroup {

enum class Resource {
  kCpuUsage,     // cumulative CPU time. v1 cpuacct.usage (ns); v2 cpu.stat usage_usec
  kCpuStat,      // throttling counters. v1 cpu.stat; v2 cpu.stat
  kCpuQuota,     // us per period, -1 unlimited. v1 cpu.cfs_quota_us; v2 cpu.max field 1
  kCpuPeriod,    // us. v1 cpu.cfs_period_us; v2 cpu.max field 2
  kCpuShares,    // v1 cpu.shares; v2 cpu.weight, converted from shares
  kCpuIdle,      // 0/1. cpu.idle (both; kernel >= 5.15)
  kCpuBurst,     // us a period's unused quota may carry over. v1 cpu.cfs_burst_us; v2
                 // cpu.max.burst (kernel >= 5.14). The kernel refuses one above the quota.
  kCpusetCpus,   // CPU list. cpuset.cpus
  kMemoryUsage,  // bytes. v1 memory.usage_in_bytes; v2 memory.current
  kMemoryLimit,  // bytes, -1 unlimited. v1 memory.limit_in_bytes; v2 memory.max
  kMemoryHigh,   // bytes. memory.high (v2, or v1 kernels with the memcg QoS extensions)
  kMemoryMin,    // bytes. memory.min (idem)
  kMemoryLow,    // bytes. memory.low (idem)
  kMemoryStat,   // memory.stat
  // Memory QoS beyond min/low/high, each where the kernel offers it: memory.oom.group
  // (v2; kill the whole cgroup on OOM, 0/1), and the Alibaba Cloud Linux / Anolis memcg
  // extensions (both versions): background reclaim watermarks (memory.wmark_ratio 0..100,
  // memory.wmark_scale_factor 1..1000, memory.wmark_min_adj -25..50) and OOM priority
  // (memory.use_priority_oom 0/1, memory.priority 0..12).
  kMemoryOomGroup,
  kMemoryWmarkRatio,
  kMemoryWmarkScaleFactor,
  kMemoryWmarkMinAdj,
  kMemoryUsePriorityOom,
  kMemoryPriority,
  kCpuPressure,  // PSI. v2 cpu.pressure (hybrid: under the unified mount)
  kMemoryPressure,
  kIoPressure,
  kThreads,          // task ids. v1 tasks; v2 cgroup.threads
  kProcs,            // process ids. cgroup.procs
  kCpusetEffective,  // CPU list in force. v1 cpuset.effective_cpus; v2 cpuset.cpus.effective
};
inline constexpr Resource kLastResource = Resource::kCpusetEffective;

struct ResourceSpec {
  Resource resource;
  const char* name;           // logical name used in logs, metrics and plans
  const char* v1_controller;  // directory under the root on v1 / hybrid
  const char* v1_file;        // nullptr: not offered on v1
  const char* v2_file;        // nullptr: not offered on v2
  int v2_field;               // 0: whole file; 1/2: field of a "a b" file (cpu.max)
  bool writable;
};

const ResourceSpec& spec_of(Resource resource);
const char* to_string(Resource resource);
// The resource of a logical name ("cpu_quota"); nullopt for a name no row has.
std::optional<Resource> resource_named(std::string_view name);

// Checks a logical value before any write: ranges, formats.
Status validate_value(Resource resource, std::string_view logical_value);

// The logical value expressed by a file's content ("max 100000" -> quota "-1",
// cpu.weight 100 -> shares, v1 page-aligned huge limits -> "-1"). Used to compare the
// desired value with the current one and to skip writes that change nothing.
Result<std::string> logical_from_file(Resource resource, CgroupVersion version,
                                      std::string_view file_content);

// The file content to write so that the file expresses `logical_value`, keeping the
// other field of multi-field files (cpu.max) as found in `current_content`.
Result<std::string> file_from_logical(Resource resource, CgroupVersion version,
                                      std::string_view logical_value,
                                      std::string_view current_content);

// Standard cpu.shares <-> cpu.weight conversion (as kubelet and runc do it).
int64_t shares_to_weight(int64_t shares);
int64_t weight_to_shares(int64_t weight);

// Ordering class of a change: widening a limit must go parent-first, narrowing
// child-first (the kernel rejects a child cpuset or v1 quota outside its parent's).
enum class Direction { kNeutral, kWiden, kNarrow, kMixed };
Direction direction_of(Resource resource, std::string_view old_logical,
                       std::string_view new_logical);

}  // namespace gleaner::cgroup
