// Pod specs into node selectors (scheduler/kube/node_affinity.h) and combining selectors
// (scheduler/core/node_selector.h).
#include "scheduler/kube/node_affinity.h"

#include <set>

#include <gtest/gtest.h>

#include "common/json_util.h"

namespace gleaner::scheduler {
namespace {

using kube_glue::node_selector_of;

Json spec_with_terms(const char* terms) {
  return Json::parse(std::string(R"({"affinity": {"nodeAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": )") +
                     terms + "}}}}");
}

TEST(NodeAffinity, ReadsNodeSelectorAndRequiredTerms) {
  Json spec = spec_with_terms(R"([
      {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]},
                            {"key": "gpu", "operator": "DoesNotExist"}]},
      {"matchExpressions": [{"key": "pool", "operator": "Exists"}]}])");
  spec["nodeSelector"] = {{"disk", "ssd"}};
  // Preferred affinity is a score: ignored.
  spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
      Json::array();
  auto s = node_selector_of(spec, "pod p spec");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->labels, (Labels{{"disk", "ssd"}}));
  ASSERT_EQ(s->terms.size(), 2u);
  EXPECT_EQ(s->terms[0][0].op, LabelOp::kIn);
  EXPECT_EQ(s->terms[0][0].values, (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(s->terms[0][1].op, LabelOp::kDoesNotExist);
  EXPECT_TRUE(s->matches({{"disk", "ssd"}, {"zone", "b"}}));
  EXPECT_TRUE(s->matches({{"disk", "ssd"}, {"pool", "x"}, {"gpu", "1"}}));
  EXPECT_FALSE(s->matches({{"disk", "ssd"}, {"zone", "b"}, {"gpu", "1"}}));
  EXPECT_FALSE(s->matches({{"zone", "b"}}));
  EXPECT_EQ(s->to_string(), "disk=ssd, affinity: zone in (a,b) and !gpu or pool");
}

TEST(NodeAffinity, EmptySpecSelectsEveryNode) {
  auto s = node_selector_of(Json::object(), "pod p spec");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->empty());
  EXPECT_TRUE(s->matches({}));
}

TEST(NodeAffinity, GtAndLtBoundTheNodeLabelAsAnInteger) {
  // A pod for nodes with 2 or 3 GPUs: gpu-count Gt 1 and Lt 4 in one term.
  auto s = node_selector_of(spec_with_terms(R"([{"matchExpressions": [
      {"key": "gpu-count", "operator": "Gt", "values": ["1"]},
      {"key": "gpu-count", "operator": "Lt", "values": ["4"]}]}])"),
                            "pod p spec");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_FALSE(s->matches({{"gpu-count", "1"}}));
  EXPECT_TRUE(s->matches({{"gpu-count", "2"}}));
  EXPECT_TRUE(s->matches({{"gpu-count", "3"}}));
  EXPECT_FALSE(s->matches({{"gpu-count", "4"}}));
  EXPECT_FALSE(s->matches({{"gpu-count", "two"}}));  // not an integer: no match
  EXPECT_FALSE(s->matches({}));
  EXPECT_EQ(s->to_string(), "affinity: gpu-count>1 and gpu-count<4");
}

TEST(NodeAffinity, RefusesWhatItCannotHonourNamingTheField) {
  auto error_of = [](const Json& spec) {
    auto s = node_selector_of(spec, "pod p spec");
    return s.ok() ? std::string("ok") : s.error().message;
  };
  const std::string base =
      "pod p spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
  EXPECT_EQ(
      error_of(spec_with_terms(
          R"([{"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4", "8"]}]}])")),
      base +
          ".nodeSelectorTerms[0].matchExpressions[0].values: exactly one value is required for "
          "Gt, got 2");
  EXPECT_EQ(
      error_of(spec_with_terms(
          R"([{"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["four"]}]}])")),
      base +
          ".nodeSelectorTerms[0].matchExpressions[0].values[0]: \"four\" is not an integer (Lt)");
  EXPECT_EQ(
      error_of(spec_with_terms(
          R"([{"matchExpressions": [{"key": "cores", "operator": "Gte", "values": ["4"]}]}])")),
      base +
          ".nodeSelectorTerms[0].matchExpressions[0].operator: operator Gte is not "
          "supported by gleaner");
  EXPECT_EQ(
      error_of(spec_with_terms(
          R"([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}])")),
      base + ".nodeSelectorTerms[0].matchFields: not supported by gleaner");
  EXPECT_EQ(error_of(spec_with_terms(
                R"([{}, {"matchExpressions": [{"key": "zone", "operator": "In"}]}])")),
            base + ".nodeSelectorTerms[1].matchExpressions[0].values: required for In");
  EXPECT_EQ(
      error_of(spec_with_terms(
          R"([{"matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["a"]}]}])")),
      base + ".nodeSelectorTerms[0].matchExpressions[0].values: must be empty for Exists");
  EXPECT_EQ(error_of(Json{{"nodeSelector", {{"zone", 3}}}}),
            "pod p spec.nodeSelector.zone: expected a string");
}

