#include "scheduler/core/scheduler.h"

#include <algorithm>
#include <set>

namespace gleaner::scheduler {

const char* to_string(JobPhase phase) {
  switch (phase) {
    case JobPhase::kPending:
      return "Pending";
    case JobPhase::kAdmitted:
      return "Admitted";
    case JobPhase::kRunning:
      return "Running";
    case JobPhase::kCompleted:
      return "Completed";
    case JobPhase::kWithdrawn:
      return "Withdrawn";
  }
  return "Unknown";
}

const char* to_string(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::kAdmit:
      return "admit";
    case DecisionKind::kPreempt:
      return "preempt";
    case DecisionKind::kReschedule:
      return "reschedule";
    case DecisionKind::kUnschedulable:
      return "unschedulable";
    case DecisionKind::kReservationExpired:
      return "reservation-expired";
  }
  return "unknown";
}

Scheduler::Scheduler(SchedulerPolicy policy, QuotaTree quotas, ClusterState clusters)
    : policy_(policy), quotas_(std::move(quotas)), clusters_(std::move(clusters)) {
  clusters_.set_scores(policy_.scores);
}

bool Scheduler::PendingKey::operator<(const PendingKey& o) const {
  if (neg_priority != o.neg_priority) return neg_priority < o.neg_priority;
  if (submit_time != o.submit_time) return submit_time < o.submit_time;
  if (int c = name->compare(*o.name); c != 0) return c < 0;
  return id < o.id;
}

Scheduler::PendingKey Scheduler::pending_key(const Job& j) const {
  return PendingKey{-j.spec.priority, j.spec.submit_time, &j.spec.name, j.id};
}

std::optional<JobId> Scheduler::find_job(const std::string& name) const {
  auto it = job_ids_.find(name);
  if (it == job_ids_.end()) return std::nullopt;
  return it->second;
}

std::vector<RoleSpec> roles_of(const JobSpec& spec) {
  std::vector<RoleSpec> roles;
  if (spec.roles.empty()) {
    roles.push_back(RoleSpec{"driver", spec.driver, 1, spec.driver_regular, std::nullopt});
    if (spec.executors > 0) {
      roles.push_back(
          RoleSpec{"executor", spec.executor, spec.executors, spec.executor_regular, std::nullopt});
    }
    return roles;
  }
  for (const RoleSpec& r : spec.roles) {
    if (r.replicas > 0) roles.push_back(r);
  }
  return roles;
}

namespace {

Status check_roles(const JobSpec& spec) {
  const std::string who = "job " + spec.name;
  auto invalid = [&who](const std::string& what) {
    return make_error(ErrorCode::kInvalidArgument, who + ": " + what);
  };
  if (spec.roles.empty()) {
    if (spec.executors < 0) return invalid("negative executor instances");
    if (spec.driver.any_negative() || spec.executor.any_negative())
      return invalid("negative resource request");
    if (spec.executors > 0 && spec.executor == Resources{})
      return invalid("executor requests nothing");
    return ok_status();
  }
  if (spec.driver != Resources{} || spec.executor != Resources{} || spec.executors != 0)
    return invalid("both roles and driver/executor given; use one");
  std::set<std::string> names;
  for (const RoleSpec& r : spec.roles) {
    const std::string role = "role " + (r.name.empty() ? std::string("(unnamed)") : r.name);
    if (r.name.empty() || !names.insert(r.name).second)
      return invalid(role + ": a role needs a name of its own");
    if (r.replicas < 0) return invalid(role + ": negative replicas");
    if (r.batch.any_negative() || r.regular.any_negative())
      return invalid(role + ": negative resource request");
  }
  // A role whose pods request nothing is accepted and takes no room: Kubeflow's own
  // examples (pytorch simple.yaml, TFJob dist-mnist) set no resources, and kube-scheduler
  // places such BestEffort pods by counting zero requests (NodeResourcesFit's fitsRequest,
  // pkg/scheduler/framework/plugins/noderesources/fit.go, checks only the pod count for
  // them). Gleaner keeps no pod count per node: kubelet's maxPods is the limit there
  // (docs/fleet.md).
  if (roles_of(spec).empty()) return invalid("no role has replicas");
  return ok_status();
}

}  // namespace

