#include "agent/daemon/handover.h"

#include <gtest/gtest.h>

#include "common/json_util.h"
#include "kube/objects.h"

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

// This node as the API server serves it: name, labels and spec.taints.
kube::Node node(const Labels& labels, const Json& taints = Json::array()) {
  Json n = {{"metadata", {{"name", "node-a"}, {"labels", labels}}}, {"spec", Json::object()}};
  if (!taints.empty()) n["spec"]["taints"] = taints;
  return *kube::parse_node(n);
}

const kube::Node kOnline = node({{"pool", "online"}});

TEST(Handover, ARollingUpdateHandsOver) {
  auto d = decide_on_stop(pod("3"), daemon_set(4), kOnline);
  EXPECT_TRUE(d.hand_over);
  EXPECT_NE(d.why.find("3 -> 4"), std::string::npos) << d.why;
}

TEST(Handover, EverythingElseRestores) {
  auto stop = [](const std::optional<Json>& p, const std::optional<Json>& ds,
                 const kube::Node& n = kOnline) { return decide_on_stop(p, ds, n).hand_over; };
  // The same template: a change elsewhere in the spec (metadata.generation moved) replaces
  // no pod, so this Pod is going for another reason (the node left the DaemonSet).
  EXPECT_FALSE(stop(pod("4"), daemon_set(4)));
  EXPECT_FALSE(stop(pod("3"), std::nullopt));          // DaemonSet gone
  EXPECT_FALSE(stop(pod("3"), daemon_set(4, true)));   // being deleted
  EXPECT_FALSE(stop(std::nullopt, daemon_set(4)));     // Pod gone
  EXPECT_FALSE(stop(pod("3", false), daemon_set(4)));  // not a DaemonSet's
  EXPECT_FALSE(stop(pod("x"), daemon_set(4)));         // unreadable generation
  // The new template no longer selects this node: nobody comes.
  EXPECT_FALSE(stop(pod("3"), daemon_set(4), node({{"pool", "batch"}})));
}

const Json kDedicated =
    Json::parse(R"([{"key":"dedicated","value":"online","effect":"NoSchedule"}])");

TEST(Handover, ANewTemplateThatNoLongerToleratesTheNodesTaintRestores) {
  // The DaemonSet controller starts no pod whose tolerations leave a NoSchedule taint of the
  // node untolerated (NodeShouldRunDaemonPod's shouldRun): nobody would lift BE's limits.
  auto d = decide_on_stop(pod("3"), daemon_set(4), node({{"pool", "online"}}, kDedicated));
  EXPECT_FALSE(d.hand_over);
  EXPECT_NE(d.why.find("dedicated=online:NoSchedule"), std::string::npos) << d.why;
  Json no_execute = Json::parse(R"([{"key":"drain","effect":"NoExecute"}])");
  EXPECT_FALSE(
      decide_on_stop(pod("3"), daemon_set(4), node({{"pool", "online"}}, no_execute)).hand_over);
}

TEST(Handover, ANewTemplateThatToleratesTheNodesTaintHandsOver) {
  Json ds = daemon_set(4);
  ds["spec"]["template"]["spec"]["tolerations"] =
      Json::parse(R"([{"key":"dedicated","operator":"Equal","value":"online"}])");
  auto d = decide_on_stop(pod("3"), ds, node({{"pool", "online"}}, kDedicated));
  EXPECT_TRUE(d.hand_over) << d.why;
  // Another value of the key is another taint: Equal does not tolerate it.
  Json other = Json::parse(R"([{"key":"dedicated","value":"batch","effect":"NoSchedule"}])");
  EXPECT_FALSE(decide_on_stop(pod("3"), ds, node({{"pool", "online"}}, other)).hand_over);
}

TEST(Handover, TheDaemonPodTolerationsAndPreferNoScheduleLetTheSuccessorRun) {
  // A cordon and node problems do not keep a daemon pod off its node: the controller adds
  // those tolerations to every daemon pod. PreferNoSchedule never repels.
  Json taints = Json::parse(R"([
    {"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule"},
    {"key":"node.kubernetes.io/memory-pressure","effect":"NoSchedule"},
    {"key":"node.kubernetes.io/not-ready","effect":"NoExecute"},
    {"key":"spot","effect":"PreferNoSchedule"}])");
  EXPECT_TRUE(
      decide_on_stop(pod("3"), daemon_set(4), node({{"pool", "online"}}, taints)).hand_over);
  // network-unavailable only for a hostNetwork template.
  Json network = Json::parse(R"([{"key":"node.kubernetes.io/network-unavailable",
    "effect":"NoSchedule"}])");
  EXPECT_FALSE(
      decide_on_stop(pod("3"), daemon_set(4), node({{"pool", "online"}}, network)).hand_over);
  Json host = daemon_set(4);
  host["spec"]["template"]["spec"]["hostNetwork"] = true;
  EXPECT_TRUE(decide_on_stop(pod("3"), host, node({{"pool", "online"}}, network)).hand_over);
}

TEST(Handover, ATemplatePinnedToAnotherNodeRestores) {
  Json ds = daemon_set(4);
  ds["spec"]["template"]["spec"]["nodeName"] = "node-b";
  auto d = decide_on_stop(pod("3"), ds, kOnline);
  EXPECT_FALSE(d.hand_over);
  EXPECT_NE(d.why.find("node-b"), std::string::npos) << d.why;
  ds["spec"]["template"]["spec"]["nodeName"] = "node-a";
  EXPECT_TRUE(decide_on_stop(pod("3"), ds, kOnline).hand_over);
}

TEST(Handover, UnreadableTolerationsMeanRestore) {
  Json ds = daemon_set(4);
  ds["spec"]["template"]["spec"]["tolerations"] =
      Json::parse(R"([{"key":"dedicated","operator":"Gt"}])");
  auto d = decide_on_stop(pod("3"), ds, node({{"pool", "online"}}, kDedicated));
  EXPECT_FALSE(d.hand_over);
  EXPECT_NE(d.why.find("tolerations[0].operator"), std::string::npos) << d.why;
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
