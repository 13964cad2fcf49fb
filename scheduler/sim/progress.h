#pragma once
// How far a job's run has got, on the CPU its nodes have left (docs/scheduler.md,
// "Simulator", "Progress"). Pure: the simulator gathers the pods and nodes, this decides.
//
// The model, kept simple and deterministic:
// - A run's work is its declared workers' CPU at full speed for `durationSeconds`: the
//   workers are the pods besides the leader (Spark's executors, a training job's replicas
//   outside its first role), or the leader itself when the job declares no other pod.
// - A running pod's speed is its regular CPU request plus its batch CPU request times its
//   node's batch share; the share is min(1, the node's reported batch CPU / the batch CPU
//   requested by every pod running there): BE on an over-committed node gets what the LS
//   usage left, split in proportion to the requests, as CFS splits the BE cgroup's CPU by
//   the cpu.shares the agent derives from each pod's batch-cpu (agent/qos/be_cgroups.h);
//   work-conserving: an over-committed node's batch CPU is all handed out, and no pod gets
//   more than it asks. A pod that asks for no CPU counts one millicore and is never slowed.
// - A run progresses at the sum of its running workers' speeds, never faster than planned
//   (executors beyond the gang stand in for missing ones; they do not shorten the job).
//   It finishes when its work is done; with no worker running it is stalled.

#include <cstdint>
#include <optional>
#include <vector>

namespace gleaner::scheduler::sim {

// A running pod that does the job's work.
struct Worker {
  int64_t batch_cpu_milli = 0;    // taken from its node's batch capacity
  int64_t regular_cpu_milli = 0;  // from the node's allocatable, which LS usage does not shrink
  double share = 1;               // its node's batch_share()
};

// A run's pace from one instant to the next.
struct Pace {
  double rate = 0;     // work per second, in millicores
  double starved = 0;  // workers' worth of CPU their nodes could not give
  int missing = 0;     // declared workers not running (evicted, deleted, not placed again)
  bool operator==(const Pace&) const = default;
};

// A run's progress, brought up to date at `since`.
struct Progress {
  double planned_rate = 0;  // millicores: the declared workers at full speed
  int planned_workers = 0;
  double work = 0;  // planned_rate x durationSeconds
  double done = 0;
  int64_t since = 0;
  int64_t planned_finish = 0;  // startedAt + durationSeconds
  Pace pace;
  double starved_seconds = 0;  // worker-seconds of CPU not given
  double missing_seconds = 0;  // worker-seconds of declared workers not running
  int64_t stalled_seconds = 0;
  std::optional<int64_t> stalled_since;  // no progress since then (and still none)
};

// A worker's speed at full share: its CPU requests, or one millicore when it asks none.
double nominal_speed(int64_t batch_cpu_milli, int64_t regular_cpu_milli);
// min(1, capacity / requested); a node with nothing requested gives its pods all they ask.
double batch_share(int64_t capacity_milli, int64_t requested_milli);
Pace pace_of(const std::vector<Worker>& running, double planned_rate, int planned_workers);
// `p` carried forward at its pace to `to` (no earlier than p.since).
Progress advanced(Progress p, int64_t to);
// The whole seconds from p.since until its work is done at its pace; nullopt when stalled.
std::optional<int64_t> seconds_to_finish(const Progress& p);

}  // namespace gleaner::scheduler::sim
