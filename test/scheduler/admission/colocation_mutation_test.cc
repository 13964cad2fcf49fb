// The colocation webhook's decision: profile matching, what a profile sets, resources moved
// to batch resources, idempotence under reinvocation, and the AdmissionReview answer.
#include "scheduler/admission/colocation_mutation.h"

#include <gtest/gtest.h>

#include "kube/config.h"
#include "kube/well_known.h"
#include "scheduler/admission/admission_review.h"
#include "scheduler/admission/priority_class.h"

namespace gleaner::scheduler::admission {
namespace {

// A driver pod as Spark 3.5 builds it on the operator's template: cpu request from
// spec.driver.cores, a cpu limit from coreLimit, memory request = limit = memory + overhead.
Json spark_driver(const Json& extra_annotations = Json::object()) {
  Json pod = Json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "pi-driver", "namespace": "spark",
                 "labels": {"spark-role": "driver", "sparkoperator.k8s.io/app-name": "pi"}},
    "spec": {
      "initContainers": [{"name": "fetch", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
      "containers": [{"name": "spark-kubernetes-driver",
                      "resources": {"requests": {"cpu": "1", "memory": "1408Mi"},
                                    "limits": {"cpu": "1200m", "memory": "1408Mi"}}}],
      "priority": 0
    }})");
  for (const auto& [k, v] : extra_annotations.items())
    pod["metadata"]["annotations"][k] = v;
  return pod;
}

ColocationProfile profile(const std::string& json) {
  auto p = parse_colocation_profile(Json::parse(json));
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p.ok() ? *p : ColocationProfile{};
}

const char* kSparkProfile = R"({
  "apiVersion": "config.koordinator.sh/v1alpha1", "kind": "ClusterColocationProfile",
  "metadata": {"name": "spark"},
  "spec": {"namespaceSelector": {"matchLabels": {"colocation": "on"}},
           "selector": {"matchExpressions": [{"key": "spark-role", "operator": "Exists"}]},
           "qosClass": "BE", "priorityClassName": "koord-batch", "koordinatorPriority": 1111,
           "schedulerName": "gleaner-scheduler",
           "labels": {"team": "data"}, "annotations": {"note": "colocated"}}})";

struct Fixture {
  std::vector<ColocationProfile> profiles;
  MutationInputs in;
  explicit Fixture(std::vector<ColocationProfile> p, Labels ns_labels = {{"colocation", "on"}})
      : profiles(std::move(p)) {
    in.profiles = &profiles;
    in.namespace_labels = namespace_labels_of("spark", std::move(ns_labels));
    in.priority_class = [](const std::string& name) -> std::optional<PriorityClassInfo> {
      if (name == "koord-batch") return PriorityClassInfo{5500, "PreemptLowerPriority"};
      return std::nullopt;
    };
    in.batch_scheduler = "gleaner-scheduler";
  }
};

TEST(ColocationMutation, MatchingProfileMakesTheSparkDriverABestEffortBatchPod) {
  Fixture f({profile(kSparkProfile)});
  const Json pod = spark_driver();
  auto m = mutate_pod(pod, f.in);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->profiles, std::vector<std::string>{"spark"});
  EXPECT_TRUE(m->converted);
  const Json out = pod.patch(m->patch);
  const Json& c = out["spec"]["containers"][0]["resources"];
  // Requests to requests, limits to limits: coreLimit 1200m stays the batch-cpu limit.
  EXPECT_EQ(c, Json::parse(R"({"requests": {"kubernetes.io/batch-cpu": "1000",
                                            "kubernetes.io/batch-memory": "1476395008"},
                               "limits": {"kubernetes.io/batch-cpu": "1200",
                                          "kubernetes.io/batch-memory": "1476395008"}})"));
  EXPECT_EQ(out["spec"]["initContainers"][0]["resources"]["requests"]["kubernetes.io/batch-cpu"],
            "100");
  EXPECT_EQ(out["spec"]["initContainers"][0]["resources"]["limits"]["kubernetes.io/batch-memory"],
            std::to_string(64 << 20));
  EXPECT_EQ(out["metadata"]["labels"]["koordinator.sh/qosClass"], "BE");
  EXPECT_EQ(out["metadata"]["labels"]["koordinator.sh/priority"], "1111");
  EXPECT_EQ(out["metadata"]["labels"]["team"], "data");
  EXPECT_EQ(out["metadata"]["labels"]["spark-role"], "driver");  // the pod's own stay
  EXPECT_EQ(out["metadata"]["annotations"]["note"], "colocated");
  EXPECT_EQ(out["spec"]["schedulerName"], "gleaner-scheduler");
  EXPECT_EQ(out["spec"]["priorityClassName"], "koord-batch");
  EXPECT_EQ(out["spec"]["priority"], 5500);
  EXPECT_EQ(out["spec"]["preemptionPolicy"], "PreemptLowerPriority");
  // What the containers asked for is kept where Koordinator keeps it.
  const Json original = Json::parse(
      out["metadata"]["annotations"][kExtendedResourceSpecAnnotation].get<std::string>());
  EXPECT_EQ(original["containers"]["spark-kubernetes-driver"]["limits"]["cpu"], "1200m");
  EXPECT_EQ(original["containers"]["fetch"]["requests"]["memory"], std::to_string(64 << 20));
}

