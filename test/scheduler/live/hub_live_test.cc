// A fleet's hub (test API server "hub", no nodes) and two members a and b: SparkApplications
// on the hub that a PropagationPolicy governs run in a member the policy allows (by name, by
// the labels and taints of the hub's Karmada Cluster objects), their state shows on the hub,
// and they go when the hub object goes.
#include <gtest/gtest.h>

#include "test/scheduler/live/multi_cluster_fixture.h"

namespace gleaner::scheduler::live_testing {
namespace {

// An application as a user submits it to the hub: no label, no spec.suspend.
Json hub_app(const std::string& name) {
  Json app = multi_cluster_app(name, /*suspend=*/false);
  app["metadata"].erase("labels");
  app["spec"].erase("suspend");
  return app;
}

// A PropagationPolicy (namespace default) or ClusterPropagationPolicy selecting every
// SparkApplication, with the seeds' placement: clusterNames when given.
Json policy(const std::string& group, bool cluster_scoped, std::vector<std::string> clusters) {
  Json placement = Json::object();
  if (!clusters.empty()) placement["clusterAffinity"] = {{"clusterNames", clusters}};
  placement["replicaScheduling"] = {{"replicaSchedulingType", "Divided"}};
  Json meta{{"name", "sparkapp-policy"}};
  if (!cluster_scoped) meta["namespace"] = "default";
  return Json{{"apiVersion", group + "/v1alpha1"},
              {"kind", cluster_scoped ? "ClusterPropagationPolicy" : "PropagationPolicy"},
              {"metadata", meta},
              {"spec",
               {{"resourceSelectors",
                 {{{"apiVersion", "sparkoperator.k8s.io/v1beta2"}, {"kind", "SparkApplication"}}}},
                {"placement", placement}}}};
}

std::string policies_path(const std::string& group, bool cluster_scoped) {
  return "/apis/" + group + "/v1alpha1/" +
         (cluster_scoped ? std::string("clusterpropagationpolicies")
                         : std::string("namespaces/default/propagationpolicies"));
}

class HubLiveTest : public CopyLifecycleTest {
 protected:
  void SetUp() override {
    if (!start_servers({"hub", "a", "b"})) GTEST_SKIP() << "cannot start test/apiserver";
    ASSERT_TRUE(member("a").add_node("a1"));
    ASSERT_TRUE(member("b").add_node("b1"));
    hubs_ = {"hub"};
    hub_policy_group_ = group();
    driver_start_timeout_ = driver_start_timeout();
    connect();
    // a is the better fit (less left over): only a policy keeps the job out of it.
    report("a", "a1", 4000);
    report("b", "b1", 8000);
  }
  virtual std::string group() const { return "policy.karmada.io"; }
  virtual int64_t driver_start_timeout() const { return 300; }
  // A policy `policy_name` for application "other" alone, and "other" placed into a: once
  // it is, the hub link has seen every application created before it.
  void place_other_by_name(const std::string& policy_name) {
    Json by_name = policy(group(), false, {});
    by_name["metadata"]["name"] = policy_name;
    by_name["spec"]["resourceSelectors"][0]["name"] = "other";
    ASSERT_TRUE(member("hub").create(policies_path(group(), false), by_name));
    ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("other")));
    ASSERT_TRUE(schedule_until([&] { return app("a", "other").contains("spec"); }));
  }
  bool placement_sent(const std::string& name) {
    return routed([&](const server::Action& a) {
      return a.kind == server::ActionKind::kPlaceApp && a.name == name;
    });
  }
  std::string hub_state(const std::string& name) {
    const Json obj = app("hub", name);
    const Json* state = obj.is_object() ? find_path(obj, "status/applicationState/state") : nullptr;
    return state != nullptr && state->is_string() ? state->get<std::string>() : "";
  }
};

// ACK One Fleet's API group for the same objects (the seeds' policy).
class AckHubLiveTest : public HubLiveTest {
 protected:
  std::string group() const override { return "policy.one.alibabacloud.com"; }
};

