// Node selectors in live mode against the test API server: Node labels come from the Node
// informer, a pod's nodeSelector and required node affinity decide where it may go, a
// selector that matches no node is a pending reason (an Event), and a node labelled later
// takes the waiting pod.
#include <gtest/gtest.h>

#include "test/scheduler/live/member_clusters.h"

namespace gleaner::scheduler {
namespace {

using gleaner::testing::eventually;

// A lone driver of ours (spark-submit without the operator): a gang of one.
Json driver_pod(const std::string& name, const Json& spec_extra) {
  Json spec{{"schedulerName", "gleaner-scheduler"},
            {"containers",
             {{{"name", "spark"},
               {"image", "spark"},
               {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}}}}}};
  spec.update(spec_extra);
  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", "default"},
                {"labels", {{"spark-role", "driver"}, {"spark-app-selector", name}}}}},
              {"spec", spec}};
}

class NodeSelectorLiveTest : public live_testing::MemberClusters {
 protected:
  void SetUp() override {
    if (!start_servers({"c1"})) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py";
    auto& c1 = member("c1");
    ASSERT_TRUE(c1.add_node("n1", {{"pool", "online"}}));
    ASSERT_TRUE(c1.add_node("n2", {{"pool", "spark"}, {"zone", "b"}}));
    ASSERT_TRUE(c1.add_node("n3", {{"pool", "spark"}, {"zone", "c"}}));
    connect();
    // Without selectors the driver would go to the emptiest node, n1.
    report("c1", "n1", 8000);
    report("c1", "n2", 2000);
    report("c1", "n3", 4000);
  }
};

TEST_F(NodeSelectorLiveTest, NodeSelectorAndAffinityChooseAmongLabelledNodes) {
  auto& c1 = member("c1");
  // pool=spark leaves n2 and n3; zone NotIn [c] leaves n2.
  Json affinity = Json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "NotIn", "values": ["c"]},
        {"key": "pool", "operator": "Exists"}]}]}}})");
  ASSERT_TRUE(
      c1.create(kube::pods_path("default"),
                driver_pod("a", {{"nodeSelector", {{"pool", "spark"}}}, {"affinity", affinity}})));
  ASSERT_TRUE(c1.create(kube::pods_path("default"),
                        driver_pod("b", {{"nodeSelector", {{"pool", "spark"}}}})));
  ASSERT_TRUE(schedule_until([&] { return !c1.node_of("a").empty() && !c1.node_of("b").empty(); }));
  EXPECT_EQ(c1.node_of("a"), "n2");
  EXPECT_EQ(c1.node_of("b"), "n3");  // the emptiest pool=spark node
}

TEST_F(NodeSelectorLiveTest, SelectorMatchingNoNodeIsAnEventUntilANodeIsLabelled) {
  auto& c1 = member("c1");
  ASSERT_TRUE(c1.create(kube::pods_path("default"),
                        driver_pod("gpu", {{"nodeSelector", {{"pool", "gpu"}}}})));
  ASSERT_TRUE(schedule_until([&] {
    for (const auto& [r, m] : c1.events_about("gpu"))
      if (r == "GleanerUnschedulable" &&
          m.find("no node matches the node selector") != std::string::npos &&
          m.find("pool=gpu") != std::string::npos)
        return true;
    return false;
  }));
  EXPECT_EQ(c1.node_of("gpu"), "");
  auto jobs = live_->jobs_json()["jobs"];
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["phase"], "Pending");

  // Labelling n3 (the Node informer carries the change into the model) places it there.
  ASSERT_TRUE(c1.client
                  ->patch(kube::node_path("n3"),
                          Json{{"metadata", {{"labels", {{"pool", "gpu"}}}}}},
                          kube::PatchType::kMerge)
                  .ok());
  ASSERT_TRUE(schedule_until([&] { return c1.node_of("gpu") == "n3"; }));
}

// A required node affinity of one expression, as a pod spec's `affinity`.
Json affinity_with(const std::string& key, const std::string& op, const Json& values) {
  return Json{
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           {{{"matchExpressions", {{{"key", key}, {"operator", op}, {"values", values}}}}}}}}}}}};
}

TEST_F(NodeSelectorLiveTest, GtAndLtCompareNodeLabelsAsIntegers) {
  auto& c1 = member("c1");
  // n1 (the emptiest) has 1 GPU, n2 has 2, n3's label is not an integer: a reader that took
  // its leading digits would see 8 and prefer n3, emptier than n2.
  for (const auto& [node, gpus] :
       std::vector<std::pair<std::string, std::string>>{{"n1", "1"}, {"n2", "2"}, {"n3", "8x"}}) {
    ASSERT_TRUE(c1.client
                    ->patch(kube::node_path(node),
                            Json{{"metadata", {{"labels", {{"gpu-count", gpus}}}}}},
                            kube::PatchType::kMerge)
                    .ok());
  }
  // Until the labels reach the model no node matches either pod: they wait, never misplace.
  ASSERT_TRUE(c1.create(kube::pods_path("default"),
                        driver_pod("two-plus", {{"affinity", affinity_with("gpu-count", "Gt",
                                                                           Json::array({"1"}))}})));
  ASSERT_TRUE(c1.create(
      kube::pods_path("default"),
      driver_pod("one", {{"affinity", affinity_with("gpu-count", "Lt", Json::array({"2"}))}})));
  ASSERT_TRUE(schedule_until(
      [&] { return !c1.node_of("two-plus").empty() && !c1.node_of("one").empty(); }));
  EXPECT_EQ(c1.node_of("two-plus"), "n2");
  EXPECT_EQ(c1.node_of("one"), "n1");
}

TEST_F(NodeSelectorLiveTest, UnsupportedAffinityIsReportedNotPlaced) {
  auto& c1 = member("c1");
  // Gt with two bounds: the API server's validation refuses it, and so does gleaner, naming
  // the field.
  ASSERT_TRUE(c1.create(
      kube::pods_path("default"),
      driver_pod("gt", {{"affinity", affinity_with("cores", "Gt", Json::array({"4", "8"}))}})));
  ASSERT_TRUE(schedule_until([&] {
    for (const auto& [r, m] : c1.events_about("gt"))
      if (r == "GleanerUnsupportedAffinity" &&
          m.find("matchExpressions[0].values: exactly one value is required for Gt") !=
              std::string::npos)
        return true;
    return false;
  }));
  EXPECT_EQ(c1.node_of("gt"), "");
  EXPECT_TRUE(live_->jobs_json()["jobs"].empty());
}

}  // namespace
}  // namespace gleaner::scheduler
