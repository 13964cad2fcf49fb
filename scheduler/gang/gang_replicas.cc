// The pods of a Kubeflow training job (training_kinds.h) in the live loop. The training
// operator creates one pod per replica, labelled with its role (replica type) and its index
// within the role; each takes the room reserved for that role and index, so the job's pods
// land where its room was counted. A job placed from a fleet's hub is a core job before it
// has pods (its room reserved role by role in the member the core chose). A cluster's own
// job is queued by its first pod, which carries the job's roles, and its pods wait until
// the whole job is admitted: placed one by one, two jobs could each hold part of the room
// and neither run.
#include <algorithm>
#include <cctype>

#include "scheduler/gang/gang_scheduler.h"

namespace gleaner::scheduler::gang {

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

void GangScheduler::observe_replica(Tracked& t) {
  PodView& v = t.view;
  const std::string key = v.cluster + "/" + v.ns + "/" + v.gang;
  auto it = book_.find(key);
  if (it != book_.end() && it->second.recovering) {
    // Found partly bound after a restart: it waits for the job resumed around the others.
    t.gang = key;
    wait_in(it->second, v.uid);
    return;
  }
  if (v.shape && (it == book_.end() || !it->second.job || job_over(*it->second.job))) {
    // No room held for the job (the cluster's own, or a hub's copy placed before a
    // restart): the first of its pods queues it whole, in this cluster.
    Gang& g = book_[key];
    if (g.job) book_.unlink_job(*g.job);  // an earlier job of this name, over
    g.job.reset();
    g.key = key;
    g.cluster = v.cluster;
    g.ns = v.ns;
    g.name = v.gang;
    g.replica_gang = true;
    g.app_kind = v.gang.substr(0, v.gang.find(':'));
    g.first_seen = steady_s();
    g.selector = {};
    for (const RoleSpec& r : v.shape->roles)
      if (r.selector) g.selector = merge_selectors(std::move(g.selector), *r.selector);
    t.gang = key;
    wait_in(g, v.uid);
    if (!v.selector_error.empty()) {
      event(t, "GleanerUnsupportedAffinity", v.selector_error, true);
      return;
    }
    g.selector = merge_selectors(std::move(g.selector), v.selector);
    submit(g, *v.shape, v.priority, v.queue);
    return;
  }
  if (it == book_.end() || !it->second.job) {
    if (!v.waiting_for.empty()) {
      // Its job is not known yet: placed alone it could split the gang. The informer's
      // next look at the pod (an update, or the resync) tries again.
      event(t, "GleanerWaiting", v.waiting_for, false);
      return;
    }
    // Its job could not be read (no lookup, as in tests of the pods alone): no room is
    // held for its role, and it is scheduled alone, as any pod of ours.
    v.role = PodRole::kNone;
    v.gang.clear();
    observe_ours_unbound(t);
    return;
  }
  Gang& g = it->second;
  const Job& j = core_.job(*g.job);
  if (j.phase != JobPhase::kAdmitted && j.phase != JobPhase::kRunning) {
    if (g.replica_gang) {
      t.gang = key;
      wait_in(g, v.uid);  // bound with the others when the job is admitted
      return;
    }
    event(t, "GleanerWaiting", "waiting for its job's room to be reserved again", false);
    return;
  }
  attach_replica(g, t);
}

int GangScheduler::replica_slot(const std::vector<RoleSpec>& roles, const PodView& v) {
  int offset = 0;
  for (const RoleSpec& r : roles) {
    if (same_role(r.name, v.replica_type)) {
      return v.replica_index >= 0 && v.replica_index < r.replicas ? offset + v.replica_index : -1;
    }
    offset += r.replicas;
  }
  return -1;
}

bool GangScheduler::job_over(JobId job) const {
  const JobPhase phase = core_.job(job).phase;
  return phase == JobPhase::kCompleted || phase == JobPhase::kWithdrawn;
}

void GangScheduler::attach_replica(Gang& g, Tracked& t) {
  const PodView& v = t.view;
  const int index = replica_slot(core_.job(*g.job).roles, v);
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
  g.waiting.erase(v.uid);
  t.gang = g.key;
  t.index = index;
  g.members[index] = v.uid;
  bind_member(g, index);
}

void GangScheduler::attach_waiting_replicas(Gang& g) {
  if (!g.job) return;
  const JobPhase phase = core_.job(*g.job).phase;
  if (phase != JobPhase::kAdmitted && phase != JobPhase::kRunning) return;
  const std::set<std::string> waiting = g.waiting;  // attach_replica edits it
  for (const std::string& uid : waiting) {
    auto p = pods_.find(uid);
    if (p == pods_.end()) {
      g.waiting.erase(uid);
      continue;
    }
    attach_replica(g, p->second);
  }
}

}  // namespace gleaner::scheduler::gang
