// Karmada's PropagationPolicy semantics in the fleet's pure core: the ACK One Fleet policies
// of the Spark-on-idle-resources guide parse (Gang, Divided, clusterNames); the governing
// policy is chosen as karmada-controller-manager chooses it; cluster affinity filters members
// as Karmada's ClusterMatches does; bad policies name the field.
#include "scheduler/fleet/propagation_policy.h"

#include <gtest/gtest.h>

#include "kube/yaml_json.h"

namespace gleaner::scheduler::fleet {
namespace {

PropagationPolicy parse_yaml(const std::string& yaml) {
  auto json = kube::yaml_to_json(yaml, "policy.yaml");
  EXPECT_TRUE(json.ok()) << (json ? "" : json.error().message);
  auto p = parse_propagation_policy(*json);
  EXPECT_TRUE(p.ok()) << (p ? "" : p.error().message);
  return p ? *p : PropagationPolicy{};
}

// The guide's SparkApplication policy (cluster ids filled in).
constexpr const char* kSparkPolicy = R"(
apiVersion: policy.one.alibabacloud.com/v1alpha1
kind: PropagationPolicy
metadata:
  name: sparkapp-policy
  namespace: spark
spec:
  preserveResourcesOnDeletion: false
  propagateDeps: true
  placement:
    clusterAffinity:
      clusterNames:
      - c1
      - c2
    replicaScheduling:
      replicaSchedulingType: Divided
      customSchedulingType: Gang
  resourceSelectors:
  - apiVersion: sparkoperator.k8s.io/v1beta2
    kind: SparkApplication
)";

HubObject spark_app(const std::string& name, kube::Labels labels = {}) {
  return {"sparkoperator.k8s.io/v1beta2", "SparkApplication", "spark", name, std::move(labels)};
}

TEST(PropagationPolicy, TheGuidesSparkPolicy) {
  const PropagationPolicy p = parse_yaml(kSparkPolicy);
  EXPECT_EQ(p.ns, "spark");
  EXPECT_TRUE(p.gang);
  EXPECT_EQ(p.replica_scheduling, "Divided");
  EXPECT_EQ(match(p, spark_app("spark-pi")), SelectorMatch::kAll);
  EXPECT_EQ(match(p, {"sparkoperator.k8s.io/v1beta2", "SparkApplication", "other", "x", {}}),
            SelectorMatch::kNone)
      << "a PropagationPolicy governs its own namespace only";
  EXPECT_EQ(allowed_clusters(p, {{"c0", {}}, {"c1", {}}, {"c2", {}}}),
            (std::vector<std::string>{"c1", "c2"}));
}

TEST(PropagationPolicy, TheGoverningPolicyIsKarmadas) {
  auto policy = [](std::string name, std::string ns, int priority, std::string selector) {
    PropagationPolicy p;
    p.name = std::move(name);
    p.ns = std::move(ns);
    p.priority = priority;
    ResourceSelector rs{"sparkoperator.k8s.io/v1beta2", "SparkApplication", "", "", {}};
    if (selector.starts_with("name=")) rs.name = selector.substr(5);
    if (selector.starts_with("labels="))
      rs.labels = *kube::LabelSelector::parse(selector.substr(7));
    p.selectors.push_back(rs);
    return p;
  };
  const auto app = spark_app("spark-pi", {{"team", "a"}});
  // Namespaced before cluster-wide, whatever the priorities.
  std::vector<PropagationPolicy> ps = {policy("cluster", "", 100, "name=spark-pi"),
                                       policy("ns-all", "spark", 0, "")};
  EXPECT_EQ(governing_policy(ps, app)->name, "ns-all");
  // Higher priority first; then by name over by labels over all; then the first name.
  ps = {policy("b-labels", "spark", 0, "labels=team=a"), policy("a-all", "spark", 0, ""),
        policy("c-name", "spark", 0, "name=spark-pi")};
  EXPECT_EQ(governing_policy(ps, app)->name, "c-name");
  ps.push_back(policy("z-high", "spark", 5, ""));
  EXPECT_EQ(governing_policy(ps, app)->name, "z-high");
  ps = {policy("b-all", "spark", 0, ""), policy("a-all", "spark", 0, "")};
  EXPECT_EQ(governing_policy(ps, app)->name, "a-all");
  ps = {policy("labels", "spark", 0, "labels=team=b")};
  EXPECT_EQ(governing_policy(ps, app), nullptr);
  // A cluster-wide policy applies when no namespaced one matches.
  ps = {policy("cluster", "", 0, ""), policy("labels", "spark", 0, "labels=team=b")};
  EXPECT_EQ(governing_policy(ps, app)->name, "cluster");
}

TEST(PropagationPolicy, ClusterAffinityExcludesThenSelectsByLabelsAndNames) {
  const PropagationPolicy p = parse_yaml(R"(
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: gpu}
spec:
  resourceSelectors: [{apiVersion: kubeflow.org/v1, kind: PyTorchJob}]
  placement:
    clusterAffinity:
      labelSelector: {matchLabels: {gpu: "true"}}
      exclude: [g2]
)");
  EXPECT_TRUE(p.cluster_scoped());
  EXPECT_FALSE(p.gang);
  EXPECT_EQ(allowed_clusters(p, {{"g1", {{"gpu", "true"}}}, {"g2", {{"gpu", "true"}}}, {"c1", {}}}),
            std::vector<std::string>{"g1"});
}

TEST(PropagationPolicy, BadPoliciesNameTheField) {
  auto error = [](const std::string& yaml) {
    auto json = kube::yaml_to_json(yaml, "p.yaml");
    auto p = parse_propagation_policy(*json);
    return p.ok() ? std::string("ok") : p.error().message;
  };
  const std::string head =
      "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n"
      "metadata: {name: p, namespace: n}\n";
  EXPECT_NE(error(head + "spec: {resourceSelectors: []}").find("spec.resourceSelectors"),
            std::string::npos);
  EXPECT_NE(error(head + "spec: {resourceSelectors: [{kind: X}]}").find("resourceSelectors[0]"),
            std::string::npos);
  EXPECT_NE(error(head + "spec: {resourceSelectors: [{apiVersion: v1, kind: X}], placement: "
                         "{replicaScheduling: {customSchedulingType: Fancy}}}")
                .find("customSchedulingType"),
            std::string::npos);
  EXPECT_NE(error(head + "spec: {resourceSelectors: [{apiVersion: v1, kind: X}], placement: "
                         "{clusterAffinity: {fieldSelector: {matchExpressions: []}}}}")
                .find("fieldSelector"),
            std::string::npos);
  EXPECT_NE(error("apiVersion: v1\nkind: PropagationPolicy\nmetadata: {name: p, namespace: n}\n"
                  "spec: {}")
                .find("apiVersion"),
            std::string::npos);
  EXPECT_NE(error("apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n"
                  "metadata: {name: p}\nspec: {}")
                .find("namespace is required"),
            std::string::npos);
}

}  // namespace
}  // namespace gleaner::scheduler::fleet
