#include "scheduler/core/cluster_state.h"

#include <gtest/gtest.h>

#include "common/quantity.h"

namespace gleaner::scheduler {
namespace {

using gleaner::kGi;
Resources res(int64_t milli, int64_t gib) {
  return Resources{milli, gib * kGi};
}

// A Spark application's gang: the driver, then `executors` executors.
GangRequest spark_gang(Resources driver, Resources executor, int executors,
                       const NodeSelector* selector) {
  GangRequest g;
  g.roles.push_back(RoleRequest{driver, 1, selector, {}});
  if (executors > 0) g.roles.push_back(RoleRequest{executor, executors, selector, {}});
  return g;
}
std::vector<NodeId> executors_of(const GangPlacement& p) {
  return {p.pods.begin() + 1, p.pods.end()};
}

NodeId add(ClusterState& s, const std::string& name, int64_t milli, int64_t gib,
           const std::string& cluster = "", Labels labels = {}) {
  return *s.upsert_node(NodeInfo{name, cluster, std::move(labels), res(milli, gib)}, 0);
}

TEST(ClusterState, DriverGoesToTheEmptiestNodeAndExecutorsPackTheFullest) {
  ClusterState s;
  NodeId a = add(s, "a", 2000, 8);
  NodeId b = add(s, "b", 4000, 8);
  NodeId c = add(s, "c", 3000, 8);
  auto p = s.place(0, spark_gang(res(1000, 1), res(1000, 1), 3, nullptr));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pods[0], b);
  // Fullest first: a (2 free) takes two executors; then b and c both have 3 CPUs free,
  // but b has less memory left after the driver, so b is the fuller one.
  EXPECT_EQ(executors_of(*p), (std::vector<NodeId>{a, a, b}));
  EXPECT_EQ(s.node(c).used, Resources{});
  EXPECT_EQ(s.node(a).used, res(2000, 2));
  EXPECT_EQ(s.node(b).drivers, 1);
  EXPECT_EQ(s.cluster_free(0), res(9000 - 4000, 24 - 4));
}

TEST(ClusterState, TiesBreakByNodeName) {
  ClusterState s;
  NodeId z = add(s, "z", 2000, 4);
  NodeId m = add(s, "m", 2000, 4);
  auto p = s.place(0, spark_gang(res(1000, 1), res(1000, 1), 1, nullptr));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pods[0], m);
  EXPECT_EQ(executors_of(*p), std::vector<NodeId>{m});  // m is now the fullest
  (void)z;
}

TEST(ClusterState, AllOrNothingLeavesStateUntouchedOnFailure) {
  ClusterState s;
  NodeId a = add(s, "a", 2000, 8);
  NodeId b = add(s, "b", 2000, 8);
  // The sums fit (3 of 4 CPUs, 14 of 16Gi), but after the 4Gi driver only one node can
  // hold a 5Gi executor: the first executor lands, the second cannot, both are undone.
  auto p = s.place(0, spark_gang(res(1000, 4), res(1000, 5), 2, nullptr));
  EXPECT_FALSE(p);
  EXPECT_EQ(s.node(a).used, Resources{});
  EXPECT_EQ(s.node(b).used, Resources{});
  EXPECT_EQ(s.node(a).drivers + s.node(b).drivers, 0);
  EXPECT_EQ(s.cluster_free(0), res(4000, 16));
}

TEST(ClusterState, NodeSelectorFiltersNodes) {
  ClusterState s;
  add(s, "big", 8000, 32, "", {{"pool", "online"}});
  NodeId spark = add(s, "small", 2000, 8, "", {{"pool", "spark"}});
  NodeSelector selector{{{"pool", "spark"}}, {}};
  auto p = s.place(0, spark_gang(res(1000, 1), res(1000, 1), 1, &selector));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pods[0], spark);
  EXPECT_EQ(executors_of(*p), std::vector<NodeId>{spark});
  EXPECT_FALSE(s.place(0, spark_gang(res(1000, 1), {}, 0, &selector)));
}

TEST(ClusterState, NodeAffinityExpressionsFilterNodes) {
  ClusterState s;
  NodeId a = add(s, "a", 8000, 32, "", {{"zone", "a"}, {"gpu", "no"}});
  NodeId b = add(s, "b", 4000, 32, "", {{"zone", "b"}});
  NodeId c = add(s, "c", 2000, 32, "", {{"zone", "c"}});
  auto driver_on = [&](const NodeSelector& sel) -> std::optional<NodeId> {
    auto p = s.place(0, spark_gang(res(1000, 1), {}, 0, &sel));
    if (!p) return std::nullopt;
    s.release(p->pods[0], res(1000, 1), true);
    return p->pods[0];
  };
  using R = LabelRequirement;
  // In: only b and c qualify; the driver goes to the emptiest of them.
  EXPECT_EQ(driver_on({{}, {{R{"zone", LabelOp::kIn, {"b", "c"}}}}}), b);
  // NotIn a, and a missing gpu label: c (b is excluded by NotIn b).
  EXPECT_EQ(driver_on({{}, {{R{"zone", LabelOp::kNotIn, {"a", "b"}}}}}), c);
  EXPECT_EQ(driver_on({{}, {{R{"gpu", LabelOp::kExists, {}}}}}), a);
  EXPECT_EQ(driver_on({{}, {{R{"gpu", LabelOp::kDoesNotExist, {}}}}}), b);
  // Terms are ORed, expressions within a term ANDed.
  EXPECT_EQ(driver_on({{},
                       {{R{"zone", LabelOp::kIn, {"a"}}, R{"gpu", LabelOp::kDoesNotExist, {}}},
                        {R{"zone", LabelOp::kIn, {"c"}}}}}),
            c);
  EXPECT_EQ(driver_on({{}, {{R{"zone", LabelOp::kIn, {"z"}}}}}), std::nullopt);
  // nodeSelector and affinity both apply.
  EXPECT_EQ(driver_on({{{"zone", "a"}}, {{R{"gpu", LabelOp::kDoesNotExist, {}}}}}), std::nullopt);
  EXPECT_TRUE(s.any_node_matches({{{"zone", "c"}}, {}}));
  EXPECT_FALSE(s.any_node_matches({{{"zone", "d"}}, {}}));
}

