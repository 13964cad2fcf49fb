#pragma once
// The fleet placer's books: which multi-cluster applications this process placed (by the
// application's placed key in its origin -> the gang key it lives under now), and which
// gangs have a placement to send again or an application to submit again, and when. The
// core chooses the member cluster; GangScheduler (gang_apps.cc) acts on what is due here.
// Not thread-safe: GangScheduler's mutex guards it.

#include <functional>
#include <map>
#include <set>
#include <string>

#include "scheduler/gang/gang_book.h"

namespace gleaner::scheduler::gang {

class FleetPlacer {
 public:
  // `retry_seconds`: how long after sending a placement (or finding the chosen cluster
  // still holding another application of the name) it is sent (or submitted) again.
  explicit FleetPlacer(double retry_seconds) : retry_seconds_(retry_seconds) {}

  // One decision per application: `app` (placed_key of its origin) now lives under gang
  // key `gang`, even before the origin's informer shows the decision.
  void record(const std::string& app, const std::string& gang) { placed_[app] = gang; }
  void forget(const std::string& app) { placed_.erase(app); }
  [[nodiscard]] bool placed(const std::string& app) const { return placed_.contains(app); }
  // The gang key `app` was placed under; nullptr when it was not placed here.
  [[nodiscard]] const std::string* gang_of(const std::string& app) const;

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

 private:
  double retry_seconds_;
  std::map<std::string, std::string> placed_;  // placed_key in the origin -> gang key
  std::set<std::string> retrying_;             // gang keys
};

}  // namespace gleaner::scheduler::gang
