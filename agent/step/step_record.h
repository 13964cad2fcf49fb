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
// "evictions", "beCpuWindow" and "cfsQuotaBurst" are the QoS strategies' own keys (each
// strategy saves and loads its part; agent/qos/strategy.h). Times are ages at the snapshot's
// moment, so a record taken on one machine replays on another. Absent `probe`: no signal (as a node
// without eBPF or PSI bound); absent `agent`: no history.

#include <optional>

#include "agent/step/agent_step.h"
#include "common/json_fwd.h"
#include "common/result.h"

namespace gleaner::agent::step {

struct StepRecord {
  ProbeReadings probe;
  AgentMemory memory;
  bool fast_path_live = false;
  // The CPU count the daemon sizes the interference step by (/proc/stat's online CPUs), as
  // agent.cpus; nullopt in a record without it (`plan` then counts the Node's capacity).
  std::optional<int> cpus;
};

// Reads `probe` and `agent` of a snapshot document; `now_s` is the moment ages count
// back from. Errors name `where` and the field.
Result<StepRecord> parse_step_record(const Json& snapshot_doc, const std::string& where,
                                     double now_s);
// Adds `probe` and `agent` to a snapshot document.
void add_step_record(Json& snapshot_doc, const StepRecord& record, double now_s);

}  // namespace gleaner::agent::step