TEST(ClusterState, SetLabelsChangesWhereJobsFitButNotHealth) {
  ClusterState s;
  NodeId n = add(s, "n", 4000, 8);
  NodeSelector sel{{{"pool", "spark"}}, {}};
  const uint64_t gen = s.capacity_generation();
  EXPECT_FALSE(s.fits_when_empty(0, spark_gang(res(1000, 1), {}, 0, &sel)));
  s.set_labels(n, {{"pool", "spark"}});
  EXPECT_GT(s.capacity_generation(), gen);
  EXPECT_TRUE(s.fits_when_empty(0, spark_gang(res(1000, 1), {}, 0, &sel)));
  EXPECT_EQ(s.node(n).reported_at, 0);
  EXPECT_EQ(s.node(n).health, NodeHealth::kFresh);
}

TEST(ClusterState, StaleNodesTakeNoPlacementsAndDegradedNodesCountZero) {
  ClusterState s;
  NodeId old = add(s, "old", 4000, 8);
  StalenessPolicy policy{60, 600};
  ASSERT_TRUE(s.report(old, res(4000, 8), 100).ok());
  EXPECT_TRUE(s.refresh_health(150, policy).empty());
  EXPECT_EQ(s.refresh_health(161, policy), std::vector<NodeId>{old});
  EXPECT_EQ(s.node(old).health, NodeHealth::kStale);
  EXPECT_FALSE(s.place(0, spark_gang(res(1000, 1), {}, 0, nullptr)));
  EXPECT_EQ(s.node(old).capacity(), res(4000, 8));
  uint64_t gen = s.capacity_generation();
  EXPECT_EQ(s.refresh_health(701, policy), std::vector<NodeId>{old});
  EXPECT_EQ(s.node(old).health, NodeHealth::kDegraded);
  EXPECT_EQ(s.node(old).capacity(), Resources{});
  EXPECT_GT(s.capacity_generation(), gen);
  // A new report makes it fresh and schedulable again.
  ASSERT_TRUE(s.report(old, res(4000, 8), 702).ok());
  EXPECT_TRUE(s.place(0, spark_gang(res(1000, 1), {}, 0, nullptr)));
}

// refresh_health skips its walk until a node's health can change; a report must bring that
// moment forward. Here the walk left nothing to change (the only node degraded): the report
// that makes it fresh is what makes a later walk see it go stale again.
TEST(ClusterState, AReportAfterEveryNodeDegradedStillGoesStaleOnTime) {
  ClusterState s;
  NodeId n = add(s, "n", 4000, 8);
  StalenessPolicy policy{60, 600};
  ASSERT_TRUE(s.report(n, res(4000, 8), 0).ok());
  EXPECT_EQ(s.refresh_health(601, policy), std::vector<NodeId>{n});
  EXPECT_EQ(s.node(n).health, NodeHealth::kDegraded);
  ASSERT_TRUE(s.report(n, res(4000, 8), 700).ok());
  EXPECT_TRUE(s.refresh_health(760, policy).empty());
  EXPECT_EQ(s.refresh_health(761, policy), std::vector<NodeId>{n});
  EXPECT_EQ(s.node(n).health, NodeHealth::kStale);
  // Another policy is another set of moments: the walk runs again at once.
  EXPECT_EQ(s.refresh_health(762, StalenessPolicy{600, 6000}), std::vector<NodeId>{n});
  EXPECT_EQ(s.node(n).health, NodeHealth::kFresh);
}

TEST(ClusterState, FitsWhenEmptyIgnoresCurrentUse) {
  ClusterState s;
  add(s, "a", 2000, 8);
  add(s, "b", 2000, 8);
  GangRequest fits = spark_gang(res(1000, 1), res(1000, 1), 3, nullptr);
  GangRequest too_big = spark_gang(res(1000, 1), res(1000, 1), 4, nullptr);
  GangRequest fat_driver = spark_gang(res(3000, 1), {}, 0, nullptr);
  ASSERT_TRUE(s.place(0, fits));
  EXPECT_FALSE(s.place(0, fits));
  EXPECT_TRUE(s.fits_when_empty(0, fits));
  EXPECT_FALSE(s.fits_when_empty(0, too_big));
  EXPECT_FALSE(s.fits_when_empty(0, fat_driver));
}

TEST(ClusterState, NodesNeverMoveBetweenClusters) {
  ClusterState s;
  add(s, "n", 1000, 1, "c1");
  auto moved = s.upsert_node(NodeInfo{"n", "c2", {}, res(1000, 1)}, 5);
  ASSERT_FALSE(moved.ok());
  EXPECT_NE(moved.error().message.find("node n is in cluster c1"), std::string::npos);
}

}  // namespace
}  // namespace gleaner::scheduler
