#pragma once
// Inputs and outputs shared by the QoS strategies. Every strategy is a pure function of a
// node snapshot, the node's resolved config, the current cgroup/resctrl values (a
// KnobSnapshot read once per pass, never written) and its own small state; it returns
// writes and evictions. The daemon and `gleaner-agent plan` hand them to the executors.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/config/burst_system_config.h"
#include "agent/config/qos_config.h"
#include "agent/config/slo_config.h"
#include "agent/config/threshold_config.h"
#include "agent/qos/cpu_topology.h"
#include "agent/qos/system_config.h"
#include "agent/snapshot/knob_snapshot.h"
#include "agent/snapshot/node_snapshot.h"
#include "cgroup/cgroup_write.h"
#include "cgroup/layout.h"

namespace gleaner::agent::qos {

// The kernel's default CFS period in microseconds (cpu.cfs_period_us, cpu.max's second
// field), for a cgroup whose period cannot be read.
inline constexpr int64_t kDefaultPeriodUs = 100000;

inline constexpr const char* kReasonCpuSuppress = "cpu-suppress";
inline constexpr const char* kReasonBeCgroup = "be-cgroup";
inline constexpr const char* kReasonMemoryEvict = "memory-evict";
inline constexpr const char* kReasonCpuEvict = "cpu-evict";
inline constexpr const char* kReasonMemoryQoS = "memory-qos";
inline constexpr const char* kReasonCpuIdle = "cpu-idle";
inline constexpr const char* kReasonResctrl = "resctrl";

struct Eviction {
  std::string pod;  // namespace/name
  std::string reason;
  friend bool operator==(const Eviction&, const Eviction&) = default;
};

// A change of resctrl state. Group creation, one schemata line, or one task id.
struct ResctrlAction {
  enum class Kind { kCreateGroup, kSchemata, kAddTask };
  Kind kind = Kind::kCreateGroup;
  std::string group;                  // "LSR", "LS", "BE"
  std::string resource;               // kSchemata: "L3" or "MB"
  std::map<int, std::string> values;  // kSchemata: cache/domain id -> value
  int tid = 0;                        // kAddTask
  std::string reason = kReasonResctrl;
};

struct Plan {
  std::vector<cgroup::CgroupWrite> writes;
  std::vector<Eviction> evictions;
  std::vector<ResctrlAction> resctrl;
  // Every node-wide knob system-config sets (a full pass only; the knobs not here go back).
  std::vector<SystemWrite> system;
  std::vector<std::string> notes;  // decisions worth one log line (skips, holds)
};

// Adds `from`'s writes, evictions, resctrl and system changes and notes to `into`.
inline void append_plan(Plan& into, Plan&& from) {
  for (auto& w : from.writes)
    into.writes.push_back(std::move(w));
  for (auto& e : from.evictions)
    into.evictions.push_back(std::move(e));
  for (auto& r : from.resctrl)
    into.resctrl.push_back(std::move(r));
  for (auto& s : from.system)
    into.system.push_back(std::move(s));
  for (auto& n : from.notes)
    into.notes.emplace_back(std::move(n));
}

using snapshot::CpuCounters;
using snapshot::KnobReads;
using snapshot::KnobSnapshot;

// Where the kernel's current values come from: one read per pass of what the pass declares
// (KnobReads), into a value the strategies take. Implemented over CgroupFs and ResctrlFs at
// the edge; tests implement it over maps.
class QosReader {
 public:
  virtual ~QosReader() = default;
  virtual KnobSnapshot read(const KnobReads& reads) = 0;
};

// The CFS quota burst's memory of one container (by cgroup): its counters at the last full
// pass and its limiter's bucket, in percent-seconds of its limit.
struct QuotaBurstMemory {
  double at_s = 0;
  CpuCounters counters;
  double tokens = 0;
  friend bool operator==(const QuotaBurstMemory& a, const QuotaBurstMemory& b) {
    return a.at_s == b.at_s && a.counters.usage_ns == b.counters.usage_ns &&
           a.counters.nr_throttled == b.counters.nr_throttled && a.tokens == b.tokens;
  }
};

// Everything one full reconcile pass needs.
struct QosInputs {
  const snapshot::NodeSnapshot* snapshot = nullptr;
  config::ResourceThresholdStrategy threshold;  // resolved for this node
  config::ResourceQoSStrategy qos;              // resolved for this node
  config::CpuBurstStrategy cpu_burst;           // resolved for this node
  config::SystemStrategy system;                // resolved for this node
  cgroup::KubeletLayout layout{cgroup::CgroupDriver::kCgroupfs};
  std::optional<CpuTopology> topology;  // nullopt: cpuset policy uses the tree's CPU list
  QosReader* reader = nullptr;
  double now_s = 0;    // monotonic seconds, for cool-downs
  bool stale = false;  // metrics older than 3 sampling intervals: hold
  // False on the agent's first pass, before any CPU delta exists: the snapshot's CPU
  // figures are placeholders, so the CPU strategies (suppress, evict) leave BE as it is.
  bool cpu_measured = true;
  // cpuSuppressMode onInterference: whether the interference rule holds the ceiling armed
  // (an LS pod waited for CPU within the hold time, or no interference signal exists).
  bool suppress_armed = true;

  // Sets the four strategies to the ones `config` gives a node with these labels.
  void resolve_strategies(const config::SloConfig& config, const kube::StringMap& node_labels) {
    threshold = config.threshold.for_node(node_labels);
    qos = config.qos.for_node(node_labels);
    cpu_burst = config.cpu_burst.for_node(node_labels);
    system = config.system.for_node(node_labels);
  }
};

// Stale when the newest sample is older than three sampling intervals.
inline bool is_stale(double age_seconds, double interval_seconds) {
  return age_seconds > 3 * interval_seconds;
}

}  // namespace gleaner::agent::qos
