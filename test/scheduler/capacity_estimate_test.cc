// Karmada's estimator answers from the cluster model: whole Spark sets equal what admission
// places on the same nodes; taints, selectors and assumed workloads narrow them; a cluster
// unknown or without fresh reports has no opinion; the live model is left as it was.
#include "scheduler/core/capacity_estimate.h"

#include <random>

#include <gtest/gtest.h>

#include "common/quantity.h"
#include "scheduler/core/scheduler.h"

namespace gleaner::scheduler {
namespace {

using gleaner::kGi;

struct NodeSpec {
  std::string name;
  Resources batch;
  Taints taints;
};

ClusterState cluster_of(const std::vector<NodeSpec>& nodes, const std::string& cluster = "m") {
  ClusterState s;
  for (const auto& n : nodes)
    (void)*s.upsert_node(NodeInfo{n.name, cluster, {}, n.batch, n.taints}, 0);
  return s;
}

ComponentSet spark(Resources driver, Resources executor, int executors) {
  ComponentSet set(2);
  set[0] = {"driver", driver, 1, {}};
  set[1] = {"executor", executor, executors, {}};
  for (auto& c : set)
    c.selector.tolerations = {{}};
  return set;
}

// How many identical applications one scheduling pass admits on these nodes.
int admitted(const std::vector<NodeSpec>& nodes, Resources driver, Resources executor,
             int executors) {
  Scheduler s({}, *QuotaTree::build({}), cluster_of(nodes));
  for (int i = 0; i < 500; ++i) {
    std::string name = "app-";
    name += std::to_string(i);
    JobSpec spec{name, "", 0, 0, driver, executor, executors, {}};
    EXPECT_TRUE(s.submit(spec).ok());
  }
  int n = 0;
  for (const auto& d : s.schedule(0))
    n += d.kind == DecisionKind::kAdmit ? 1 : 0;
  return n;
}

TEST(CapacityEstimate, WholeSparkSetsAreWhatAdmissionPlaces) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<NodeSpec> nodes;
    const int count = 3 + static_cast<int>(rng() % 30);
    for (int i = 0; i < count; ++i) {
      std::string name = "n";
      name += std::to_string(i);  // (not "n" + ...: GCC 12's -Wrestrict false positive)
      nodes.push_back({name,
                       {500 + static_cast<int64_t>(rng() % 16000),
                        kGi / 2 + static_cast<int64_t>(rng() % 64) * kGi / 2}});
    }
    const Resources driver{250 + static_cast<int64_t>(rng() % 2000),
                           kGi + static_cast<int64_t>(rng() % 4) * kGi};
    const Resources executor{250 + static_cast<int64_t>(rng() % 3000),
                             kGi + static_cast<int64_t>(rng() % 8) * kGi};
    const int executors = 1 + static_cast<int>(rng() % 10);
    const ClusterState state = cluster_of(nodes);
    auto sets = max_component_sets(state, "m", spark(driver, executor, executors), {});
    ASSERT_TRUE(sets.has_value());
    EXPECT_EQ(*sets, admitted(nodes, driver, executor, executors)) << "trial " << trial;
  }
}

TEST(CapacityEstimate, SinglePodsFillEachNodeAndAssumedWorkloadsAreSubtracted) {
  const ClusterState state = cluster_of({{"a", {4000, 8 * kGi}}, {"b", {2500, 16 * kGi}}});
  ComponentSet one = {{"pod", {1000, 2 * kGi}, 1, {}}};
  one[0].selector.tolerations = {{}};
  EXPECT_EQ(max_component_sets(state, "m", one, {}), 6);
  ComponentSet assumed = one;
  assumed[0].replicas = 3;
  EXPECT_EQ(max_component_sets(state, "m", one, {assumed}), 3);
  EXPECT_EQ(state.node(0).used, Resources{}) << "the live model is not touched";
}

TEST(CapacityEstimate, TaintsNeedTolerationsAndSelectorsNarrow) {
  const ClusterState state =
      cluster_of({{"a", {4000, 8 * kGi}},
                  {"b", {4000, 8 * kGi}, {{"spot", "true", TaintEffect::kNoSchedule}}}});
  ComponentSet one = {{"pod", {1000, kGi}, 1, {}}};
  one[0].selector.tolerations = {{}};
  EXPECT_EQ(max_component_sets(state, "m", one, {}), 4);
  one[0].selector.tolerations = {{Toleration{"spot", false, "true", TaintEffect::kNoSchedule}}};
  EXPECT_EQ(max_component_sets(state, "m", one, {}), 8);
  one[0].selector.labels = {{"pool", "spark"}};
  EXPECT_EQ(max_component_sets(state, "m", one, {}), 0);
}

TEST(CapacityEstimate, OtherSetsArePlacedWholeOrNotAtAll) {
  // Three components: 2 + 1x2 + 4 CPUs a set. Two 4-CPU nodes take one set; the second set
  // would fit its first two components but not the third, and leaves nothing behind.
  const ClusterState state = cluster_of({{"a", {4000, 8 * kGi}}, {"b", {4000, 8 * kGi}}});
  ComponentSet set = {
      {"a", {2000, kGi}, 1, {}}, {"b", {1000, kGi}, 2, {}}, {"c", {4000, kGi}, 1, {}}};
  for (auto& c : set)
    c.selector.tolerations = {{}};
  EXPECT_EQ(max_component_sets(state, "m", set, {}), 1);
  ComponentSet nothing = {{"x", {}, 3, {}}};
  EXPECT_EQ(max_component_sets(state, "m", nothing, {}), INT32_MAX) << "asks for nothing";
}

TEST(CapacityEstimate, NoOpinionWithoutFreshReports) {
  ClusterState state = cluster_of({{"a", {4000, 8 * kGi}}});
  ComponentSet one = {{"pod", {1000, kGi}, 1, {}}};
  EXPECT_FALSE(max_component_sets(state, "elsewhere", one, {}).has_value());
  state.refresh_health(120, StalenessPolicy{});
  EXPECT_FALSE(max_component_sets(state, "m", one, {}).has_value()) << "stale reports";
}

}  // namespace
}  // namespace gleaner::scheduler
