#pragma once
// A job as the scheduler sees it: the pods of its roles, which must all land in one
// cluster at once. A Spark application is a driver and N identical executors (the
// shorthand fields); a PyTorchJob or TFJob lists its roles (master and workers; chief, ps,
// workers, evaluator). The first pod of the first role is the job's leader (driver, master,
// chief): its loss ends or reclaims the job; the others may come and go. The live loop
// builds a JobSpec from a SparkApplication (or a driver pod's labels); the simulator from a
// scenario file.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/core/cluster_state.h"
#include "scheduler/core/quota_tree.h"
#include "scheduler/core/resources.h"

namespace gleaner::scheduler {

using JobId = uint32_t;

struct RoleSpec {
  std::string name;  // "driver", "executor", "master", "worker", ...
  Resources batch;   // one pod: batch cpu/memory and GPUs
  int replicas = 1;
  // Regular cpu/memory one pod requests besides batch resources (see JobSpec).
  Resources regular;
  // Where this role's pods may go; absent: the job's node_selector.
  std::optional<NodeSelector> selector;
};

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
  // The job's roles, leader's role first. Empty: a Spark application described by the
  // fields above (roles "driver" and "executor"); given, those fields must stay empty.
  std::vector<RoleSpec> roles;
  std::string kind = "SparkApplication";
  // The clusters the job may go to (a PropagationPolicy's cluster affinity, resolved);
  // nullopt: any; empty: none (the job waits, unschedulable).
  std::optional<std::vector<std::string>> allowed_clusters;
  // Back off from a cluster that failed the job even when no other cluster may take it
  // (a fleet's application: its copy there is being deleted, and going straight back
  // would race that deletion). Otherwise such a job returns at once.
  bool back_off_without_alternative = false;
};

// The roles a spec describes: its `roles`, or the Spark driver and executors; roles with
// no replicas left out (so the first is the leader's).
std::vector<RoleSpec> roles_of(const JobSpec& spec);

enum class JobPhase {
  kPending,   // waiting in its queue
  kAdmitted,  // driver bound, executors' room reserved; not every pod runs yet
  kRunning,   // every pod runs
  kCompleted,
  kWithdrawn,  // removed by its owner before it completed (Scheduler::withdraw)
};
const char* to_string(JobPhase phase);

// Pods are numbered role by role: pod 0 is the leader (the Spark driver), then the rest
// (a Spark application's executors are pods 1..N).
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
  std::vector<RoleSpec> roles;  // roles_of(spec)
  Resources total;              // every pod of every role: what admission charges to the quota
  JobPhase phase = JobPhase::kPending;
  std::string reason;  // why it is pending, empty otherwise
  bool unschedulable = false;
  std::optional<ClusterId> cluster;        // where its pods are
  std::optional<ClusterId> avoid_cluster;  // the cluster it was reclaimed from
  int64_t avoid_until = 0;                 // its back-off there ends (a reschedule)
  int reclaims_in_a_row = 0;               // reschedules since its driver last ran
  bool backoff_always = false;             // spec.back_off_without_alternative, at the reclaim
  std::vector<PodState> pods;
  int64_t admitted_at = 0;
  int64_t started_at = 0;
  bool started = false;  // every pod ran once in this admission (an executor may go since)
  int64_t finished_at = 0;
  int64_t reservation_expires_at = 0;
  int preemptions = 0;
  int reschedules = 0;
  int steered_away = 0;  // placements sent elsewhere than a node it lost a pod to an eviction on
  uint32_t attempt = 0;  // bumped on every admission: stale timers compare it
  std::optional<int64_t> timer_at;  // its entry in the scheduler's timer index

  // The role pod `index` belongs to.
  [[nodiscard]] const RoleSpec& role_of(size_t index) const {
    for (const RoleSpec& r : roles) {
      if (index < static_cast<size_t>(r.replicas)) return r;
      index -= static_cast<size_t>(r.replicas);
    }
    return roles.back();
  }
  [[nodiscard]] size_t pod_count() const {
    size_t n = 0;
    for (const RoleSpec& r : roles)
      n += static_cast<size_t>(r.replicas);
    return n;
  }
  [[nodiscard]] const NodeSelector* selector_of(const RoleSpec& role) const {
    if (role.selector) return role.selector->empty() ? nullptr : &*role.selector;
    return spec.node_selector.empty() ? nullptr : &spec.node_selector;
  }
  [[nodiscard]] GangRequest request() const {
    GangRequest g;
    g.roles.reserve(roles.size());
    for (const RoleSpec& r : roles)
      g.roles.push_back(RoleRequest{r.batch, r.replicas, selector_of(r), r.regular});
    return g;
  }
};

}  // namespace gleaner::scheduler