TEST_F(HubLiveTest, ApplicationRunsWhereItsPolicyAllowsAndItsStateShowsOnTheHub) {
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), policy(group(), false, {"b"})));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }));
  EXPECT_FALSE(app("a", "pi").contains("spec")) << "a fits better, but the policy allows b only";
  const Json copy = app("b", "pi");
  EXPECT_EQ(annotation(copy, "gleaner.io/origin-cluster"), "hub");
  EXPECT_TRUE(until([&] { return annotation(app("hub", "pi"), "gleaner.io/placement") == "b"; }));

  // The member's operator runs it: the hub shows the state in the object's status
  // (kubectl get sparkapplication's STATUS column) and names the member.
  set_state("b", "pi", "RUNNING");
  EXPECT_TRUE(until([&] { return hub_state("pi") == "RUNNING"; })) << app("hub", "pi").dump();
  set_state("b", "pi", "COMPLETED");
  EXPECT_TRUE(until([&] { return hub_state("pi") == "COMPLETED"; }));
  EXPECT_TRUE(member("hub").has_event("pi", "GleanerRemoteState", "member cluster b"));

  // Deleting the hub object deletes the copy.
  ASSERT_TRUE(member("hub").client->remove(kube::spark_application_path("default", "pi")).ok());
  EXPECT_TRUE(until([&] { return !app("b", "pi").contains("spec"); }));
}

TEST_F(HubLiveTest, AnApplicationNoPolicyGovernsStaysUntilOneDoes) {
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  // A policy for another application by name; once that one is placed, the hub link has
  // seen "pi" too (created first, same watch) and left it alone.
  place_other_by_name("other-policy");
  EXPECT_FALSE(placement_sent("pi")) << "no policy governs it: not ours";
  EXPECT_EQ(annotation(app("hub", "pi"), "gleaner.io/placement"), "");
  // A ClusterPropagationPolicy without affinity: any member; a has no room left, so b.
  ASSERT_TRUE(member("hub").create(policies_path(group(), true), policy(group(), true, {})));
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }));
}

TEST_F(HubLiveTest, APolicyGleanerCannotHonourIsRefusedAndCounted) {
  Json bad = policy(group(), false, {"b"});
  bad["spec"]["placement"]["clusterAffinity"]["fieldSelector"] = {
      {"matchExpressions", {{{"key", "region"}, {"operator", "In"}, {"values", {"x"}}}}}};
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), bad));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  EXPECT_TRUE(until([&] {
    return metrics_.render({}).find("gleaner_scheduler_propagation_policies_rejected_total 1\n") !=
           std::string::npos;
  }));
  // A valid policy for another application by name: once that one is placed, "pi" has
  // been seen and left alone (the refused policy governs nothing).
  place_other_by_name("other-policy");
  EXPECT_FALSE(placement_sent("pi"));
}

TEST_F(HubLiveTest, AnApplicationAskingForGpusGoesOnlyWhereGpusAreFree) {
  // Both members have room for its cpu and memory; only b1 has GPUs (two).
  for (const auto& [m, node, gpus] : {std::tuple{"a", "a1", 0}, std::tuple{"b", "b1", 2}}) {
    Json allocatable{{"cpu", "8"}, {"memory", "32Gi"}};
    if (gpus > 0) allocatable["nvidia.com/gpu"] = std::to_string(gpus);
    ASSERT_TRUE(member(m)
                    .client
                    ->patch(kube::node_status_path(node),
                            Json{{"status", {{"allocatable", allocatable}}}},
                            kube::PatchType::kMerge)
                    .ok());
  }
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), policy(group(), false, {})));
  auto gpu_app = [](const std::string& name) {
    Json app = hub_app(name);
    app["spec"]["executor"]["gpu"] = {{"name", "nvidia.com/gpu"}, {"quantity", 1}};
    return app;
  };
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), gpu_app("train")));
  ASSERT_TRUE(schedule_until([&] { return app("b", "train").contains("spec"); }))
      << "a fits its cpu and memory better, but has no GPU";
  EXPECT_FALSE(app("a", "train").contains("spec"));
  // Its two executors hold both of b1's GPUs: a second one waits.
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), gpu_app("train2")));
  ASSERT_TRUE(schedule_until(
      [&] { return member("hub").has_event("train2", "GleanerPending", "or GPUs"); }));
  EXPECT_FALSE(placement_sent("train2"));
}

