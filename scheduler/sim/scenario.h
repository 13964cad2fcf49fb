#pragma once
// The simulator's input (docs/scheduler.md, "Simulating a policy"): clusters with their
// labels, nodes with their batch allocatable and GPUs over time, the quota tree with its
// namespaces, PriorityClasses, the policy, and the jobs (Spark applications, Kubeflow
// training jobs of gang/training_kinds.h) with their placement and what happens to their pods.
// Parsing checks every field and names it in errors ("jobs[2].executor.instances: ...").

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_fwd.h"
#include "common/result.h"
#include "scheduler/core/cluster_state.h"
#include "scheduler/core/job.h"
#include "scheduler/core/quota_tree.h"
#include "scheduler/core/scheduler.h"

namespace gleaner::scheduler::sim {

struct NodeChange {
  int64_t at = 0;
  Resources batch;
  // Memory the node's agent frees by evicting executors after this report (its memory
  // eviction under pressure); 0: none.
  int64_t evict_memory = 0;
};

struct ScenarioNode {
  NodeInfo info;
  std::vector<NodeChange> changes;  // sorted by time
  // Seconds between binding a pod here and the pod running (image pulls, a sick
  // kubelet). Lets a scenario exercise driverStartTimeoutSeconds. Default 0.
  int64_t start_delay_seconds = 0;
};

// Spark's own executor churn: an executor that goes (failed, evicted, scaled down)
// `after_seconds` after the job started running, and the replacement Spark asks for
// `replace_after_seconds` later.
struct ExecutorLoss {
  int64_t after_seconds = 0;
  int executor = 1;  // 1..executors
  int64_t replace_after_seconds = 0;
};

// Dynamic allocation: `after_seconds` after the job started running Spark asks for
// `count` executors beyond the gang, each taking free batch room in the job's cluster (or
// waiting for some), and lets them go `release_after_seconds` later (or at the end).
struct ExecutorRequest {
  int64_t after_seconds = 0;
  int count = 1;
  std::optional<int64_t> release_after_seconds;
};

// Something that happens to a job's pods, `at` seconds after its submission (ignored when
// the job is not running then).
struct JobEvent {
  enum class Type {
    kExecutorDeleted,  // `count` non-leader pods go; their replacements take the job's room
    kExecutorFailed,   // the same, from a failure
    kDriverFailed,     // the leader fails: the job is reclaimed and placed again
  };
  int64_t at = 0;
  Type type = Type::kExecutorDeleted;
  int count = 1;
};

struct ScenarioJob {
  JobSpec spec;  // spec.kind, roles, priority and allowed clusters resolved
  std::string ns;
  int64_t duration_seconds = 0;
  std::vector<ExecutorLoss> executor_losses;
  std::vector<ExecutorRequest> executor_requests;
  std::vector<JobEvent> events;
};

struct Scenario {
  std::vector<std::string> clusters;
  std::map<std::string, Labels> cluster_labels;
  std::map<std::string, int32_t> priority_classes;
  std::map<std::string, std::string> namespace_queue;  // queues[].namespaces
  std::vector<ScenarioNode> nodes;
  std::vector<QueueSpec> queues;
  SchedulerPolicy policy;
  std::optional<int64_t> until_seconds;
  std::vector<ScenarioJob> jobs;
};

Result<Scenario> parse_scenario(const Json& doc);
// `where` names the input (a file name) in errors.
Result<Scenario> parse_scenario_text(std::string_view text, std::string_view where);

}  // namespace gleaner::scheduler::sim