Result<JobId> Scheduler::submit(const JobSpec& spec) {
  const std::string who = "job " + spec.name;
  if (spec.name.empty()) return make_error(ErrorCode::kInvalidArgument, "job without a name");
  if (job_ids_.count(spec.name) != 0) {
    return make_error(ErrorCode::kInvalidArgument, who + ": name used twice");
  }
  if (Status s = check_roles(spec); !s) return s.error();
  auto queue = quotas_.resolve(spec.queue);
  if (!queue) return make_error(ErrorCode::kInvalidArgument, who + ": " + queue.error().message);

  auto id = static_cast<JobId>(jobs_.size());
  Job j;
  j.id = id;
  j.spec = spec;
  j.queue = *queue;
  j.roles = roles_of(spec);
  for (const RoleSpec& r : j.roles)
    j.total += r.batch * r.replicas;
  j.reason = "waiting for a scheduling pass";
  jobs_.push_back(std::move(j));
  assign_shape(jobs_.back());
  job_ids_.emplace(spec.name, id);
  pending_.insert(pending_key(jobs_.back()));
  return id;
}

void Scheduler::replace_quotas(QuotaTree quotas, const std::map<JobId, std::string>& moves) {
  for (Job& j : jobs_) {
    if (j.phase == JobPhase::kCompleted || j.phase == JobPhase::kWithdrawn) continue;
    auto moved = moves.find(j.id);
    const std::string name = moved != moves.end() ? moved->second : quotas_.queue(j.queue).name;
    auto id = quotas.find(name);
    if (!id) {
      // resolve("default") cannot fail: default is created on first use.
      id = *quotas.resolve("default");
      if (j.phase == JobPhase::kPending && !name.empty())
        j.reason = "queue " + name + " removed; now in default";
    }
    j.queue = *id;
  }
  for (JobId id : active_)
    quotas.charge(jobs_[id].queue, jobs_[id].total);
  quotas_ = std::move(quotas);
}

void Scheduler::admit(Job& j, const GangPlacement& p, int64_t now) {
  j.cluster = p.cluster;
  j.pods.assign(p.pods.size(), PodState{});
  for (size_t i = 0; i < p.pods.size(); ++i)
    j.pods[i] = PodState{p.pods[i], true, false, false, 0};
  j.pods[0].bound = true;  // the leader is bound at once; the others' room is reserved
  j.pods[0].bound_at = now;
  j.phase = JobPhase::kAdmitted;
  j.reason.clear();
  j.unschedulable = false;
  j.admitted_at = now;
  j.started = false;
  j.reservation_expires_at = now + policy_.reservation_ttl_seconds;
  ++j.attempt;
  if (steer_candidate_ && steer_candidate_->job == j.id && steer_candidate_->pods == p.pods) {
    const SteerCandidate c = *std::exchange(steer_candidate_, std::nullopt);
    steered(j, c.pod_index, c.avoided, p.pods[static_cast<size_t>(c.pod_index)], now);
  }
  quotas_.charge(j.queue, j.total);
  active_.insert(j.id);
  refresh_timer(j);
}

void Scheduler::refresh_timer(Job& j) {
  if (j.timer_at) timers_.erase({*j.timer_at, j.id});
  j.timer_at.reset();
  if (j.phase != JobPhase::kAdmitted) return;
  std::optional<int64_t> next;
  if (!j.pods[0].running) next = j.admitted_at + policy_.driver_start_timeout_seconds;
  bool unclaimed = std::any_of(j.pods.begin() + 1, j.pods.end(),
                               [](const PodState& p) { return p.holds_room && !p.bound; });
  if (unclaimed && (!next || j.reservation_expires_at < *next)) next = j.reservation_expires_at;
  if (!next) return;
  j.timer_at = next;
  timers_.insert({*next, j.id});
}

void Scheduler::for_each_held_room(
    const Job& j, const std::function<void(NodeId, const RoleSpec&, bool driver)>& visit) {
  for (size_t i = 0; i < j.pods.size(); ++i) {
    const PodState& p = j.pods[i];
    if (p.holds_room) visit(p.node, j.role_of(i), i == 0);
  }
}

void Scheduler::detach(Job& j) {
  for_each_held_room(j, [&](NodeId node, const RoleSpec& role, bool driver) {
    clusters_.release(node, role.batch, driver, role.regular);
  });
  quotas_.refund(j.queue, j.total);
  active_.erase(j.id);
  if (j.timer_at) timers_.erase({*j.timer_at, j.id});
  j.timer_at.reset();
}

void Scheduler::reattach(Job& j) {
  for_each_held_room(j, [&](NodeId node, const RoleSpec& role, bool driver) {
    clusters_.acquire(node, role.batch, driver, role.regular);
  });
  quotas_.charge(j.queue, j.total);
  active_.insert(j.id);
  refresh_timer(j);
}

