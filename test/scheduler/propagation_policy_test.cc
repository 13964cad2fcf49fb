// Karmada's PropagationPolicy semantics in the fleet's pure core: the ACK One Fleet policies
// of the Spark-on-idle-resources guide parse (Gang, Divided, clusterNames); the governing
// policy is chosen as karmada-controller-manager chooses it; cluster affinity filters members
// as Karmada's ClusterMatches does, and cluster taints as its TaintToleration filter does;
// Karmada Cluster objects give members' labels and taints; bad policies name the field.
#include "scheduler/fleet/propagation_policy.h"

#include <gtest/gtest.h>

#include "common/json_util.h"
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

HubObject spark_app(const std::string& name, Labels labels = {}) {
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

TEST(PropagationPolicy, TaintedClustersAreOutUnlessThePolicyToleratesThem) {
  const std::string head = R"(
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: p, namespace: spark}
spec:
  resourceSelectors: [{apiVersion: sparkoperator.k8s.io/v1beta2, kind: SparkApplication}]
)";
  // What Karmada's cluster controller puts on a member that stopped answering, a taint an
  // operator set to drain another, and one that only prefers.
  const std::vector<MemberCluster> members{
      {"down", {}, {{"cluster.karmada.io/unreachable", "", TaintEffect::kNoSchedule}}},
      {"drain", {}, {{"maintenance", "true", TaintEffect::kNoExecute}}},
      {"soft", {}, {{"busy", "", TaintEffect::kPreferNoSchedule}}},
      {"clean", {}, {}}};
  EXPECT_EQ(allowed_clusters(parse_yaml(head), members),
            (std::vector<std::string>{"soft", "clean"}));
  const PropagationPolicy tolerant = parse_yaml(head + R"(  placement:
    clusterTolerations:
    - {key: maintenance, operator: Equal, value: "true", effect: NoExecute}
)");
  ASSERT_EQ(tolerant.cluster_tolerations.size(), 1U);
  EXPECT_EQ(allowed_clusters(tolerant, members),
            (std::vector<std::string>{"drain", "soft", "clean"}));
  const PropagationPolicy all = parse_yaml(head +
                                           "  placement:\n    clusterTolerations: "
                                           "[{operator: Exists}]\n");
  EXPECT_EQ(allowed_clusters(all, members).size(), 4U);
}

TEST(MemberCluster, AKarmadaClusterObjectGivesLabelsAndTaints) {
  auto json = kube::yaml_to_json(R"(
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: c1
  labels: {tier: batch, region: eu}
spec:
  syncMode: Push
  apiEndpoint: https://c1.example:6443
  taints:
  - {key: cluster.karmada.io/not-ready, effect: NoSchedule, timeAdded: "2026-11-24T10:00:00Z"}
status:
  conditions: [{type: Ready, status: "False"}]
)",
                                 "cluster.yaml");
  ASSERT_TRUE(json.ok());
  auto c = parse_member_cluster(*json);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->name, "c1");
  EXPECT_EQ(c->labels, (Labels{{"tier", "batch"}, {"region", "eu"}}));
  ASSERT_EQ(c->taints.size(), 1U);
  EXPECT_EQ(c->taints[0].key, "cluster.karmada.io/not-ready");
  EXPECT_EQ(c->taints[0].effect, TaintEffect::kNoSchedule);

  auto bad = [](const std::string& yaml) {
    auto j = kube::yaml_to_json(yaml, "cluster.yaml");
    auto parsed = parse_member_cluster(*j);
    return parsed.ok() ? std::string("ok") : parsed.error().message;
  };
  EXPECT_NE(bad("metadata: {labels: {a: b}}").find("metadata.name"), std::string::npos);
  EXPECT_NE(bad("metadata: {name: c2, labels: {a: [b]}}").find("Cluster c2: metadata.labels.a"),
            std::string::npos);
  EXPECT_NE(bad("metadata: {name: c2}\nspec: {taints: {key: a}}").find("spec.taints"),
            std::string::npos);
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
  // A label selector takes no Gt or Lt (metav1.LabelSelectorRequirement), unlike node affinity.
  EXPECT_EQ(error(head + "spec: {resourceSelectors: [{apiVersion: v1, kind: X}], placement: "
                         "{clusterAffinity: {labelSelector: {matchExpressions: "
                         "[{key: gpu-count, operator: Gt, values: ['1']}]}}}}"),
            "PropagationPolicy n/p: spec.placement.clusterAffinity.labelSelector"
            ".matchExpressions[0].operator: operator "
            "Gt is not valid in a label selector (In, NotIn, Exists, DoesNotExist; Gt and Lt "
            "belong to node affinity only)");
  EXPECT_NE(error(head + "spec: {resourceSelectors: [{apiVersion: v1, kind: X}], placement: "
                         "{clusterTolerations: [{key: a, operator: Above}]}}")
                .find("spec.placement.clusterTolerations[0].operator"),
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