// A Karmada Cluster object on the hub for member `name`.
Json karmada_cluster(const std::string& name, const kube::Labels& labels, const Json& taints) {
  return Json{{"apiVersion", "cluster.karmada.io/v1alpha1"},
              {"kind", "Cluster"},
              {"metadata", {{"name", name}, {"labels", labels}}},
              {"spec", {{"syncMode", "Push"}, {"taints", taints}}}};
}
constexpr const char* kClustersPath = "/apis/cluster.karmada.io/v1alpha1/clusters";

TEST_F(HubLiveTest, ClusterAffinityByLabelReadsTheHubsKarmadaClusterObjects) {
  ASSERT_TRUE(member("hub").create(kClustersPath,
                                   karmada_cluster("a", {{"tier", "online"}}, Json::array())));
  ASSERT_TRUE(member("hub").create(kClustersPath,
                                   karmada_cluster("b", {{"tier", "batch"}}, Json::array())));
  Json by_label = policy(group(), false, {});
  by_label["spec"]["placement"]["clusterAffinity"] = {
      {"labelSelector", {{"matchLabels", {{"tier", "batch"}}}}}};
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), by_label));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }));
  EXPECT_FALSE(app("a", "pi").contains("spec")) << "a fits better, but is labelled online";
}

TEST_F(HubLiveTest, ATaintedMemberIsSkippedAndAWaitingJobTakesAMemberLabelledLater) {
  // Karmada's cluster controller taints a member that stopped answering.
  ASSERT_TRUE(member("hub").create(
      kClustersPath, karmada_cluster("a", {},
                                     Json::array({{{"key", "cluster.karmada.io/unreachable"},
                                                   {"effect", "NoSchedule"}}}))));
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), policy(group(), false, {})));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }))
      << "a fits better, but is tainted";
  EXPECT_FALSE(app("a", "pi").contains("spec"));

  // A job for members labelled gpu=true waits while none is; labelling a lets it go there
  // (the policy's tolerations take a's taint).
  Json gpu = policy(group(), false, {});
  gpu["metadata"]["name"] = "gpu-policy";
  gpu["spec"]["resourceSelectors"][0]["name"] = "train";
  gpu["spec"]["placement"]["clusterAffinity"] = {
      {"labelSelector", {{"matchLabels", {{"gpu", "true"}}}}}};
  gpu["spec"]["placement"]["clusterTolerations"] = Json::array({{{"operator", "Exists"}}});
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), gpu));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("train")));
  ASSERT_TRUE(schedule_until([&] {
    return member("hub").has_event("train", "GleanerUnschedulable", "allows none");
  })) << "no member is labelled gpu=true";
  ASSERT_TRUE(member("hub")
                  .client
                  ->patch(std::string(kClustersPath) + "/a",
                          Json{{"metadata", {{"labels", {{"gpu", "true"}}}}}},
                          kube::PatchType::kMerge)
                  .ok());
  EXPECT_TRUE(schedule_until([&] { return app("a", "train").contains("spec"); }));
}

// A driver that cannot start in its member within the timeout (an LS surge there leaves it
// pending): the application is reclaimed from that member and runs in another.
class HubReclaimLiveTest : public HubLiveTest {
 protected:
  int64_t driver_start_timeout() const override { return 1; }
};

TEST_F(HubReclaimLiveTest, ADriverThatDoesNotStartIsReclaimedIntoAnotherMember) {
  ASSERT_TRUE(
      member("hub").create(policies_path(group(), false), policy(group(), false, {"a", "b"})));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  ASSERT_TRUE(schedule_until([&] { return app("a", "pi").contains("spec"); })) << "best fit";
  // a's operator creates the driver, which stays Pending there (no room is left for it).
  ASSERT_TRUE(member("a").create(kube::pods_path("default"), operator_driver("pi")));
  // After the 1 s timeout the copy in a goes and one in b takes its place.
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }));
  EXPECT_TRUE(until([&] { return !app("a", "pi").contains("spec"); }));
  EXPECT_TRUE(until([&] { return annotation(app("hub", "pi"), "gleaner.io/placement") == "b"; }));
  EXPECT_TRUE(
      until([&] { return member("hub").has_event("pi", "GleanerReclaimed", "member cluster a"); }));
  EXPECT_EQ(annotation(app("b", "pi"), "gleaner.io/origin-cluster"), "hub");
  const Json hub_obj = app("hub", "pi");
  EXPECT_EQ(annotation(hub_obj, "gleaner.io/reclaims"), "1");
  EXPECT_NE(annotation(hub_obj, "gleaner.io/last-reclaim").find("member a: "), std::string::npos)
      << annotation(hub_obj, "gleaner.io/last-reclaim");
  // It runs there, and the hub shows it.
  set_state("b", "pi", "RUNNING");
  EXPECT_TRUE(until([&] { return hub_state("pi") == "RUNNING"; }));
}