void Scheduler::requeue(Job& j, const std::string& reason) {
  j.avoid_cluster = j.cluster;
  j.avoid_until = 0;  // a back-off is set by the caller that wants one (lose_pod)
  j.cluster.reset();
  j.pods.clear();
  j.phase = JobPhase::kPending;
  j.reason = reason;
  pending_.insert(pending_key(j));
}

Result<PodState*> Scheduler::admitted_pod(JobId id, int pod_index, int first) {
  if (id >= jobs_.size()) return make_error(ErrorCode::kNotFound, "unknown job");
  Job& j = jobs_[id];
  if (j.phase != JobPhase::kAdmitted && j.phase != JobPhase::kRunning) {
    return make_error(ErrorCode::kInvalidArgument, "job " + j.spec.name + " is not admitted");
  }
  if (pod_index < first || static_cast<size_t>(pod_index) >= j.pods.size()) {
    return make_error(ErrorCode::kInvalidArgument, "job " + j.spec.name + " has no " +
                                                       (first > 0 ? "executor " : "pod ") +
                                                       std::to_string(pod_index));
  }
  return &j.pods[static_cast<size_t>(pod_index)];
}

Result<NodeId> Scheduler::bind_executor(JobId id, int pod_index, int64_t now,
                                        const NodeSelector* pod_selector) {
  auto slot = executor_of(id, pod_index);
  if (!slot) return slot.error();
  Job& j = jobs_[id];
  PodState& p = **slot;
  if (p.bound) return p.node;
  if (p.holds_room && pod_selector != nullptr) {
    const Node& n = clusters_.node(p.node);
    if (!pod_selector->admits(n.labels, n.taints)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "job " + j.spec.name + ": executor " + std::to_string(pod_index) +
                            "'s own node selector (" + pod_selector->to_string() +
                            ") or tolerations do not hold on node " + n.name + ", reserved for it");
    }
  }
  if (!p.holds_room) {
    // The reservation expired: try the cluster's free room like any late pod, where the
    // pod's own selector holds as well as its role's.
    const RoleSpec& role = j.role_of(static_cast<size_t>(pod_index));
    std::optional<NodeSelector> both;
    if (pod_selector != nullptr) {
      const NodeSelector* of_role = j.selector_of(role);
      both = merge_selectors(of_role != nullptr ? *of_role : NodeSelector{}, *pod_selector);
    }
    auto node = place_one_avoiding(j, pod_index, role.batch, both ? &*both : j.selector_of(role),
                                   role.regular, now);
    if (!node) {
      return make_error(ErrorCode::kUnavailable, "job " + j.spec.name + ": no room for executor " +
                                                     std::to_string(pod_index) +
                                                     " after its reservation expired");
    }
    p.node = *node;
    p.holds_room = true;
  }
  p.bound = true;
  p.bound_at = now;
  refresh_timer(j);
  return p.node;
}

bool Scheduler::pod_running(JobId id, int pod_index, int64_t now) {
  Job& j = jobs_[id];
  if (j.phase != JobPhase::kAdmitted || pod_index < 0 ||
      static_cast<size_t>(pod_index) >= j.pods.size()) {
    return false;
  }
  j.pods[static_cast<size_t>(pod_index)].running = true;
  if (pod_index == 0) {
    j.reclaims_in_a_row = 0;  // its cluster ran its driver: no back-off grows from here
    refresh_timer(j);
  }
  bool all = std::all_of(j.pods.begin(), j.pods.end(), [](const PodState& p) { return p.running; });
  if (!all) return false;
  j.phase = JobPhase::kRunning;
  refresh_timer(j);
  if (j.started) return false;  // a replacement executor: the job started long ago
  j.started = true;
  j.started_at = now;
  return true;
}

Status Scheduler::executor_gone(JobId id, int pod_index, int64_t now) {
  auto slot = executor_of(id, pod_index);
  if (!slot) return slot.error();
  // The room stays accounted on its node (holds_room) for the replacement unless that node
  // is over-committed; until the replacement runs, not every pod of the job does. The
  // reservation clock runs again for it.
  (*slot)->bound = false;
  (*slot)->running = false;
  Job& j = jobs_[id];
  if (PodState& p = **slot; p.holds_room) {
    // On a node whose batch capacity shrank below its use (report_node) the room goes
    // back instead: the replacement binds where the cluster has room (bind_executor).
    // So does the room on a node the job avoids (an eviction took this pod from it:
    // note_eviction): the replacement must go elsewhere.
    const Node& n = clusters_.node(p.node);
    if (!n.used.fits_in(n.capacity()) || reclaims_.avoids(id, p.node))
      release_executor_room(j, static_cast<size_t>(pod_index));
  }
  if (j.phase == JobPhase::kRunning) j.phase = JobPhase::kAdmitted;
  j.reservation_expires_at =
      std::max(j.reservation_expires_at, now + policy_.reservation_ttl_seconds);
  refresh_timer(j);
  return ok_status();
}

