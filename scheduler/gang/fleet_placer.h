#pragma once
// The fleet placer: multi-cluster applications once the core has chosen their member
// cluster. It keeps the placement records (which applications this process placed: the
// application's placed key in its origin -> the gang key it lives under now) and the gangs
// with a placement to send again or an application to submit again, and it carries out a
// placement or a hub's reclaim on the gang book and the core: the gang moves to its new
// key, the job is pinned to (or freed from) the member, and the actions to send come back
// to the caller. It does no I/O and sends nothing itself: GangScheduler, the coordinator,
// hands the actions to its sink and writes the Events (gang_apps.cc).
// Not thread-safe: GangScheduler's mutex guards it.

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/core/scheduler.h"
#include "scheduler/gang/gang_actions.h"
#include "scheduler/gang/gang_book.h"

namespace gleaner::scheduler::gang {

class FleetPlacer {
 public:
  // `retry_seconds`: how long after sending a placement (or finding the chosen cluster
  // still holding another application of the name) it is sent (or submitted) again.
  explicit FleetPlacer(double retry_seconds) : retry_seconds_(retry_seconds) {}

  // Gang keys of an application: not placed yet, by its own cluster (origin); and of
  // `cluster`, placed or not (its placement record, or its gang there).
  static std::string app_key(const std::string& kind, const std::string& cluster,
                             const std::string& ns, const std::string& name);
  static std::string placed_key(const std::string& kind, const std::string& cluster,
                                const std::string& ns, const std::string& name);

  // One decision per application: `app` (placed_key of its origin) now lives under gang
  // key `gang`, even before the origin's informer shows the decision.
  void record(const std::string& app, const std::string& gang) { placed_[app] = gang; }
  void forget(const std::string& app) { placed_.erase(app); }
  [[nodiscard]] bool placed(const std::string& app) const { return placed_.contains(app); }
  // The gang key `app` was placed under; nullptr when it was not placed here.
  [[nodiscard]] const std::string* gang_of(const std::string& app) const;
  // The gang of the application `ns/name` of `kind` seen in `cluster`: its gang there,
  // queued from there, or placed elsewhere from there; book.end() when none.
  [[nodiscard]] GangBook::const_iterator find(const GangBook& book, const std::string& kind,
                                              const std::string& cluster, const std::string& ns,
                                              const std::string& name) const;

  // What a placement or a reclaim asks of the coordinator: actions for its sink, in order,
  // then (reason non-empty) an Event on the application of `gang`.
  struct Effects {
    std::vector<Action> actions;
    Gang* gang = nullptr;
    std::string reason;
    std::string message;
    bool warning = false;
  };
  // The core admitted `job`, the application queued under `key`: the gang moves to its
  // key in the chosen member, the job is pinned there, and its placement is sent (kPlaceApp).
  // When that key is still taken by another application of the name, the job is withdrawn
  // and the application submitted again after retry_seconds (an Event says so).
  Effects place(GangBook& book, Scheduler& core, const std::string& key, JobId job, double now);
  // A hub's application reclaimed from its member (its driver did not run in time, its pods
  // were lost, its queue's borrowed quota was taken back: `reason`): the hub forgets the
  // placement and the member deletes the copy (kUnplaceApp); the gang waits under its
  // queue key again, for any member its policy allows (the core backs off from the one
  // that failed it).
  Effects return_to_hub(GangBook& book, Scheduler& core, const std::string& key,
                        const std::string& reason);
  // An application of `kind` deleted in `cluster` (or its placement failed to record there):
  // what becomes of the gang it has here, and which gang that is. Its placement record is
  // forgotten.
  enum class Deleted {
    kKeep,      // nothing (none known, a copy that lives on, a gang whose pods hold it)
    kEnd,       // the job ends wherever it stood, its pods leave the gang, nothing retried
    kWithdraw,  // the job, if still running, is withdrawn and the gang goes
    kOwnJob,    // a cluster's own training job, not a placement: the coordinator's rules
  };
  std::pair<GangBook::iterator, Deleted> deleted(GangBook& book, const std::string& kind,
                                                 const std::string& cluster, const std::string& ns,
                                                 const std::string& name);
  // The gang's placement (kPlaceApp), sent at `now`: it is sent again after retry_seconds
  // unless recorded by then.
  Action send(Gang& g, double now);
  // The placement of the application created in `origin` is recorded there.
  void recorded(GangBook& book, const std::string& kind, const std::string& origin,
                const std::string& ns, const std::string& name) const;

  // The gang's placement was just sent: it is sent again after retry_seconds unless
  // recorded by then.
  void sent(Gang& g, double now);
  // The chosen cluster still held another application of the name: the gang (under
  // `key`) is submitted again after retry_seconds.
  void resubmit_later(Gang& g, const std::string& key, double now);

  // What is due for `g` at `now`: send its placement again, submit it again, and whether
  // anything is left to retry for it afterwards.
  struct Due {
    bool send = false;
    bool resubmit = false;
    bool keep = false;
  };
  [[nodiscard]] static Due due(const Gang& g, double now);
  // Calls `retry` for each gang key with something to retry; keys it answers false for
  // leave the set (nothing left, or the gang is gone).
  void retry_each(const std::function<bool(const std::string& key)>& retry);
  // What is due at `now`, in key order: placements to send again (marked sent) and gangs to
  // submit again (their resubmit time cleared; the coordinator submits them). Gangs with
  // nothing left to retry, or gone from `book`, leave the retry set.
  struct Retry {
    Gang* gang = nullptr;
    std::optional<Action> send;
    bool resubmit = false;
  };
  std::vector<Retry> retries(GangBook& book, double now);

 private:
  double retry_seconds_;
  std::map<std::string, std::string> placed_;  // placed_key in the origin -> gang key
  std::set<std::string> retrying_;             // gang keys
};

}  // namespace gleaner::scheduler::gang