// Karmada mode: a policy naming gleaner-scheduler. The test plays Karmada's controllers:
// the detector's ResourceBinding, the execution controller's copy in the member the binding
// names.
class KarmadaHubLiveTest : public HubReclaimLiveTest {
 protected:
  static inline const std::string kBindings =
      "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings";
  // What Karmada's detector creates for a template the policy governs.
  void detect(const std::string& name) {
    const Json hub_obj = app("hub", name);
    Json binding{{"apiVersion", "work.karmada.io/v1alpha2"},
                 {"kind", "ResourceBinding"},
                 {"metadata", {{"name", name + "-sparkapplication"}, {"namespace", "default"}}},
                 {"spec",
                  {{"resource",
                    {{"apiVersion", "sparkoperator.k8s.io/v1beta2"},
                     {"kind", "SparkApplication"},
                     {"namespace", "default"},
                     {"name", name},
                     {"uid", hub_obj["metadata"]["uid"]},
                     {"resourceVersion", hub_obj["metadata"]["resourceVersion"]}}},
                   {"schedulerName", "gleaner-scheduler"},
                   {"placement", {{"clusterAffinity", {{"clusterNames", {"a", "b"}}}}}}}}};
    ASSERT_TRUE(member("hub").create(kBindings, binding));
  }
  std::vector<std::string> bound_clusters(const std::string& name) {
    std::vector<std::string> out;
    const Json b = member("hub").get(kBindings + "/" + name + "-sparkapplication");
    if (const Json* c = b.is_object() ? find_path(b, "spec/clusters") : nullptr;
        c != nullptr && c->is_array())
      for (const Json& t : *c)
        out.push_back(t.value("name", ""));
    return out;
  }
  // What Karmada's execution controller creates in a member the binding names: the hub
  // object's metadata (labels, annotations) and spec.
  void propagate(const std::string& member_name, const std::string& name) {
    const Json hub_obj = app("hub", name);
    Json copy{{"apiVersion", "sparkoperator.k8s.io/v1beta2"},
              {"kind", "SparkApplication"},
              {"metadata",
               {{"name", name},
                {"namespace", "default"},
                {"labels", hub_obj["metadata"].value("labels", Json::object())},
                {"annotations", hub_obj["metadata"]["annotations"]}}},
              {"spec", hub_obj["spec"]}};
    copy["metadata"]["labels"]["karmada.io/managed"] = "true";
    ASSERT_TRUE(member(member_name).create(kube::spark_applications_path("default"), copy));
  }
};

