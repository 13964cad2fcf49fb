#pragma once
// The gang book: which gangs exist (by key: cluster/namespace/name, or an application's
// placement key), what each was submitted with, which of its pods hold which core pod
// index (its members; index 0 the leader), which wait for room, and which core job each
// gang is. It decides nothing and knows nothing of the core or the sinks: GangScheduler
// (gang_scheduler.h) reads and updates it as pods, applications and decisions arrive.
// Not thread-safe: GangScheduler's mutex guards it.

#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scheduler/core/job.h"

namespace gleaner::scheduler::gang {

inline constexpr const char* kSparkKind = "SparkApplication";

// The gang of a job of `kind` named `name`: a SparkApplication's is its name (its driver
// and executors carry it); another kind's is prefixed with the kind, so that a PyTorchJob
// and a SparkApplication of one name in one namespace are two gangs.
inline std::string gang_name(const std::string& kind, const std::string& name) {
  return kind == kSparkKind ? name : kind + ":" + name;
}

// A gang's size as its owner declares it: a SparkApplication's driver and executors, or a
// training job's roles.
struct GangShape {
  Resources driver;
  Resources executor;
  int executors = 0;
  // Regular cpu/memory the pods request besides batch (pods not converted to batch
  // resources): kubelet admits them against the node's regular allocatable.
  Resources driver_regular;
  Resources executor_regular;
  // A training job's roles, the leader's (Master, Chief) first; given, the fields above
  // are unused.
  std::vector<RoleSpec> roles;
};

struct Gang {
  std::string key;  // cluster/namespace/name
  std::string cluster;
  std::string ns;
  std::string name;
  bool pod_group = false;
  int min_available = 0;
  std::optional<JobId> job;
  // The queue it named when submitted; "": its namespace's leaf of the quota tree, which
  // it follows when the tree changes.
  std::string named_queue;
  // Where its pods may go (the driver's selector, or every member's).
  NodeSelector selector;
  // Submitted from a multi-cluster SparkApplication: `origin` is the cluster it was
  // created in; `cluster` stays empty until the core chooses one, and its driver pod
  // arrives only after the application is released or copied there.
  std::string origin;
  std::string app_uid;
  std::string app_kind = kSparkKind;
  // Placed: whether the placement is complete (decision recorded on the origin and,
  // for another cluster, the copy created); until then kPlaceApp is sent again every
  // app_retry_seconds (every step of it is idempotent).
  bool app_recorded = false;
  bool hub_origin = false;  // its origin is a fleet's hub
  double app_retry_at = 0;
  std::string app_message;
  // What it was submitted with, to submit it again when the chosen cluster still held
  // another application of its name (resubmit_at > 0: when).
  GangShape app_shape;
  std::string app_queue;
  int32_t app_priority = 0;
  std::optional<std::vector<std::string>> app_allowed;  // a hub application's members
  // Not placed because its pods go to this other scheduler (AppView::other_scheduler):
  // looked at again when the application no longer names it.
  std::string app_other_scheduler;
  double resubmit_at = 0;
  // A cluster's own training job, queued by its first pod (gang_replicas.cc): its pods
  // wait in `waiting` until the whole job is admitted.
  bool replica_gang = false;
  std::map<int, std::string> members;  // core pod index -> pod uid
  std::set<std::string> waiting;       // executors / members not in the job yet
  // Members whose executor found no room when it came (its reserved room went back with a
  // batch shrink or the reservation's expiry): each pass tries them again.
  std::set<int> unbound;
  double first_seen = 0;  // steady seconds, for admission latency
  std::string last_event;
  // Found partly bound (gang_recovery.cc): pods an earlier process bound (`adopted`, each
  // holding its room as a pod of its own meanwhile) wait for the job to be resumed around
  // them, since `partial_since` (steady seconds; also set while a member's binding fails).
  bool recovering = false;
  std::set<std::string> adopted;
  double partial_since = 0;
};

class GangBook {
 public:
  using Map = std::map<std::string, Gang>;
  using iterator = Map::iterator;
  using const_iterator = Map::const_iterator;

  // The gangs by key, as a map: a gang is created empty on first use of its key.
  Gang& operator[](const std::string& key) { return gangs_[key]; }
  iterator find(const std::string& key) { return gangs_.find(key); }
  const_iterator find(const std::string& key) const { return gangs_.find(key); }
  [[nodiscard]] bool contains(const std::string& key) const { return gangs_.contains(key); }
  iterator begin() { return gangs_.begin(); }
  iterator end() { return gangs_.end(); }
  [[nodiscard]] const_iterator begin() const { return gangs_.begin(); }
  [[nodiscard]] const_iterator end() const { return gangs_.end(); }
  std::pair<iterator, bool> emplace(const std::string& key, Gang g) {
    return gangs_.emplace(key, std::move(g));
  }
  void erase(iterator it) { gangs_.erase(it); }
  void erase(const std::string& key) { gangs_.erase(key); }
  [[nodiscard]] size_t size() const { return gangs_.size(); }

  // A gang that moves (an application placed under its placement key, or back under its
  // queue key) is taken out, changed, and put back: `take` leaves its job linked to the
  // old key; `put` files it under g.key (replacing any gang there) and links its job there.
  Gang take(iterator it);
  Gang& put(Gang g);
  // The gang is over: it leaves the book, its job's link with it.
  void remove(iterator it);

  // Gangs a pass must look at besides those of pending jobs, by key: kWaiting, pods waiting
  // in them for room (or members that found none); kRecovering, found partly bound after a
  // restart. A superset: keys of gangs gone or done leave as `visit` meets them.
  enum class List { kWaiting, kRecovering };
  void watch(List list, const std::string& key) { lists_[index(list)].insert(key); }
  [[nodiscard]] const std::set<std::string>& watched(List list) const {
    return lists_[index(list)];
  }
  // Calls `visit(iterator)` for each gang on `list` still in the book, in key order; the
  // key leaves the list when its gang is gone or `visit` answers false (it may erase that
  // gang, and watch more keys, meanwhile).
  template <typename Visit>
  void visit(List list, Visit&& visit) {
    std::set<std::string>& keys = lists_[index(list)];
    for (auto key = keys.begin(); key != keys.end();) {
      auto g = gangs_.find(*key);
      key = g != gangs_.end() && visit(g) ? std::next(key) : keys.erase(key);
    }
  }

  // The core job a gang was submitted as, and back: decisions name jobs. A job keeps its
  // entry until unlink_job, also after its gang's key changed (an application placed
  // under its placement key) or its gang went; gang_of_job checks both ways.
  void link_job(JobId job, const std::string& key) { job_gang_[job] = key; }
  void unlink_job(JobId job) { job_gang_.erase(job); }
  // The key of the gang job `job` was linked to; nullptr when none.
  [[nodiscard]] const std::string* key_of_job(JobId job) const;
  // The gang whose job `job` is now (linked, present, and its `job` still `job`).
  [[nodiscard]] const Gang* gang_of_job(JobId job) const;

 private:
  static size_t index(List list) { return static_cast<size_t>(list); }

  Map gangs_;
  std::map<JobId, std::string> job_gang_;
  std::array<std::set<std::string>, 2> lists_;
};

}  // namespace gleaner::scheduler::gang