TEST(ColocationMutation, ASecondPassOverItsOwnOutputChangesNothing) {
  Fixture f({profile(kSparkProfile)});
  auto first = mutate_pod(spark_driver(), f.in);
  ASSERT_TRUE(first.ok());
  const Json once = spark_driver().patch(first->patch);
  auto second = mutate_pod(once, f.in);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_TRUE(second->patch.empty()) << second->patch.dump();
  EXPECT_EQ(second->profiles, std::vector<std::string>{"spark"});
}

TEST(ColocationMutation, SelectorsDecideWhichPodsAreTouched) {
  Fixture other_ns({profile(kSparkProfile)}, {{"colocation", "off"}});
  auto m = mutate_pod(spark_driver(), other_ns.in);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->patch.empty());
  EXPECT_TRUE(m->profiles.empty());

  Fixture f({profile(kSparkProfile)});
  Json web = spark_driver();
  web["metadata"]["labels"] = Json{{"app", "web"}};
  auto untouched = mutate_pod(web, f.in);
  ASSERT_TRUE(untouched.ok());
  EXPECT_TRUE(untouched->patch.empty());
}

TEST(ColocationMutation, AckAnnotationAloneColocatesAsBatch) {
  Fixture none({});
  const Json pod = spark_driver(Json{{kube::kAckColocationAnnotation, "true"}});
  auto m = mutate_pod(pod, none.in);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->ack_annotation);
  const Json out = pod.patch(m->patch);
  EXPECT_EQ(out["metadata"]["labels"]["koordinator.sh/qosClass"], "BE");
  EXPECT_FALSE(out["spec"]["containers"][0]["resources"]["requests"].contains("cpu"));
  // ACK's guide names no scheduler: the batch pod is given gleaner-scheduler, so its
  // driver and executors are placed as one gang, not one by one by kube-scheduler.
  EXPECT_EQ(out["spec"]["schedulerName"], "gleaner-scheduler");
  EXPECT_TRUE(m->scheduler_assigned);
  // "false" is not an opt-in.
  auto off = mutate_pod(spark_driver(Json{{kube::kAckColocationAnnotation, "false"}}), none.in);
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(off->patch.empty());
}

TEST(ColocationMutation, ABatchPodNamingNoSchedulerOrTheDefaultIsGivenTheBatchScheduler) {
  Fixture none({});
  const Json ack{{kube::kAckColocationAnnotation, "true"}};
  // What the API server's defaulting leaves in a pod that named none.
  Json defaulted = spark_driver(ack);
  defaulted["spec"]["schedulerName"] = "default-scheduler";
  auto m = mutate_pod(defaulted, none.in);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(defaulted.patch(m->patch)["spec"]["schedulerName"], "gleaner-scheduler");
  EXPECT_TRUE(m->warnings.empty());

  // Another scheduler (Spark's batchScheduler: volcano) is kept, and the answer says so.
  Json volcano = spark_driver(ack);
  volcano["spec"]["schedulerName"] = "volcano";
  auto kept = mutate_pod(volcano, none.in);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(volcano.patch(kept->patch)["spec"]["schedulerName"], "volcano");
  EXPECT_FALSE(kept->scheduler_assigned);
  ASSERT_EQ(kept->warnings.size(), 1u);
  EXPECT_NE(kept->warnings[0].find("spec.schedulerName is volcano"), std::string::npos);
  EXPECT_NE(kept->warnings[0].find("leave it unset"), std::string::npos) << kept->warnings[0];

  // Turned off (run --webhook-assign-scheduler=false): the pod's own stays.
  Fixture off({});
  off.in.batch_scheduler.clear();
  auto left = mutate_pod(spark_driver(ack), off.in);
  ASSERT_TRUE(left.ok());
  EXPECT_FALSE(spark_driver(ack).patch(left->patch)["spec"].contains("schedulerName"));

  // A profile's schedulerName wins; a pod that is not batch work keeps its scheduler.
  Fixture ls({profile(R"({"metadata": {"name": "ls"}, "spec": {"qosClass": "LS"}})")});
  auto service = mutate_pod(spark_driver(), ls.in);
  ASSERT_TRUE(service.ok());
  EXPECT_FALSE(spark_driver().patch(service->patch)["spec"].contains("schedulerName"));
}

