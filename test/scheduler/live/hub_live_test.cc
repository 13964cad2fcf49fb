// A fleet's hub (test API server "hub", no nodes) and two members a and b: SparkApplications
// on the hub that a PropagationPolicy governs run in a member the policy allows (by name, by
// the labels and taints of the hub's Karmada Cluster objects), their state shows on the hub,
// and they go when the hub object goes.
#include <gtest/gtest.h>

#include "test/scheduler/live/hub_fixture.h"

namespace gleaner::scheduler::live_testing {
namespace {

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
  EXPECT_TRUE(until(
      [&] { return member("hub").has_event("pi", "GleanerRemoteState", "member cluster b"); }));

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
  give_gpus(2);
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
Json karmada_cluster(const std::string& name, const Labels& labels, const Json& taints) {
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
  // Cluster objects and applications are two watch streams: the taint first.
  ASSERT_TRUE(until([&] {
    const auto known = member("hub").link->member_clusters();
    return known.contains("a") && !known.at("a").taints.empty();
  }));
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), policy(group(), false, {})));
  // A job for members labelled gpu=true (below) has its own policy. It is made now, well
  // before its job: policies and applications are two watch streams, and a job the hub saw
  // before its named policy would go by the catch-all one (as Karmada keeps a resource with
  // the policy that claimed it first).
  Json gpu = policy(group(), false, {});
  gpu["metadata"]["name"] = "gpu-policy";
  gpu["spec"]["resourceSelectors"][0]["name"] = "train";
  gpu["spec"]["placement"]["clusterAffinity"] = {
      {"labelSelector", {{"matchLabels", {{"gpu", "true"}}}}}};
  gpu["spec"]["placement"]["clusterTolerations"] = Json::array({{{"operator", "Exists"}}});
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), gpu));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }))
      << "a fits better, but is tainted";
  EXPECT_FALSE(app("a", "pi").contains("spec"));

  // That job waits while no member is labelled gpu=true; labelling a lets it go there (the
  // policy's tolerations take a's taint).
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

TEST_F(KarmadaHubLiveTest, TheBindingIsWrittenAndAStuckDriverMovesItToAnotherMember) {
  Json karmada = policy(group(), false, {"a", "b"});
  karmada["spec"]["schedulerName"] = "gleaner-scheduler";
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), karmada));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  detect("pi");
  ASSERT_TRUE(schedule_until([&] { return bound_clusters("pi") == std::vector<std::string>{"a"}; }))
      << "a is the best fit";
  // The condition `kubectl get resourcebinding` shows (written just after spec.clusters).
  EXPECT_TRUE(until([&] { return scheduled_status("pi"); }));
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

TEST_F(KarmadaPatientHubLiveTest,
       AStatusWriteThatFailedIsMadeAgainAloneUntilTheBindingShowsScheduled) {
  Json karmada = policy(group(), false, {"a", "b"});
  karmada["spec"]["schedulerName"] = "gleaner-scheduler";
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), karmada));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  detect("pi");
  const std::string binding = kBindings + "/pi-sparkapplication";
  member("hub").api->admin("fail", "method=PATCH&count=1&code=500&prefix=" + binding + "/status");
  // The spec is written, its status is not (Karmada's controllers would wait on it): the
  // placement is tried again, and the next try writes the status alone, once.
  ASSERT_TRUE(schedule_until(
      [&] { return member("hub").api->count_answers("PATCH", binding + "/status", 500) == 1; }));
  EXPECT_GE(metrics_.fleet_retries("place"), 1);
  EXPECT_TRUE(schedule_until([&] { return scheduled_status("pi"); }));
  EXPECT_EQ(bound_clusters("pi"), std::vector<std::string>{"a"});
  EXPECT_EQ(member("hub").api->count_requests("PATCH", binding, false), 1)
      << "the spec already named the member";
  EXPECT_EQ(member("hub").api->count_answers("PATCH", binding + "/status", 200), 1);
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
  // The applications' watch is ordered, the policies' is another stream: once "other"
  // (created after the patch) is placed, the scheduler has seen the recorded placement.
  place_other_by_name("other-policy");
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
