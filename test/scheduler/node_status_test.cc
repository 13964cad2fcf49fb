// When a node's batch resources are written to its Node status: the thresholds, and where
// they come from (the scheduler's flags, overridden by the ack-slo-config's
// colocation-config, per nodeConfigs entry).
#include "scheduler/kube/node_status.h"

#include <gtest/gtest.h>

#include "common/json_util.h"

namespace gleaner::scheduler::kube_glue {
namespace {

Json config_map(const std::string& colocation) {
  return Json{{"metadata", {{"name", "ack-slo-config"}, {"namespace", "kube-system"}}},
              {"data", {{"colocation-config", colocation}}}};
}

TEST(NodeStatus, TheConfigMapsThresholdsOverrideTheFlagsPerNode) {
  const PublishPolicy flags{0.1, 300};
  auto p = publish_policies(config_map(R"({"enable": true, "updateTimeThresholdSeconds": 120,
      "resourceDiffThreshold": 0.2,
      "nodeConfigs": [{"nodeSelector": {"matchLabels": {"pool": "spark"}},
                       "updateTimeThresholdSeconds": 30},
                      {"nodeSelector": {"matchLabels": {"pool": "bad"}},
                       "resourceDiffThreshold": 7}]})"),
                            flags);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->for_node({}).update_time_threshold_seconds, 120);
  EXPECT_DOUBLE_EQ(p->for_node({}).resource_diff_threshold, 0.2);
  const auto spark = p->for_node({{"pool", "spark"}});
  EXPECT_EQ(spark.update_time_threshold_seconds, 30);
  EXPECT_DOUBLE_EQ(spark.resource_diff_threshold, 0.2);  // merged over the cluster's
  // An invalid entry leaves its nodes on the cluster's, as slo-controller does.
  EXPECT_EQ(p->for_node({{"pool", "bad"}}).update_time_threshold_seconds, 120);
}

TEST(NodeStatus, WithoutTheKeyTheFlagsDecideAndABadTopLevelIsAnError) {
  const PublishPolicy flags{0.05, 600};
  auto none = publish_policies(Json{{"data", Json::object()}}, flags);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->for_node({}).update_time_threshold_seconds, 600);
  for (const char* bad :
       {R"({"updateTimeThresholdSeconds": 0})", R"({"resourceDiffThreshold": 2})",
        R"({"updateTimeThresholdSeconds": "60"})", "[1]", "{", R"({"nodeConfigs": {}})"}) {
    auto p = publish_policies(config_map(bad), flags);
    EXPECT_FALSE(p.ok()) << bad;
  }
}

TEST(NodeStatus, ThePolicyDecidesWhenToWriteAgain) {
  NodeStatusDecider decider(PublishPolicy{0.1, 300});
  const Resources first{4000, 8LL << 30};
  ASSERT_TRUE(decider.should_publish("n1", first, 1000));
  decider.published("n1", first, 1000);
  const Resources moved{4300, 8LL << 30};  // 7.5% more CPU
  EXPECT_FALSE(decider.should_publish("n1", moved, 1010)) << "under the flags' 10%";
  EXPECT_TRUE(decider.should_publish("n1", moved, 1010, PublishPolicy{0.05, 300}))
      << "over a 5% threshold";
  EXPECT_FALSE(decider.should_publish("n1", first, 1100));
  EXPECT_TRUE(decider.should_publish("n1", first, 1100, PublishPolicy{0.1, 60}))
      << "older than a 60 s update threshold";
}

}  // namespace
}  // namespace gleaner::scheduler::kube_glue