// Koordinator's example ClusterColocationProfile names koord-scheduler: the pod gets it,
// as the profile says, but the answer warns as it does for a pod's own volcano, and says
// what to change.
TEST(ColocationMutation, AProfileNamingAnotherSchedulerIsKeptWithAWarningSayingWhatToDo) {
  Fixture f({profile(R"({"metadata": {"name": "koord-example"},
    "spec": {"selector": {"matchLabels": {"spark-role": "driver"}}, "qosClass": "BE",
             "schedulerName": "koord-scheduler"}})")});
  const Json pod = spark_driver();
  auto m = mutate_pod(pod, f.in);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(pod.patch(m->patch)["spec"]["schedulerName"], "koord-scheduler");
  EXPECT_FALSE(m->scheduler_assigned);
  ASSERT_EQ(m->warnings.size(), 1u);
  const std::string& w = m->warnings[0];
  EXPECT_NE(w.find("ClusterColocationProfile koord-example spec.schedulerName is koord-scheduler"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("stays Pending"), std::string::npos) << w;
  EXPECT_NE(w.find("remove spec.schedulerName from the profile"), std::string::npos) << w;

  // A profile naming the batch scheduler itself, or the webhook told to leave schedulers
  // alone, says nothing.
  Fixture own({profile(kSparkProfile)});
  auto quiet = mutate_pod(pod, own.in);
  ASSERT_TRUE(quiet.ok());
  EXPECT_TRUE(quiet->warnings.empty());
  f.in.batch_scheduler.clear();
  auto off = mutate_pod(pod, f.in);
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(off->warnings.empty());
}

TEST(ColocationMutation, LimitsStayLimitsAndAMissingSideTakesTheOther) {
  Fixture none({});
  Json pod = spark_driver(Json{{kube::kAckColocationAnnotation, "true"}});
  Json& res = pod["spec"]["containers"][0]["resources"];
  res = Json::parse(R"({"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}})");
  auto m = mutate_pod(pod, none.in);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(pod.patch(m->patch)["spec"]["containers"][0]["resources"],
            Json::parse(R"({"requests": {"kubernetes.io/batch-cpu": "500",
                                         "kubernetes.io/batch-memory": "1073741824"},
                            "limits": {"kubernetes.io/batch-cpu": "500",
                                       "kubernetes.io/batch-memory": "1073741824"}})"));
  // A request above its limit is refused here, naming the container, as the API would.
  res = Json::parse(R"({"requests": {"cpu": "2"}, "limits": {"cpu": "1500m"}})");
  auto refused = mutate_pod(pod, none.in);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find(
                "spec.containers[0].resources.requests.cpu 2 is above its limit 1500m"),
            std::string::npos)
      << refused.error().message;
}

