// The seam between a cluster link's shared machinery and the role its cluster plays
// (scheduler/kube/cluster_role.h): each role's own informers, how each holds an application
// it sees, and a link that asks a role plugged into it, whatever the role is.
#include <atomic>
#include <mutex>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "scheduler/kube/hub_role.h"
#include "test/scheduler/live/kube_live_fixture.h"

namespace gleaner::scheduler {
namespace {

using kube::testing::eventually;
using kube_glue::AppScope;
using kube_glue::ClusterRole;
using kube_glue::HubOptions;
using kube_glue::HubRole;
using kube_glue::MemberRole;
using kube_glue::PlacementMeans;

const fleet::HubObject kPi{"sparkoperator.k8s.io/v1beta2", "SparkApplication", "default", "pi", {}};

TEST(ClusterRoles, AMemberWatchesNothingBeyondTheSharedInformers) {
  MemberRole member;
  EXPECT_EQ(member.name(), "member");
  EXPECT_TRUE(member.informer_paths().empty());
}

TEST(ClusterRoles, AHubWatchesItsPoliciesAndKarmadasClusterObjects) {
  HubOptions options;
  options.policy_group = "policy.one.alibabacloud.com";
  HubRole hub(options);
  EXPECT_EQ(hub.name(), "hub");
  EXPECT_EQ(hub.informer_paths(),
            (std::vector<std::string>{
                "/apis/policy.one.alibabacloud.com/v1alpha1/propagationpolicies",
                "/apis/policy.one.alibabacloud.com/v1alpha1/clusterpropagationpolicies",
                "/apis/cluster.karmada.io/v1alpha1/clusters"}));
  options.cluster_objects = false;  // --hub-cluster-objects=false
  EXPECT_EQ(HubRole(options).informer_paths().size(), 2u);
}

TEST(ClusterRoles, AMemberHoldsItsOwnApplicationsAndPlacesByCopies) {
  MemberRole member;
  auto scope = member.scope(kPi);
  ASSERT_TRUE(scope.has_value());
  EXPECT_FALSE(scope->hub);
  EXPECT_TRUE(scope->own_only);
  EXPECT_FALSE(scope->allowed.has_value());  // any cluster
  EXPECT_EQ(member.placement_means(kPi), PlacementMeans::kCopy);
  EXPECT_EQ(member.placed_elsewhere(), "; this copy stays suspended");
}

TEST(ClusterRoles, AHubHoldsNothingNoPolicyGoverns) {
  HubRole hub(HubOptions{});
  EXPECT_FALSE(hub.scope(kPi).has_value());  // no policy listed yet
  EXPECT_EQ(hub.placement_means(kPi), PlacementMeans::kCopy);
  EXPECT_EQ(hub.placed_elsewhere(), "; a copy runs there");
}

// A role that holds every application as a member does, and records what its link asks.
class RecordingRole final : public ClusterRole {
 public:
  struct Seen {
    std::mutex mu;
    std::vector<std::string> calls;     // attach, start, stop (in order)
    std::multiset<std::string> scoped;  // kind/ns/name of each scope() asked
    kube_glue::RoleContext context;
    void add(const std::string& call) {
      std::lock_guard lock(mu);
      calls.push_back(call);
    }
  };
  explicit RecordingRole(std::shared_ptr<Seen> seen) : seen_(std::move(seen)) {}
  [[nodiscard]] std::string_view name() const override { return "recording"; }
  [[nodiscard]] std::vector<std::string> informer_paths() const override { return {}; }
  void attach(kube_glue::RoleContext context) override {
    std::lock_guard lock(seen_->mu);
    seen_->context = std::move(context);
    seen_->calls.emplace_back("attach");
  }
  void start() override { seen_->add("start"); }
  void stop() override { seen_->add("stop"); }
  bool wait_for_sync(std::chrono::milliseconds /*timeout*/) override { return true; }
  [[nodiscard]] std::optional<AppScope> scope(const fleet::HubObject& object) override {
    std::lock_guard lock(seen_->mu);
    seen_->scoped.insert(object.kind + "/" + object.ns + "/" + object.name);
    return AppScope{};
  }
  [[nodiscard]] PlacementMeans placement_means(const fleet::HubObject& /*object*/) override {
    return PlacementMeans::kCopy;
  }
  [[nodiscard]] std::string_view placed_elsewhere() const override { return ""; }
  void show_copy_state(const std::string&, const std::string&, const std::string&,
                       const std::string&, const std::string&, const Json&) override {}
  void forget_app(const std::string& /*uid*/) override {}
  [[nodiscard]] std::map<std::string, fleet::MemberCluster> member_clusters() override {
    return {};
  }

 private:
  std::shared_ptr<Seen> seen_;
};

class ClusterRoleSeamTest : public live_testing::KubeLiveTest {};

TEST_F(ClusterRoleSeamTest, TheLinkAsksItsRoleAboutEveryApplicationItSees) {
  auto seen = std::make_shared<RecordingRole::Seen>();
  make_role_ = [seen] { return std::make_unique<RecordingRole>(seen); };
  start_link();
  {
    std::lock_guard lock(seen->mu);
    EXPECT_EQ(seen->calls, (std::vector<std::string>{"attach", "start"}));
    EXPECT_EQ(seen->context.cluster, "c1");
    EXPECT_NE(seen->context.client, nullptr);
  }
  ASSERT_TRUE(client_
                  ->create(kube::spark_applications_path("default"),
                           live_testing::small_spark_application("pi", 1))
                  .ok());
  auto asked = [&] {
    std::lock_guard lock(seen->mu);
    return seen->scoped.count("SparkApplication/default/pi");
  };
  ASSERT_TRUE(eventually([&] { return asked() >= 1; }));
  // The role says which applications may have changed: the link looks at each again.
  const auto before = asked();
  seen->context.revisit_apps();
  EXPECT_GT(asked(), before);
  link_->stop();
  std::lock_guard lock(seen->mu);
  EXPECT_EQ(seen->calls.back(), "stop");
}

}  // namespace
}  // namespace gleaner::scheduler
