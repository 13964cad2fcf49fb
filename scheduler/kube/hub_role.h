#pragma once
// A fleet's hub (docs/fleet.md): its PropagationPolicies and ClusterPropagationPolicies say
// which of its applications the scheduler places into the member clusters, and where they
// may go; Karmada's Cluster objects give the members' labels and taints. A governed
// application is an origin that no operator holds (the hub runs no workloads), so it needs
// no spec.suspend; a copy of it runs in the member the core chose (or Karmada propagates
// it, when the policy names this scheduler), and the copy's state comes back as the hub
// object's status.

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kube/informer.h"
#include "scheduler/kube/cluster_role.h"

namespace gleaner::scheduler::kube_glue {

struct HubOptions {
  // The API group of the policies (Karmada's, or a fork's such as ACK One's).
  std::string policy_group = "policy.karmada.io";
  std::vector<std::string> members;  // the clusters its applications may go to
  // Read the members' labels and taints from the hub's Karmada Cluster objects
  // (cluster.karmada.io/v1alpha1), for clusterAffinity.labelSelector and
  // placement.clusterTolerations. A member without one has neither.
  bool cluster_objects = true;
};

class HubRole final : public ClusterRole {
 public:
  explicit HubRole(HubOptions options) : options_(std::move(options)) {}

  [[nodiscard]] std::string_view name() const override { return "hub"; }
  [[nodiscard]] std::vector<std::string> informer_paths() const override;
  void attach(RoleContext context) override;
  void start() override;
  void stop() override;
  bool wait_for_sync(std::chrono::milliseconds timeout) override;
  [[nodiscard]] std::optional<AppScope> scope(const fleet::HubObject& object) override;
  [[nodiscard]] PlacementMeans placement_means(const fleet::HubObject& object) override;
  [[nodiscard]] std::string_view placed_elsewhere() const override { return "; a copy runs there"; }
  void show_copy_state(const std::string& kind, const std::string& ns, const std::string& name,
                       const std::string& uid, const std::string& state,
                       const Json& copy_status) override;
  void forget_app(const std::string& uid) override;
  [[nodiscard]] std::map<std::string, fleet::MemberCluster> member_clusters() override;

 private:
  void on_policies();
  void on_clusters();
  // Whether this version of the refused object `obj` is new to `refused` (under mu_).
  bool first_refusal(std::set<std::string>& refused, const Json& obj);
  // Replaces what a handler read (under mu_) and has applications placed again by it.
  template <typename T>
  void publish(T& books, T parsed);

  const HubOptions options_;
  RoleContext context_;
  std::unique_ptr<kube::Informer> propagation_policies_;
  std::unique_ptr<kube::Informer> cluster_propagation_policies_;
  std::unique_ptr<kube::Informer> member_clusters_;  // when options_.cluster_objects
  // The informers' callbacks, one at a time, so that the lists assigned last are the newest.
  std::mutex serial_;
  std::mutex mu_;
  std::vector<fleet::PropagationPolicy> policies_;  // under mu_
  std::set<std::string> policy_refusals_;           // name@resourceVersion logged as refused
  // Member name -> labels and taints from its last good Cluster object (under mu_).
  std::map<std::string, fleet::MemberCluster> member_objects_;
  std::set<std::string> cluster_refusals_;  // name@resourceVersion logged as refused
  // hub object uid -> the status last written on it (written again only changed; under mu_).
  std::map<std::string, std::string> recorded_status_;
};

}  // namespace gleaner::scheduler::kube_glue
