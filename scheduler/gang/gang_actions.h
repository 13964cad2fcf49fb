#pragma once
// What the gang layer asks of the clusters: the actions GangScheduler hands to its sink
// (the live loop's Kubernetes glue, or the simulator), and the node label that pins a job
// to its member cluster. Plain data.

#include <memory>
#include <string>

#include "common/json_fwd.h"
#include "scheduler/gang/gang_book.h"

namespace gleaner::scheduler::gang {

// On every node the gang layer sees: the member cluster it belongs to, so that a job can be
// pinned to one cluster with a node selector.
inline constexpr const char* kClusterLabel = "gleaner.io/cluster";

enum class ActionKind {
  kBind,
  kDelete,
  kEvent,
  // On the origin cluster: record the decision on the SparkApplication (annotation
  // gleaner.io/placement = target; unsuspend it when target is the origin), then, for
  // another target, forward a kCreateApp of the copy to the target's link.
  kPlaceApp,
  kCreateApp,  // on the target cluster: create `object` (idempotent)
  // On the origin cluster: the copy in cluster `peer` is in state `message`; recorded on
  // the origin (annotation and Event), or, when the origin is gone, answered with a
  // kDeleteCopy to `peer`.
  kMirrorAppState,
  // On the target cluster: delete the copy whose origin (cluster `peer`) was deleted, or
  // (with a `message` saying why) that was reclaimed from there.
  kDeleteCopy,
  // On a hub: forget the placement recorded on the SparkApplication (its copy in `peer` was
  // reclaimed, `message` says why), so that it is placed again, then forward a
  // kDeleteCopy of that copy to `peer`.
  kUnplaceApp,
};
struct Action {
  ActionKind kind = ActionKind::kBind;
  std::string cluster;
  std::string ns;
  std::string name;
  std::string uid;
  std::string node;  // kBind
  std::string reason;
  std::string message;
  bool warning = false;
  std::string object_kind = "Pod";     // kEvent: Pod or the application's kind
  std::string app_kind = kSparkKind;   // the application's kind (kPlaceApp ... kUnplaceApp)
  std::string target;                  // kPlaceApp: the chosen member cluster
  std::string peer;                    // kMirrorAppState, kDeleteCopy: the other cluster
  std::shared_ptr<const Json> object;  // kCreateApp: the copy to create
};

}  // namespace gleaner::scheduler::gang