TEST(ColocationMutation, AnAppliedProfilesUnsupportedFieldsAreWarnedInTheAnswer) {
  Fixture f({profile(R"({"metadata": {"name": "patched"},
      "spec": {"qosClass": "BE", "patch": {"metadata": {"labels": {"x": "y"}}}}})")});
  auto m = mutate_pod(spark_driver(), f.in);
  ASSERT_TRUE(m.ok());
  ASSERT_FALSE(m->warnings.empty());
  EXPECT_NE(m->warnings[0].find("ClusterColocationProfile patched: spec.patch is not supported"),
            std::string::npos)
      << m->warnings[0];
}

TEST(ColocationMutation, LaterProfileOverridesAndANonBatchQosKeepsResources) {
  Fixture f({profile(kSparkProfile), profile(R"({"metadata": {"name": "z-ls"},
      "spec": {"qosClass": "LS", "labels": {"team": "web"}}})")});
  const Json pod = spark_driver();
  auto m = mutate_pod(pod, f.in);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->profiles, (std::vector<std::string>{"spark", "z-ls"}));
  EXPECT_FALSE(m->converted);
  const Json out = pod.patch(m->patch);
  EXPECT_EQ(out["metadata"]["labels"]["koordinator.sh/qosClass"], "LS");
  EXPECT_EQ(out["metadata"]["labels"]["team"], "web");
  EXPECT_EQ(out["spec"]["containers"][0]["resources"], pod["spec"]["containers"][0]["resources"]);
}

TEST(ColocationMutation, OverheadStaysAndIsNamedInAWarning) {
  Fixture f({profile(kSparkProfile)});
  Json pod = spark_driver();
  pod["spec"]["overhead"] = Json{{"cpu", "250m"}};
  auto m = mutate_pod(pod, f.in);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(pod.patch(m->patch)["spec"]["overhead"], pod["spec"]["overhead"]);
  ASSERT_EQ(m->warnings.size(), 1u);
  EXPECT_NE(m->warnings[0].find("spec.overhead"), std::string::npos);
}

TEST(ColocationMutation, UnknownPriorityClassOrBadQuantityRefusesThePod) {
  Fixture f({profile(R"({"metadata": {"name": "p"}, "spec": {"priorityClassName": "nope"}})")});
  auto m = mutate_pod(spark_driver(), f.in);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("PriorityClass nope (from ClusterColocationProfile p)"),
            std::string::npos);

  Fixture spark({profile(kSparkProfile)});
  Json bad = spark_driver();
  bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots";
  auto refused = mutate_pod(bad, spark.in);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("spec.containers[0].resources.requests.cpu"),
            std::string::npos);
}

TEST(ColocationMutation, MalformedPodsAreErrorsOrLeftAloneNeverAThrow) {
  Fixture f({profile(kSparkProfile)});
  const char* shapes[] = {
      R"({"spec": {"schedulerName": null, "priorityClassName": 7}})",
      R"({"spec": {"containers": [5]}})",
      R"({"spec": {"containers": [{"name": 3, "resources": "lots"}]}})",
      R"({"spec": {"containers": [{"resources": {"requests": [1], "limits": {"cpu": true}}}]}})",
      R"({"spec": {"initContainers": {"a": 1}}})",
      R"({"spec": "x"})",
      R"({"metadata": {"labels": ["spark-role"], "annotations": 4}})",
      R"([])",
  };
  for (const char* shape : shapes) {
    Json pod = Json::parse(shape);
    if (pod.is_object()) {
      // Still selected by the profile, so every conversion path runs.
      if (!pod.contains("metadata") || !pod["metadata"]["labels"].is_object())
        pod["metadata"]["labels"] = Json{{"spark-role", "driver"}};
    }
    EXPECT_NO_THROW({
      auto m = mutate_pod(pod, f.in);
      if (m.ok()) (void)m->patch.dump();
    }) << shape;
  }
}

TEST(ColocationProfileParse, BadProfilesAreNamedAndUnsupportedFieldsWarned) {
  auto bad_qos = parse_colocation_profile(
      Json::parse(R"({"metadata": {"name": "x"}, "spec": {"qosClass": "Gold"}})"));
  ASSERT_FALSE(bad_qos.ok());
  EXPECT_NE(bad_qos.error().message.find("ClusterColocationProfile x: spec.qosClass Gold"),
            std::string::npos);
  auto bad_selector = parse_colocation_profile(Json::parse(
      R"({"metadata": {"name": "y"}, "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}})"));
  EXPECT_FALSE(bad_selector.ok());
  auto warned = parse_colocation_profile(Json::parse(
      R"({"metadata": {"name": "z"}, "spec": {"probability": "50%", "qosClass": "BE"}})"));
  ASSERT_TRUE(warned.ok());
  ASSERT_EQ(warned->warnings.size(), 1u);
  EXPECT_NE(warned->warnings[0].find("spec.probability"), std::string::npos);
  // One bad profile fails the set; a name twice too.
  auto set = parse_colocation_profiles({{Json::parse(kSparkProfile), "profiles.yaml document 1"},
                                        {Json::parse(kSparkProfile), "profiles.yaml document 2"}});
  ASSERT_FALSE(set.ok());
  EXPECT_NE(
      set.error().message.find("profiles.yaml document 2: ClusterColocationProfile spark twice"),
      std::string::npos);
}