TEST_F(KarmadaHubLiveTest, TheBindingIsWrittenAndAStuckDriverMovesItToAnotherMember) {
  Json karmada = policy(group(), false, {"a", "b"});
  karmada["spec"]["schedulerName"] = "gleaner-scheduler";
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), karmada));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  detect("pi");
  ASSERT_TRUE(schedule_until([&] { return bound_clusters("pi") == std::vector<std::string>{"a"}; }))
      << "a is the best fit";
  // The condition `kubectl get resourcebinding` shows (written just after spec.clusters).
  EXPECT_TRUE(until([&] {
    const Json binding = member("hub").get(kBindings + "/pi-sparkapplication");
    const Json* conditions = find_path(binding, "status/conditions");
    const Json* observed = find_path(binding, "status/schedulerObservedGeneration");
    return conditions != nullptr && conditions->is_array() && conditions->size() == 1 &&
           (*conditions)[0].value("type", "") == "Scheduled" &&
           (*conditions)[0].value("status", "") == "True" && observed != nullptr &&
           *observed == binding["metadata"]["generation"];
  }));
  const Json hub_obj = app("hub", "pi");
  EXPECT_EQ(annotation(hub_obj, "gleaner.io/placement"), "a");
  EXPECT_EQ(annotation(hub_obj, "gleaner.io/origin-cluster"), "hub");
  EXPECT_FALSE(app("a", "pi").contains("spec")) << "Karmada propagates it, not the scheduler";

  // Karmada runs it in a, where its driver stays Pending (no room there).
  propagate("a", "pi");
  ASSERT_TRUE(member("a").create(kube::pods_path("default"), operator_driver("pi")));
  // After the 1 s timeout the binding names b, and the hub object says so.
  ASSERT_TRUE(
      schedule_until([&] { return bound_clusters("pi") == std::vector<std::string>{"b"}; }));
  EXPECT_TRUE(until([&] { return annotation(app("hub", "pi"), "gleaner.io/placement") == "b"; }));
  EXPECT_TRUE(
      until([&] { return member("hub").has_event("pi", "GleanerReclaimed", "member cluster a"); }));
  EXPECT_TRUE(until([&] { return !app("a", "pi").contains("spec"); }));
  EXPECT_FALSE(app("b", "pi").contains("spec")) << "no copy of the scheduler's own";
  // Karmada runs it in b; its state shows on the hub.
  propagate("b", "pi");
  set_state("b", "pi", "RUNNING");
  EXPECT_TRUE(until([&] { return hub_state("pi") == "RUNNING"; }));
}

TEST_F(KarmadaHubLiveTest, ABindingKarmadaHasNotCreatedYetIsWaitedForAndCounted) {
  Json karmada = policy(group(), false, {"a", "b"});
  karmada["spec"]["schedulerName"] = "gleaner-scheduler";
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), karmada));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  ASSERT_TRUE(schedule_until([&] { return metrics_.fleet_retries("place") >= 1; }));
  EXPECT_TRUE(bound_clusters("pi").empty());
  // Karmada's detector catches up: the next try writes it.
  detect("pi");
  EXPECT_TRUE(
      schedule_until([&] { return bound_clusters("pi") == std::vector<std::string>{"a"}; }));
  EXPECT_NE(metrics_.render({}).find("gleaner_scheduler_fleet_retries_total{step=\"place\"}"),
            std::string::npos);
}

TEST_F(KarmadaHubLiveTest, APlacementRecordedBeforeARestartIsWrittenIntoTheBindingNotMadeAgain) {
  // As a scheduler that stopped between recording the placement and writing the binding
  // left it: the hub object says b, its binding names no member.
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  detect("pi");
  const std::string uid = app("hub", "pi")["metadata"].value("uid", "");
  ASSERT_TRUE(member("hub")
                  .client
                  ->patch(kube::spark_application_path("default", "pi"),
                          Json{{"metadata",
                                {{"annotations",
                                  {{"gleaner.io/placement", "b"},
                                   {"gleaner.io/origin-cluster", "hub"},
                                   {"gleaner.io/origin-uid", uid}}}}}},
                          kube::PatchType::kMerge)
                  .ok());
  // The policy comes (as the hub's informers catch up after a restart): the recorded
  // member goes into the binding, though a fits better, and nothing is placed anew.
  Json karmada = policy(group(), false, {"a", "b"});
  karmada["spec"]["schedulerName"] = "gleaner-scheduler";
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), karmada));
  ASSERT_TRUE(
      schedule_until([&] { return bound_clusters("pi") == std::vector<std::string>{"b"}; }));
  EXPECT_FALSE(placement_sent("pi")) << "the decision was already made";
  EXPECT_FALSE(member("hub").has_event("pi", "GleanerPlacedRemote"));
}

TEST_F(AckHubLiveTest, TheSeedsPolicyUnderAckOneFleetsGroupPlacesTheApplication) {
  Json seeds = policy(group(), false, {"b"});
  seeds["spec"]["placement"]["replicaScheduling"]["customSchedulingType"] = "Gang";
  seeds["spec"]["propagateDeps"] = true;
  seeds["spec"]["preserveResourcesOnDeletion"] = false;
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), seeds));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("spark-pi")));
  ASSERT_TRUE(schedule_until([&] { return app("b", "spark-pi").contains("spec"); }));
}

}  // namespace
}  // namespace gleaner::scheduler::live_testing
