// Room held on nodes outside the core's jobs: batch pods bound by others or placed beyond
// their gang ("loose" room), and the regular allocatable (cpu/memory requests) every other
// pod takes on its node, which the core checks for pods that keep such requests.
#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::gang {

void GangScheduler::track_loose(Tracked& t) {
  // Only pods bound outside our jobs: theirs is room nobody else may place into.
  if (t.loose_node || t.deleting || !t.gang.empty() || t.view.node.empty() ||
      terminal_phase(t.view.phase)) {
    return;
  }
  // Other pods' usage is already outside the batch the agent reports, unless they
  // request batch resources themselves.
  if (!t.view.ours && !t.view.batch) return;
  auto id = core_node(t.view.cluster, t.view.node);
  if (!id) return;
  core_.clusters().acquire(*id, t.view.request, false);
  t.loose_node = id;
  t.loose_amount = t.view.request;
}

void GangScheduler::release_loose(Tracked& t) {
  if (!t.loose_node) return;
  if (t.regular_in_core) {
    core_.release_extra_executor(*t.loose_node, t.loose_amount, t.view.regular);
  } else {
    core_.clusters().release(*t.loose_node, t.loose_amount, false);
  }
  t.regular_in_core = false;
  t.loose_node.reset();
}

void GangScheduler::track_regular(Tracked& t) {
  // Our jobs' members are in the core's accounting; so is an executor we placed beyond
  // its gang. Everyone else's bound, non-terminal pod takes regular allocatable.
  const bool counted_elsewhere = (!t.gang.empty() && t.index >= 0) || t.regular_in_core;
  const std::string node = t.view.node.empty() || counted_elsewhere || terminal_phase(t.view.phase)
                               ? std::string()
                               : core_name(t.view.cluster, t.view.node);
  if (node == t.regular_node && (node.empty() || t.regular_amount == t.view.regular)) return;
  release_regular(t);
  if (node.empty() || t.view.regular == Resources{}) return;
  t.regular_node = node;
  t.regular_amount = t.view.regular;
  regular_outside_used_[node] += t.regular_amount;
  push_regular(node);
}

void GangScheduler::release_regular(Tracked& t) {
  if (t.regular_node.empty()) return;
  regular_outside_used_[t.regular_node] -= t.regular_amount;
  const std::string node = std::move(t.regular_node);
  t.regular_node.clear();
  t.regular_amount = {};
  push_regular(node);
}

void GangScheduler::push_regular(const std::string& name) {
  auto id = core_.clusters().find_node(name);
  if (!id) return;
  auto alloc = node_allocatable_.find(name);
  if (alloc == node_allocatable_.end()) {
    core_.clusters().set_regular_outside(*id, std::nullopt);
    return;
  }
  auto used = regular_outside_used_.find(name);
  core_.clusters().set_regular_outside(
      *id, alloc->second - (used == regular_outside_used_.end() ? Resources{} : used->second));
}

}  // namespace gleaner::scheduler::gang