void Scheduler::complete(JobId id, int64_t now) {
  Job& j = jobs_[id];
  reclaims_.forget(id);
  if (j.phase != JobPhase::kRunning && j.phase != JobPhase::kAdmitted) return;
  detach(j);
  j.phase = JobPhase::kCompleted;
  j.finished_at = now;
}

Status Scheduler::withdraw(JobId id) {
  if (id >= jobs_.size()) {
    return make_error(ErrorCode::kNotFound, "no job " + std::to_string(id) + " to withdraw");
  }
  Job& j = jobs_[id];
  reclaims_.forget(id);
  switch (j.phase) {
    case JobPhase::kPending:
      pending_.erase(pending_key(j));
      break;
    case JobPhase::kAdmitted:
    case JobPhase::kRunning:
      detach(j);
      break;
    case JobPhase::kCompleted:
    case JobPhase::kWithdrawn:
      return make_error(
          ErrorCode::kInvalidArgument,
          "job " + j.spec.name + " is " + to_string(j.phase) + ": nothing to withdraw");
  }
  j.phase = JobPhase::kWithdrawn;
  j.reason = "withdrawn";
  j.unschedulable = false;
  j.cluster.reset();
  j.pods.clear();
  return ok_status();
}

Status Scheduler::set_node_selector(JobId id, NodeSelector selector) {
  if (id >= jobs_.size()) {
    return make_error(ErrorCode::kNotFound, "no job " + std::to_string(id));
  }
  jobs_[id].spec.node_selector = std::move(selector);
  assign_shape(jobs_[id]);
  jobs_[id].unschedulable = false;  // judged again against the new selector
  return ok_status();
}

Status Scheduler::set_allowed_clusters(JobId id, std::optional<std::vector<std::string>> allowed) {
  if (id >= jobs_.size()) {
    return make_error(ErrorCode::kNotFound, "no job " + std::to_string(id));
  }
  jobs_[id].spec.allowed_clusters = std::move(allowed);
  assign_shape(jobs_[id]);
  jobs_[id].unschedulable = false;  // judged again against the new members
  return ok_status();
}

void Scheduler::release_executor_room(Job& j, size_t pod_index) {
  PodState& p = j.pods[pod_index];
  const RoleSpec& role = j.role_of(pod_index);
  clusters_.release(p.node, role.batch, false, role.regular);
  p.holds_room = false;
}

std::vector<Decision> Scheduler::check_timeouts(int64_t now) {
  std::vector<Decision> out;
  while (!backoffs_.empty() && backoffs_.begin()->first <= now)
    backoffs_.erase(backoffs_.begin());  // over: the next pass may use the cluster again
  while (!timers_.empty() && timers_.begin()->first <= now) {
    Job& j = jobs_[timers_.begin()->second];
    timers_.erase(timers_.begin());
    j.timer_at.reset();
    if (j.phase != JobPhase::kAdmitted) continue;
    if (!j.pods[0].running && now >= j.admitted_at + policy_.driver_start_timeout_seconds) {
      out.push_back(lose_pod(j.id, now,
                             "driver not running within " +
                                 std::to_string(policy_.driver_start_timeout_seconds) + "s"));
      continue;
    }
    if (now >= j.reservation_expires_at) {
      bool released = false;
      for (size_t i = 1; i < j.pods.size(); ++i) {
        PodState& p = j.pods[i];
        if (p.holds_room && !p.bound) {
          release_executor_room(j, i);
          released = true;
        }
      }
      if (released) out.push_back(Decision{DecisionKind::kReservationExpired, j.id, ""});
    }
    refresh_timer(j);
  }
  return out;
}

std::vector<JobId> Scheduler::pending_jobs() const {
  std::vector<JobId> out;
  out.reserve(pending_.size());
  for (const PendingKey& k : pending_)
    out.push_back(k.id);
  return out;
}

std::optional<int64_t> Scheduler::next_deadline() const {
  std::optional<int64_t> next;
  if (!timers_.empty()) next = timers_.begin()->first;
  if (!backoffs_.empty() && (!next || backoffs_.begin()->first < *next))
    next = backoffs_.begin()->first;
  // A hold that ends lets a pass place a job on a node it avoided.
  if (auto hold = reclaims_.next_deadline(policy_.reclaim_hold_seconds);
      hold && (!next || *hold < *next)) {
    next = hold;
  }
  return next;
}

}  // namespace gleaner::scheduler
