// The pods of a Kubeflow training job (PyTorchJob, TFJob) in the live loop. A job placed
// from a fleet's hub is a core job before it has pods: its room is reserved role by role
// in the member the core chose. The training operator there creates one pod per replica,
// labelled with its role (replica type) and its index within the role; each takes the room
// reserved for that role and index, so the job's pods land where its room was counted.
#include <algorithm>
#include <cctype>

#include "scheduler/server/live_scheduler.h"

namespace gleaner::scheduler::server {

namespace {

// The operator labels roles in lower case ("master"), the job spells them as the CRD does
// ("Master").
bool same_role(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

void LiveScheduler::observe_replica(Tracked& t) {
  PodView& v = t.view;
  const std::string key = v.cluster + "/" + v.ns + "/" + v.gang;
  auto it = gangs_.find(key);
  if (it == gangs_.end() || !it->second.job) {
    // Not placed from a hub (or placed before a restart): no room is held for its role,
    // and it is scheduled alone, as any pod of ours.
    v.role = PodRole::kNone;
    v.gang.clear();
    observe_ours_unbound(t);
    return;
  }
  Gang& g = it->second;
  const Job& j = core_.job(*g.job);
  if (j.phase != JobPhase::kAdmitted && j.phase != JobPhase::kRunning) {
    event(t, "GleanerWaiting", "waiting for its job's room to be reserved again", false);
    return;
  }
  int index = -1;
  int offset = 0;
  for (const RoleSpec& r : j.roles) {
    if (same_role(r.name, v.replica_type)) {
      if (v.replica_index >= 0 && v.replica_index < r.replicas) index = offset + v.replica_index;
      break;
    }
    offset += r.replicas;
  }
  if (index < 0) {
    event(t, "GleanerNoRoom",
          "role " + v.replica_type + " index " + std::to_string(v.replica_index) +
              " is not in the job as it was placed; it waits",
          true);
    return;
  }
  if (auto m = g.members.find(index); m != g.members.end() && m->second != v.uid) {
    event(t, "GleanerDuplicateReplica",
          "another pod holds role " + v.replica_type + " index " + std::to_string(v.replica_index),
          true);
    return;
  }
  t.gang = key;
  t.index = index;
  g.members[index] = v.uid;
  bind_member(g, index);
}

}  // namespace gleaner::scheduler::server
