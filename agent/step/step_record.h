#pragma once
// The agent step's inputs beyond usage, in the snapshot file (docs/cli.md): the probe's
// readings and the step's memory from the previous tick, so that `gleaner-agent plan`
// decides as the daemon would on that tick, in every mode.
//
//   "probe": {"runqueueP99Micros": {"web/api-0": 8000}, "nodeCpuPsiSomeAvg10": 12.5},
//   "agent": {"secondsSinceInterference": 12, "interferenceCeiling": {"cpuQuotaMicros": 40000},
//             "suppressArmed": true, "fastPathLive": false, "cpus": 8,
//             "evictions": {"lastMemorySecondsAgo": 30, "lastCpuSecondsAgo": 90,
//                           "pods": {"spark/exec-1": 30}},
//             "beCpuWindow": [{"secondsAgo": 5, "usage": "900m", "limit": "1"}],
//             "slo": {"allowance": "1200m", "secondsSinceStep": 1, "secondsSinceCut": 8,
//                     "cutLevel": "1500m", "watched": {"web/api-0": 30},
//                     "window": [{"secondsAgo": 1, "allowance": "1200m"}]}}
//
//   "fastPasses": [{"secondsAfterSnapshot": 0.05, "trigger": "timer", "nodeCpu": "1500m",
//                   "nonBeCpu": "900m", "stale": false, "agent": {"suppressArmed": true, ...}}]
//
// "evictions", "beCpuWindow" and "cfsQuotaBurst" are the QoS strategies' own keys (each
// strategy saves and loads its part; agent/qos/strategy.h). Times are ages at the snapshot's
// moment, so a record replays at any later time. It holds no knob values: `plan` reads
// those from the tree --cgroup-root points at (plan_runner.cc), so a record replays against
// that tree, not against the one it was taken on. Absent `probe`: no signal (as a node
// without eBPF or PSI bound); absent `agent`: no history.
//
//   "heldClamps": [{"resource": "cpu_quota", "cgroup": "kubepods/besteffort/pod1/c1",
//                   "wish": "150000", "clampedTo": "28500"}]
//
// `heldClamps` (beside `agent`, and in each fastPasses entry): the limits the cgroup
// executor had clamped under a narrower parent as the pass began, each with the value asked
// for, which it writes back once the parent widens (cgroup/held_clamp.h). The pass's writes
// depend on them as on the tree, so `plan` starts its executor from them. Absent: none.
// `fastPasses`: fast passes the daemon ran after the snapshot's tick, each with its fresh
// sample and the step's memory as the pass began (its ages at the pass's own moment, which
// is secondsAfterSnapshot after the snapshot's); the node facts they plan with are the tick's.

#include <optional>
#include <string>
#include <vector>

#include "agent/step/agent_step.h"
#include "cgroup/held_clamp.h"
#include "common/json_fwd.h"
#include "common/result.h"

namespace gleaner::agent::step {

// One fast pass after the snapshot's tick: what AgentStep::fast took.
struct FastPassRecord {
  double seconds_after = 0;       // after the snapshot's moment
  std::string trigger = "timer";  // what ran it: timer | wakeup
  int64_t node_cpu_milli = 0;
  int64_t non_be_cpu_milli = 0;  // with a demand a wake-up noted
  bool stale = false;
  // The step's memory as the pass began: a wait seen between ticks has already moved it.
  AgentMemory memory;
  // The executor's clamps as the pass began (its writes depend on them).
  std::vector<cgroup::HeldClamp> held_clamps;
};

struct StepRecord {
  ProbeReadings probe;
  AgentMemory memory;
  bool fast_path_live = false;
  // The CPU count the daemon sizes the interference step by (/proc/stat's online CPUs), as
  // agent.cpus; nullopt in a record without it (`plan` then counts the Node's capacity).
  std::optional<int> cpus;
  std::vector<FastPassRecord> fast_passes;
  // The executor's clamps as the tick's writes began.
  std::vector<cgroup::HeldClamp> held_clamps;
};

// Reads `probe`, `agent` and `fastPasses` of a snapshot document; `now_s` is the moment ages count
// back from. Errors name `where` and the field.
Result<StepRecord> parse_step_record(const Json& snapshot_doc, const std::string& where,
                                     double now_s);
// Adds `probe`, `agent` and (when there are any) `fastPasses` to a snapshot document.
void add_step_record(Json& snapshot_doc, const StepRecord& record, double now_s);

}  // namespace gleaner::agent::step
