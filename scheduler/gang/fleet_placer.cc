// The fleet placer's books (fleet_placer.h).
#include "scheduler/gang/fleet_placer.h"

namespace gleaner::scheduler::gang {

const std::string* FleetPlacer::gang_of(const std::string& app) const {
  auto it = placed_.find(app);
  return it == placed_.end() ? nullptr : &it->second;
}

void FleetPlacer::sent(Gang& g, double now) {
  g.app_retry_at = now + retry_seconds_;
  retrying_.insert(g.key);
}

void FleetPlacer::resubmit_later(Gang& g, const std::string& key, double now) {
  g.resubmit_at = now + retry_seconds_;
  retrying_.insert(key);
}

FleetPlacer::Due FleetPlacer::due(const Gang& g, double now) {
  // A placement is complete once recorded on the origin (and, elsewhere, copied there):
  // every step of sending it is idempotent, so it is simply sent again until then.
  const bool unrecorded = !g.origin.empty() && !g.cluster.empty() && !g.app_recorded;
  Due d;
  d.send = unrecorded && now >= g.app_retry_at;
  d.resubmit = !g.job && g.resubmit_at > 0 && now >= g.resubmit_at;
  d.keep = unrecorded || (!g.job && g.resubmit_at > 0 && !d.resubmit);
  return d;
}

void FleetPlacer::retry_each(const std::function<bool(const std::string& key)>& retry) {
  for (auto it = retrying_.begin(); it != retrying_.end();) {
    if (retry(*it)) {
      ++it;
    } else {
      it = retrying_.erase(it);
    }
  }
}

}  // namespace gleaner::scheduler::gang