TEST(NodeSelector, MergedSelectorsMustBothHold) {
  using R = LabelRequirement;
  NodeSelector a{{{"pool", "spark"}},
                 {{R{"zone", LabelOp::kIn, {"a"}}}, {R{"zone", LabelOp::kIn, {"b"}}}}};
  NodeSelector b{{}, {{R{"gpu", LabelOp::kDoesNotExist, {}}}}};
  NodeSelector both = merge_selectors(a, b);
  EXPECT_EQ(both.terms.size(), 2u);  // (zone a or zone b) and no gpu
  EXPECT_TRUE(both.matches({{"pool", "spark"}, {"zone", "b"}}));
  EXPECT_FALSE(both.matches({{"pool", "spark"}, {"zone", "b"}, {"gpu", "1"}}));
  EXPECT_FALSE(both.matches({{"zone", "b"}}));
  // Two values for one label: no node matches.
  NodeSelector clash = merge_selectors(a, NodeSelector{{{"pool", "online"}}, {}});
  EXPECT_FALSE(clash.matches({{"pool", "spark"}, {"zone", "a"}}));
  EXPECT_FALSE(clash.matches({{"pool", "online"}, {"zone", "a"}}));
  EXPECT_FALSE(merge_selectors(NodeSelector{{{"k", "1"}}, {}}, NodeSelector{{{"k", "2"}}, {}})
                   .matches({{"k", "1"}}));
}

}  // namespace
}  // namespace gleaner::scheduler

namespace gleaner::scheduler::kube_glue {
namespace {

TEST(Taints, CordonNotReadyAndSpecTaintsAreTaints) {
  auto taints = node_taints(Json::parse(R"({"spec":{"unschedulable":true,"taints":[
      {"key":"dedicated","value":"db","effect":"NoSchedule"},
      {"key":"soft","effect":"PreferNoSchedule"},{"key":"bad","effect":"Sometimes"}]},
    "status":{"conditions":[{"type":"Ready","status":"Unknown"}]}})"));
  ASSERT_EQ(taints.size(), 4u);  // the malformed one is skipped
  EXPECT_EQ(taints[2].key, "node.kubernetes.io/unschedulable");
  EXPECT_EQ(taints[3].key, "node.kubernetes.io/unreachable");
  EXPECT_EQ(taints[3].effect, TaintEffect::kNoExecute);
  EXPECT_TRUE(node_taints(Json::parse(R"({"status":{"conditions":[
      {"type":"Ready","status":"True"}]}})"))
                  .empty());
}

TEST(Taints, EveryPodOfAGangMustTolerate) {
  const Taints dedicated{{"dedicated", "spark", TaintEffect::kNoSchedule}};
  auto tol = tolerations_of(Json::parse(R"({"tolerations":[
      {"key":"dedicated","operator":"Equal","value":"spark","effect":"NoSchedule"}]})"),
                            "pod");
  ASSERT_TRUE(tol.ok());
  EXPECT_TRUE(taints_tolerated(dedicated, {*tol}));
  EXPECT_FALSE(taints_tolerated(dedicated, {*tol, {}}));  // an executor without it
  EXPECT_FALSE(taints_tolerated(dedicated, {}));
  EXPECT_TRUE(taints_tolerated({{"soft", "", TaintEffect::kPreferNoSchedule}}, {}));
  auto any = tolerations_of(Json::parse(R"({"tolerations":[{"operator":"Exists"}]})"), "pod");
  EXPECT_TRUE(taints_tolerated(dedicated, {*any}));
  auto wrong_value =
      tolerations_of(Json::parse(R"({"tolerations":[{"key":"dedicated","value":"db"}]})"), "pod");
  EXPECT_FALSE(taints_tolerated(dedicated, {*wrong_value}));
  auto bad = tolerations_of(Json::parse(R"({"tolerations":[{"operator":"Maybe"}]})"), "pod p");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("pod p.tolerations[0].operator"), std::string::npos);
}

}  // namespace
}  // namespace gleaner::scheduler::kube_glue
