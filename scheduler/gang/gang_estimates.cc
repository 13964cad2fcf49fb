// The live scheduler's answers to Karmada's scheduler-estimator: read under the same lock
// as every other view, from the core's cluster model.
#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::gang {

std::optional<int32_t> GangScheduler::estimate_sets(
    const std::string& cluster, const ComponentSet& set,
    const std::vector<ComponentSet>& assumed) const {
  std::optional<ClusterCopy> copy;
  {
    // Only the copy under the lock: the placements on it run beside other estimates and
    // the scheduling loop.
    std::lock_guard lock(mu_);
    auto managed = cluster_of(cluster);
    if (!managed) return std::nullopt;
    copy = copy_for_estimate(core_.clusters(), *managed);
  }
  if (!copy) return std::nullopt;
  return max_component_sets(std::move(*copy), set, assumed);
}

int32_t GangScheduler::unschedulable_pods(const std::string& cluster, const std::string& ns,
                                          const std::string& name, double threshold_seconds) const {
  std::lock_guard lock(mu_);
  auto managed = cluster_of(cluster);
  if (!managed) return 0;
  const double now = steady_s();
  int32_t pods = 0;
  for (const auto& [key, g] : book_) {
    if (g.ns != ns || g.name != name || !g.job) continue;
    if (g.cluster != *managed && g.origin != *managed) continue;
    if (now - g.first_seen < threshold_seconds) continue;
    // An admitted application has its room (its executors come when the driver asks for
    // them): only a gang still waiting in its queue is unschedulable, all of it.
    const Job& job = core_.job(*g.job);
    if (job.phase == JobPhase::kPending) pods += static_cast<int32_t>(job.pod_count());
  }
  return pods;
}

}  // namespace gleaner::scheduler::gang
