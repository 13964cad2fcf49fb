#pragma once
// The scheduler's seam between the machinery every cluster shares and what differs by the
// role a cluster plays (docs/architecture.md, "Cluster roles"). A ClusterLink holds the
// shared part: the API client, the pod, node and application informers, the action worker
// and node status publishing. Its ClusterRole, chosen once by the composition root, answers
// what depends on the role:
//  - MemberRole: a cluster that runs workloads. Its own applications (labelled for this
//    scheduler, or whose pods name it) are gangs placed here or copied elsewhere.
//  - HubRole (hub_role.h): a fleet's control plane, which runs no workloads. The
//    applications its propagation policies govern are placed into the members, by a copy
//    or, when the policy names this scheduler, by Karmada's ResourceBinding.

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_fwd.h"
#include "kube/api_client.h"
#include "scheduler/fleet/propagation_policy.h"
#include "scheduler/server/live_metrics.h"

namespace gleaner::scheduler::kube_glue {

// What a role works with, from its link.
struct RoleContext {
  std::string cluster;  // the cluster's name
  std::string scheduler_name;
  kube::KubeClient* client = nullptr;
  server::LiveMetrics* metrics = nullptr;
  // Looks at every application again: which are ours, or where they may go, changed.
  std::function<void()> revisit_apps;
};

// How a cluster holds one of its applications.
struct AppScope {
  // A hub's application (gang::AppView::hub): no operator runs it there; it is placed
  // into a member.
  bool hub = false;
  // Only the cluster's own applications are its gangs: a SparkApplication labelled for
  // this scheduler, a training job whose pods name it. A hub's: its policy said so.
  bool own_only = true;
  std::optional<std::vector<std::string>> allowed;  // the members it may go to (nullopt: any)
};

// How the placement decided for an application is carried out.
enum class PlacementMeans {
  kCopy,     // the decision is recorded on it and a copy created in the member
  kBinding,  // Karmada's ResourceBinding is written, and Karmada propagates it
};

class ClusterRole {
 public:
  virtual ~ClusterRole() = default;

  [[nodiscard]] virtual std::string_view name() const = 0;  // "member", "hub"
  // The paths the informers of this role list and watch, beyond the link's shared ones.
  [[nodiscard]] virtual std::vector<std::string> informer_paths() const = 0;
  // Creates those informers on the link's client; once, before start().
  virtual void attach(RoleContext context) = 0;
  // Before the applications' informers: an application is judged through the role.
  virtual void start() = 0;
  virtual void stop() = 0;
  virtual bool wait_for_sync(std::chrono::milliseconds timeout) = 0;

  // How this cluster holds `object` (an application of any kind); nullopt: not at all.
  [[nodiscard]] virtual std::optional<AppScope> scope(const fleet::HubObject& object) = 0;
  // How a placement of `object` into another cluster is carried out. Per application: on
  // a hub, each governing policy says whether Karmada or this scheduler propagates.
  [[nodiscard]] virtual PlacementMeans placement_means(const fleet::HubObject& object) = 0;
  // How an application placed into another cluster reads in its Event.
  [[nodiscard]] virtual std::string_view placed_elsewhere() const = 0;
  // The state of a copy, reported back; its annotation on the origin is the link's. A hub
  // also shows a SparkApplication's in its status (`copy_status`: the copy's status).
  virtual void show_copy_state(const std::string& kind, const std::string& ns,
                               const std::string& name, const std::string& uid,
                               const std::string& state, const Json& copy_status) = 0;
  // The application of `uid` is gone or unplaced: nothing kept for it.
  virtual void forget_app(const std::string& uid) = 0;
  // The members' labels and taints, on a hub that reads them (Karmada's Cluster objects).
  [[nodiscard]] virtual std::map<std::string, fleet::MemberCluster> member_clusters() = 0;
};

class MemberRole final : public ClusterRole {
 public:
  [[nodiscard]] std::string_view name() const override { return "member"; }
  [[nodiscard]] std::vector<std::string> informer_paths() const override { return {}; }
  void attach(RoleContext /*context*/) override {}
  void start() override {}
  void stop() override {}
  bool wait_for_sync(std::chrono::milliseconds /*timeout*/) override { return true; }
  [[nodiscard]] std::optional<AppScope> scope(const fleet::HubObject& /*object*/) override {
    return AppScope{};
  }
  [[nodiscard]] PlacementMeans placement_means(const fleet::HubObject& /*object*/) override {
    return PlacementMeans::kCopy;
  }
  [[nodiscard]] std::string_view placed_elsewhere() const override {
    return "; this copy stays suspended";
  }
  void show_copy_state(const std::string& /*kind*/, const std::string& /*ns*/,
                       const std::string& /*name*/, const std::string& /*uid*/,
                       const std::string& /*state*/, const Json& /*copy_status*/) override {}
  void forget_app(const std::string& /*uid*/) override {}
  [[nodiscard]] std::map<std::string, fleet::MemberCluster> member_clusters() override {
    return {};
  }
};

}  // namespace gleaner::scheduler::kube_glue
