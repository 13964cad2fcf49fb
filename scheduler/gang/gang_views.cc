// The read-only HTTP API's documents, built from the core's state under the lock.
#include "common/json_util.h"
#include "common/taints.h"
#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::gang {

namespace {

// A number, or "unlimited" for a max that names no limit for it.
Json amount(int64_t v) {
  return is_unlimited(v) ? Json("unlimited") : Json(v);
}

Json amounts(const Resources& r) {
  Json out{{"cpuMillicores", amount(r.cpu_milli)}, {"memoryBytes", amount(r.memory_bytes)}};
  if (r.gpus != 0) out["gpus"] = amount(r.gpus);  // nvidia.com/gpu, where a node or pod has any
  return out;
}

Json optional_amounts(const std::optional<Resources>& r) {
  return r ? amounts(*r) : Json(nullptr);
}

}  // namespace

Json GangScheduler::queues_json() const {
  std::lock_guard lock(mu_);
  Json out = Json::array();
  const QuotaTree& q = core_.quotas();
  for (QueueId id = 0; id < q.size(); ++id) {
    const Queue& queue = q.queue(id);
    Json item{{"name", queue.name},
              {"parent", id == QuotaTree::kRoot ? Json(nullptr) : Json(q.queue(queue.parent).name)},
              {"min", amounts(queue.min)},
              {"max", optional_amounts(queue.max)},
              {"used", amounts(queue.used)},
              {"borrowing", id != QuotaTree::kRoot && q.borrowing(id)}};
    item["queueing"] = queue.queueing ? Json(to_string(*queue.queueing)) : Json(nullptr);
    out.push_back(std::move(item));
  }
  return Json{{"queues", std::move(out)}};
}

Json GangScheduler::jobs_json() const {
  std::lock_guard lock(mu_);
  Json out = Json::array();
  for (JobId id = 0; id < core_.job_count(); ++id) {
    const Job& j = core_.job(id);
    // The core counts a job's leader bound from its admission (its room is taken); the
    // view says whether a pod of the gang is bound to a node now (a driver still to be
    // created, or Pending, is not).
    const Gang* gang = book_.gang_of_job(id);
    Json pods = Json::array();
    for (size_t i = 0; i < j.pods.size(); ++i) {
      const PodState& p = j.pods[i];
      const bool placed = p.holds_room || p.bound;
      bool bound = p.bound;
      if (gang != nullptr) {
        auto m = gang->members.find(static_cast<int>(i));
        auto pod = m == gang->members.end() ? pods_.end() : pods_.find(m->second);
        bound = pod != pods_.end() && !pod->second.view.node.empty();
      }
      pods.push_back(
          Json{{"node", placed ? Json(core_.clusters().node(p.node).name) : Json(nullptr)},
               {"bound", bound},
               {"running", p.running}});
    }
    out.push_back(Json{
        {"name", j.spec.name},
        {"queue", core_.quotas().queue(j.queue).name},
        {"priority", j.spec.priority},
        {"phase", to_string(j.phase)},
        {"reason", j.reason},
        {"unschedulable", j.unschedulable},
        {"cluster", j.cluster ? Json(core_.clusters().cluster_name(*j.cluster)) : Json(nullptr)},
        {"submittedAt", j.spec.submit_time},
        {"driver", amounts(j.spec.driver)},
        {"executor", amounts(j.spec.executor)},
        {"executors", j.spec.executors},
        {"preemptions", j.preemptions},
        {"reschedules", j.reschedules},
        {"pods", std::move(pods)}});
  }
  // Pods known but in no job yet: executors whose driver has not come (or went), gang
  // members short of minAvailable. A pod that stays here says why it stays Pending.
  Json waiting = Json::array();
  for (const auto& [key, g] : book_) {
    if (g.waiting.empty()) continue;
    Json names = Json::array();
    for (const auto& uid : g.waiting)
      if (auto p = pods_.find(uid); p != pods_.end()) names.push_back(p->second.view.name);
    waiting.push_back(Json{{"cluster", g.cluster},
                           {"namespace", g.ns},
                           {"gang", g.name},
                           {"inJob", g.job.has_value()},
                           {"pods", std::move(names)}});
  }
  return Json{{"jobs", std::move(out)}, {"waiting", std::move(waiting)}};
}

Json GangScheduler::nodes_json() const {
  std::lock_guard lock(mu_);
  const int64_t now = now_s();
  Json out = Json::array();
  const ClusterState& cs = core_.clusters();
  for (NodeId id = 0; id < cs.node_count(); ++id) {
    const Node& n = cs.node(id);
    const auto slash = n.name.find('/');
    Json taints = Json::array();
    for (const Taint& t : n.taints)
      taints.push_back(gleaner::to_string(t));
    out.push_back(
        Json{{"name", n.name.substr(slash + 1)},
             {"taints", std::move(taints)},
             {"cluster", n.name.substr(0, slash)},
             {"health", to_string(n.health)},
             {"schedulable", n.schedulable()},
             {"reportAgeSeconds", now - n.reported_at},
             {"batch", amounts(n.reported)},
             {"capacity", amounts(n.capacity())},
             {"used", amounts(n.used)},
             {"free", amounts(n.free())},
             // Regular allocatable left for pods that keep cpu/memory requests
             // (null: the Node states no allocatable).
             {"regularFree",
              n.regular_outside ? amounts(*n.regular_outside - n.regular_used) : Json(nullptr)}});
  }
  return Json{{"nodes", std::move(out)}};
}

void GangScheduler::inspect(const std::function<void(const Scheduler&)>& look) const {
  std::lock_guard lock(mu_);
  look(core_);
}

std::optional<int64_t> GangScheduler::next_deadline() const {
  std::lock_guard lock(mu_);
  return core_.next_deadline();
}

StateGauges GangScheduler::gauges() const {
  std::lock_guard lock(mu_);
  StateGauges g;
  for (JobId id = 0; id < core_.job_count(); ++id) {
    switch (core_.job(id).phase) {
      case JobPhase::kPending:
        ++g.pending_jobs;
        break;
      case JobPhase::kAdmitted:
        ++g.admitted_jobs;
        break;
      case JobPhase::kRunning:
        ++g.running_jobs;
        break;
      case JobPhase::kCompleted:
      case JobPhase::kWithdrawn:
        break;
    }
  }
  const ClusterState& cs = core_.clusters();
  for (NodeId id = 0; id < cs.node_count(); ++id)
    ++g.nodes_by_health[to_string(cs.node(id).health)];
  partial_gauges(g);
  return g;
}

}  // namespace gleaner::scheduler::gang
