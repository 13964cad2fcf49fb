// A gang's members taking their room: pods that waited for their job's admission (and
// executors beyond the declared gang, placed where the job's cluster has room), each member
// bound into the room the core holds for its index where its own selector holds, and members
// that found no room (or a node their own selector refuses) tried again by each pass (the
// book's kWaiting list).
#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::gang {

void GangScheduler::attach_waiting(Gang& g) {
  if (g.replica_gang) return attach_waiting_replicas(g);  // replicas, not executors
  const Job& j = core_.job(*g.job);
  if (j.phase != JobPhase::kAdmitted && j.phase != JobPhase::kRunning) return;
  for (auto it = g.waiting.begin(); it != g.waiting.end();) {
    int index = -1;
    for (int i = 1; i <= j.spec.executors; ++i) {
      if (!g.members.contains(i)) {
        index = i;
        break;
      }
    }
    Tracked& t = pods_[*it];
    if (index < 0) {
      // Beyond the declared gang (dynamic allocation, no SparkApplication): free room in
      // the job's cluster, accounted as a pod of its own.
      const NodeSelector selector =
          merge_selectors(t.view.selector, NodeSelector{{{kClusterLabel, g.cluster}}, {}});
      auto node = core_.place_extra_executor(t.view.uid, *g.job, t.view.request, t.view.regular,
                                             &selector, now_s());
      if (!node) {
        event(t, "GleanerNoRoom", node.error().message, false);
        ++it;
        continue;
      }
      t.gang.clear();
      t.regular_in_core = true;
      track_regular(t);  // now the core's: not counted on the node a second time
      const std::string& full = core_.clusters().node(*node).name;
      if (actions_) {
        actions_(Action{ActionKind::kBind, g.cluster, t.view.ns, t.view.name, t.view.uid,
                        full.substr(full.find('/') + 1)});
      }
      it = g.waiting.erase(it);
      continue;
    }
    t.index = index;
    g.members[index] = *it;
    it = g.waiting.erase(it);
    bind_member(g, index);
  }
}

void GangScheduler::bind_member(Gang& g, int index) {
  Tracked& t = pods_[g.members[index]];
  // The room was placed by the job's selector (the application's); the pod's own
  // nodeSelector, affinity and tolerations must hold on its node too, as kube-scheduler
  // binds only where a pod passes its filters and kubelet admits a pod only onto a node
  // its NodeAffinity and taints allow (kubernetes pkg/kubelet/lifecycle/predicate.go,
  // generalFilter). A pod whose selector could not be read is not held to it here: its
  // error is its own event.
  const NodeSelector* own = t.view.selector_error.empty() ? &t.view.selector : nullptr;
  auto not_bound = [&](const std::string& reason, const std::string& why) {
    event(t, reason, why, true);
    g.unbound.insert(index);
    book_.watch(GangBook::List::kWaiting, g.key);
  };
  // The room reserved for it may still be held by pods we deleted for it: it waits for
  // them (an Event says so) rather than be rejected by kubelet beside them.
  auto wait_for_victims = [&](NodeId reserved) {
    auto why = waits_for_victims(reserved);
    if (!why) return false;
    if (t.last_event != std::string("GleanerWaitingForVictims") + *why) {
      counters_.bind_waited_for_victims();
    }
    event(t, "GleanerWaitingForVictims", *why, false);
    g.unbound.insert(index);
    book_.watch(GangBook::List::kWaiting, g.key);
    return true;
  };
  const Job& job = core_.job(*g.job);
  NodeId node = 0;
  if (index == 0) {
    node = job.pods[0].node;
    const Node& n = core_.clusters().node(node);
    if (own != nullptr && !own->admits(n.labels, n.taints)) {
      return not_bound("GleanerNodeMismatch", "the driver's own node selector (" +
                                                  own->to_string() +
                                                  ") or tolerations do not hold on node " + n.name +
                                                  ", reserved for it; not bound there");
    }
    if (wait_for_victims(node)) return;
  } else {
    const auto slot = static_cast<size_t>(index);
    if (slot < job.pods.size() && job.pods[slot].holds_room && !job.pods[slot].bound &&
        wait_for_victims(job.pods[slot].node)) {
      return;
    }
    auto placed = core_.bind_executor(*g.job, index, now_s(), own);
    if (!placed) {
      // kInvalidArgument: the pod's own selector refused its reserved node.
      const bool mismatch = placed.error().code == ErrorCode::kInvalidArgument;
      return not_bound(mismatch ? "GleanerNodeMismatch" : "GleanerNoRoom", placed.error().message);
    }
    node = *placed;
    g.unbound.erase(index);
    report_steered();
  }
  const std::string& full = core_.clusters().node(node).name;
  Action a{ActionKind::kBind, g.cluster,  t.view.ns,
           t.view.name,       t.view.uid, full.substr(full.find('/') + 1)};
  if (actions_) actions_(std::move(a));
}

void GangScheduler::bind_unbound(Gang& g) {
  const std::set<int> unbound = std::move(g.unbound);
  g.unbound.clear();
  if (!g.job) return;
  const Job& j = core_.job(*g.job);
  if (j.phase != JobPhase::kAdmitted && j.phase != JobPhase::kRunning) return;
  for (int index : unbound) {
    auto member = g.members.find(index);
    // The driver's slot counts as bound from admission: its pod says whether it is.
    if (member == g.members.end() || static_cast<size_t>(index) >= j.pods.size() ||
        (index > 0 && j.pods[static_cast<size_t>(index)].bound)) {
      continue;  // gone, or bound since
    }
    auto t = pods_.find(member->second);
    if (t != pods_.end() && t->second.view.node.empty()) bind_member(g, index);
  }
}

void GangScheduler::wait_in(Gang& g, const std::string& uid) {
  g.waiting.insert(uid);
  book_.watch(GangBook::List::kWaiting, g.key);
}

}  // namespace gleaner::scheduler::gang
