// Bindings the API server refused. A failed binding is never a reason to delete the pod:
// kube-scheduler, when pods/binding fails, forgets the placement it assumed and tries the pod
// again with back-off (pkg/scheduler/schedule_one.go, handleBindingCycleError; back-off
// from 1 s doubling to 10 s, pkg/scheduler/backend/queue). A gang's binding is tried again
// the same way while its room stays held. A job none of whose pods could be bound after
// kBindTries gives its room back and waits in its queue again (placed anew by a later pass);
// a gang already partly bound keeps trying, and is placed again whole only when the
// reservation TTL passes with it still half bound. Only a real loss (the pod deleted or
// failed, seen through the informer) reclaims a job.
#include <algorithm>

#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::gang {

namespace {

constexpr int kBindTries = 5;
constexpr double kFirstBackoffSeconds = 1;
constexpr double kMaxBackoffSeconds = 10;

const char* cause_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUnavailable:
      return "server_error";
    case ErrorCode::kRetryLater:
      return "throttled";
    case ErrorCode::kTimeout:
    case ErrorCode::kIo:
      return "timeout";
    case ErrorCode::kConflict:
      return "conflict";
    case ErrorCode::kNotFound:
      return "not_found";
    default:
      return "other";
  }
}

}  // namespace

std::optional<std::string> GangScheduler::bind_target(const Tracked& t) const {
  std::optional<NodeId> node;
  if (!t.gang.empty() && t.index >= 0) {
    auto g = book_.find(t.gang);
    if (g == book_.end() || !g->second.job) return std::nullopt;
    const Job& j = core_.job(*g->second.job);
    if (j.phase != JobPhase::kAdmitted && j.phase != JobPhase::kRunning) return std::nullopt;
    const auto index = static_cast<size_t>(t.index);
    if (index >= j.pods.size() || !j.pods[index].holds_room) return std::nullopt;
    node = j.pods[index].node;
  } else if (t.regular_in_core && !t.deleting) {
    node = core_.foreign_pod_node(t.view.uid);  // an executor beyond its gang, in its own room
  }
  if (!node) return std::nullopt;
  const std::string& full = core_.clusters().node(*node).name;
  return full.substr(full.find('/') + 1);
}

void GangScheduler::bind_done(const std::string& cluster, const std::string& uid,
                              const Status& result) {
  counters_.bind_result(result.ok());
  std::lock_guard lock(mu_);
  if (result.ok()) {
    bind_retries_.erase(uid);
    return;
  }
  const ErrorCode code = result.error().code;
  counters_.bind_failed(cause_of(code));
  auto it = pods_.find(uid);
  // 404: the pod is gone (its deletion comes through the informer: a real loss). 409: it is
  // bound already (a binding that timed out here but went through) or it is another pod of
  // that name: the informer says which. Either way nothing is sent again.
  if (it == pods_.end() || it->second.view.cluster != cluster || !it->second.view.node.empty() ||
      code == ErrorCode::kNotFound || code == ErrorCode::kConflict) {
    bind_retries_.erase(uid);
    return;
  }
  Tracked& t = it->second;
  auto target = bind_target(t);
  if (!target) {
    bind_retries_.erase(uid);  // no longer placed by us (reclaimed, its job ended)
    return;
  }
  BindRetry& r = bind_retries_[uid];
  const double now = steady_s();
  if (r.failures == 0) {
    r.cluster = cluster;
    r.first_failed = now;
  }
  ++r.failures;
  r.in_flight = false;
  const std::string why = "binding to node " + *target + " failed (" + std::to_string(r.failures) +
                          " times): " + result.error().message;
  if (r.failures >= kBindTries) {
    give_up_binding(t, why);
    if (!bind_retries_.contains(uid)) return;
  }
  r.next_at =
      now + std::min(kMaxBackoffSeconds,
                     kFirstBackoffSeconds * static_cast<double>(1 << std::min(r.failures - 1, 8)));
  if (r.failures == 1) event(t, "GleanerBindFailed", why + "; tried again with back-off", true);
}

void GangScheduler::give_up_binding(Tracked& t, const std::string& why) {
  auto g = book_.find(t.gang);
  if (g == book_.end() || !g->second.job || t.index < 0) return;  // its own room: keep trying
  Gang& gang = g->second;
  for (const auto& [index, uid] : gang.members) {
    auto p = pods_.find(uid);
    // A member is bound: the gang is partly placed and keeps trying (see retry_binds).
    if (p != pods_.end() && !p->second.view.node.empty()) return;
  }
  const std::string reason = "pod " + t.view.name + ": " + why +
                             "; its room was given back and it waits to be placed again";
  if (Status s = core_.requeue_unbound(*gang.job, reason); !s) return;
  counters_.bind_given_up();
  if (Tracked* voice = voice_of(gang)) event(*voice, "GleanerBindFailed", reason, true);
  for (const auto& [index, uid] : gang.members)
    bind_retries_.erase(uid);
  if (gang.replica_gang) {
    // A training job's pods wait for its next admission, when each takes its role's room.
    for (const auto& [index, uid] : gang.members) {
      if (auto p = pods_.find(uid); p != pods_.end()) p->second.index = -1;
      wait_in(gang, uid);
    }
    gang.members.clear();
  }
  gang.last_event.clear();
}

void GangScheduler::retry_binds() {
  if (bind_retries_.empty() || !actions_) return;
  const double now = steady_s();
  const auto ttl = core_.policy().reservation_ttl_seconds;
  for (auto it = bind_retries_.begin(); it != bind_retries_.end();) {
    auto p = pods_.find(it->first);
    std::optional<std::string> target;
    if (p != pods_.end() && p->second.view.node.empty()) target = bind_target(p->second);
    if (!target) {
      it = bind_retries_.erase(it);
      continue;
    }
    BindRetry& r = it->second;
    if (r.in_flight || now < r.next_at) {
      ++it;
      continue;
    }
    Tracked& t = p->second;
    if (now - r.first_failed >= static_cast<double>(ttl) && !t.gang.empty()) {
      // Half bound for longer than the reservation TTL: the gang is placed again whole.
      const JobId job = *book_[t.gang].job;
      const std::string reason = "pod " + t.view.name + " could not be bound within the " +
                                 "reservation TTL (" + std::to_string(ttl) +
                                 "s) while others of its gang were";
      it = bind_retries_.erase(it);
      handle({core_.lose_pod(job, now_s(), reason)});
      continue;
    }
    r.in_flight = true;
    actions_(Action{ActionKind::kBind, r.cluster, t.view.ns, t.view.name, t.view.uid, *target});
    ++it;
  }
}

}  // namespace gleaner::scheduler::gang
