#include "agent/daemon/handover.h"

#include <gtest/gtest.h>

#include "common/json_util.h"

namespace gleaner::agent {
namespace {

Json pod(const std::string& generation, bool owned = true) {
  Json p = Json::parse(R"({"metadata":{"name":"gleaner-agent-x","namespace":"kube-system",
    "labels":{"pod-template-generation":")" +
                       generation + R"("}}})");
  if (owned) {
    p["metadata"]["ownerReferences"] = Json::parse(
        R"([{"apiVersion":"apps/v1","kind":"DaemonSet","name":"gleaner-agent","controller":true}])");
  }
  return p;
}

// `generation`: the template's (the annotation); metadata.generation is ahead of it, as
// after any change outside the template.
Json daemon_set(int generation, bool deleting = false) {
  Json ds = {{"metadata",
              {{"name", "gleaner-agent"},
               {"generation", generation + 5},
               {"annotations",
                {{"deprecated.daemonset.template.generation", std::to_string(generation)}}}}},
             {"spec", {{"template", {{"spec", {{"nodeSelector", {{"pool", "online"}}}}}}}}}};
  if (deleting) ds["metadata"]["deletionTimestamp"] = "2026-11-23T21:00:00Z";
  return ds;
}

const Labels kOnline{{"pool", "online"}};

TEST(Handover, ARollingUpdateHandsOver) {
  auto d = decide_on_stop(pod("3"), daemon_set(4), kOnline);
  EXPECT_TRUE(d.hand_over);
  EXPECT_NE(d.why.find("3 -> 4"), std::string::npos) << d.why;
}

TEST(Handover, EverythingElseRestores) {
  auto stop = [](const std::optional<Json>& p, const std::optional<Json>& ds,
                 const Labels& labels = kOnline) {
    return decide_on_stop(p, ds, labels).hand_over;
  };
  // The same template: a change elsewhere in the spec (metadata.generation moved) replaces
  // no pod, so this Pod is going for another reason (the node left the DaemonSet).
  EXPECT_FALSE(stop(pod("4"), daemon_set(4)));
  EXPECT_FALSE(stop(pod("3"), std::nullopt));          // DaemonSet gone
  EXPECT_FALSE(stop(pod("3"), daemon_set(4, true)));   // being deleted
  EXPECT_FALSE(stop(std::nullopt, daemon_set(4)));     // Pod gone
  EXPECT_FALSE(stop(pod("3", false), daemon_set(4)));  // not a DaemonSet's
  EXPECT_FALSE(stop(pod("x"), daemon_set(4)));         // unreadable generation
  // The new template no longer selects this node: nobody comes.
  EXPECT_FALSE(stop(pod("3"), daemon_set(4), {{"pool", "batch"}}));
}

TEST(Handover, RequiredNodeAffinityIsHonouredAndUnknownOperatorsMeanRestore) {
  Json tmpl = Json::parse(R"({"spec":{"affinity":{"nodeAffinity":{
    "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
      {"matchExpressions":[{"key":"pool","operator":"In","values":["online","mixed"]}]},
      {"matchExpressions":[{"key":"gpu","operator":"Exists"}]}]}}}}})");
  EXPECT_EQ(template_selects(tmpl, {{"pool", "mixed"}}), true);
  EXPECT_EQ(template_selects(tmpl, {{"gpu", "a100"}}), true);  // terms are ORed
  EXPECT_EQ(template_selects(tmpl, {{"pool", "batch"}}), false);
  Json gt = Json::parse(R"({"spec":{"affinity":{"nodeAffinity":{
    "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
      {"matchExpressions":[{"key":"cores","operator":"Gt","values":["8"]}]}]}}}}})");
  // Gt compares the label as an integer, as the DaemonSet controller's nodeaffinity does.
  EXPECT_EQ(template_selects(gt, {{"cores", "16"}}), true);
  EXPECT_EQ(template_selects(gt, {{"cores", "4"}}), false);
  Json two_bounds = gt;
  two_bounds["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] = Json::array({"8", "9"});
  EXPECT_EQ(template_selects(two_bounds, {{"cores", "16"}}), std::nullopt);
}

TEST(Handover, AnEmptyNodeSelectorTermSelectsNoNode) {
  // Kubernetes' NodeSelectorTerm: "a null or empty node selector term matches no objects",
  // so the DaemonSet controller schedules no agent from such a template.
  Json tmpl = Json::parse(R"({"spec":{"affinity":{"nodeAffinity":{
    "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{}]}}}}})");
  EXPECT_EQ(template_selects(tmpl, {{"pool", "online"}}), false);
}

TEST(Handover, FindsTheControllingDaemonSet) {
  EXPECT_EQ(owning_daemon_set(pod("1")), "gleaner-agent");
  EXPECT_EQ(owning_daemon_set(pod("1", false)), "");
}

}  // namespace
}  // namespace gleaner::agent