Json review_of(const Json& pod, const std::string& operation = "CREATE") {
  return Json{{"apiVersion", "admission.k8s.io/v1"},
              {"kind", "AdmissionReview"},
              {"request",
               {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
                {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                {"operation", operation},
                {"namespace", "spark"},
                {"dryRun", false},
                {"object", pod}}}};
}

TEST(AdmissionReview, MutatedPodGetsABase64JsonPatchUnderTheRequestUid) {
  Fixture f({profile(kSparkProfile)});
  auto req = parse_admission_review(review_of(spark_driver()));
  ASSERT_TRUE(req.ok()) << req.error().message;
  const AdmissionResponse r = review_pod(*req, f.in);
  EXPECT_EQ(r.outcome, Outcome::kMutated);
  const Json& resp = r.review["response"];
  EXPECT_EQ(r.review["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(resp["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(resp["allowed"], true);
  EXPECT_EQ(resp["patchType"], "JSONPatch");
  auto m = mutate_pod(spark_driver(), f.in);
  ASSERT_TRUE(m.ok());
  // base64 of the same patch the decision made.
  auto decoded = kube::base64_decode(resp["patch"].get<std::string>());
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, m->patch.dump());
}

TEST(AdmissionReview, UpdatesAndOtherKindsPassUnchangedAndDenialsCarryAStatus) {
  Fixture f({profile(kSparkProfile)});
  auto update = parse_admission_review(review_of(spark_driver(), "UPDATE"));
  ASSERT_TRUE(update.ok());
  const AdmissionResponse passed = review_pod(*update, f.in);
  EXPECT_EQ(passed.outcome, Outcome::kSkipped);
  EXPECT_FALSE(passed.review["response"].contains("patch"));

  Fixture missing(
      {profile(R"({"metadata": {"name": "p"}, "spec": {"priorityClassName": "nope"}})")});
  auto create = parse_admission_review(review_of(spark_driver()));
  ASSERT_TRUE(create.ok());
  const AdmissionResponse denied = review_pod(*create, missing.in);
  EXPECT_EQ(denied.outcome, Outcome::kDenied);
  EXPECT_EQ(denied.review["response"]["allowed"], false);
  EXPECT_EQ(denied.review["response"]["status"]["code"], 400);
}

TEST(AdmissionReview, MalformedReviewsAreErrorsNamingTheField) {
  EXPECT_FALSE(parse_admission_review(Json::parse("[1]")).ok());
  Json v1beta1 = review_of(spark_driver());
  v1beta1["apiVersion"] = "admission.k8s.io/v1beta1";
  auto old = parse_admission_review(v1beta1);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().message.find("admissionReviewVersions"), std::string::npos);
  Json no_uid = review_of(spark_driver());
  no_uid["request"].erase("uid");
  auto r = parse_admission_review(no_uid);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("request.uid"), std::string::npos);
}

TEST(PriorityClassParse, ValueAndPolicyAreCheckedAndOtherKindsSkipped) {
  auto classes = parse_priority_classes(
      {Json::parse(R"({"kind": "PriorityClass", "metadata": {"name": "b"}, "value": 5500,
                       "preemptionPolicy": "Never"})"),
       Json::parse(R"({"kind": "ConfigMap", "metadata": {"name": "c"}})")});
  ASSERT_TRUE(classes.ok());
  ASSERT_EQ(classes->size(), 1u);
  EXPECT_EQ(classes->at("b").value, 5500);
  EXPECT_EQ(classes->at("b").preemption_policy, "Never");
  EXPECT_FALSE(
      parse_priority_class(Json::parse(R"({"metadata": {"name": "x"}, "value": "high"})")).ok());
}

}  // namespace
}  // namespace gleaner::scheduler::admission
