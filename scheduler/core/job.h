#pragma once
// A Spark application as the scheduler sees it: one driver pod and N identical executor
// pods that must all land in one cluster. The live loop builds a JobSpec from a
// SparkApplication (or from a driver pod's labels); the simulator from a scenario file.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/core/cluster_state.h"
#include "scheduler/core/quota_tree.h"
#include "scheduler/core/resources.h"

namespace gleaner::scheduler {

using JobId = uint32_t;

struct JobSpec {
  std::string name;      // unique among jobs
  std::string queue;     // empty: "default"
  int32_t priority = 0;  // PriorityClass value: higher goes first
  int64_t submit_time = 0;
  Resources driver;
  Resources executor;
  int executors = 0;
  NodeSelector node_selector;
  // Tried before the other clusters when the whole gang fits there (the live loop: the
  // member cluster a SparkApplication was created in). Empty: best fit only.
  std::string preferred_cluster;
  // Regular cpu/memory the pods request besides batch resources (not converted by the
  // colocation webhook): kubelet admits them against regular allocatable too.
  Resources driver_regular;
  Resources executor_regular;
};

enum class JobPhase {
  kPending,   // waiting in its queue
  kAdmitted,  // driver bound, executors' room reserved; not every pod runs yet
  kRunning,   // every pod runs
  kCompleted,
  kWithdrawn,  // removed by its owner before it completed (Scheduler::withdraw)
};
const char* to_string(JobPhase phase);

// Pod 0 is the driver, pods 1..N the executors.
struct PodState {
  NodeId node = 0;
  bool holds_room = false;  // room accounted on `node` (bound, or reserved for an executor)
  bool bound = false;       // the pod itself is bound to `node`
  bool running = false;
  int64_t bound_at = 0;
};

struct Job {
  JobId id = 0;
  JobSpec spec;
  QueueId queue = 0;
  Resources total;  // driver + all executors: what admission charges to the quota
  JobPhase phase = JobPhase::kPending;
  std::string reason;  // why it is pending, empty otherwise
  bool unschedulable = false;
  std::optional<ClusterId> cluster;        // where its pods are
  std::optional<ClusterId> avoid_cluster;  // the cluster it was reclaimed from
  std::vector<PodState> pods;
  int64_t admitted_at = 0;
  int64_t started_at = 0;
  bool started = false;  // every pod ran once in this admission (an executor may go since)
  int64_t finished_at = 0;
  int64_t reservation_expires_at = 0;
  int preemptions = 0;
  int reschedules = 0;
  uint32_t attempt = 0;             // bumped on every admission: stale timers compare it
  std::optional<int64_t> timer_at;  // its entry in the scheduler's timer index

  [[nodiscard]] GangRequest request() const {
    return GangRequest{
        spec.driver,         spec.executor,
        spec.executors,      spec.node_selector.empty() ? nullptr : &spec.node_selector,
        spec.driver_regular, spec.executor_regular};
  }
};

}  // namespace gleaner::scheduler
